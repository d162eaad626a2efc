//! Per-topic retention (`retention.ms`, `retention.bytes`, kept in the topic's attributes by
//! `topic_configs.rs`): every `kafkaLogRetentionCheckIntervalMs` (Kafka's
//! `log.retention.check.interval.ms`, 5 minutes) a sweep moves the log start offset of each
//! queue of such a topic past the records it no longer keeps (`store/log_start.rs`: Kafka and
//! RocketMQ readers both stop seeing them). The bytes go with their CommitLog segments, which
//! the broker-wide `fileReservedTime` deletes: a topic's retention.ms longer than that is capped
//! by it (DescribeConfigs still reads back what was set).
//!
//! ```text
//! retention.ms    start >= first offset stored at or after now - retention.ms (store time)
//! retention.bytes start >= first offset from which the record sizes sum to at most retention.bytes
//! -1              unlimited
//! ```
//! retention.bytes is summed forward from the start with a cursor kept per queue, at most
//! [`UNITS_PER_SWEEP`] ConsumeQueue units read per queue per sweep, so a sweep's work is bounded
//! and a long queue converges over a few sweeps (the cursor is rebuilt after a restart).
//!
//! May import: `super::topic_configs`, `crate::core` and the store (through [`Kafka`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{topic_configs, Kafka};

/// ConsumeQueue units read per queue per sweep for retention.bytes (20 bytes each).
pub const UNITS_PER_SWEEP: usize = 1 << 20;

/// Per queue: the bytes of units `[from, to)`, for retention.bytes.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    from: i64,
    to: i64,
    bytes: i64,
}

/// The retention.bytes cursors, kept only for queues of topics that set it.
#[derive(Default)]
pub struct LogRetention {
    cursors: Mutex<HashMap<(String, i32), Cursor>>,
}

/// The start `retention.bytes` asks for, moving `cursor` on by at most [`UNITS_PER_SWEEP`] units
/// each way. `sizes(from, n)` reads record sizes; `min` is the queue's current start.
fn bytes_target(cursor: &mut Cursor, min: i64, limit: i64, sizes: &dyn Fn(i64, usize) -> Vec<i64>) -> i64 {
    if cursor.to < min || cursor.from > cursor.to || min - cursor.from > UNITS_PER_SWEEP as i64 {
        *cursor = Cursor { from: min, to: min, bytes: 0 };
    }
    // Units that went by other means (DeleteRecords, retention.ms, CommitLog deletion).
    if cursor.from < min {
        let gone: i64 = sizes(cursor.from, usize::try_from(min - cursor.from).unwrap_or(0)).iter().sum();
        *cursor = Cursor { from: min, to: cursor.to, bytes: (cursor.bytes - gone).max(0) };
    }
    let added = sizes(cursor.to, UNITS_PER_SWEEP);
    cursor.to += added.len() as i64;
    cursor.bytes += added.iter().sum::<i64>();
    // Whatever the units not yet read add, these must go: the sum from `from` already exceeds.
    if cursor.bytes > limit {
        let head = sizes(cursor.from, UNITS_PER_SWEEP);
        for size in head {
            if cursor.bytes <= limit || cursor.from >= cursor.to {
                break;
            }
            cursor.bytes -= size;
            cursor.from += 1;
        }
    }
    cursor.from
}

/// One sweep at `now_ms`: returns the queues whose start moved, with their new start.
pub async fn sweep(k: &Kafka, now_ms: i64) -> Vec<(String, i32, i64)> {
    let sh = &k.shared;
    let (_, table) = sh.topics.snapshot();
    let mut moved = Vec::new();
    let mut keep = Vec::new();
    for (topic, tc) in table {
        let (ms, bytes) = topic_configs::retention(&tc.attributes);
        if ms < 0 && bytes < 0 {
            continue;
        }
        for q in 0..tc.read_queue_nums.max(tc.write_queue_nums) {
            let min = sh.store.min_offset_in_queue(&topic, q);
            let mut target = min;
            if ms >= 0 {
                target = target.max(sh.store.offset_in_queue_by_time(&topic, q, now_ms.saturating_sub(ms)));
            }
            if bytes >= 0 {
                keep.push((topic.clone(), q));
                let mut cursor = k.log_retention.cursor(&topic, q);
                let store = sh.store.clone();
                let sizes = |from: i64, n: usize| store.unit_sizes(&topic, q, from, n);
                target = target.max(bytes_target(&mut cursor, min, bytes, &sizes));
                k.log_retention.set_cursor(&topic, q, cursor);
            }
            if target <= min {
                continue;
            }
            let (store, owned) = (sh.store.clone(), topic.clone());
            match tokio::task::spawn_blocking(move || store.advance_log_start(&owned, q, target)).await {
                Ok(Ok(start)) => moved.push((topic.clone(), q, start)),
                Ok(Err(e)) => warn!(topic, queue = q, error = %e, "retention could not persist a log start offset"),
                Err(_) => {}
            }
        }
    }
    k.log_retention.retain(&keep);
    if !moved.is_empty() {
        info!(queues = moved.len(), "topic retention (retention.ms / retention.bytes) moved log start offsets");
    }
    moved
}

impl LogRetention {
    fn cursor(&self, topic: &str, q: i32) -> Cursor {
        let c = self.cursors.lock().unwrap_or_else(|e| e.into_inner());
        c.get(&(topic.to_owned(), q)).copied().unwrap_or_default()
    }

    fn set_cursor(&self, topic: &str, q: i32, cursor: Cursor) {
        self.cursors.lock().unwrap_or_else(|e| e.into_inner()).insert((topic.to_owned(), q), cursor);
    }

    /// Forgets the cursors of queues no topic with retention.bytes has any more.
    fn retain(&self, keep: &[(String, i32)]) {
        let keep: std::collections::HashSet<&(String, i32)> = keep.iter().collect();
        self.cursors.lock().unwrap_or_else(|e| e.into_inner()).retain(|key, _| keep.contains(key));
    }
}

/// Sweeps every `kafkaLogRetentionCheckIntervalMs` until `shutdown`.
pub async fn run(k: Arc<Kafka>, shutdown: CancellationToken) {
    let every_ms = k.shared.config.kafka_log_retention_check_interval_ms.max(1);
    let mut every = tokio::time::interval(Duration::from_millis(every_ms));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        sweep(&k, crate::store::now_ms()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_bytes_keeps_the_newest_records_within_the_limit_in_bounded_steps() {
        let sizes_of = |all: Vec<i64>| {
            move |from: i64, n: usize| -> Vec<i64> {
                all.iter().skip(usize::try_from(from).unwrap()).take(n).copied().collect()
            }
        };
        let sizes = sizes_of(vec![100; 10]);
        let mut c = Cursor::default();
        assert_eq!(bytes_target(&mut c, 0, 1000, &sizes), 0, "1000 bytes fit");
        assert_eq!(bytes_target(&mut c, 0, 350, &sizes), 7, "the newest 3 records fit in 350");
        assert_eq!(bytes_target(&mut c, 7, 350, &sizes), 7, "stable");
        // Moved by other means (DeleteRecords to 8): the cursor follows.
        assert_eq!(bytes_target(&mut c, 8, 350, &sizes), 8);
        assert_eq!((c.from, c.to, c.bytes), (8, 10, 200));
        assert_eq!(bytes_target(&mut Cursor::default(), 0, 0, &sizes), 10, "0 keeps nothing");
    }
}
