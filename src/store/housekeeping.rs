//! ConsumeQueue flushing and the checkpoint (`FlushConsumeQueueService`).
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::sync::atomic::Ordering;
use std::time::Instant;

use tracing::error;

use super::state::Inner;

pub fn run_consume_queue_flush(inner: &Inner) {
    let mut last_thorough = Instant::now();
    // Read every round: UPDATE_BROKER_CONFIG changes them live.
    while inner.sleep_while_running(inner.live().flush_interval_consume_queue) {
        let c = inner.live();
        let thorough = last_thorough.elapsed() >= c.flush_consume_queue_thorough_interval;
        if thorough {
            last_thorough = Instant::now();
        }
        flush_consume_queues(inner, if thorough { 0 } else { c.flush_consume_queue_least_pages });
    }
}

/// Flushes every ConsumeQueue; a thorough pass (`least_pages == 0`) also records the
/// checkpoint's logics timestamp. The checkpoint is written either way.
pub fn flush_consume_queues(inner: &Inner, least_pages: usize) {
    let ts = inner.last_dispatched_timestamp.load(Ordering::Acquire);
    let mut ok = true;
    for q in inner.queues.all() {
        if let Err(e) = q.flush(least_pages) {
            ok = false;
            error!(topic = q.topic(), queue = q.queue_id(), error = %e, "consume queue flush failed");
        }
    }
    match inner.index.flush_full_files() {
        Ok(()) => {
            let full = inner.index.last_full_end_timestamp();
            if full > inner.checkpoint.index_msg_timestamp() {
                inner.checkpoint.set_index_msg_timestamp(full);
            }
        }
        Err(e) => error!(error = %e, "index flush failed"),
    }
    if least_pages == 0 && ok {
        inner.index.flush();
        if ts > 0 {
            inner.checkpoint.set_logics_msg_timestamp(ts);
        }
    }
    if let Err(e) = inner.checkpoint.flush() {
        error!(error = %e, "checkpoint flush failed");
    }
}
