//! Produce v3-11: each partition's single v2 batch is checked (Kafka's `LogValidator` order),
//! its records become one stored message each on queue = partition, appended together so they
//! take consecutive queue offsets. acks=1 answers once appended (and flushed under
//! SYNC_FLUSH); acks=all also waits for the slaves of a SYNC_MASTER, and with fewer slaves in
//! sync than needed stores nothing (NOT_ENOUGH_REPLICAS; a slave lost after the append gives
//! NOT_ENOUGH_REPLICAS_AFTER_APPEND); acks=0 gets no answer. A replayed idempotent batch is
//! answered with its original offset only once it meets the same flush and replica conditions.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use tracing::debug;

use super::api::error;
use super::api::{reply, Reply, Request};
use super::producer_ids::{BatchSeq, SeqCheck};
use super::records;
use super::{mapping, names, Kafka};
use crate::ha::master::ReplicaWait;
use crate::ha::HaService;
use crate::model::name::shown;
use crate::model::perm;
use crate::store::{now_ms, PutStatus};

fn wall_ms() -> u64 {
    u64::try_from(now_ms()).unwrap_or(0)
}

pub async fn handle(k: &Arc<Kafka>, req: &Request, r: ProduceRequest) -> Reply {
    let acks = r.acks;
    let mut topics = Vec::with_capacity(r.topic_data.len());
    for t in r.topic_data {
        let name = t.name.0.to_string();
        let mut parts = Vec::with_capacity(t.partition_data.len());
        for p in t.partition_data {
            let outcome = if !matches!(acks, -1..=1) {
                Err((error::INVALID_REQUIRED_ACKS, format!("acks {acks}: must be -1, 0 or 1")))
            } else {
                produce_partition(k, req, &name, p.index, p.records, acks, r.timeout_ms).await
            };
            let mut resp = PartitionProduceResponse::default()
                .with_index(p.index)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1);
            match outcome {
                Ok((base, start)) => resp = resp.with_base_offset(base).with_log_start_offset(start),
                Err((code, why)) => {
                    debug!(peer = %req.peer, topic = %shown(&name), partition = p.index, code, why, "produce refused");
                    resp = resp.with_error_code(code).with_base_offset(-1);
                    if req.version >= 8 {
                        resp = resp.with_error_message(Some(StrBytes::from_string(why)));
                    }
                }
            }
            parts.push(resp);
        }
        topics.push(TopicProduceResponse::default().with_name(t.name).with_partition_responses(parts));
    }
    if acks == 0 {
        // No answer: a failure is told by closing the connection, as Kafka does.
        let failed = topics.iter().flat_map(|t| t.partition_responses.iter()).find(|p| p.error_code != error::NONE);
        if let Some(p) = failed {
            anyhow::bail!("acks=0 produce to partition {} failed with error {}", p.index, p.error_code);
        }
        return Ok(None);
    }
    reply(req, &ProduceResponse::default().with_responses(topics))
}

/// Appends one partition's batch: (base offset, log start offset) or the refusal.
async fn produce_partition(
    k: &Arc<Kafka>,
    req: &Request,
    topic: &str,
    partition: i32,
    data: Option<bytes::Bytes>,
    acks: i16,
    timeout_ms: i32,
) -> Result<(i64, i64), records::Refusal> {
    let s = &k.shared;
    names::check_topic(&s.config, topic)?;
    let unknown = || (error::UNKNOWN_TOPIC_OR_PARTITION, format!("{topic}-{partition} is not served here"));
    let view = s.topics.view(topic).ok_or_else(unknown)?;
    if partition < 0 || partition >= view.write_queue_nums {
        return Err(unknown());
    }
    if !perm::is_writeable(s.live.broker_permission()) || !perm::is_writeable(view.perm) {
        return Err((error::NOT_LEADER_OR_FOLLOWER, format!("{topic} is not writable on this broker")));
    }
    let data = data.ok_or_else(|| (error::INVALID_RECORD, "no record batch".to_owned()))?;
    let limit = s.config.max_message_size;
    if data.len() > limit {
        return Err((error::MESSAGE_TOO_LARGE, format!("batch of {} bytes, over maxMessageSize {limit}", data.len())));
    }
    let compressed = records::is_compressed(&data);
    let parse = move || {
        let batch = records::parse_one_batch(data, limit)?;
        let recs = records::records(&batch)?;
        Ok::<_, records::Refusal>((batch, recs))
    };
    let (batch, recs) = if compressed {
        // Inflating (up to maxMessageSize) is CPU work: off the async workers.
        let inflating = tokio::task::spawn_blocking(parse).await;
        inflating.map_err(|e| (error::UNKNOWN_SERVER_ERROR, format!("inflating the batch failed: {e}")))??
    } else {
        parse()?
    };
    let idempotent = batch.producer_id >= 0;
    let seq = BatchSeq {
        pid: batch.producer_id,
        epoch: batch.producer_epoch,
        first: batch.base_sequence,
        last: batch.base_sequence.wrapping_add(batch.last_offset_delta),
    };
    // Kafka checks min.insync.replicas before appending: NOT_ENOUGH_REPLICAS stores nothing.
    let replicas = replicas_needed(k, acks);
    if let Some((ha, needed)) = replicas {
        let in_sync = ha.in_sync_slaves();
        if in_sync < needed {
            return Err((error::NOT_ENOUGH_REPLICAS, format!("{in_sync} of {needed} slaves in sync; not appended")));
        }
    }
    let check = if idempotent { k.producers.check(seq, topic, partition, wall_ms()) } else { SeqCheck::Append };
    let (offset, end) = match check {
        SeqCheck::Refuse(code, why) => return Err((code, why)),
        // Stored before: answered only once it is as durable as a fresh append would be.
        SeqCheck::Duplicate { offset, end } => match put_code(&s.store.wait_flushed(end).await) {
            error::NONE => (offset, end),
            code => return Err((code, "a duplicate of a batch not yet flushed".into())),
        },
        SeqCheck::Append => {
            let msgs: Vec<_> =
                recs.iter().map(|r| mapping::to_store(r, topic, partition, req.peer, s.store_host)).collect();
            let result = s.store.put_messages(&msgs, true).await;
            let code = put_code(&result.status);
            let Some(append) = result.append else {
                return Err((code, format!("not stored: {:?}", result.status)));
            };
            if idempotent {
                k.producers.appended(seq, topic, partition, append.queue_offset, append.end_offset, wall_ms());
            }
            if code != error::NONE {
                return Err((code, format!("stored, but {:?}", result.status)));
            }
            (append.queue_offset, append.end_offset)
        }
    };
    if let Some((ha, needed)) = replicas {
        let wait = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0).min(s.config.slave_timeout).max(1));
        match ha.wait_for_replicas(end, needed, wait).await {
            ReplicaWait::Ok => {}
            ReplicaWait::NoSlave => {
                return Err((error::NOT_ENOUGH_REPLICAS_AFTER_APPEND, "stored, but no slave in sync".into()))
            }
            ReplicaWait::Timeout => {
                return Err((error::REQUEST_TIMED_OUT, "slaves did not acknowledge in time".into()))
            }
        }
    }
    Ok((offset, s.store.min_offset_in_queue(topic, partition)))
}

/// acks=all on a SYNC_MASTER: the replication service and how many slaves must hold the batch.
fn replicas_needed(k: &Kafka, acks: i16) -> Option<(&HaService, usize)> {
    let needed = k.shared.config.replicas_to_wait_for();
    k.shared.ha.as_deref().filter(|_| acks == -1 && needed > 0).map(|ha| (ha, needed))
}

fn put_code(status: &PutStatus) -> i16 {
    match status {
        PutStatus::PutOk => error::NONE,
        PutStatus::FlushDiskTimeout => error::REQUEST_TIMED_OUT,
        PutStatus::ServiceNotAvailable(_) => error::KAFKA_STORAGE_ERROR,
        PutStatus::MessageIllegal(_) | PutStatus::PropertiesSizeExceeded => error::INVALID_RECORD,
        PutStatus::UnknownError(_) => error::UNKNOWN_SERVER_ERROR,
    }
}
