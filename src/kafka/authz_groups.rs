//! The group, offset and admin half of [`super::authz`]: group SUB for the group APIs and
//! offsets, admin for topic and group deletion and creation, broker configs, config changes.
//!
//! May import: what `authz.rs` may, but not `authz.rs` itself (the shared parts are in
//! `authz_gate.rs`).

use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::*;

use super::api::{error, reply, Request};
use super::authz_gate::{answer_or_patch, msg, patched, split, Gate};
use crate::acl::authority::Authority;
use crate::acl::perm::{ANY, SUB};

/// DescribeConfigs resource types (Kafka's `ConfigResource.Type`).
const TOPIC_RESOURCE: i8 = 2;
const GROUP_RESOURCE: i8 = 32;

pub fn gate(who: &Authority, req: &Request, body: &mut RequestKind, log: &dyn Fn(&str, &str)) -> Gate {
    let group = |g: &str| -> Option<String> { who.group(g, SUB).err().inspect(|why| log(g, why)) };
    let code = error::GROUP_AUTHORIZATION_FAILED;
    match body {
        RequestKind::JoinGroup(r) => match group(&r.group_id) {
            None => Gate::Pass,
            Some(_) => {
                Gate::Answer(reply(req, &JoinGroupResponse::default().with_error_code(code).with_generation_id(-1)))
            }
        },
        RequestKind::SyncGroup(r) => match group(&r.group_id) {
            None => Gate::Pass,
            Some(_) => Gate::Answer(reply(req, &SyncGroupResponse::default().with_error_code(code))),
        },
        RequestKind::Heartbeat(r) => match group(&r.group_id) {
            None => Gate::Pass,
            Some(_) => Gate::Answer(reply(req, &HeartbeatResponse::default().with_error_code(code))),
        },
        RequestKind::LeaveGroup(r) => match group(&r.group_id) {
            None => Gate::Pass,
            Some(_) => Gate::Answer(reply(req, &LeaveGroupResponse::default().with_error_code(code))),
        },
        RequestKind::FindCoordinator(r) => find_coordinator(req, r, &group),
        RequestKind::OffsetCommit(r) => offset_commit(who, req, r, &group, log),
        RequestKind::OffsetFetch(r) => offset_fetch(req, r, &group),
        RequestKind::DescribeGroups(r) => {
            let (ok, no) = split(std::mem::take(&mut r.groups), |g| g.0.as_str(), |g| who.group(g, SUB), log);
            r.groups = ok;
            if no.is_empty() {
                return Gate::Pass;
            }
            let refused = no.into_iter().map(|g| DescribedGroup::default().with_group_id(g).with_error_code(code));
            answer_or_patch::<DescribeGroupsResponse, _>(req, r.groups.is_empty(), refused.collect(), |r, e| {
                r.groups.extend(e)
            })
        }
        RequestKind::ListGroups(_) => {
            let who = who.clone();
            Gate::Patch(Box::new(move |req: &Request, frame: bytes::BytesMut| {
                patched::<ListGroupsResponse>(req, frame, |l| l.groups.retain(|g| who.group(&g.group_id, SUB).is_ok()))
            }))
        }
        RequestKind::DeleteGroups(r) => admin_only(who, req, log, || {
            let results = r
                .groups_names
                .iter()
                .map(|g| DeletableGroupResult::default().with_group_id(g.clone()).with_error_code(code));
            reply(req, &DeleteGroupsResponse::default().with_results(results.collect()))
        }),
        RequestKind::CreateTopics(r) => admin_only(who, req, log, || {
            let why = "Authorization failed: creating topics needs an admin account";
            let results = r.topics.iter().map(|t| {
                CreatableTopicResult::default()
                    .with_name(t.name.clone())
                    .with_error_code(error::CLUSTER_AUTHORIZATION_FAILED)
                    .with_error_message(msg(why))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
            });
            reply(req, &CreateTopicsResponse::default().with_topics(results.collect()))
        }),
        RequestKind::DeleteTopics(r) => admin_only(who, req, log, || {
            let why = "Authorization failed: deleting topics needs an admin account";
            let results = r.topic_names.iter().map(|t| {
                let d = DeletableTopicResult::default()
                    .with_name(Some(t.clone()))
                    .with_error_code(error::CLUSTER_AUTHORIZATION_FAILED);
                if req.version >= 5 {
                    d.with_error_message(msg(why))
                } else {
                    d
                }
            });
            reply(req, &DeleteTopicsResponse::default().with_responses(results.collect()))
        }),
        RequestKind::DescribeConfigs(r) => {
            let allowed = |res: &describe_configs_request::DescribeConfigsResource| match res.resource_type {
                TOPIC_RESOURCE => who.topic(&res.resource_name, ANY),
                GROUP_RESOURCE => who.group(&res.resource_name, SUB),
                _ => who.admin(),
            };
            let (ok, no): (Vec<_>, Vec<_>) =
                std::mem::take(&mut r.resources).into_iter().partition(|res| allowed(res).is_ok());
            r.resources = ok;
            if no.is_empty() {
                return Gate::Pass;
            }
            let refused = no.into_iter().map(|res| {
                let (code, why) = match res.resource_type {
                    TOPIC_RESOURCE => {
                        (error::TOPIC_AUTHORIZATION_FAILED, "Not authorized to describe the topic's configs")
                    }
                    GROUP_RESOURCE => {
                        (error::GROUP_AUTHORIZATION_FAILED, "Not authorized to describe the group's configs")
                    }
                    _ => (error::CLUSTER_AUTHORIZATION_FAILED, "Describing broker configs needs an admin account"),
                };
                log(&res.resource_name, why);
                DescribeConfigsResult::default()
                    .with_error_code(code)
                    .with_error_message(msg(why))
                    .with_resource_type(res.resource_type)
                    .with_resource_name(res.resource_name)
            });
            answer_or_patch::<DescribeConfigsResponse, _>(req, r.resources.is_empty(), refused.collect(), |r, e| {
                r.results.extend(e)
            })
        }
        RequestKind::AlterConfigs(r) => admin_only(who, req, log, || {
            let results = r.resources.iter().map(|res| {
                let (code, why) = refused_alter(res.resource_type);
                alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_error_code(code)
                    .with_error_message(msg(why))
                    .with_resource_type(res.resource_type)
                    .with_resource_name(res.resource_name.clone())
            });
            reply(req, &AlterConfigsResponse::default().with_responses(results.collect()))
        }),
        RequestKind::IncrementalAlterConfigs(r) => admin_only(who, req, log, || {
            let results = r.resources.iter().map(|res| {
                let (code, why) = refused_alter(res.resource_type);
                incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_error_code(code)
                    .with_error_message(msg(why))
                    .with_resource_type(res.resource_type)
                    .with_resource_name(res.resource_name.clone())
            });
            reply(req, &IncrementalAlterConfigsResponse::default().with_responses(results.collect()))
        }),
        _ => match who.admin() {
            Ok(()) => Gate::Pass,
            Err(why) => Gate::Close(format!("{:?} is not authorized for this account: {why}", req.key)),
        },
    }
}

/// The refusal of an alteration by a non-admin account.
fn refused_alter(resource_type: i8) -> (i16, &'static str) {
    match resource_type {
        TOPIC_RESOURCE => (error::TOPIC_AUTHORIZATION_FAILED, "Altering topic configs needs an admin account"),
        GROUP_RESOURCE => (error::GROUP_AUTHORIZATION_FAILED, "Altering group configs needs an admin account"),
        _ => (error::CLUSTER_AUTHORIZATION_FAILED, "Altering configs needs an admin account"),
    }
}

fn admin_only(
    who: &Authority,
    req: &Request,
    log: &dyn Fn(&str, &str),
    refusal: impl FnOnce() -> super::api::Reply,
) -> Gate {
    match who.admin() {
        Ok(()) => Gate::Pass,
        Err(why) => {
            log(&format!("{:?}", req.key), &why);
            Gate::Answer(refusal())
        }
    }
}

fn find_coordinator(req: &Request, r: &mut FindCoordinatorRequest, group: &dyn Fn(&str) -> Option<String>) -> Gate {
    if r.key_type != 0 {
        return Gate::Pass; // transactions: the handler answers them
    }
    let code = error::GROUP_AUTHORIZATION_FAILED;
    if req.version < 4 {
        return match group(&r.key) {
            None => Gate::Pass,
            Some(why) => Gate::Answer(reply(
                req,
                &FindCoordinatorResponse::default()
                    .with_error_code(code)
                    .with_error_message(if req.version >= 1 { msg(&why) } else { None })
                    .with_node_id((-1).into())
                    .with_port(-1),
            )),
        };
    }
    let (ok, no): (Vec<_>, Vec<_>) =
        std::mem::take(&mut r.coordinator_keys).into_iter().partition(|g| group(g).is_none());
    r.coordinator_keys = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused = no.into_iter().map(|key| {
        Coordinator::default()
            .with_key(key)
            .with_error_code(code)
            .with_error_message(msg("Not authorized to access the group"))
            .with_node_id((-1).into())
            .with_port(-1)
    });
    answer_or_patch::<FindCoordinatorResponse, _>(req, r.coordinator_keys.is_empty(), refused.collect(), |r, e| {
        r.coordinators.extend(e)
    })
}

fn offset_commit(
    who: &Authority,
    req: &Request,
    r: &mut OffsetCommitRequest,
    group: &dyn Fn(&str) -> Option<String>,
    log: &dyn Fn(&str, &str),
) -> Gate {
    let entries =
        |topics: &[offset_commit_request::OffsetCommitRequestTopic], code: i16| -> Vec<OffsetCommitResponseTopic> {
            topics
                .iter()
                .map(|t| {
                    let parts = t.partitions.iter().map(|p| {
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(code)
                    });
                    OffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(parts.collect())
                })
                .collect()
        };
    if group(&r.group_id).is_some() {
        let refused = entries(&r.topics, error::GROUP_AUTHORIZATION_FAILED);
        return Gate::Answer(reply(req, &OffsetCommitResponse::default().with_topics(refused)));
    }
    let (ok, no) = split(std::mem::take(&mut r.topics), |t| t.name.0.as_str(), |t| who.topic(t, SUB), log);
    r.topics = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused = entries(&no, error::TOPIC_AUTHORIZATION_FAILED);
    answer_or_patch::<OffsetCommitResponse, _>(req, r.topics.is_empty(), refused, |r, e| r.topics.extend(e))
}

fn offset_fetch(req: &Request, r: &mut OffsetFetchRequest, group: &dyn Fn(&str) -> Option<String>) -> Gate {
    let code = error::GROUP_AUTHORIZATION_FAILED;
    if req.version < 8 {
        if group(&r.group_id).is_none() {
            return Gate::Pass;
        }
        // v1 has no top-level error: every requested partition carries it.
        let topics = r.topics.iter().flatten().map(|t| {
            let parts = t.partition_indexes.iter().map(|p| {
                offset_fetch_response::OffsetFetchResponsePartition::default()
                    .with_partition_index(*p)
                    .with_committed_offset(-1)
                    .with_error_code(code)
            });
            offset_fetch_response::OffsetFetchResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(parts.collect())
        });
        let mut resp = OffsetFetchResponse::default().with_topics(topics.collect());
        if req.version >= 2 {
            resp = resp.with_error_code(code);
        }
        return Gate::Answer(reply(req, &resp));
    }
    let (ok, no): (Vec<_>, Vec<_>) =
        std::mem::take(&mut r.groups).into_iter().partition(|g| group(&g.group_id).is_none());
    r.groups = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused =
        no.into_iter().map(|g| OffsetFetchResponseGroup::default().with_group_id(g.group_id).with_error_code(code));
    answer_or_patch::<OffsetFetchResponse, _>(req, r.groups.is_empty(), refused.collect(), |r, e| r.groups.extend(e))
}
