//! Fetch v4-12 (no fetch sessions: session id 0, every response lists exactly the requested
//! partitions) and ListOffsets v1-7.
//!
//! A fetch reads each partition's queue from `fetch_offset` and rebuilds v2 batches (one per run
//! of consecutive offsets, uncompressed) up to `partition_max_bytes` and the request's
//! `max_bytes`; the first partition with data returns at least one record whatever the limits
//! (KIP-74). With fewer than `min_bytes` it parks on the queues' arrival signals (the store's
//! dispatcher rings them, as for RocketMQ long polling) until data comes or `max_wait_ms` ends.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse};

use super::api::error;
use super::api::{reply, Reply, Request};
use super::records;
use super::{mapping, names, Kafka};
use crate::core::Protocol;
use crate::model::message::{sys_flag, StoredMessage};
use crate::model::perm;
use crate::store::commit_log::record;
use crate::store::{AcceptAll, READ_AFTER_SEND_WAIT};

/// Kafka's `fetch.max.bytes`: the most a response carries, whatever the client asks.
const FETCH_MAX_BYTES: usize = 55 * 1024 * 1024;

pub async fn handle(k: &Arc<Kafka>, req: &Request, r: FetchRequest) -> Reply {
    let max_bytes = usize::try_from(r.max_bytes).unwrap_or(0).min(FETCH_MAX_BYTES);
    let min_bytes = usize::try_from(r.min_bytes).unwrap_or(0).min(max_bytes);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(u64::try_from(r.max_wait_ms).unwrap_or(0));
    // Only served partitions are waited on: a hostile name or partition must not leave a signal.
    let served: Vec<(&str, i32)> = r
        .topics
        .iter()
        .filter(|t| names::check_topic(&k.shared.config, &t.topic.0).is_ok())
        .filter_map(|t| k.shared.topics.view(&t.topic.0).map(|v| (t, v.read_queue_nums)))
        .flat_map(|(t, queues)| {
            let served = t.partitions.iter().filter(move |p| p.partition >= 0 && p.partition < queues);
            served.map(|p| (&*t.topic.0, p.partition))
        })
        .collect();
    let request = &r;
    let check = || async move {
        // What producers were told is stored must be readable (the dispatcher may lag a moment),
        // and a wake-up by the first record of a batch reads the whole batch.
        k.shared.store.await_dispatched(READ_AFTER_SEND_WAIT).await;
        let read = read_all(k, request, max_bytes);
        (read.bytes >= min_bytes.max(1) || read.any_error || k.shared.closing.is_cancelled()).then_some(read)
    };
    let read = match k.shared.wait_for_arrivals(served, deadline, check).await {
        Some(read) => read,
        None => read_all(k, &r, max_bytes),
    };
    if let Some(node) = k.shared.metrics.as_deref() {
        for (topic, count, bytes) in &read.out {
            let system = k.shared.is_system_topic(topic);
            crate::telemetry::messages_out(node, Protocol::Kafka, topic, "", system, *count, *bytes);
        }
    }
    k.shared.stats.add_got(read.out.iter().map(|(_, n, _)| n).sum());
    reply(req, &FetchResponse::default().with_session_id(0).with_responses(read.topics))
}

/// One pass over the requested partitions.
struct Read {
    topics: Vec<FetchableTopicResponse>,
    bytes: usize,
    any_error: bool,
    /// Per topic: records and bytes handed out.
    out: Vec<(String, u64, u64)>,
}

fn read_all(k: &Kafka, r: &FetchRequest, max_bytes: usize) -> Read {
    let read_committed = r.isolation_level == 1;
    let mut budget = max_bytes;
    let mut any_data = false;
    let mut any_error = false;
    let mut topics = Vec::with_capacity(r.topics.len());
    let mut out = Vec::new();
    for t in &r.topics {
        let mut parts = Vec::with_capacity(t.partitions.len());
        let (mut count, mut bytes) = (0u64, 0u64);
        for p in &t.partitions {
            let limit = usize::try_from(p.partition_max_bytes).unwrap_or(0).min(budget);
            let (mut data, n_records) = read_partition(k, &t.topic.0, p.partition, p.fetch_offset, limit, !any_data);
            if data.error_code != error::NONE {
                any_error = true;
            }
            let n = data.records.as_ref().map_or(0, |b| b.len());
            if n > 0 {
                any_data = true;
            }
            count += n_records;
            bytes += n as u64;
            budget = budget.saturating_sub(n);
            if !read_committed {
                data = data.with_aborted_transactions(None);
            }
            parts.push(data);
        }
        if count > 0 {
            out.push((t.topic.0.to_string(), count, bytes));
        }
        topics.push(FetchableTopicResponse::default().with_topic(t.topic.clone()).with_partitions(parts));
    }
    Read { topics, bytes: max_bytes - budget, any_error, out }
}

/// One partition's answer: records from `offset`, at most `limit` bytes unless `first`; and how
/// many records it holds.
fn read_partition(
    k: &Kafka,
    topic: &str,
    partition: i32,
    offset: i64,
    limit: usize,
    first: bool,
) -> (PartitionData, u64) {
    let s = &k.shared;
    let mut out = PartitionData::default().with_partition_index(partition);
    if let Err((code, _)) = names::check_topic(&s.config, topic) {
        return (out.with_error_code(code).with_high_watermark(-1), 0);
    }
    let Some(view) = s.topics.view(topic).filter(|v| partition >= 0 && partition < v.read_queue_nums) else {
        return (out.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION).with_high_watermark(-1), 0);
    };
    if !perm::is_readable(view.perm) {
        return (out.with_error_code(error::TOPIC_AUTHORIZATION_FAILED).with_high_watermark(-1), 0);
    }
    let (min, max) = (s.store.min_offset_in_queue(topic, partition), s.store.max_offset_in_queue(topic, partition));
    out = out.with_high_watermark(max).with_last_stable_offset(max).with_log_start_offset(min);
    if offset < min || offset > max {
        return (out.with_error_code(error::OFFSET_OUT_OF_RANGE), 0);
    }
    let mut batch = BytesMut::new();
    let mut run: Vec<records::Record> = Vec::new();
    let mut run_base = offset;
    let mut next = offset;
    let mut taken = 0usize;
    let mut records_out = 0u64;
    'read: while next < max {
        let room = if first && taken == 0 { usize::MAX } else { limit.saturating_sub(taken) };
        if room == 0 {
            break;
        }
        // The store always returns at least one message, however large.
        let got = s.store.get_message(topic, partition, next, 256, room.min(FETCH_MAX_BYTES), &AcceptAll);
        if got.messages.is_empty() {
            if got.next_begin_offset > next && got.next_begin_offset <= max {
                next = got.next_begin_offset; // a gap (deleted units): skip it
                continue;
            }
            break;
        }
        for slice in &got.messages {
            let Some(m) = record::decode(slice, false) else { continue };
            if (taken > 0 || !first) && taken + slice.len() > limit {
                break 'read;
            }
            if run.is_empty() {
                run_base = m.queue_offset;
            } else if m.queue_offset != run_base + run.len() as i64 {
                records::write_batch(&mut batch, run_base, &run);
                records_out += run.len() as u64;
                run.clear();
                run_base = m.queue_offset;
            }
            // A body RocketMQ producers compressed goes out inflated (up to maxMessageSize): the
            // budget counts what is held, not what was stored, or small bombs fill a fetch.
            let rec = out_record(&m, s.config.max_message_size);
            taken += slice.len().max(rec.value.as_ref().map_or(0, Bytes::len));
            run.push(rec);
            next = m.queue_offset + 1;
        }
        next = next.max(got.next_begin_offset);
    }
    if !run.is_empty() {
        records::write_batch(&mut batch, run_base, &run);
        records_out += run.len() as u64;
    }
    (out.with_records(Some(batch.freeze())), records_out)
}

/// The record a stored message goes out as. A body RocketMQ producers compressed is inflated
/// (up to `max`): CPU work, so on a multi-thread runtime the worker first hands its other tasks
/// to another thread (`block_in_place`); a current-thread runtime (tests) inflates inline.
fn out_record(m: &StoredMessage, max: usize) -> records::Record {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if m.sys_flag & sys_flag::COMPRESSED != 0 && multi_thread {
        tokio::task::block_in_place(|| mapping::to_record(m, max))
    } else {
        mapping::to_record(m, max)
    }
}

/// -2 earliest, -1 latest (the high watermark), -3 the largest record timestamp (v7+), otherwise the
/// first offset whose record timestamp is at or after the time.
pub async fn list_offsets(k: &Kafka, req: &Request, r: ListOffsetsRequest) -> Reply {
    let s = &k.shared;
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
                let (offset, ts) = match p.timestamp {
                    -2 => (min, -1),
                    -1 => (max, -1),
                    -3 if req.version >= 7 => max_timestamp(k, &t.name.0, q, min, max).await.unwrap_or((-1, -1)),
                    t_ms if t_ms >= 0 => offset_for_time(k, &t.name.0, q, t_ms, min, max).unwrap_or((-1, -1)),
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
