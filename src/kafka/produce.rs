//! Produce v3-11: each partition's single v2 batch is checked (Kafka's `LogValidator` order),
//! its records become one stored message each on queue = partition, appended together so they
//! take consecutive queue offsets. acks=1 answers once appended (and flushed under
//! SYNC_FLUSH); acks=all also waits for the slaves of a SYNC_MASTER, and with fewer slaves in
//! sync than needed stores nothing (NOT_ENOUGH_REPLICAS; a slave lost after the append gives
//! NOT_ENOUGH_REPLICAS_AFTER_APPEND); acks=0 gets no answer. A replayed idempotent batch is
//! answered with its original offset only once it meets the same flush and replica conditions.
//!
//! A transactional batch is checked against the coordinator first, as Kafka 4.x brokers verify
//! (KIP-890 part 1): the request's transactional id, the producer id and epoch of its ongoing
//! transaction (a stale epoch is INVALID_PRODUCER_EPOCH), the partition added to it (else
//! TRANSACTION_ABORTABLE from Produce v11, INVALID_TXN_STATE before). Its records are stored
//! with `KAFKA_PID`, `KAFKA_EPOCH`, `KAFKA_TXN=true` (`core::txn`), and the queue's transaction
//! is opened in `core.txn` (at the queue's end offset, before the append) so no committed reader
//! passes it before its marker.

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
use crate::core::txn::{KAFKA_EPOCH, KAFKA_PID, KAFKA_TXN};
use crate::core::{Durability, Protocol, Refusal, Replicas, TopicWrite, Traffic};
use crate::model::message::properties_to_string;
use crate::model::name::shown;
use crate::store::compaction::CompactionPolicy;
use crate::store::now_ms;
use crate::telemetry::MessageType;

fn wall_ms() -> u64 {
    u64::try_from(now_ms()).unwrap_or(0)
}

/// What every partition of one Produce request shares.
struct Ask {
    acks: i16,
    timeout_ms: i32,
    transactional_id: Option<String>,
}

pub async fn handle(k: &Arc<Kafka>, req: &Request, r: ProduceRequest) -> Reply {
    let acks = r.acks;
    let ask = Ask { acks, timeout_ms: r.timeout_ms, transactional_id: r.transactional_id.map(|t| t.0.to_string()) };
    let mut topics = Vec::with_capacity(r.topic_data.len());
    for t in r.topic_data {
        let name = t.name.0.to_string();
        let mut parts = Vec::with_capacity(t.partition_data.len());
        for p in t.partition_data {
            let outcome = if !matches!(acks, -1..=1) {
                Err((error::INVALID_REQUIRED_ACKS, format!("acks {acks}: must be -1, 0 or 1")))
            } else {
                produce_partition(k, req, &name, p.index, p.records, &ask).await
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
    ask: &Ask,
) -> Result<(i64, i64), records::Refusal> {
    let (acks, timeout_ms) = (ask.acks, ask.timeout_ms);
    let s = &k.shared;
    // The name's Kafka error first (a system topic is an authorization failure, not a
    // forbidden send), then the core's checks.
    names::check_topic(&s.config, topic)?;
    let write = TopicWrite { protocol: Protocol::Kafka, topic, queue_id: partition, create: None };
    s.writable_topic(&write).await.map_err(refused)?;
    let data = data.ok_or_else(|| (error::INVALID_RECORD, "no record batch".to_owned()))?;
    let live = s.live.config();
    let limit = live.max_message_size;
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
    // Kafka's LogValidator: a compacted topic keeps the latest record per key, so a record
    // without one is refused (only looked up when such a record comes).
    let compacted = || s.topics.get(topic).is_some_and(|tc| CompactionPolicy::of(&tc.attributes).is_some());
    if recs.iter().any(|r| r.key.is_none()) && compacted() {
        return Err((
            error::INVALID_RECORD,
            format!("Compacted topic cannot accept message without key in topic partition {topic}-{partition}."),
        ));
    }
    let idempotent = batch.producer_id >= 0;
    let seq = BatchSeq {
        pid: batch.producer_id,
        epoch: batch.producer_epoch,
        first: batch.base_sequence,
        last: batch.base_sequence.wrapping_add(batch.last_offset_delta),
    };
    let how = Durability {
        wait_flush: true,
        // Kafka checks min.insync.replicas before appending: NOT_ENOUGH_REPLICAS stores nothing.
        replicas: if acks == -1 { Replicas::CheckFirst } else { Replicas::Skip },
        replica_timeout: Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0).min(live.slave_timeout)),
        deferred: false,
    };
    // Before the sequence check: a replayed batch meets acks=all no more than the original would.
    s.check_replicas(how).map_err(refused)?;
    let transactional = batch.attributes & records::ATTR_TRANSACTIONAL != 0;
    let _inflight = if transactional { Some(verify(k, req, ask, &batch, topic, partition)?) } else { None };
    let check = if idempotent { k.producers.check(seq, topic, partition, wall_ms()) } else { SeqCheck::Append };
    let offset = match check {
        SeqCheck::Refuse(code, why) => return Err((code, why)),
        // Stored before: answered only once it is as durable as a fresh append would be.
        SeqCheck::Duplicate { offset, end } => match s.wait_durable(end, how).await {
            None => offset,
            Some(r) => return Err((r.outcome.codes().kafka, format!("a duplicate of a batch: {}", r.why))),
        },
        SeqCheck::Append => {
            let mut msgs: Vec<_> = recs
                .iter()
                .map(|r| mapping::to_store(r, topic, partition, req.peer, s.store_host, s.broker_properties()))
                .collect();
            let codec = records::codec(batch.attributes);
            if codec != 0 {
                let props = properties_to_string([(mapping::KAFKA_CODEC, &*codec.to_string())]);
                msgs.iter_mut().for_each(|m| m.properties.push_str(&props));
            }
            if transactional {
                let (pid, epoch) = (batch.producer_id.to_string(), batch.producer_epoch.to_string());
                let props = properties_to_string([(KAFKA_PID, &*pid), (KAFKA_EPOCH, &*epoch), (KAFKA_TXN, "true")]);
                msgs.iter_mut().for_each(|m| m.properties.push_str(&props));
                // Open before the records are readable, from the next offset the CommitLog will
                // assign (the ConsumeQueue max lags behind undispatched records, such as the
                // previous transaction's marker): a lower bound of their first offset.
                s.txn.begin(topic, partition, batch.producer_id, s.store.next_queue_offset(topic, partition)).await;
            }
            let _permit = s.admit(Protocol::Kafka).await.map_err(refused)?;
            let traffic = Traffic { protocol: Protocol::Kafka, topic, kind: MessageType::Normal };
            let appended = s.append(&msgs, how, traffic).await.map_err(refused)?;
            let a = &appended.result;
            if idempotent {
                k.producers.appended(seq, topic, partition, a.queue_offset, a.end_offset, wall_ms());
            }
            if let Some(r) = appended.shortfall {
                return Err((kafka_code(&r), format!("stored, but {}", r.why)));
            }
            a.queue_offset
        }
    };
    Ok((offset, s.store.min_offset_in_queue(topic, partition)))
}

/// Ends a transactional append's in-flight count when dropped (a completion waits for it).
struct InFlight<'a> {
    k: &'a Kafka,
    id: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.k.txns.lock().appended(&self.id);
        self.k.txns.appended.notify_waiters();
    }
}

/// KIP-890 part 1: the batch belongs to the ongoing transaction of the request's transactional
/// id, with this partition added to it.
fn verify<'a>(
    k: &'a Kafka,
    req: &Request,
    ask: &Ask,
    batch: &records::Batch,
    topic: &str,
    partition: i32,
) -> Result<InFlight<'a>, records::Refusal> {
    let Some(id) = ask.transactional_id.as_deref() else {
        return Err((error::INVALID_RECORD, "a transactional batch in a produce without a transactional id".into()));
    };
    let not_added = if req.version >= 11 { error::TRANSACTION_ABORTABLE } else { error::INVALID_TXN_STATE };
    let (pid, epoch) = (batch.producer_id, batch.producer_epoch);
    k.txns.lock().verify_produce(id, pid, epoch, topic, partition, not_added).map_err(|code| {
        let why = match code {
            c if c == not_added => "Partition was not added to the transaction".to_owned(),
            error::INVALID_PRODUCER_EPOCH => {
                format!("producer {pid} epoch {epoch} is not the transaction's current epoch")
            }
            _ => format!("the transaction of producer {pid} cannot take records now"),
        };
        (code, why)
    })?;
    Ok(InFlight { k, id: id.to_owned() })
}

/// A refusal of the shared core as Kafka answers it (the core's table).
fn refused(r: Refusal) -> records::Refusal {
    (kafka_code(&r), r.why)
}

fn kafka_code(r: &Refusal) -> i16 {
    r.outcome.codes().kafka
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Outcome;

    /// The core's table uses Kafka's numbers: each equals the named code.
    #[test]
    fn the_core_table_speaks_kafka() {
        let named = |o: Outcome| match o {
            Outcome::BrokerNotWritable | Outcome::TopicNotWritable => error::NOT_LEADER_OR_FOLLOWER,
            Outcome::SendForbidden => error::TOPIC_AUTHORIZATION_FAILED,
            Outcome::IllegalTopic => error::INVALID_TOPIC_EXCEPTION,
            Outcome::TopicNotExist | Outcome::QueueIllegal => error::UNKNOWN_TOPIC_OR_PARTITION,
            Outcome::Busy | Outcome::FlushTimeout | Outcome::SlaveTimeout => error::REQUEST_TIMED_OUT,
            Outcome::NotEnoughReplicas => error::NOT_ENOUGH_REPLICAS,
            Outcome::StoreUnavailable => error::KAFKA_STORAGE_ERROR,
            Outcome::MessageIllegal => error::INVALID_RECORD,
            Outcome::StoreFailed => error::UNKNOWN_SERVER_ERROR,
            Outcome::SlaveLostAfterAppend => error::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        };
        for o in Outcome::ALL {
            assert_eq!(o.codes().kafka, named(o), "{o:?}");
        }
    }
}
