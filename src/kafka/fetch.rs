//! Fetch v4-12 (no fetch sessions: session id 0, every response lists exactly the requested
//! partitions) and, in `fetch/list_offsets.rs`, ListOffsets v1-7.
//!
//! A fetch reads each partition's queue from `fetch_offset` (`fetch/partition.rs`) and rebuilds
//! uncompressed v2 batches (`fetch/batches.rs`: one per run of consecutive offsets of one
//! producer and kind, control records as control batches) up to `partition_max_bytes` and the
//! request's `max_bytes`; the first partition with data returns at least one record whatever
//! the limits (KIP-74). `isolation_level=1` reads up to the last stable offset and lists the
//! aborted transactions. With fewer than `min_bytes` it parks on the queues' arrival signals
//! (the store's dispatcher rings them, as for RocketMQ long polling, and so does the end of a
//! transaction, which moves the LSO) until data comes or `max_wait_ms` ends; every wake-up reads
//! again, with the LSO of that moment.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::fetch_response::FetchableTopicResponse;
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use super::api::error;
use super::api::{reply, Reply, Request};
use super::{names, Kafka};
use crate::core::Protocol;
use crate::store::READ_AFTER_SEND_WAIT;

mod batches;
mod list_offsets;
pub mod max_timestamp;
mod partition;

pub use list_offsets::list_offsets;
use partition::{read_partition, FETCH_MAX_BYTES};

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
            let (data, n_records) =
                read_partition(k, &t.topic.0, p.partition, p.fetch_offset, limit, !any_data, read_committed);
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
            parts.push(data);
        }
        if count > 0 {
            out.push((t.topic.0.to_string(), count, bytes));
        }
        topics.push(FetchableTopicResponse::default().with_topic(t.topic.clone()).with_partitions(parts));
    }
    Read { topics, bytes: max_bytes - budget, any_error, out }
}
