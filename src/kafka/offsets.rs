//! OffsetCommit and OffsetFetch. Committed offsets live with RocketMQ's consumer offsets
//! (`config/consumerOffset.json`, keyed `topic@group`, same "next offset" meaning), so both kinds
//! of tools see Kafka groups' progress; commit metadata strings in [`super::commit_metadata`].
//! Group and topic names pass [`super::names`] before anything is read or stored.

use std::sync::Arc;

use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_fetch_response::*;
use kafka_protocol::messages::*;

use super::api::error;
use super::api::{reply, Reply, Request};
use super::metadata::s;
use super::{names, Kafka};

const OFFSET_METADATA_TOO_LARGE: i16 = 12;
/// `offset.metadata.max.bytes`.
const MAX_METADATA: usize = 4096;

pub async fn offset_commit(k: &Arc<Kafka>, req: &Request, r: OffsetCommitRequest) -> Reply {
    let group = r.group_id.0.to_string();
    let check = match names::group_code(&group) {
        error::NONE => k.coordinator.validate_offset_commit(
            &group,
            &r.member_id,
            r.generation_id_or_member_epoch,
            r.group_instance_id.as_deref(),
            req.version,
        ),
        refused => refused,
    };
    if check == error::NONE {
        register_group(k, &group).await;
        k.retention.committed(&group, u64::try_from(crate::store::now_ms()).unwrap_or(0)).await;
    }
    let mut topics = Vec::with_capacity(r.topics.len());
    for t in r.topics {
        let topic = t.name.0.to_string();
        let named = names::check_topic(&k.shared.config, &topic).err().map_or(error::NONE, |e| e.0);
        let view = k.shared.topics.view(&topic);
        let mut metadata = Vec::new();
        let parts = t
            .partitions
            .iter()
            .map(|p| {
                let q = p.partition_index;
                let code = if check != error::NONE {
                    check
                } else if named != error::NONE {
                    named
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

/// The offsets of a committed transaction (TxnOffsetCommit kept them pending), written as an
/// OffsetCommit writes its own: the group registered, its retention clock reset, the offsets
/// and their metadata stored.
pub(super) async fn commit_txn_offsets(k: &Arc<Kafka>, pending: &[super::txn_coordinator::PendingOffset]) {
    let now = u64::try_from(crate::store::now_ms()).unwrap_or(0);
    let groups: std::collections::BTreeSet<&str> = pending.iter().map(|o| o.group.as_str()).collect();
    for g in groups {
        register_group(k, g).await;
        k.retention.committed(g, now).await;
    }
    for o in pending {
        k.shared.offsets.commit(&o.group, &o.topic, o.partition, o.offset);
        k.commit_metadata.set(&o.group, &o.topic, o.partition, &o.metadata).await;
    }
}

/// A Kafka group's first commit makes it a subscription group with its `%RETRY%` topic, as a
/// RocketMQ consumer's heartbeat does, so RocketMQ admin tools (consumerProgress) see its lag.
async fn register_group(k: &Kafka, group: &str) {
    let sh = &k.shared;
    // Only a group RocketMQ could name itself gets a `%RETRY%` topic (Kafka allows '.' and ':').
    if sh.groups.contains(group) || crate::model::name::check_group(group).is_err() {
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
        sh.topics_changed().await;
    }
}

/// One partition's committed offset: -1 with no error when nothing was committed, -1 with the
/// name's error for a topic a Kafka client may not name.
fn committed(k: &Kafka, group: &str, topic: &str, q: i32) -> (i64, String, i16) {
    if let Err((code, _)) = names::check_topic(&k.shared.config, topic) {
        return (-1, String::new(), code);
    }
    let o = k.shared.offsets.query(group, topic, q);
    if o < 0 {
        return (-1, String::new(), error::NONE);
    }
    (o, k.commit_metadata.get(group, topic, q), error::NONE)
}

/// (topic, [(partition, committed offset, metadata, error)]) for the topics asked (`None`: every
/// topic the group committed on that a Kafka client may see).
type Committed = Vec<(TopicName, Vec<(i32, i64, String, i16)>)>;

fn lookup(k: &Kafka, group: &str, wanted: Option<Vec<(TopicName, Vec<i32>)>>) -> Committed {
    let wanted: Vec<(TopicName, Option<Vec<i32>>)> = match wanted {
        Some(ts) => ts.into_iter().map(|(n, p)| (n, Some(p))).collect(),
        None => {
            let topics = k.shared.offsets.topics_of_group(group).into_iter();
            topics
                .filter(|t| names::check_topic(&k.shared.config, t).is_ok())
                .map(|t| (TopicName(s(t)), None))
                .collect()
        }
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
                    let (o, m, code) = committed(k, group, &name.0, q);
                    (q, o, m, code)
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
                if let Err((code, _)) = names::check_group(&g.group_id.0) {
                    return OffsetFetchResponseGroup::default().with_group_id(g.group_id).with_error_code(code);
                }
                let wanted = g.topics.map(|ts| ts.into_iter().map(|t| (t.name, t.partition_indexes)).collect());
                let topics = lookup(k, &g.group_id.0, wanted)
                    .into_iter()
                    .map(|(name, ps)| {
                        let ps = ps.into_iter().map(|(q, o, m, code)| {
                            OffsetFetchResponsePartitions::default()
                                .with_partition_index(q)
                                .with_error_code(code)
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
    let group_code = names::group_code(&r.group_id.0);
    if group_code != error::NONE && req.version >= 2 {
        return reply(req, &OffsetFetchResponse::default().with_error_code(group_code));
    }
    let topics = lookup(k, &r.group_id.0, wanted)
        .into_iter()
        .map(|(name, ps)| {
            let ps = ps.into_iter().map(|(q, o, m, code)| {
                OffsetFetchResponsePartition::default()
                    .with_partition_index(q)
                    .with_error_code(if group_code != error::NONE { group_code } else { code })
                    .with_committed_offset(o)
                    .with_committed_leader_epoch(epoch)
                    .with_metadata(Some(s(m)))
            });
            OffsetFetchResponseTopic::default().with_name(name).with_partitions(ps.collect())
        })
        .collect();
    reply(req, &OffsetFetchResponse::default().with_topics(topics))
}
