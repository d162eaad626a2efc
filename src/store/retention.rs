//! Retention and disk protection (`CleanCommitLogService`, `CleanConsumeQueueService`).
//!
//! ```text
//! every cleanResourceInterval:
//!   disk used > diskSpaceWarningLevelRatio (90)   refuse writes, clean now (even unexpired files)
//!   disk used > diskSpaceCleanForciblyRatio (85)  clean now (even unexpired files)
//!   disk used > diskMaxUsedSpaceRatio (75)        clean expired files now, not only at deleteWhen
//!   hour in deleteWhen ("04")                      clean expired files (older than fileReservedTime)
//! then ConsumeQueue and index files wholly behind the CommitLog's new minimum go too.
//! never: a segment holding a record a compacted queue still needs (at or above its compacted
//! end: compaction::service::retention_floor), expired or not, disk full or not.
//! ```
//! Unlike the Java broker, writes resume by themselves once usage falls below the force-clean
//! ratio.
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use chrono::Timelike;
use tracing::{error, info, warn};

use super::state::Inner;
use super::{StoreConfig, StoreError};

pub fn run(inner: &Inner) {
    while inner.sleep_while_running(inner.live().clean_resource_interval) {
        if let Err(e) = clean_pass(inner, SystemTime::now(), false) {
            error!(error = %e, "cleaning expired files failed");
        }
    }
}

/// One pass: check the disk, delete what may go. Returns the CommitLog segments deleted.
pub(super) fn clean_pass(inner: &Inner, now: SystemTime, manual: bool) -> Result<usize, StoreError> {
    // Read per pass (as Java's CleanCommitLogService does): UPDATE_BROKER_CONFIG changes the
    // ratios, deleteWhen and fileReservedTime live.
    let c = inner.live();
    let ratio = inner
        .disk_usage_override()
        .or_else(|| super::disk_usage::used_percent_at(&c.commit_log_dir(), inner.commit_log.files()))
        .unwrap_or(0);
    let warning = c.disk_space_warning_level_ratio.clamp(35, 90);
    let forcibly = c.disk_space_clean_forcibly_ratio.clamp(30, 85);
    let max_used = c.disk_max_used_space_ratio.clamp(10, 95);
    if ratio > warning {
        if !inner.disk_full.swap(true, Ordering::AcqRel) {
            error!(used_percent = ratio, limit = warning, "disk almost full: refusing writes and cleaning");
        }
    } else if ratio < forcibly && inner.disk_full.swap(false, Ordering::AcqRel) {
        info!(used_percent = ratio, "disk usage back to normal: accepting writes again");
    }
    let clean_now = ratio > forcibly;
    let delete_time = is_delete_time(&c.delete_when, now);
    if !(delete_time || ratio > max_used || clean_now || manual) {
        return Ok(0);
    }
    let force = clean_now && c.clean_file_forcibly_enable;
    let deleted = delete_commit_log_files(inner, &c, now, force)?;
    if deleted > 0 {
        let min = inner.commit_log.min_offset() as i64;
        for q in inner.queues.all() {
            q.delete_expired(min)?;
        }
        inner.index.delete_expired(min)?;
        if force {
            // Java warns here too ("begin to delete before N hours file ... spacefull: true").
            warn!(
                segments = deleted,
                min_offset = min,
                used_percent = ratio,
                limit = forcibly,
                "disk above diskSpaceCleanForciblyRatio: deleted CommitLog segments before their \
                 fileReservedTime, messages not yet consumed included"
            );
        } else {
            info!(segments = deleted, min_offset = min, used_percent = ratio, "deleted expired CommitLog segments");
        }
    }
    Ok(deleted)
}

/// Whether `now`'s local hour is one of `deleteWhen`'s (`;`-separated hours, as Java's
/// `UtilAll.isItTimeToDo`).
fn is_delete_time(delete_when: &str, now: SystemTime) -> bool {
    let hour = chrono::DateTime::<chrono::Local>::from(now).hour();
    delete_when.split(';').any(|h| h.trim().parse::<u32>() == Ok(hour))
}

/// Oldest first, never the last segment, no holes, at most `deleteFileBatchMax`.
fn delete_commit_log_files(inner: &Inner, c: &StoreConfig, now: SystemTime, force: bool) -> Result<usize, StoreError> {
    let reserved = Duration::from_secs(c.file_reserved_time * 3600);
    let segments = inner.commit_log.segments();
    let floor = super::compaction::service::retention_floor(inner).unwrap_or(u64::MAX);
    let mut n = 0;
    for seg in segments.iter().take(segments.len().saturating_sub(1)).take(c.delete_file_batch_max) {
        let expired = match seg.last_modified() {
            Ok(m) => m + reserved <= now,
            Err(e) => {
                warn!(file = %seg.path().display(), error = %e, "cannot read modification time");
                false
            }
        };
        // A segment the dispatcher has not finished with must stay.
        let end = seg.file_from_offset() + seg.size() as u64;
        let dispatched = end <= inner.reput_from.load(Ordering::Acquire);
        // The live set of a compacted queue is in its compacted log below its compacted end and
        // in the CommitLog from there on: that part stays.
        if !(expired || force) || !dispatched || end > floor {
            break;
        }
        n += 1;
    }
    inner.commit_log.files().delete_first(n)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use chrono::Timelike;

    use super::clean_pass;
    use crate::model::message::MessageToStore;
    use crate::store::{FlushDiskType, MessageStore, StoreConfig};

    fn msg(i: usize) -> MessageToStore {
        MessageToStore {
            topic: "T".into(),
            queue_id: 0,
            flag: 0,
            body: bytes::Bytes::from(vec![b'a' + (i % 26) as u8; 4096]),
            tags_code: 0,
            properties: String::new(),
            born_timestamp: 1,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_host: "127.0.0.1:2".parse().unwrap(),
            sys_flag: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    /// UPDATE_BROKER_CONFIG fileReservedTime=48 and deleteWhen (#28): the scheduled pass after
    /// the change decides with the new values, as Java's CleanCommitLogService reads them per
    /// pass.
    #[tokio::test]
    async fn the_scheduled_pass_follows_file_reserved_time_and_delete_when_changed_live() {
        let dir = tempfile::tempdir().unwrap();
        let boot = StoreConfig {
            store_path_root_dir: dir.path().to_owned(),
            mapped_file_size_commit_log: 64 * 1024,
            mapped_file_size_consume_queue: 20 * 100,
            flush_disk_type: FlushDiskType::AsyncFlush,
            clean_file_forcibly_enable: false,
            file_reserved_time: 72,
            ..StoreConfig::default()
        };
        let store = MessageStore::open(boot).unwrap();
        store.override_disk_usage(Some(1));
        for i in 0..64 {
            assert!(store.put_messages(&[msg(i)], true).await.is_ok());
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while store.dispatched_offset() < store.commit_log_max_offset() {
            assert!(std::time::Instant::now() < deadline, "dispatcher did not catch up");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let segments = store.inner.commit_log.segments().len();
        assert!(segments >= 3, "{segments} segments");
        // 50 hours on, at an hour deleteWhen names: still within the boot's 72 hours.
        let later = SystemTime::now() + Duration::from_secs(50 * 3600);
        let hour = chrono::DateTime::<chrono::Local>::from(later).hour();
        let mut next = (*store.live_config()).clone();
        next.delete_when = format!("{};{}", (hour + 1) % 24, hour);
        store.update_live_config(&next);
        assert_eq!(clean_pass(&store.inner, later, false).unwrap(), 0, "72 hours not reached");
        // fileReservedTime=48, but the hour is no longer one of deleteWhen's: nothing yet.
        next.file_reserved_time = 48;
        next.delete_when = format!("{}", (hour + 1) % 24);
        store.update_live_config(&next);
        assert_eq!(clean_pass(&store.inner, later, false).unwrap(), 0, "not the hour to delete");
        // The hour is deleteWhen's again: the 48 hours decide.
        next.delete_when = format!("{hour}");
        store.update_live_config(&next);
        assert_eq!(clean_pass(&store.inner, later, false).unwrap(), segments - 1);
        // A live change leaves what a restart changes alone.
        next.mapped_file_size_commit_log = 1 << 20;
        store.update_live_config(&next);
        assert_eq!(store.live_config().mapped_file_size_commit_log, 64 * 1024);
        assert_eq!(store.live_config().file_reserved_time, 48);
        store.shutdown().unwrap();
    }
}
