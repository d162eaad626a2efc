//! Retention and disk protection through the store's public API: expired segments, a crowded
//! disk (diskSpaceCleanForciblyRatio, diskSpaceWarningLevelRatio), the minimums that move.

use std::time::{Duration, SystemTime};

use ferrocket::store::{AcceptAll, FlushDiskType, GetMessageStatus, MessageStore, PutStatus};

use super::store::{config, msg, wait_dispatched};

#[tokio::test]
async fn retention_deletes_old_segments_and_moves_minimums() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), FlushDiskType::AsyncFlush);
    c.file_reserved_time = 1;
    let store = MessageStore::open(c).unwrap();
    // The machine's real disk usage must not decide: above 85 % the store cleans even
    // unexpired segments (Java's diskSpaceCleanForciblyRatio), as on a crowded CI disk.
    store.override_disk_usage(Some(1));
    for i in 0..1600 {
        store.put_messages(&[msg("T", 0, &format!("m{i:04}"), "A", &format!("k{i}"))], true).await;
    }
    wait_dispatched(&store).await;
    let segments_before = store.commit_log_max_offset() / (64 * 1024) + 1;
    assert!(segments_before >= 3);
    // Nothing is older than an hour yet.
    assert_eq!(store.clean_expired_files(SystemTime::now()).unwrap(), 0);
    let later = SystemTime::now() + Duration::from_secs(2 * 3600);
    let deleted = store.clean_expired_files(later).unwrap();
    assert_eq!(deleted as u64, segments_before - 1, "all but the last segment expire");
    let min = store.min_offset_in_queue("T", 0);
    assert!(min > 0);
    let r = store.get_message("T", 0, 0, 32, 1 << 20, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::OffsetTooSmall, min));
    let r = store.get_message("T", 0, min, 32, 1 << 20, &AcceptAll);
    assert_eq!(r.status, GetMessageStatus::Found);

    // Disk protection: refuse writes above 90 %, resume by itself below 85 %.
    store.override_disk_usage(Some(95));
    store.clean_expired_files(later).unwrap();
    let r = store.put_messages(&[msg("T", 0, "x", "A", "")], true).await;
    assert!(matches!(r.status, PutStatus::ServiceNotAvailable(ref why) if why.contains("disk")), "{:?}", r.status);
    store.override_disk_usage(Some(50));
    store.clean_expired_files(later).unwrap();
    assert!(store.put_messages(&[msg("T", 0, "y", "A", "")], true).await.is_ok());
    store.shutdown().unwrap();
}

/// Above diskSpaceCleanForciblyRatio (85 %) segments go before their time, unconsumed ones
/// included, as in Java, unless cleanFileForciblyEnable=false (the compat suites' brokers set it
/// so the machine's disk does not decide what they keep).
#[tokio::test]
async fn a_crowded_disk_deletes_unexpired_segments_unless_forcing_is_disabled() {
    for forcing in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path(), FlushDiskType::AsyncFlush);
        c.clean_file_forcibly_enable = forcing;
        let store = MessageStore::open(c).unwrap();
        store.override_disk_usage(Some(1));
        for i in 0..1600 {
            store.put_messages(&[msg("T", 0, &format!("m{i:04}"), "A", "")], true).await;
        }
        wait_dispatched(&store).await;
        let segments = store.commit_log_max_offset() / (64 * 1024) + 1;
        assert!(segments >= 3);
        store.override_disk_usage(Some(87));
        let deleted = store.clean_expired_files(SystemTime::now()).unwrap() as u64;
        match forcing {
            true => assert!(deleted > 0 && store.min_offset_in_queue("T", 0) > 0, "forced: {deleted} deleted"),
            false => assert_eq!((deleted, store.min_offset_in_queue("T", 0)), (0, 0), "not forced"),
        }
        store.shutdown().unwrap();
    }
}
