//! DeleteRecords v0-2: moves a partition's log start offset (the store's, `store/log_start.rs`,
//! which RocketMQ pulls honour too). Offset -1 means the high watermark; an offset beyond it (or
//! any other negative one) is OFFSET_OUT_OF_RANGE; one at or below the current start changes
//! nothing. The answer's low watermark is the partition's start afterwards, on disk before the
//! answer goes out. The records themselves go with their CommitLog segments (fileReservedTime);
//! readers never see them again.
//!
//! May import: `super::api`, `super::names`, the Kafka codec, `crate::core` (through [`Kafka`]).

use kafka_protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult};
use kafka_protocol::messages::*;
use tracing::info;

use super::api::{error, reply, Reply, Request};
use super::{names, Kafka};
use crate::store::READ_AFTER_SEND_WAIT;

pub async fn handle(k: &Kafka, req: &Request, r: DeleteRecordsRequest) -> Reply {
    let s = &k.shared;
    // Acknowledged records count in the high watermark.
    s.store.await_dispatched(READ_AFTER_SEND_WAIT).await;
    let mut topics = Vec::with_capacity(r.topics.len());
    for t in r.topics {
        let topic = t.name.0.to_string();
        let named = names::check_topic(&s.config, &topic);
        let queues = s.topics.view(&topic).map(|v| v.read_queue_nums);
        let mut parts = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let q = p.partition_index;
            let out = DeleteRecordsPartitionResult::default().with_partition_index(q).with_low_watermark(-1);
            let code = match (&named, queues) {
                (Err((code, _)), _) => Err(*code),
                (Ok(()), Some(n)) if q >= 0 && q < n => Ok(()),
                _ => Err(error::UNKNOWN_TOPIC_OR_PARTITION),
            };
            let out = match code {
                Err(code) => out.with_error_code(code),
                Ok(()) => match delete_before(k, &topic, q, p.offset).await {
                    Ok(low) => out.with_low_watermark(low),
                    Err(code) => out.with_error_code(code),
                },
            };
            parts.push(out);
        }
        topics.push(DeleteRecordsTopicResult::default().with_name(t.name).with_partitions(parts));
    }
    reply(req, &DeleteRecordsResponse::default().with_topics(topics))
}

/// Moves the start of `topic`/`queue` to `offset` (-1: the high watermark); the low watermark
/// afterwards, or the Kafka error.
async fn delete_before(k: &Kafka, topic: &str, queue: i32, offset: i64) -> Result<i64, i16> {
    let store = &k.shared.store;
    let high = store.max_offset_in_queue(topic, queue);
    let target = match offset {
        -1 => high,
        o if (0..=high).contains(&o) => o,
        _ => return Err(error::OFFSET_OUT_OF_RANGE),
    };
    if target <= store.min_offset_in_queue(topic, queue) {
        return Ok(store.min_offset_in_queue(topic, queue));
    }
    let (store, owned) = (store.clone(), topic.to_owned());
    let moved = tokio::task::spawn_blocking(move || store.advance_log_start(&owned, queue, target)).await;
    match moved {
        Ok(Ok(low)) => {
            info!(topic, queue, low_watermark = low, "records deleted by a Kafka client (log start moved)");
            Ok(low)
        }
        Ok(Err(e)) => {
            tracing::warn!(topic, queue, error = %e, "could not persist the log start offset");
            Err(error::KAFKA_STORAGE_ERROR)
        }
        Err(_) => Err(error::KAFKA_STORAGE_ERROR),
    }
}
