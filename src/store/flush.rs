//! CommitLog flushing (`FlushRealTimeService`, `GroupCommitService`).
//!
//! ```text
//! ASYNC_FLUSH  every flushIntervalCommitLog: msync if >= flushCommitLogLeastPages dirty,
//!              everything every flushCommitLogThoroughInterval
//! SYNC_FLUSH   puts queue {end offset, waker}; the flush thread wakes (<= 10 ms), msyncs once
//!              up to the written end and completes every request that end covers: one fsync
//!              serves many puts (group commit)
//! ```
//! A failed msync poisons the store: no further writes are accepted, because the page cache may
//! have dropped the data and retrying would report success for bytes that are not on disk.
//!
//! May import: `telemetry` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tracing::error;

use super::state::{FlushFault, Inner};
use super::FlushDiskType;

/// The CommitLog flush thread's body; returns when the store stops.
pub fn run(inner: &Inner) {
    match inner.config.flush_disk_type {
        FlushDiskType::SyncFlush => run_group_commit(inner),
        FlushDiskType::AsyncFlush => run_async(inner),
    }
}

/// A process-wide histogram handle, registered once (the registry lookup is not free).
fn histogram(cell: &'static OnceLock<metrics::Histogram>, name: &'static str) -> &'static metrics::Histogram {
    cell.get_or_init(|| {
        let _ = crate::telemetry::handle();
        metrics::histogram!(name)
    })
}

fn run_group_commit(inner: &Inner) {
    static BATCH: OnceLock<metrics::Histogram> = OnceLock::new();
    let batch = histogram(&BATCH, crate::telemetry::names::GROUP_COMMIT_BATCH);
    while inner.is_running() {
        let requests = inner.group_commit.take(Duration::from_millis(10));
        if !requests.is_empty() {
            batch.record(requests.len() as f64);
        }
        let flushed = match flush(inner, 0) {
            Some(f) => f,
            None => {
                for (_, tx) in requests {
                    let _ = tx.send(false);
                }
                inner.group_commit.fail_all();
                continue;
            }
        };
        for (end, tx) in requests {
            // Every request ends at or before the written end we just flushed.
            let _ = tx.send(flushed >= end);
        }
        inner.wake_dispatcher();
    }
}

fn run_async(inner: &Inner) {
    let mut last_thorough = Instant::now();
    // The intervals and pages are read every round: UPDATE_BROKER_CONFIG changes them live.
    while inner.sleep_while_running(inner.live().flush_interval_commit_log) {
        let c = inner.live();
        let thorough = last_thorough.elapsed() >= c.flush_commit_log_thorough_interval;
        if thorough {
            last_thorough = Instant::now();
        }
        let least = if thorough { 0 } else { c.flush_commit_log_least_pages };
        // Deferred records nobody committed (their answers were never written: a connection
        // closed) are written here at the latest.
        let _ = inner.commit();
        flush(inner, least);
    }
}

/// Flushes the CommitLog; on success records the checkpoint's physic timestamp. `None` after a
/// failure (the store is then poisoned).
pub fn flush(inner: &Inner, least_pages: usize) -> Option<u64> {
    if inner.poisoned().is_some() {
        return None;
    }
    static LATENCY: OnceLock<metrics::Histogram> = OnceLock::new();
    let files = inner.commit_log.files();
    let before = files.flushed_where();
    let started = Instant::now();
    let result = match inner.take_flush_fault() {
        Some(FlushFault::Fail) => Err(std::io::Error::other("injected fsync failure")),
        Some(FlushFault::Stall(d)) => {
            std::thread::sleep(d);
            files.flush(least_pages)
        }
        None => files.flush(least_pages),
    };
    match result {
        Ok(flushed) => {
            if flushed > before {
                histogram(&LATENCY, crate::telemetry::names::FLUSH_LATENCY).record(started.elapsed().as_secs_f64());
                if let Some(f) = files.find(flushed.saturating_sub(1)) {
                    let ts = f.last_store_timestamp();
                    if ts > 0 {
                        inner.checkpoint.set_physic_msg_timestamp(ts);
                    }
                }
            }
            Some(flushed)
        }
        Err(e) => {
            error!(error = %e, dir = %files.dir().display(), "CommitLog flush failed; the store refuses writes from now on");
            let _ = inner.poison(format!("CommitLog flush failed in {}: {e}", files.dir().display()));
            inner.group_commit.fail_all();
            None
        }
    }
}
