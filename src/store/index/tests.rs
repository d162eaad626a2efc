//! IndexService tests (kept apart from mod.rs to keep both files readable in one sitting).
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use super::*;
use crate::model::message::{properties_to_string, property};

const T0: i64 = 1_700_000_000_000;

fn config(root: &Path, slots: usize, entries: usize) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: root.to_owned(),
        max_hash_slot_num: slots,
        max_index_num: entries,
        ..Default::default()
    }
}

fn req(offset: i64, ts: i64, keys: &str, uniq: Option<&str>) -> DispatchRequest<'static> {
    let mut props = Vec::new();
    if !keys.is_empty() {
        props.push((property::KEYS, keys));
    }
    if let Some(u) = uniq {
        props.push((property::UNIQ_KEY, u));
    }
    DispatchRequest {
        topic: "T".into(),
        queue_id: 0,
        commit_log_offset: offset,
        size: 100,
        tags_code: 0,
        store_timestamp: ts,
        queue_offset: 0,
        sys_flag: 0,
        prepared_transaction_offset: 0,
        properties: properties_to_string(props).into(),
    }
}

fn query(s: &IndexService, key: &str) -> Vec<i64> {
    s.query_offsets("T", key, 64, 0, i64::MAX).phy_offsets
}

/// Three messages with key "k" in files of two entries: file 1 holds 100 and 200, file 2 holds 300.
fn rolled(root: &Path) -> IndexService {
    let s = IndexService::load(&config(root, 4, 3), true, 0).unwrap();
    s.build_index(&req(100, T0, "k", None)).unwrap();
    s.build_index(&req(200, T0 + 1_000, "k", None)).unwrap();
    s.build_index(&req(300, T0 + 5_000, "k", None)).unwrap();
    s
}

#[test]
fn indexes_uniq_key_and_each_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = IndexService::load(&config(dir.path(), 4, 100), true, 0).unwrap();
    s.build_index(&req(100, T0, "a b  c", Some("U1"))).unwrap();
    for key in ["a", "b", "c", "U1"] {
        assert_eq!(query(&s, key), [100], "{key}");
    }
    assert!(query(&s, "").is_empty());
    assert!(s.query_offsets("Other", "a", 64, 0, i64::MAX).phy_offsets.is_empty());

    let mut rollback = req(200, T0, "r", None);
    rollback.sys_flag = sys_flag::TRANSACTION_ROLLBACK;
    s.build_index(&rollback).unwrap();
    assert!(query(&s, "r").is_empty(), "ROLLBACK records are not indexed");

    s.build_index(&req(50, T0, "old", None)).unwrap();
    assert!(query(&s, "old").is_empty(), "below endPhyOffset: already indexed");
    s.build_index(&req(100, T0, "a", None)).unwrap();
    assert_eq!(query(&s, "a"), [100], "the record at endPhyOffset is already indexed; re-dispatch adds nothing");

    let r = s.query_offsets("T", "a", 64, 0, i64::MAX);
    assert_eq!((r.index_last_update_timestamp, r.index_last_update_phyoffset), (T0, 100));
}

#[test]
fn a_record_without_keys_still_creates_the_first_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = IndexService::load(&config(dir.path(), 4, 10), true, 0).unwrap();
    assert!(s.file_paths().is_empty());
    s.build_index(&req(10, T0, "", None)).unwrap();
    assert_eq!(s.file_paths().len(), 1);
    assert_eq!(s.total_size(), IndexFile::file_size(4, 10) as u64);

    let mut off = config(dir.path(), 4, 10);
    off.store_path_root_dir = dir.path().join("other");
    off.message_index_enable = false;
    let s = IndexService::load(&off, true, 0).unwrap();
    s.build_index(&req(10, T0, "k", None)).unwrap();
    assert!(s.file_paths().is_empty(), "messageIndexEnable=false builds nothing");
}

#[test]
fn rolls_when_full_and_queries_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = rolled(dir.path());
    let paths = s.file_paths();
    assert_eq!(paths.len(), 2);
    assert!(paths[0].file_name() < paths[1].file_name(), "{paths:?}");
    assert_eq!(query(&s, "k"), [300, 200, 100]);
    assert_eq!(s.query_offsets("T", "k", 2, 0, i64::MAX).phy_offsets, [300, 200]);
    let r = s.query_offsets("T", "k", 64, T0, T0 + 1_000);
    assert_eq!(r.phy_offsets, [200, 100]);
    assert_eq!((r.index_last_update_timestamp, r.index_last_update_phyoffset), (T0 + 5_000, 300));

    // The new file's first entry measures its time from the previous file's end (T0+1s), then
    // the header's begin moves to the entry's own time (T0+5s): it reads back as T0+9s.
    let bytes = std::fs::read(&paths[1]).unwrap();
    assert_eq!(bytes[76 + 12..76 + 16], 4i32.to_be_bytes());
    assert!(s.query_offsets("T", "k", 64, T0 + 5_000, T0 + 5_000).phy_offsets.is_empty());

    s.build_index(&req(250, T0 + 6_000, "late", None)).unwrap();
    assert!(query(&s, "late").is_empty(), "below the new file's endPhyOffset");

    assert_eq!(s.last_full_end_timestamp(), 0, "not flushed yet");
    s.flush_full_files().unwrap();
    assert_eq!(s.last_full_end_timestamp(), T0 + 1_000);
}

#[test]
fn rolls_between_the_keys_of_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let s = IndexService::load(&config(dir.path(), 4, 3), true, 0).unwrap();
    s.build_index(&req(100, T0, "a b c", None)).unwrap();
    assert_eq!(s.file_paths().len(), 2);
    for key in ["a", "b", "c"] {
        assert_eq!(query(&s, key), [100], "{key}");
    }
}

#[test]
fn reload_answers_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let paths = {
        let s = rolled(dir.path());
        s.flush();
        s.file_paths()
    };
    std::fs::write(dir.path().join("index").join("notes.txt"), b"not an index file").unwrap();
    let s = IndexService::load(&config(dir.path(), 4, 3), true, 0).unwrap();
    assert_eq!(s.file_paths(), paths);
    assert_eq!(query(&s, "k"), [300, 200, 100]);
    s.build_index(&req(400, T0 + 6_000, "k", None)).unwrap();
    assert_eq!(query(&s, "k"), [400, 300, 200, 100], "the reloaded newest file takes more keys");
    assert!(IndexService::load(&config(dir.path(), 8, 3), true, 0).is_err(), "other dimensions");
    assert!(IndexService::load(&config(dir.path(), 4, 1), true, 0).is_err(), "no room for an entry");
}

#[test]
fn abnormal_exit_deletes_files_newer_than_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let paths = rolled(dir.path()).file_paths();
    let cfg = config(dir.path(), 4, 3);
    let s = IndexService::load(&cfg, true, T0).unwrap();
    assert_eq!(s.file_paths().len(), 2, "a clean exit keeps everything");
    drop(s);
    let s = IndexService::load(&cfg, false, T0 + 1_000).unwrap();
    assert_eq!(s.file_paths(), paths[..1]);
    assert!(!paths[1].exists());
    assert_eq!(query(&s, "k"), [200, 100]);
    drop(s);
    let s = IndexService::load(&cfg, false, T0 + 999).unwrap();
    assert!(s.file_paths().is_empty());
    assert!(!paths[0].exists());
}

#[test]
fn delete_expired_never_deletes_the_last_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = IndexService::load(&config(dir.path(), 4, 2), true, 0).unwrap();
    for (i, offset) in [100, 200, 300].into_iter().enumerate() {
        s.build_index(&req(offset, T0 + i as i64, "k", None)).unwrap();
    }
    let paths = s.file_paths();
    assert_eq!(paths.len(), 3, "one entry per file");
    s.delete_expired(100).unwrap();
    assert_eq!(s.file_paths().len(), 3, "endPhyOffset 100 is not below 100");
    s.delete_expired(150).unwrap();
    assert_eq!(s.file_paths(), paths[1..]);
    assert!(!paths[0].exists());
    s.delete_expired(i64::MAX).unwrap();
    assert_eq!(s.file_paths(), paths[2..]);
    assert_eq!(query(&s, "k"), [300]);

    s.destroy().unwrap();
    assert!(s.file_paths().is_empty());
    assert_eq!(std::fs::read_dir(dir.path().join("index")).unwrap().count(), 0);
    s.build_index(&req(10, T0, "k", None)).unwrap();
    assert_eq!(query(&s, "k"), [10], "building starts over after destroy");
}

#[test]
fn truncate_beyond_drops_files_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let s = rolled(dir.path());
    let paths = s.file_paths();
    assert_eq!(s.truncate_beyond(301).unwrap(), None);
    assert_eq!(s.truncate_beyond(300).unwrap(), Some(300), "an entry at the end points at nothing");
    assert_eq!(s.file_paths(), paths[..1]);
    assert!(!paths[1].exists());
    assert_eq!(query(&s, "k"), [200, 100]);
    s.build_index(&req(300, T0 + 5_000, "k", None)).unwrap();
    assert_eq!(query(&s, "k"), [300, 200, 100], "re-indexed into a new file");
    assert_eq!(s.truncate_beyond(150).unwrap(), Some(100));
    assert!(s.file_paths().is_empty());
}

#[test]
fn max_num_is_capped_at_the_batch_limit() {
    let dir = tempfile::tempdir().unwrap();
    let s = IndexService::load(&config(dir.path(), 16, 200), true, 0).unwrap();
    for i in 0..70 {
        s.build_index(&req(i * 10, T0 + i, "k", None)).unwrap();
    }
    let all = s.query_offsets("T", "k", 1_000, 0, i64::MAX).phy_offsets;
    assert_eq!(all.len(), MAX_MSGS_NUM_BATCH);
    assert_eq!((all[0], all[63]), (690, 60));
    assert_eq!(s.query_offsets("T", "k", 5, 0, i64::MAX).phy_offsets.len(), 5);
}

#[test]
fn queries_run_while_building() {
    let dir = tempfile::tempdir().unwrap();
    let s = IndexService::load(&config(dir.path(), 8, 50), true, 0).unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 1..=300 {
                s.build_index(&req(i, T0 + i, "k", None)).unwrap();
            }
        });
        for _ in 0..200 {
            let found = s.query_offsets("T", "k", 64, 0, i64::MAX).phy_offsets;
            assert!(found.windows(2).all(|w| w[0] > w[1]), "newest first: {found:?}");
        }
    });
    assert_eq!(s.file_paths().len(), 7, "49 entries per file");
    assert_eq!(s.query_offsets("T", "k", 64, 0, i64::MAX).phy_offsets.len(), 64);
}
