//! The transaction coordinator over the wire (KIP-98, transactions V1 with the server-side
//! checks of KIP-890 part 1): InitProducerId with a transactional id, AddPartitionsToTxn (v0-3,
//! the client versions; v4+ is broker-to-broker and not advertised: this node is every
//! partition's leader and checks transactional produces itself), AddOffsetsToTxn,
//! TxnOffsetCommit, EndTxn. ListTransactions and DescribeTransactions are in `txn_admin.rs`.
//!
//! Each handler checks names ([`check_transactional_id`], `names.rs`), asks the state machine
//! (`txn_coordinator.rs`) under the log's lock, persists the change (`txn_log.rs`) before it
//! answers, and runs a completion (`txn_markers.rs`) where EndTxn or a fencing InitProducerId
//! prepared one. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for the versions before it existed
//! (InitProducerId < 4, EndTxn / AddPartitionsToTxn / AddOffsetsToTxn < 2), as Kafka answers.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;

use super::api::error;
use super::api::{reply, Reply, Request};
use super::txn_coordinator::{check_transactional_id, Init, PendingOffset};
use super::{names, producer_ids, txn_markers, Kafka};

const OFFSET_METADATA_TOO_LARGE: i16 = 12;
/// `offset.metadata.max.bytes`.
const MAX_METADATA: usize = 4096;

fn now() -> i64 {
    crate::store::now_ms()
}

/// PRODUCER_FENCED as a client of `version` understands it.
fn fenced_as(code: i16, version: i16, since: i16) -> i16 {
    if code == error::PRODUCER_FENCED && version < since {
        error::INVALID_PRODUCER_EPOCH
    } else {
        code
    }
}

/// InitProducerId: without a transactional id an idempotent producer (`producer_ids.rs`);
/// with one, the coordinator's id and the next epoch.
pub async fn init_producer_id(k: &Arc<Kafka>, req: &Request, r: InitProducerIdRequest) -> Reply {
    let Some(id) = r.transactional_id.as_ref().map(|t| t.0.to_string()) else {
        return producer_ids::init_producer_id(k, req, r);
    };
    let refuse = |code: i16| {
        let resp = InitProducerIdResponse::default().with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
        reply(req, &resp.with_error_code(fenced_as(code, req.version, 4)))
    };
    if let Err((code, _)) = check_transactional_id(&id) {
        return refuse(code);
    }
    if (r.producer_id.0 == -1) != (r.producer_epoch == -1) {
        return refuse(error::INVALID_REQUEST);
    }
    let expected = (r.producer_id.0 != -1).then_some((r.producer_id.0, r.producer_epoch));
    let outcome = {
        let mut alloc = || k.producers.allocate();
        let mut t = k.txns.lock();
        t.init(&k.txns.limits, &id, r.transaction_timeout_ms, expected, now(), &mut alloc)
    };
    match outcome {
        Err(code) => refuse(code),
        Ok(Init::Ready { producer_id, epoch }) => {
            if let Err(code) = k.txns.persist().await {
                return refuse(code);
            }
            let resp = InitProducerIdResponse::default().with_producer_id(ProducerId(producer_id));
            reply(req, &resp.with_producer_epoch(epoch).with_error_code(error::NONE))
        }
        Ok(Init::Fence(c)) => {
            // The ongoing transaction is aborted first; the client retries for its new epoch.
            if k.txns.persist().await.is_ok() {
                txn_markers::complete(k, c).await;
            } else {
                k.txns.lock().completion_failed(&c);
            }
            refuse(error::CONCURRENT_TRANSACTIONS)
        }
    }
}

pub async fn add_partitions(k: &Arc<Kafka>, req: &Request, r: AddPartitionsToTxnRequest) -> Reply {
    let id = r.v3_and_below_transactional_id.0.to_string();
    let s = &k.shared;
    // (topic, partition) -> its code when it cannot be added.
    let mut wanted: BTreeSet<(TopicName, i32)> = BTreeSet::new();
    for t in &r.v3_and_below_topics {
        wanted.extend(t.partitions.iter().map(|p| (t.name.clone(), *p)));
    }
    let check = |topic: &str, p: i32| -> i16 {
        if let Err((code, _)) = names::check_topic(&s.config, topic) {
            return code;
        }
        match s.topics.view(topic) {
            Some(v) if p >= 0 && p < v.write_queue_nums => error::NONE,
            _ => error::UNKNOWN_TOPIC_OR_PARTITION,
        }
    };
    let mut codes: Vec<(TopicName, i32, i16)> = wanted.iter().map(|(t, p)| (t.clone(), *p, check(&t.0, *p))).collect();
    let failed = codes.iter().any(|(_, _, c)| *c != error::NONE);
    let id_code = check_transactional_id(&id).err().map(|e| e.0);
    let code = if let Some(code) = id_code {
        Some(code)
    } else if failed {
        // Kafka: any failed partition fails the request; the others were not attempted.
        for c in &mut codes {
            if c.2 == error::NONE {
                c.2 = error::OPERATION_NOT_ATTEMPTED;
            }
        }
        None
    } else {
        let parts: Vec<(String, i32, i64)> =
            wanted.iter().map(|(t, p)| (t.0.to_string(), *p, s.store.next_queue_offset(&t.0, *p))).collect();
        let (pid, epoch) = (r.v3_and_below_producer_id.0, r.v3_and_below_producer_epoch);
        let added = k.txns.lock().add_partitions(&id, pid, epoch, &parts, now());
        Some(match added {
            Ok(true) => k.txns.persist().await.err().unwrap_or(error::NONE),
            Ok(false) => error::NONE,
            Err(code) => fenced_as(code, req.version, 2),
        })
    };
    if let Some(code) = code {
        codes.iter_mut().for_each(|c| c.2 = code);
    }
    let mut topics: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for (name, p, code) in codes {
        let result =
            AddPartitionsToTxnPartitionResult::default().with_partition_index(p).with_partition_error_code(code);
        match topics.last_mut() {
            Some(t) if t.name == name => t.results_by_partition.push(result),
            _ => topics
                .push(AddPartitionsToTxnTopicResult::default().with_name(name).with_results_by_partition(vec![result])),
        }
    }
    reply(req, &AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics))
}

pub async fn add_offsets(k: &Arc<Kafka>, req: &Request, r: AddOffsetsToTxnRequest) -> Reply {
    let id = r.transactional_id.0.to_string();
    let code = if let Err((code, _)) = check_transactional_id(&id) {
        code
    } else if let Err((code, _)) = names::check_group(&r.group_id.0) {
        code
    } else {
        match k.txns.lock().add_offsets(&id, r.producer_id.0, r.producer_epoch, &r.group_id.0, now()) {
            Ok(true) => error::NONE,
            Ok(false) => return reply(req, &AddOffsetsToTxnResponse::default()),
            Err(code) => fenced_as(code, req.version, 2),
        }
    };
    let code = if code == error::NONE { k.txns.persist().await.err().unwrap_or(error::NONE) } else { code };
    reply(req, &AddOffsetsToTxnResponse::default().with_error_code(code))
}

/// TxnOffsetCommit: checked like OffsetCommit (group, member and generation from v3, topics,
/// metadata size), then kept pending in the transaction until it commits (`txn_markers.rs`
/// writes them through `offsets.rs`); an abort discards them.
pub async fn txn_offset_commit(k: &Arc<Kafka>, req: &Request, r: TxnOffsetCommitRequest) -> Reply {
    let id = r.transactional_id.0.to_string();
    let group = r.group_id.0.to_string();
    let mut top = check_transactional_id(&id).err().map_or(error::NONE, |e| e.0);
    if top == error::NONE {
        top = names::group_code(&group);
    }
    if top == error::NONE && req.version >= 3 && (r.generation_id != -1 || !r.member_id.is_empty()) {
        top = k.coordinator.validate_offset_commit(
            &group,
            &r.member_id,
            r.generation_id,
            r.group_instance_id.as_deref(),
            // OffsetCommit v7 has the same member checks (group.instance.id included).
            7,
        );
    }
    let mut results: Vec<(TopicName, Vec<(i32, i16)>)> = Vec::new();
    let mut pending = Vec::new();
    for t in &r.topics {
        let topic = t.name.0.to_string();
        let named = names::check_topic(&k.shared.config, &topic).err().map_or(error::NONE, |e| e.0);
        let view = k.shared.topics.view(&topic);
        let mut parts = Vec::new();
        for p in &t.partitions {
            let q = p.partition_index;
            let code = if named != error::NONE {
                named
            } else if !view.as_ref().is_some_and(|v| q >= 0 && q < v.read_queue_nums) {
                error::UNKNOWN_TOPIC_OR_PARTITION
            } else if p.committed_metadata.as_ref().is_some_and(|m| m.len() > MAX_METADATA) {
                OFFSET_METADATA_TOO_LARGE
            } else {
                pending.push(PendingOffset {
                    group: group.clone(),
                    topic: topic.clone(),
                    partition: q,
                    offset: p.committed_offset,
                    metadata: p.committed_metadata.as_deref().unwrap_or("").to_owned(),
                });
                error::NONE
            };
            parts.push((q, code));
        }
        results.push((t.name.clone(), parts));
    }
    if top == error::NONE && !pending.is_empty() {
        let not_added = if req.version >= 4 { error::TRANSACTION_ABORTABLE } else { error::INVALID_TXN_STATE };
        let pid = r.producer_id.0;
        if let Err(code) = k.txns.lock().commit_offsets(&id, pid, r.producer_epoch, pending, not_added) {
            // The producer-facing wording of a fence, as for a transactional produce.
            top = if code == error::PRODUCER_FENCED { error::INVALID_PRODUCER_EPOCH } else { code };
        }
    }
    let topics = results
        .into_iter()
        .map(|(name, parts)| {
            let parts = parts.into_iter().map(|(q, code)| {
                let code = if code == error::NONE { top } else { code };
                TxnOffsetCommitResponsePartition::default().with_partition_index(q).with_error_code(code)
            });
            TxnOffsetCommitResponseTopic::default().with_name(name).with_partitions(parts.collect())
        })
        .collect();
    reply(req, &TxnOffsetCommitResponse::default().with_topics(topics))
}

/// EndTxn: PrepareCommit / PrepareAbort on disk, answered once the control records are written
/// and the transaction is complete (a marker that cannot be written leaves the Prepare state
/// for the sweeper to finish: the answer is still NONE, as Kafka answers after the prepare).
pub async fn end_txn(k: &Arc<Kafka>, req: &Request, r: EndTxnRequest) -> Reply {
    let id = r.transactional_id.0.to_string();
    let answer = |code: i16| {
        let resp = EndTxnResponse::default().with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
        reply(req, &resp.with_error_code(fenced_as(code, req.version, 2)))
    };
    if let Err((code, _)) = check_transactional_id(&id) {
        return answer(code);
    }
    let ended = k.txns.lock().end(&id, r.producer_id.0, r.producer_epoch, r.committed, now());
    match ended {
        Err(code) => answer(code),
        Ok(None) => answer(error::NONE),
        Ok(Some(c)) => {
            if let Err(code) = k.txns.persist().await {
                // Not on disk: the client retries; the sweeper completes what memory prepared.
                k.txns.lock().completion_failed(&c);
                return answer(code);
            }
            txn_markers::complete(k, c).await;
            answer(error::NONE)
        }
    }
}
