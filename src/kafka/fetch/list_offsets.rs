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
use crate::store::commit_log::record;
use crate::store::{AcceptAll, READ_AFTER_SEND_WAIT};

/// -2 earliest, -1 latest (the high watermark, or the LSO for `isolation_level=1`), -3 the
/// largest record timestamp (v7+), otherwise the first offset whose record timestamp is at or
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
                    -3 if req.version >= 7 => fetchable(max_timestamp(k, &t.name.0, q, min, max).await),
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

/// Kafka's MAX_TIMESTAMP: the record with the largest timestamp (the first of equals), found by
/// reading each record's born time in place, off the async workers.
async fn max_timestamp(k: &Kafka, topic: &str, queue_id: i32, min: i64, max: i64) -> Option<(i64, i64)> {
    let (store, topic) = (k.shared.store.clone(), topic.to_owned());
    let scan = move || {
        let mut best: Option<(i64, i64)> = None;
        let mut next = min;
        while next < max {
            let got = store.get_message(&topic, queue_id, next, 1024, usize::MAX, &AcceptAll);
            if got.messages.is_empty() {
                if got.next_begin_offset > next {
                    next = got.next_begin_offset;
                    continue;
                }
                break;
            }
            for (offset, ts) in got.messages.iter().filter_map(|m| record::queue_offset_and_born_time(m)) {
                if best.is_none_or(|(_, b)| ts > b) {
                    best = Some((offset, ts));
                }
            }
            next = got.next_begin_offset.max(next + 1);
        }
        best
    };
    tokio::task::spawn_blocking(scan).await.ok().flatten()
}

/// The first offset in `[min, max)` whose record timestamp (born time) is at or after `target`,
/// with that timestamp: a binary search, as over Kafka's time index (which assumes timestamps
/// grow along the log, as one producer's do).
fn offset_for_time(k: &Kafka, topic: &str, queue_id: i32, target: i64, min: i64, max: i64) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (min, max);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match born_time(k, topic, queue_id, mid) {
            Some(ts) if ts >= target => hi = mid,
            // Older, or a unit that no longer resolves (deleted): look later.
            _ => lo = mid + 1,
        }
    }
    born_time(k, topic, queue_id, lo).filter(|_| lo < max).map(|ts| (lo, ts))
}

fn born_time(k: &Kafka, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
    if offset < 0 {
        return None;
    }
    let got = k.shared.store.get_message(topic, queue_id, offset, 1, usize::MAX, &AcceptAll);
    got.messages.first().and_then(|m| record::decode(m, false)).map(|m| m.born_timestamp)
}
