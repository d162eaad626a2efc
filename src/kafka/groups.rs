//! Consumer groups over the wire: FindCoordinator (this node for groups and for transactional
//! ids, each name checked first), the classic
//! protocol handed to [`super::group::Coordinator`], ListGroups, DescribeGroups and DeleteGroups.
//! Committed offsets are [`super::offsets`]'. Every group named passes [`super::names`] first.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator as CoordinatorEntry;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::api::error;
use super::api::{reply, Reply, Request};
use super::group::{self, JoinRequest, LeaveMember, SyncRequest};
use super::metadata::s;
use super::{names, Kafka};

fn opt(v: &Option<StrBytes>) -> Option<String> {
    v.as_ref().map(|x| x.to_string())
}

pub fn find_coordinator(k: &Kafka, req: &Request, r: FindCoordinatorRequest) -> Reply {
    let keys: Vec<StrBytes> = if req.version >= 4 { r.coordinator_keys.clone() } else { vec![r.key.clone()] };
    let answer = |key: StrBytes| {
        let c = CoordinatorEntry::default().with_key(key.clone());
        match (r.key_type, names::check_group(&key)) {
            (0, Err((code, why))) => {
                c.with_node_id(BrokerId(-1)).with_port(-1).with_error_code(code).with_error_message(Some(s(why)))
            }
            (0, Ok(())) => {
                c.with_node_id(BrokerId(k.node_id)).with_host(s(k.advertised.0.clone())).with_port(k.advertised.1)
            }
            (1, _) => match super::txn_coordinator::check_transactional_id(&key) {
                Err((code, why)) => {
                    c.with_node_id(BrokerId(-1)).with_port(-1).with_error_code(code).with_error_message(Some(s(why)))
                }
                Ok(()) => {
                    c.with_node_id(BrokerId(k.node_id)).with_host(s(k.advertised.0.clone())).with_port(k.advertised.1)
                }
            },
            (t, _) => c
                .with_node_id(BrokerId(-1))
                .with_port(-1)
                .with_error_code(error::INVALID_REQUEST)
                .with_error_message(Some(s(format!("coordinator key type {t} is not supported")))),
        }
    };
    let mut coordinators: Vec<CoordinatorEntry> = keys.into_iter().map(answer).collect();
    if req.version >= 4 {
        return reply(req, &FindCoordinatorResponse::default().with_coordinators(coordinators));
    }
    let c = coordinators.pop().unwrap_or_default();
    let mut resp = FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port);
    if req.version >= 1 {
        resp = resp.with_error_message(c.error_message);
    }
    reply(req, &resp)
}

fn join_error(code: i16) -> group::JoinResponse {
    group::JoinResponse {
        error: code,
        generation_id: -1,
        protocol_type: None,
        protocol_name: None,
        leader: String::new(),
        skip_assignment: false,
        member_id: String::new(),
        members: Vec::new(),
    }
}

pub async fn join(k: &Arc<Kafka>, req: &Request, r: JoinGroupRequest) -> Reply {
    if let Err((code, _)) = names::check_group(&r.group_id.0) {
        let resp = JoinGroupResponse::default().with_error_code(code).with_generation_id(-1);
        return reply(req, &resp.with_protocol_name(if req.version >= 7 { None } else { Some(s("")) }));
    }
    let j = JoinRequest {
        group_id: r.group_id.0.to_string(),
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        client_id: req.client_id.clone(),
        client_host: format!("/{}", req.peer.ip()),
        session_timeout_ms: r.session_timeout_ms,
        rebalance_timeout_ms: if req.version == 0 { -1 } else { r.rebalance_timeout_ms },
        protocol_type: r.protocol_type.to_string(),
        protocols: r.protocols.iter().map(|p| (p.name.to_string(), p.metadata.clone())).collect(),
        version: req.version,
        reason: opt(&r.reason),
    };
    let out = tokio::select! {
        out = k.coordinator.join(j) => out,
        _ = k.shared.closing.cancelled() => join_error(group::errors::COORDINATOR_NOT_AVAILABLE),
    };
    let members = out
        .members
        .into_iter()
        .map(|m| {
            JoinGroupResponseMember::default()
                .with_member_id(s(m.member_id))
                .with_group_instance_id(if req.version >= 5 { m.group_instance_id.map(s) } else { None })
                .with_metadata(m.metadata)
        })
        .collect();
    let mut resp = JoinGroupResponse::default()
        .with_error_code(out.error)
        .with_generation_id(out.generation_id)
        .with_leader(s(out.leader))
        .with_member_id(s(out.member_id))
        .with_members(members);
    // protocol_name: "" below v7 when there is none, null from v7.
    resp.protocol_name = match (out.protocol_name, req.version >= 7) {
        (Some(n), _) => Some(s(n)),
        (None, true) => None,
        (None, false) => Some(s("")),
    };
    if req.version >= 7 {
        resp.protocol_type = out.protocol_type.map(s);
    }
    if req.version >= 9 {
        resp.skip_assignment = out.skip_assignment;
    }
    reply(req, &resp)
}

pub async fn sync(k: &Arc<Kafka>, req: &Request, r: SyncGroupRequest) -> Reply {
    if let Err((code, _)) = names::check_group(&r.group_id.0) {
        return reply(req, &SyncGroupResponse::default().with_error_code(code));
    }
    let sreq = SyncRequest {
        group_id: r.group_id.0.to_string(),
        member_id: r.member_id.to_string(),
        generation_id: r.generation_id,
        group_instance_id: opt(&r.group_instance_id),
        protocol_type: if req.version >= 5 { opt(&r.protocol_type) } else { None },
        protocol_name: if req.version >= 5 { opt(&r.protocol_name) } else { None },
        assignments: r.assignments.iter().map(|a| (a.member_id.to_string(), a.assignment.clone())).collect(),
    };
    if req.version >= 5 && (sreq.protocol_type.is_none() || sreq.protocol_name.is_none()) {
        // Kafka's request layer: v5+ must name the protocol type and name.
        return reply(req, &SyncGroupResponse::default().with_error_code(group::errors::INCONSISTENT_GROUP_PROTOCOL));
    }
    let out = tokio::select! {
        out = k.coordinator.sync(sreq) => out,
        _ = k.shared.closing.cancelled() => group::SyncResponse {
            error: group::errors::COORDINATOR_NOT_AVAILABLE,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        },
    };
    let mut resp = SyncGroupResponse::default().with_error_code(out.error).with_assignment(out.assignment);
    if req.version >= 5 {
        resp = resp.with_protocol_type(out.protocol_type.map(s)).with_protocol_name(out.protocol_name.map(s));
    }
    reply(req, &resp)
}

pub fn heartbeat(k: &Arc<Kafka>, req: &Request, r: HeartbeatRequest) -> Reply {
    if let Err((code, _)) = names::check_group(&r.group_id.0) {
        return reply(req, &HeartbeatResponse::default().with_error_code(code));
    }
    let code = k.coordinator.heartbeat(&r.group_id.0, &r.member_id, r.generation_id, r.group_instance_id.as_deref());
    reply(req, &HeartbeatResponse::default().with_error_code(code))
}

pub fn leave(k: &Arc<Kafka>, req: &Request, r: LeaveGroupRequest) -> Reply {
    let members: Vec<LeaveMember> = if req.version >= 3 {
        r.members
            .iter()
            .map(|m| LeaveMember { member_id: m.member_id.to_string(), group_instance_id: opt(&m.group_instance_id) })
            .collect()
    } else {
        vec![LeaveMember { member_id: r.member_id.to_string(), group_instance_id: None }]
    };
    let (top, codes) = match names::check_group(&r.group_id.0) {
        Err((code, _)) => (code, Vec::new()),
        Ok(()) => k.coordinator.leave(&r.group_id.0, &members),
    };
    let mut resp = LeaveGroupResponse::default();
    if req.version >= 3 {
        resp.error_code = top;
        resp.members = members
            .into_iter()
            .zip(codes)
            .map(|(m, c)| {
                MemberResponse::default()
                    .with_member_id(s(m.member_id))
                    .with_group_instance_id(m.group_instance_id.map(s))
                    .with_error_code(c)
            })
            .collect();
    } else {
        resp.error_code = if top != error::NONE { top } else { codes.first().copied().unwrap_or(error::NONE) };
    }
    reply(req, &resp)
}

/// Kafka's `Group.GroupType` name of the groups this coordinator runs (ListGroups v5).
const CLASSIC: &str = "classic";

pub fn list_groups(k: &Arc<Kafka>, req: &Request, r: ListGroupsRequest) -> Reply {
    let mut listed = k.coordinator.list_groups();
    // Groups known only by their committed offsets ("simple" groups, or whose record went idle):
    // Empty with no protocol type, as Kafka lists them.
    for g in k.retention.groups() {
        if let Err(at) = listed.binary_search_by(|l| l.group_id.cmp(&g)) {
            listed.insert(at, group::GroupListing { group_id: g, protocol_type: String::new(), state: "Empty" });
        }
    }
    // v5 (KIP-848): every group here is a classic one; a types filter without "classic" lists none.
    let classic = r.types_filter.is_empty() || r.types_filter.iter().any(|t| t.eq_ignore_ascii_case(CLASSIC));
    let groups = listed
        .into_iter()
        .filter(|_| classic)
        .filter(|g| r.states_filter.is_empty() || r.states_filter.iter().any(|f| f.eq_ignore_ascii_case(g.state)))
        .map(|g| {
            let mut l =
                ListedGroup::default().with_group_id(GroupId(s(g.group_id))).with_protocol_type(s(g.protocol_type));
            if req.version >= 4 {
                l = l.with_group_state(s(g.state));
            }
            if req.version >= 5 {
                l = l.with_group_type(s(CLASSIC));
            }
            l
        })
        .collect();
    reply(req, &ListGroupsResponse::default().with_groups(groups))
}

pub fn describe_groups(k: &Arc<Kafka>, req: &Request, r: DescribeGroupsRequest) -> Reply {
    let groups = r
        .groups
        .into_iter()
        .map(|id| {
            if let Err((code, _)) = names::check_group(&id.0) {
                return DescribedGroup::default().with_error_code(code).with_group_id(id);
            }
            let d = k.coordinator.describe_group(&id.0);
            let members = d
                .members
                .into_iter()
                .map(|m| {
                    DescribedGroupMember::default()
                        .with_member_id(s(m.member_id))
                        .with_group_instance_id(if req.version >= 4 { m.group_instance_id.map(s) } else { None })
                        .with_client_id(s(m.client_id))
                        .with_client_host(s(m.client_host))
                        .with_member_metadata(m.metadata)
                        .with_member_assignment(m.assignment)
                })
                .collect();
            let g = DescribedGroup::default()
                .with_error_code(d.error)
                .with_group_id(id)
                .with_group_state(s(d.state))
                .with_protocol_type(s(d.protocol_type))
                .with_protocol_data(s(d.protocol))
                .with_members(members);
            if req.version >= 3 {
                g.with_authorized_operations(i32::MIN)
            } else {
                g
            }
        })
        .collect();
    reply(req, &DescribeGroupsResponse::default().with_groups(groups))
}

/// DeleteGroups: an Empty group (or one known only by its committed offsets) loses its
/// membership state and its offsets; a group with members is NON_EMPTY_GROUP.
pub async fn delete_groups(k: &Arc<Kafka>, req: &Request, r: DeleteGroupsRequest) -> Reply {
    let mut results = Vec::with_capacity(r.groups_names.len());
    for id in r.groups_names {
        if let Err((code, _)) = names::check_group(&id.0) {
            let refused = delete_groups_response::DeletableGroupResult::default().with_group_id(id);
            results.push(refused.with_error_code(code));
            continue;
        }
        let mut code = k.coordinator.delete_group(&id.0);
        let offsets_removed = (code == group::errors::NONE || code == group::errors::GROUP_ID_NOT_FOUND)
            && k.shared.offsets.remove_group(&id.0);
        if offsets_removed {
            code = group::errors::NONE;
        }
        if code == group::errors::NONE {
            k.commit_metadata.remove_group(&id.0).await;
            k.retention.forget(&[id.0.to_string()]).await;
        }
        results.push(delete_groups_response::DeletableGroupResult::default().with_group_id(id).with_error_code(code));
    }
    reply(req, &DeleteGroupsResponse::default().with_results(results))
}
