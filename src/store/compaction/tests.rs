//! Compaction through the store: latest value per key at its own offset, gaps, tombstones and
//! `delete.retention.ms`, a bounded offset map, a crash before the commit, retention's floor.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;

use super::pass::MAP_SLOT_BYTES;
use super::CompactionPolicy;
use crate::model::message::{self, MessageToStore};
use crate::store::commit_log::record;
use crate::store::{AcceptAll, FlushDiskType, GetMessageStatus, MessageStore, StoreConfig};

const T: &str = "CT";

fn config(dir: &std::path::Path) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 64 * 1024,
        mapped_file_size_consume_queue: 20 * 100,
        max_hash_slot_num: 1000,
        max_index_num: 4000,
        flush_disk_type: FlushDiskType::AsyncFlush,
        clean_file_forcibly_enable: false,
        // Rounds only when a test asks.
        compaction_interval: Duration::from_secs(3600),
        ..StoreConfig::default()
    }
}

fn open(c: StoreConfig, retention_ms: i64) -> MessageStore {
    let store = MessageStore::open(c).unwrap();
    store.override_disk_usage(Some(1));
    let policy = CompactionPolicy { delete_retention_ms: retention_ms, ..CompactionPolicy::default() };
    store.set_compaction_lookup(Arc::new(move |t| (t == T).then_some(policy)));
    store
}

/// A record with `key` (None: no key) and `value` (None: a Kafka tombstone).
fn rec(key: Option<&str>, value: Option<&str>) -> MessageToStore {
    let mut props = vec![("TAGS", "t")];
    if let Some(k) = key {
        props.push(("KEYS", k));
    }
    if value.is_none() {
        props.push(("KAFKA_NULL_VALUE", "true"));
    }
    MessageToStore {
        topic: T.into(),
        queue_id: 0,
        flag: 0,
        body: Bytes::copy_from_slice(value.unwrap_or("").as_bytes()),
        tags_code: message::tags_code(Some("t")),
        properties: message::properties_to_string(props),
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

async fn put(store: &MessageStore, records: &[(Option<&str>, Option<&str>)]) {
    for (k, v) in records {
        assert!(store.put_messages(&[rec(*k, *v)], false).await.is_ok());
    }
    store.await_dispatched(Duration::from_secs(10)).await;
    assert_eq!(store.dispatched_offset(), store.commit_log_max_offset(), "dispatched");
}

/// (queue offset, key, body or "<null>") of every record readable from `from`, pulled 3 at a time.
fn read_all(store: &MessageStore, from: i64) -> Vec<(i64, String, String)> {
    let mut out = Vec::new();
    let mut offset = from;
    for _ in 0..10_000 {
        let r = store.get_message(T, 0, offset, 3, 1 << 20, &AcceptAll);
        for m in &r.messages {
            let m = record::decode(m, true).unwrap();
            let key = message::property_value(&m.properties, "KEYS").unwrap_or("").to_owned();
            let null = message::property_value(&m.properties, "KAFKA_NULL_VALUE").is_some();
            let body = if null { "<null>".to_owned() } else { String::from_utf8(m.body.to_vec()).unwrap() };
            out.push((m.queue_offset, key, body));
        }
        if r.next_begin_offset >= r.max_offset {
            break;
        }
        assert!(r.next_begin_offset > offset, "read stuck at {offset}: {:?}", r.status);
        offset = r.next_begin_offset;
    }
    out
}

fn row(o: i64, k: &str, v: &str) -> (i64, String, String) {
    (o, k.to_owned(), v.to_owned())
}

#[tokio::test]
async fn the_latest_record_per_key_survives_at_its_offset_and_gaps_read_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(config(dir.path()), 60_000);
    let k = |i: usize| ["a", "b", "c", "d", "e"][i];
    let first: Vec<_> = (0..5).map(|i| (Some(k(i)), Some("v0"))).collect();
    put(&store, &first).await;
    put(&store, &[(Some("a"), Some("v1")), (Some("b"), Some("v1")), (Some("c"), Some("v1"))]).await;
    let before = read_all(&store, 0);
    assert_eq!(before.len(), 8);

    let stats = store.compact_now(T, 0, crate::store::now_ms()).unwrap().expect("a compacted topic");
    assert_eq!((stats.passes, stats.end, stats.records_kept), (1, 8, 5));
    assert_eq!(store.compacted_end(T, 0), 8);
    let want = vec![row(3, "d", "v0"), row(4, "e", "v0"), row(5, "a", "v1"), row(6, "b", "v1"), row(7, "c", "v1")];
    assert_eq!(read_all(&store, 0), want, "latest per key, original offsets");
    assert_eq!(store.min_offset_in_queue(T, 0), 0);
    // An offset in a gap reads the next kept record.
    let r = store.get_message(T, 0, 1, 32, 1 << 20, &AcceptAll);
    assert_eq!(r.status, GetMessageStatus::Found);
    assert_eq!(record::decode(&r.messages[0], true).unwrap().queue_offset, 3);
    // The records are handed out byte for byte as stored.
    let original = store.lookup_message(record::decode(&r.messages[0], true).unwrap().commit_log_offset).unwrap();
    assert_eq!(original.body, record::decode(&r.messages[0], true).unwrap().body);

    // A second pass merges the new dirty range with the compacted log.
    put(&store, &[(Some("d"), Some("v2")), (None, Some("keyless"))]).await;
    let stats = store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    assert_eq!((stats.end, stats.keyless), (10, 1));
    let mut want = vec![row(4, "e", "v0"), row(5, "a", "v1"), row(6, "b", "v1"), row(7, "c", "v1"), row(8, "d", "v2")];
    // The keyless record is the queue's last: kept, so a reader can get past it to the end (a
    // Kafka consumer moves on only past a record; Kafka never cleans its active segment).
    want.push(row(9, "", "keyless"));
    assert_eq!(read_all(&store, 0), want, "the last record stays, whatever it is");
    // Above the compacted end the ConsumeQueue serves as before.
    put(&store, &[(Some("e"), Some("v3"))]).await;
    assert_eq!(read_all(&store, 8).last(), Some(&row(10, "e", "v3")));
    // Once a later record exists, a pass drops the keyless one, as Kafka and Java do.
    let stats = store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    assert_eq!(stats.end, 11);
    let want = vec![row(5, "a", "v1"), row(6, "b", "v1"), row(7, "c", "v1"), row(8, "d", "v2"), row(10, "e", "v3")];
    assert_eq!(read_all(&store, 0), want);
    store.shutdown().unwrap();

    // The compacted log survives a restart.
    let store = open(config(dir.path()), 60_000);
    assert_eq!(store.compacted_end(T, 0), 11);
    assert_eq!(read_all(&store, 0).len(), 5);
    store.shutdown().unwrap();
}

#[tokio::test]
async fn tombstones_go_delete_retention_ms_after_the_pass_that_kept_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(config(dir.path()), 1000);
    put(&store, &[(Some("a"), Some("1")), (Some("b"), Some("1")), (Some("a"), None)]).await;
    let now = crate::store::now_ms();
    store.compact_now(T, 0, now).unwrap().unwrap();
    assert_eq!(read_all(&store, 0), vec![row(1, "b", "1"), row(2, "a", "<null>")], "the tombstone stays a while");
    store.compact_now(T, 0, now + 999).unwrap().unwrap();
    assert_eq!(read_all(&store, 0).len(), 2, "not before delete.retention.ms");
    store.compact_now(T, 0, now + 1000).unwrap().unwrap();
    assert_eq!(read_all(&store, 0), vec![row(1, "b", "1")], "then it goes");
    store.shutdown().unwrap();
}

#[tokio::test]
async fn a_map_smaller_than_the_keys_takes_several_passes_to_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.max_offset_map_size = 2 * MAP_SLOT_BYTES;
    let store = open(c, 60_000);
    let keys = ["a", "b", "c", "d", "e", "f"];
    let mut records = Vec::new();
    for round in ["1", "2"] {
        for k in keys {
            records.push((Some(k), Some(round)));
        }
    }
    put(&store, &records).await;
    let stats = store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    assert!(stats.passes >= 3, "two keys a pass: {stats:?}");
    assert_eq!(stats.end, 12);
    let want: Vec<_> = keys.iter().enumerate().map(|(i, k)| row(6 + i as i64, k, "2")).collect();
    assert_eq!(read_all(&store, 0), want);
    store.shutdown().unwrap();
}

#[tokio::test]
async fn a_crash_before_the_commit_leaves_the_previous_generation_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(config(dir.path()), 60_000);
    put(&store, &[(Some("a"), Some("1")), (Some("a"), Some("2"))]).await;
    store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    let committed = read_all(&store, 0);
    put(&store, &[(Some("a"), Some("3")), (Some("b"), Some("3"))]).await;
    store.inject_compaction_crash();
    assert!(store.compact_now(T, 0, crate::store::now_ms()).is_err());
    let qdir = dir.path().join("compacted").join(T).join("0");
    let files = |ext: &str| {
        std::fs::read_dir(&qdir).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(ext)).count()
    };
    assert_eq!(files(".log"), 2, "the interrupted pass wrote its generation beside the old one");
    assert_eq!(store.compacted_end(T, 0), 2);
    drop(store); // as a crash: no shutdown

    let store = open(config(dir.path()), 60_000);
    assert_eq!(store.compacted_end(T, 0), 2, "the old generation is in force");
    assert_eq!(files(".log"), 1, "the interrupted generation is gone");
    let mut all = committed.clone();
    all.extend([row(2, "a", "3"), row(3, "b", "3")]);
    assert_eq!(read_all(&store, 0), all);
    store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    assert_eq!(read_all(&store, 0), vec![row(2, "a", "3"), row(3, "b", "3")]);
    store.shutdown().unwrap();
}

#[tokio::test]
async fn retention_keeps_what_a_compacted_queue_still_needs() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.file_reserved_time = 1;
    let store = open(c, 60_000);
    let body = "x".repeat(1000);
    let keys: Vec<String> = (0..10).map(|i| format!("k{i}")).collect();
    let mut records = Vec::new();
    for i in 0..300 {
        records.push((Some(keys[i % 10].as_str()), Some(body.as_str())));
    }
    put(&store, &records).await;
    let later = SystemTime::now() + Duration::from_secs(2 * 3600);
    assert_eq!(store.clean_expired_files(later).unwrap(), 0, "nothing compacted yet: every segment is needed");
    store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    let deleted = store.clean_expired_files(later).unwrap();
    assert!(deleted >= 3, "compacted: the old segments may go ({deleted})");
    assert!(store.commit_log_min_offset() > 0);
    let got = read_all(&store, 0);
    let want: Vec<_> = (0..10).map(|i| (290 + i as i64, keys[i].clone(), body.clone())).collect();
    assert_eq!(got, want, "the live set survives the CommitLog's retention");
    store.shutdown().unwrap();
}

#[tokio::test]
async fn the_background_round_compacts_a_queue_above_its_dirty_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.compaction_interval = Duration::from_millis(20);
    let store = open(c, 60_000);
    put(&store, &[(Some("a"), Some("1")), (Some("a"), Some("2")), (Some("b"), Some("1"))]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while store.compacted_end(T, 0) < 3 {
        assert!(std::time::Instant::now() < deadline, "no background pass");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(read_all(&store, 0), vec![row(1, "a", "2"), row(2, "b", "1")]);
    store.shutdown().unwrap();
}

/// Kafka's cleaner: never past the last stable offset; an aborted record is not kept and does
/// not supersede the committed value before it.
#[tokio::test]
async fn compaction_stops_at_the_last_stable_offset_and_drops_aborted_records() {
    struct Txn;
    impl super::CompactionTxn for Txn {
        fn clean_limit(&self, _: &str, _: i32, end: i64) -> i64 {
            end.min(3) // a transaction opened at offset 3
        }
        fn committed(&self, _: &str, _: i32, offset: i64, _: &str) -> bool {
            offset != 1 // offset 1 belongs to an aborted transaction
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let store = open(config(dir.path()), 60_000);
    store.set_compaction_txn(Arc::new(Txn));
    put(
        &store,
        &[(Some("a"), Some("1")), (Some("a"), Some("aborted")), (Some("b"), Some("1")), (Some("c"), Some("open"))],
    )
    .await;
    let stats = store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    assert_eq!((stats.end, stats.uncommitted), (3, 1));
    assert_eq!(read_all(&store, 0), vec![row(0, "a", "1"), row(2, "b", "1"), row(3, "c", "open")]);
    store.shutdown().unwrap();
}

/// DeleteRecords (or topic retention) on a compacted queue: the log start raises its minimum,
/// reads below it are OFFSET_TOO_SMALL, and the next pass drops what lies below it.
#[tokio::test]
async fn the_log_start_bounds_a_compacted_queue() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(config(dir.path()), 60_000);
    put(&store, &[(Some("a"), Some("1")), (Some("b"), Some("1")), (Some("c"), Some("1")), (Some("a"), Some("2"))])
        .await;
    store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    assert_eq!(store.min_offset_in_queue(T, 0), 0);
    assert_eq!(store.advance_log_start(T, 0, 2).unwrap(), 2);
    assert_eq!(store.min_offset_in_queue(T, 0), 2);
    let r = store.get_message(T, 0, 1, 32, 1 << 20, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::OffsetTooSmall, 2));
    assert_eq!(read_all(&store, 2), vec![row(2, "c", "1"), row(3, "a", "2")]);
    let stats = store.compact_now(T, 0, crate::store::now_ms()).unwrap().unwrap();
    assert_eq!(stats.records_kept, 2, "b (offset 1) is below the log start: gone");
    assert_eq!(read_all(&store, 2), vec![row(2, "c", "1"), row(3, "a", "2")]);
    store.shutdown().unwrap();
}
