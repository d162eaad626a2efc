//! ListOffsets v1-7: -2 the log start, -1 the end a reader may fetch up to (the high watermark;
//! with `isolation_level=1` the last stable offset, as Kafka's `Partition.fetchOffsetForTimestamp`
//! answers), -3 the largest record timestamp, otherwise a time lookup; a time or max-timestamp
//! answer at or past that end is none (-1), as in Kafka.
//!
//! May import: `kafka` (names, the door's state, api), `store`.

use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::super::api::error;
use super::super::api::{reply, Reply, Request};
use super::super::{names, Kafka};
use super::max_timestamp::first_at_or_after;
use crate::store::READ_AFTER_SEND_WAIT;

/// -2 earliest, -1 latest (the high watermark, or the LSO for `isolation_level=1`), -3 the
/// largest record timestamp (v7+, from the queue's running maximum: `fetch/max_timestamp.rs`), otherwise the first offset whose record timestamp is at or
/// after the time.
pub async fn list_offsets(k: &Kafka, req: &Request, r: ListOffsetsRequest) -> Reply {
    let s = &k.shared;
    let read_committed = r.isolation_level == 1;
    s.store.await_dispatched(READ_AFTER_SEND_WAIT).await;
    let mut topics = Vec::with_capacity(r.topics.len());
    for t in r.topics {
        let mut parts = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let q = p.partition_index;
            let resp = ListOffsetsPartitionResponse::default().with_partition_index(q).with_leader_epoch(-1);
            let known = s.topics.view(&t.name.0).is_some_and(|v| q >= 0 && q < v.read_queue_nums);
            let resp = if let Err((code, _)) = names::check_topic(&s.config, &t.name.0) {
                resp.with_error_code(code).with_timestamp(-1).with_offset(-1)
            } else if !known {
                resp.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION).with_timestamp(-1).with_offset(-1)
            } else {
                let (min, max) = (s.store.min_offset_in_queue(&t.name.0, q), s.store.max_offset_in_queue(&t.name.0, q));
                // Kafka's last fetchable offset: what a consumer of this isolation may read.
                let end = if read_committed && s.txn.has_transactions(&t.name.0, q) {
                    s.txn.last_stable_offset(&t.name.0, q, max)
                } else {
                    max
                };
                let fetchable = |found: Option<(i64, i64)>| found.filter(|(o, _)| *o < end).unwrap_or((-1, -1));
                let (offset, ts) = match p.timestamp {
                    -2 => (min, -1),
                    -1 => (end, -1),
                    -3 if req.version >= 7 => fetchable(k.max_timestamps.get(&s.store, &t.name.0, q, min, max).await),
                    t_ms if t_ms >= 0 => fetchable(offset_for_time(k, &t.name.0, q, t_ms, min, max)),
                    _ => {
                        parts.push(resp.with_error_code(error::UNSUPPORTED_VERSION).with_timestamp(-1).with_offset(-1));
                        continue;
                    }
                };
                resp.with_offset(offset).with_timestamp(ts)
            };
            parts.push(resp);
        }
        topics.push(ListOffsetsTopicResponse::default().with_name(t.name).with_partitions(parts));
    }
    reply(req, &ListOffsetsResponse::default().with_topics(topics))
}

/// The first offset in `[min, max)` whose record timestamp (born time) is at or after `target`,
/// with that timestamp: a binary search, as over Kafka's time index (which assumes timestamps
/// grow along the log, as one producer's do). An offset without a record (a compacted gap)
/// stands for the next record.
fn offset_for_time(k: &Kafka, topic: &str, queue_id: i32, target: i64, min: i64, max: i64) -> Option<(i64, i64)> {
    let store = &k.shared.store;
    let (mut lo, mut hi) = (min, max);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match first_at_or_after(store, topic, queue_id, mid) {
            Some((_, ts)) if ts >= target => hi = mid,
            // Older: so is everything up to it.
            Some((at, _)) => lo = at.max(mid) + 1,
            // Nothing from there on (deleted): look later, which ends the search.
            None => lo = mid + 1,
        }
    }
    first_at_or_after(store, topic, queue_id, lo).filter(|(o, _)| *o < max)
}
