//! DescribeLogDirs v1-4 (`kafka-log-dirs --describe`): one log directory, the CommitLog's, with
//! every partition (queue) of the topics asked for (all listed topics when none are named) and
//! the disk's total and usable bytes (v4).
//!
//! ```text
//! log_dir          storePathCommitLog (default <storePathRootDir>/commitlog): all topics share it
//! partition_size   the bytes of the queue's records from its log start to its end: summed
//!                  exactly for queues up to SIZE_SAMPLE records, else SIZE_SAMPLE records' mean
//!                  times the record count (the CommitLog holds every queue interleaved: a
//!                  queue has no file of its own to measure)
//! offset_lag       0 (no replica lags: one node)
//! topics named     unknown topics and partitions left out, as Kafka leaves them out
//! ```
//! The sizes are read off the async workers; the work is bounded by SIZE_SAMPLE units per queue.
//!
//! May import: `super::api`, `super::metadata` (helpers), the Kafka codec, `crate::core` and the
//! store (through [`Kafka`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::*;

use super::api::{error, reply, Reply, Request};
use super::metadata::{s, visible};
use super::{names, Kafka};

/// ConsumeQueue units read per queue to size it.
pub const SIZE_SAMPLE: usize = 256;

/// The directory DescribeLogDirs names.
fn log_dir(k: &Kafka) -> PathBuf {
    k.shared.config.store_config().commit_log_dir()
}

/// (topic, partitions) asked for: every listed topic's queues when `topics` is `None`.
fn wanted(
    k: &Kafka,
    topics: Option<Vec<describe_log_dirs_request::DescribableLogDirTopic>>,
) -> Vec<(String, Vec<i32>)> {
    let queues = |t: &str| k.shared.topics.view(t).map_or(0, |v| v.read_queue_nums.max(0));
    match topics {
        None => k
            .shared
            .topics
            .snapshot()
            .1
            .into_keys()
            .filter(|t| visible(k, t))
            .map(|t| {
                let n = queues(t.as_str());
                (t, (0..n).collect())
            })
            .collect(),
        Some(ts) => {
            // A topic named twice is measured once: the work is bounded by the existing queues.
            let mut asked: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
            for t in ts {
                let name = t.topic.0.as_str();
                if names::check_topic(&k.shared.config, name).is_err() {
                    continue;
                }
                let n = queues(name);
                let ps = t.partitions.into_iter().filter(|p| (0..n).contains(p));
                if n > 0 {
                    asked.entry(name.to_owned()).or_default().extend(ps);
                }
            }
            asked.into_iter().filter(|(_, ps)| !ps.is_empty()).map(|(t, ps)| (t, ps.into_iter().collect())).collect()
        }
    }
}

/// The bytes of a queue's records between its log start and its end (module doc).
fn queue_size(store: &crate::store::MessageStore, topic: &str, queue: i32) -> i64 {
    let (min, max) = (store.min_offset_in_queue(topic, queue), store.max_offset_in_queue(topic, queue));
    let count = (max - min).max(0);
    if count == 0 {
        return 0;
    }
    let sample = store.unit_sizes(topic, queue, min, SIZE_SAMPLE);
    if sample.is_empty() {
        return 0;
    }
    let sum: i64 = sample.iter().sum();
    if sample.len() as i64 >= count {
        return sum;
    }
    (sum / sample.len() as i64).saturating_mul(count)
}

pub async fn handle(k: &Kafka, req: &Request, r: DescribeLogDirsRequest) -> Reply {
    let asked = wanted(k, r.topics);
    let dir = log_dir(k);
    let store = Arc::clone(&k.shared.store);
    let measured = tokio::task::spawn_blocking(move || {
        let topics: Vec<DescribeLogDirsTopic> = asked
            .into_iter()
            .map(|(topic, parts)| {
                let partitions = parts
                    .into_iter()
                    .map(|q| {
                        DescribeLogDirsPartition::default()
                            .with_partition_index(q)
                            .with_partition_size(queue_size(&store, &topic, q))
                            .with_offset_lag(0)
                            .with_is_future_key(false)
                    })
                    .collect();
                DescribeLogDirsTopic::default().with_name(TopicName(s(topic))).with_partitions(partitions)
            })
            .collect();
        let total = fs4::total_space(&dir).ok().and_then(|b| i64::try_from(b).ok()).unwrap_or(-1);
        let usable = fs4::available_space(&dir).ok().and_then(|b| i64::try_from(b).ok()).unwrap_or(-1);
        (dir, topics, total, usable)
    })
    .await;
    let result = match measured {
        Ok((dir, topics, total, usable)) => DescribeLogDirsResult::default()
            .with_log_dir(s(dir.display().to_string()))
            .with_topics(topics)
            .with_total_bytes(total)
            .with_usable_bytes(usable),
        Err(_) => DescribeLogDirsResult::default()
            .with_error_code(error::KAFKA_STORAGE_ERROR)
            .with_log_dir(s(log_dir(k).display().to_string()))
            .with_total_bytes(-1)
            .with_usable_bytes(-1),
    };
    reply(req, &DescribeLogDirsResponse::default().with_results(vec![result]))
}
