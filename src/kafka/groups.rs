//! Consumer groups over the wire: FindCoordinator (this node for groups; transactions are
//! refused with a non-retriable error so a transactional producer fails fast), the classic
//! protocol handed to [`super::group::Coordinator`], and committed offsets, which live with
//! RocketMQ's consumer offsets (`config/consumerOffset.json`, same "next offset" meaning), so
//! both kinds of tools see Kafka groups' progress. Commit metadata is kept in memory.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator as CoordinatorEntry;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_fetch_response::*;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::conn::{reply, Reply, Request};
use super::group::{self, JoinRequest, LeaveMember, SyncRequest};
use super::metadata::s;
use super::records::error;
use super::Kafka;

const OFFSET_METADATA_TOO_LARGE: i16 = 12;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
/// `offset.metadata.max.bytes`.
const MAX_METADATA: usize = 4096;

fn opt(v: &Option<StrBytes>) -> Option<String> {
    v.as_ref().map(|x| x.to_string())
}

pub fn find_coordinator(k: &Kafka, req: &Request, r: FindCoordinatorRequest) -> Reply {
    let keys: Vec<StrBytes> = if req.version >= 4 { r.coordinator_keys.clone() } else { vec![r.key.clone()] };
    let answer = |key: StrBytes| {
        let c = CoordinatorEntry::default().with_key(key);
        match r.key_type {
            0 => c.with_node_id(BrokerId(k.node_id)).with_host(s(k.advertised.0.clone())).with_port(k.advertised.1),
            // A non-retriable error: the Java producer (v4) fails on any; librdkafka (v0-2) only
            // on TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and keeps asking on anything else.
            1 => c
                .with_node_id(BrokerId(-1))
                .with_port(-1)
                .with_error_code(if req.version >= 4 {
                    error::INVALID_REQUEST
                } else {
                    TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                })
                .with_error_message(Some(s(
                    "transactions are not supported by this broker (ferrocket): use a non-transactional producer",
                ))),
            t => c
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
    let (top, codes) = k.coordinator.leave(&r.group_id.0, &members);
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

pub async fn offset_commit(k: &Arc<Kafka>, req: &Request, r: OffsetCommitRequest) -> Reply {
    let group = r.group_id.0.to_string();
    let check = k.coordinator.validate_offset_commit(
        &group,
        &r.member_id,
        r.generation_id_or_member_epoch,
        r.group_instance_id.as_deref(),
        req.version,
    );
    if check == error::NONE {
        register_group(k, &group).await;
    }
    let mut topics = Vec::with_capacity(r.topics.len());
    for t in r.topics {
        let topic = t.name.0.to_string();
        let view = k.shared.topics.view(&topic);
        let mut metadata = Vec::new();
        let parts = t
            .partitions
            .iter()
            .map(|p| {
                let q = p.partition_index;
                let code = if check != error::NONE {
                    check
                } else if !view.is_some_and(|v| q >= 0 && q < v.read_queue_nums) {
                    error::UNKNOWN_TOPIC_OR_PARTITION
                } else if p.committed_metadata.as_ref().is_some_and(|m| m.len() > MAX_METADATA) {
                    OFFSET_METADATA_TOO_LARGE
                } else {
                    k.shared.offsets.commit(&group, &topic, q, p.committed_offset);
                    metadata.push((q, p.committed_metadata.as_deref().unwrap_or("").to_owned()));
                    error::NONE
                };
                OffsetCommitResponsePartition::default().with_partition_index(q).with_error_code(code)
            })
            .collect();
        for (q, m) in metadata {
            k.commit_metadata.set(&group, &topic, q, &m).await;
        }
        topics.push(OffsetCommitResponseTopic::default().with_name(t.name).with_partitions(parts));
    }
    reply(req, &OffsetCommitResponse::default().with_topics(topics))
}

/// A Kafka group's first commit makes it a subscription group with its `%RETRY%` topic, as a
/// RocketMQ consumer's heartbeat does, so RocketMQ admin tools (consumerProgress) see its lag.
async fn register_group(k: &Kafka, group: &str) {
    let sh = &k.shared;
    if sh.groups.contains(group) {
        return;
    }
    let Some((g, created)) = sh.groups.find_or_create(group) else { return };
    let retry = crate::model::group::retry_topic(group);
    let (_, topic_created) = sh.topics.create_if_absent(
        &retry,
        g.retry_queue_nums.max(1),
        crate::model::perm::READ | crate::model::perm::WRITE,
        0,
    );
    if created {
        let _ = sh.groups.persist().await;
    }
    if topic_created {
        let _ = sh.topics.persist().await;
        sh.topics_changed.notify_one();
    }
}

/// One partition's committed offset: -1 with no error when nothing was committed.
fn committed(k: &Kafka, group: &str, topic: &str, q: i32) -> (i64, String) {
    let o = k.shared.offsets.query(group, topic, q);
    if o < 0 {
        return (-1, String::new());
    }
    (o, k.commit_metadata.get(group, topic, q))
}

/// (topic, [(partition, committed offset, metadata)]) for the topics asked (`None`: every
/// topic the group committed on).
type Committed = Vec<(TopicName, Vec<(i32, i64, String)>)>;

fn lookup(k: &Kafka, group: &str, wanted: Option<Vec<(TopicName, Vec<i32>)>>) -> Committed {
    let wanted: Vec<(TopicName, Option<Vec<i32>>)> = match wanted {
        Some(ts) => ts.into_iter().map(|(n, p)| (n, Some(p))).collect(),
        None => k.shared.offsets.topics_of_group(group).into_iter().map(|t| (TopicName(s(t)), None)).collect(),
    };
    wanted
        .into_iter()
        .map(|(name, parts)| {
            let qs: Vec<i32> = match parts {
                Some(w) => w,
                None => k.shared.offsets.queue_offsets(group, &name.0).into_keys().collect(),
            };
            let ps = qs
                .into_iter()
                .map(|q| {
                    let (o, m) = committed(k, group, &name.0, q);
                    (q, o, m)
                })
                .collect();
            (name, ps)
        })
        .collect()
}

pub fn offset_fetch(k: &Arc<Kafka>, req: &Request, r: OffsetFetchRequest) -> Reply {
    if req.version >= 8 {
        let groups = r
            .groups
            .into_iter()
            .map(|g| {
                let wanted = g.topics.map(|ts| ts.into_iter().map(|t| (t.name, t.partition_indexes)).collect());
                let topics = lookup(k, &g.group_id.0, wanted)
                    .into_iter()
                    .map(|(name, ps)| {
                        let ps = ps.into_iter().map(|(q, o, m)| {
                            OffsetFetchResponsePartitions::default()
                                .with_partition_index(q)
                                .with_committed_offset(o)
                                .with_committed_leader_epoch(-1)
                                .with_metadata(Some(s(m)))
                        });
                        OffsetFetchResponseTopics::default().with_name(name).with_partitions(ps.collect())
                    })
                    .collect();
                OffsetFetchResponseGroup::default().with_group_id(g.group_id).with_topics(topics)
            })
            .collect();
        return reply(req, &OffsetFetchResponse::default().with_groups(groups));
    }
    let wanted = r.topics.map(|ts| ts.into_iter().map(|t| (t.name, t.partition_indexes)).collect());
    let epoch = if req.version >= 5 { -1 } else { 0 };
    let topics = lookup(k, &r.group_id.0, wanted)
        .into_iter()
        .map(|(name, ps)| {
            let ps = ps.into_iter().map(|(q, o, m)| {
                OffsetFetchResponsePartition::default()
                    .with_partition_index(q)
                    .with_committed_offset(o)
                    .with_committed_leader_epoch(epoch)
                    .with_metadata(Some(s(m)))
            });
            OffsetFetchResponseTopic::default().with_name(name).with_partitions(ps.collect())
        })
        .collect();
    reply(req, &OffsetFetchResponse::default().with_topics(topics))
}

pub fn list_groups(k: &Arc<Kafka>, req: &Request, r: ListGroupsRequest) -> Reply {
    let groups = k
        .coordinator
        .list_groups()
        .into_iter()
        .filter(|g| r.states_filter.is_empty() || r.states_filter.iter().any(|f| f.eq_ignore_ascii_case(g.state)))
        .map(|g| {
            let l = ListedGroup::default().with_group_id(GroupId(s(g.group_id))).with_protocol_type(s(g.protocol_type));
            if req.version >= 4 {
                l.with_group_state(s(g.state))
            } else {
                l
            }
        })
        .collect();
    reply(req, &ListGroupsResponse::default().with_groups(groups))
}

pub fn describe_groups(k: &Arc<Kafka>, req: &Request, r: DescribeGroupsRequest) -> Reply {
    let groups = r
        .groups
        .into_iter()
        .map(|id| {
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
        let mut code = k.coordinator.delete_group(&id.0);
        let offsets_removed = (code == group::errors::NONE || code == group::errors::GROUP_ID_NOT_FOUND)
            && k.shared.offsets.remove_group(&id.0);
        if offsets_removed {
            code = group::errors::NONE;
        }
        if code == group::errors::NONE {
            k.commit_metadata.remove_group(&id.0).await;
        }
        results.push(delete_groups_response::DeletableGroupResult::default().with_group_id(id).with_error_code(code));
    }
    reply(req, &DeleteGroupsResponse::default().with_results(results))
}
