//! Start-up recovery (`DefaultMessageStore.recover`): ConsumeQueues first, then the CommitLog
//! from a segment chosen by the checkpoint, re-dispatching what the queues and index lack and
//! cutting everything past the end of valid data.
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::sync::atomic::Ordering;

use tracing::info;

use super::commit_log::record::{self, RecordCheck};
use super::state::Inner;
use super::StoreError;

pub fn recover(inner: &Inner, last_exit_ok: bool) -> Result<(), StoreError> {
    let mut dispatch_from = -1i64;
    for q in inner.queues.all() {
        dispatch_from = dispatch_from.max(q.recover()?);
    }
    if inner.commit_log.segments().is_empty() {
        for q in inner.queues.all() {
            q.destroy()?;
        }
        inner.index.destroy()?;
        inner.commit_log.truncate(0)?;
        return Ok(());
    }
    let start = choose_start(inner, dispatch_from);
    info!(last_exit_ok, start, dispatch_from, "recovering CommitLog");
    let mut failure = None;
    let end = inner.commit_log.scan_valid(start, inner.config.check_crc_on_recover, |d| {
        if failure.is_none() {
            failure = super::dispatch::dispatch(inner, d).err();
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    inner.commit_log.truncate(end)?;
    for q in inner.queues.all() {
        q.truncate_dirty(end as i64)?;
        inner.commit_log.set_queue_offset(q.topic(), q.queue_id(), q.max_offset_in_queue());
    }
    if let Some(reindex_from) = inner.index.truncate_beyond(end as i64)? {
        // Index files that reached past the end were dropped: rebuild their range.
        let from = (reindex_from.max(0) as u64).max(inner.commit_log.min_offset());
        inner.commit_log.scan_valid(from, false, |d| {
            if d.commit_log_offset < end as i64 && failure.is_none() {
                failure = inner.index.build_index(d).err();
            }
        });
        if let Some(e) = failure {
            return Err(e);
        }
    }
    inner.reput_from.store(end, Ordering::Release);
    info!(end, max_offset = inner.commit_log.max_offset(), "recovery done");
    Ok(())
}

/// The newest segment whose first record is valid, was stored before the checkpoint's minimum
/// timestamp and is already reflected in the ConsumeQueues; otherwise the first segment.
fn choose_start(inner: &Inner, dispatch_from: i64) -> u64 {
    let min_ts = inner.checkpoint.min_timestamp();
    let segments = inner.commit_log.segments();
    for seg in segments.iter().rev() {
        let Some(data) = seg.slice(0, seg.size()) else { continue };
        if let RecordCheck::Record(d) = record::check(&data, true) {
            if d.store_timestamp != 0 && d.store_timestamp <= min_ts && d.commit_log_offset <= dispatch_from {
                return seg.file_from_offset();
            }
        }
    }
    segments.first().map_or(0, |s| s.file_from_offset())
}
