//! Kafka authorization with the ACL accounts (`aclEnable=true`): before a handler runs, every
//! topic and group its request names is checked against the connection's [`Authority`].
//! Allowed parts go to the handler unchanged; refused parts are answered here with
//! TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED and merged into the handler's answer, so a request
//! naming one allowed and one refused topic gets both answers, as from Kafka.
//!
//! May import: `crate::acl` (authority, permission bits), the Kafka codec, `super::api`,
//! `super::metadata::visible`. Handlers never import it: `conn.rs` calls [`gate`].
//!
//! ```text
//! Produce                                 topic PUB
//! Fetch, ListOffsets                      topic SUB
//! Metadata                                topic PUB or SUB; listing all topics lists only those;
//!                                         auto-creation only for admins
//! OffsetCommit                            group SUB, then topic SUB
//! OffsetFetch, Join/Sync/Heartbeat/Leave,
//! FindCoordinator(group), DescribeGroups  group SUB (groupPerms, as %RETRY%<group>)
//! ListGroups                              lists only the groups with SUB
//! CreateTopics, DeleteTopics              admin (CLUSTER_AUTHORIZATION_FAILED)
//! DeleteGroups                            admin (GROUP_AUTHORIZATION_FAILED per group)
//! DescribeConfigs                         topic PUB or SUB; group SUB; broker resources admin
//! DeleteRecords                           topic PUB and SUB (Kafka's DELETE: the account that
//!                                         writes and reads it, as a Streams app its repartition topics)
//! AlterConfigs, IncrementalAlterConfigs   admin (TOPIC_/CLUSTER_AUTHORIZATION_FAILED per resource)
//! InitProducerId, DescribeCluster         any authenticated account
//! transactions                            authz_txn.rs (topic PUB, group SUB, admin to list)
//! CreatePartitions, DescribeLogDirs,
//! OffsetDelete, DescribeTopicPartitions   authz_admin.rs (admin; DescribeTopicPartitions as Metadata)
//! any other API                           admin, else the connection is closed
//! ```

use bytes::BytesMut;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;
use tracing::info;

use super::api::{error, Request};
pub use super::authz_gate::Gate;
use super::authz_gate::{answer_or_patch, msg, patched, split};
use super::Kafka;
use crate::acl::authority::Authority;
use crate::acl::perm::{ANY, PUB, SUB};

/// Checks `body` for `who`, narrowing it to what is allowed.
pub fn gate(k: &Kafka, who: &Authority, user: &str, req: &Request, body: &mut RequestKind) -> Gate {
    if who.is_unrestricted() {
        return Gate::Pass;
    }
    let log = |resource: &str, why: &str| {
        info!(peer = %req.peer, user = %user.escape_debug(), api = ?req.key, resource = %resource.escape_debug(), why, "Kafka request refused by the ACL");
    };
    match body {
        RequestKind::Produce(r) => produce(who, req, r, &log),
        RequestKind::Fetch(r) => fetch(who, req, r, &log),
        RequestKind::ListOffsets(r) => list_offsets(who, req, r, &log),
        RequestKind::DeleteRecords(r) => delete_records(who, req, r, &log),
        RequestKind::Metadata(r) => metadata(k, who, req, r, &log),
        RequestKind::InitProducerId(_) | RequestKind::DescribeCluster(_) => Gate::Pass,
        other => match super::authz_txn::gate(who, req, other, &log) {
            Some(gate) => gate,
            None => match super::authz_admin::gate(who, req, other, &log) {
                Some(gate) => gate,
                None => super::authz_groups::gate(who, req, other, &log),
            },
        },
    }
}

fn produce(who: &Authority, req: &Request, r: &mut ProduceRequest, log: &dyn Fn(&str, &str)) -> Gate {
    let (ok, no) = split(std::mem::take(&mut r.topic_data), |t| t.name.0.as_str(), |t| who.topic(t, PUB), log);
    r.topic_data = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused: Vec<TopicProduceResponse> = no
        .into_iter()
        .map(|t| {
            let why = format!("Not authorized to write to topic {}", t.name.0.as_str());
            let parts = t.partition_data.iter().map(|p| {
                let resp = PartitionProduceResponse::default()
                    .with_index(p.index)
                    .with_error_code(error::TOPIC_AUTHORIZATION_FAILED)
                    .with_base_offset(-1)
                    .with_log_append_time_ms(-1)
                    .with_log_start_offset(-1);
                if req.version >= 8 {
                    resp.with_error_message(msg(&why))
                } else {
                    resp
                }
            });
            TopicProduceResponse::default().with_name(t.name).with_partition_responses(parts.collect())
        })
        .collect();
    if r.topic_data.is_empty() && r.acks == 0 {
        return Gate::Answer(Ok(None));
    }
    answer_or_patch::<ProduceResponse, _>(req, r.topic_data.is_empty(), refused, |r, e| r.responses.extend(e))
}

fn fetch(who: &Authority, req: &Request, r: &mut FetchRequest, log: &dyn Fn(&str, &str)) -> Gate {
    let (ok, no) = split(std::mem::take(&mut r.topics), |t| t.topic.0.as_str(), |t| who.topic(t, SUB), log);
    r.topics = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused: Vec<FetchableTopicResponse> = no
        .into_iter()
        .map(|t| {
            let parts = t.partitions.iter().map(|p| {
                PartitionData::default()
                    .with_partition_index(p.partition)
                    .with_error_code(error::TOPIC_AUTHORIZATION_FAILED)
                    .with_high_watermark(-1)
            });
            FetchableTopicResponse::default().with_topic(t.topic).with_partitions(parts.collect())
        })
        .collect();
    answer_or_patch::<FetchResponse, _>(req, r.topics.is_empty(), refused, |r, e| r.responses.extend(e))
}

fn list_offsets(who: &Authority, req: &Request, r: &mut ListOffsetsRequest, log: &dyn Fn(&str, &str)) -> Gate {
    let (ok, no) = split(std::mem::take(&mut r.topics), |t| t.name.0.as_str(), |t| who.topic(t, SUB), log);
    r.topics = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused: Vec<ListOffsetsTopicResponse> = no
        .into_iter()
        .map(|t| {
            let parts = t.partitions.iter().map(|p| {
                ListOffsetsPartitionResponse::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(error::TOPIC_AUTHORIZATION_FAILED)
                    .with_timestamp(-1)
                    .with_offset(-1)
            });
            ListOffsetsTopicResponse::default().with_name(t.name).with_partitions(parts.collect())
        })
        .collect();
    answer_or_patch::<ListOffsetsResponse, _>(req, r.topics.is_empty(), refused, |r, e| r.topics.extend(e))
}

fn metadata(k: &Kafka, who: &Authority, req: &Request, r: &mut MetadataRequest, log: &dyn Fn(&str, &str)) -> Gate {
    let admin = who.admin().is_ok();
    if !admin {
        r.allow_auto_topic_creation = false;
    }
    let all = match &r.topics {
        None => true,
        Some(t) => t.is_empty() && req.version == 0,
    };
    if all {
        let who = who.clone();
        return Gate::Patch(Box::new(move |req: &Request, frame: BytesMut| {
            patched::<MetadataResponse>(req, frame, |m| {
                m.topics.retain(|t| t.name.as_ref().is_some_and(|n| who.topic(n.0.as_str(), ANY).is_ok()))
            })
        }));
    }
    let topics = r.topics.take().unwrap_or_default();
    let name = |t: &metadata_request::MetadataRequestTopic| t.name.as_ref().map_or("", |n| n.0.as_str()).to_owned();
    let (ok, no) = split(topics, |t| t.name.as_ref().map_or("", |n| n.0.as_str()), |t| who.topic(t, ANY), log);
    // Metadata v0-3 creates unknown topics whatever the request says: not for a non-admin.
    let (ok, unknown): (Vec<_>, Vec<_>) = if !admin && req.version < 4 {
        ok.into_iter().partition(|t| k.shared.topics.view(&name(t)).is_some())
    } else {
        (ok, Vec::new())
    };
    r.topics = Some(ok);
    if no.is_empty() && unknown.is_empty() {
        return Gate::Pass;
    }
    let entry = |t: metadata_request::MetadataRequestTopic, code| {
        MetadataResponseTopic::default().with_name(t.name).with_error_code(code)
    };
    let mut refused: Vec<MetadataResponseTopic> =
        no.into_iter().map(|t| entry(t, error::TOPIC_AUTHORIZATION_FAILED)).collect();
    refused.extend(unknown.into_iter().map(|t| entry(t, error::UNKNOWN_TOPIC_OR_PARTITION)));
    Gate::Patch(Box::new(move |req: &Request, frame: BytesMut| {
        patched::<MetadataResponse>(req, frame, |m| m.topics.extend(refused))
    }))
}

/// DeleteRecords: Kafka wants DELETE on the topic; here an account needs both PUB and SUB on it.
fn delete_records(who: &Authority, req: &Request, r: &mut DeleteRecordsRequest, log: &dyn Fn(&str, &str)) -> Gate {
    let both = |t: &str| who.topic(t, PUB).and_then(|()| who.topic(t, SUB));
    let (ok, no) = split(std::mem::take(&mut r.topics), |t| t.name.0.as_str(), both, log);
    r.topics = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused: Vec<delete_records_response::DeleteRecordsTopicResult> = no
        .into_iter()
        .map(|t| {
            let parts = t.partitions.iter().map(|p| {
                delete_records_response::DeleteRecordsPartitionResult::default()
                    .with_partition_index(p.partition_index)
                    .with_low_watermark(-1)
                    .with_error_code(error::TOPIC_AUTHORIZATION_FAILED)
            });
            delete_records_response::DeleteRecordsTopicResult::default()
                .with_name(t.name)
                .with_partitions(parts.collect())
        })
        .collect();
    answer_or_patch::<DeleteRecordsResponse, _>(req, r.topics.is_empty(), refused, |r, e| r.topics.extend(e))
}
