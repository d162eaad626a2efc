//! The message store through its public API: appends, reads, recovery, rebuild, retention.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrocket::model::message::{self, MessageToStore};
use ferrocket::store::{
    AcceptAll, FlushDiskType, FlushFault, GetMessageStatus, MessageFilter, MessageStore, PutStatus, StoreConfig,
};

pub fn config(dir: &std::path::Path, flush: FlushDiskType) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 64 * 1024,
        // Blocks a little ahead of the write end (#28.6): these tests and the kill -9 tests
        // (crash.rs) run on partly allocated segments, as a broker under the default config does.
        commit_log_allocate_ahead_size: 16 * 1024,
        mapped_file_size_consume_queue: 20 * 100,
        max_hash_slot_num: 1000,
        max_index_num: 4000,
        flush_disk_type: flush,
        flush_interval_commit_log: Duration::from_millis(20),
        flush_interval_consume_queue: Duration::from_millis(50),
        // The machine's disk must not decide: above 85 % a store deletes unconsumed segments.
        clean_file_forcibly_enable: false,
        ..StoreConfig::default()
    }
}

pub fn msg(topic: &str, queue_id: i32, body: &str, tags: &str, keys: &str) -> MessageToStore {
    let props = message::properties_to_string([("TAGS", tags), ("KEYS", keys), ("UNIQ_KEY", body), ("WAIT", "true")]);
    MessageToStore {
        topic: topic.into(),
        queue_id,
        flag: 0,
        body: Bytes::copy_from_slice(body.as_bytes()),
        tags_code: message::tags_code(Some(tags)),
        properties: props,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

pub async fn wait_dispatched(store: &MessageStore) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.dispatched_offset() < store.commit_log_max_offset() {
        assert!(std::time::Instant::now() < deadline, "dispatcher did not catch up");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn bodies(store: &MessageStore, topic: &str, queue_id: i32) -> Vec<String> {
    let mut out = Vec::new();
    let mut offset = store.min_offset_in_queue(topic, queue_id);
    loop {
        let r = store.get_message(topic, queue_id, offset, 32, 1 << 20, &AcceptAll);
        if r.status != GetMessageStatus::Found {
            break;
        }
        for m in &r.messages {
            out.push(String::from_utf8(message_body(m)).unwrap());
        }
        offset = r.next_begin_offset;
    }
    out
}

fn message_body(record: &[u8]) -> Vec<u8> {
    ferrocket::store::commit_log::record::decode(record, true).unwrap().body.to_vec()
}

#[tokio::test]
async fn put_get_across_segments_and_queues() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), FlushDiskType::AsyncFlush)).unwrap();
    for i in 0..1500 {
        let r = store.put_messages(&[msg("T", i % 3, &format!("m{i}"), "TagA", "")], true).await;
        assert_eq!(r.status, PutStatus::PutOk);
        assert_eq!(r.append.unwrap().queue_offset, i64::from(i / 3));
    }
    wait_dispatched(&store).await;
    assert!(store.commit_log_max_offset() > 3 * 64 * 1024, "expected several segments");
    let q0 = bodies(&store, "T", 0);
    assert_eq!(q0.len(), 500);
    assert_eq!(q0[1], "m3");
    assert_eq!(q0[499], "m1497");
    assert_eq!(store.max_offset_in_queue("T", 2), 500);

    let r = store.get_message("T", 0, 500, 32, 1 << 20, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::OffsetOverflowOne, 500));
    let r = store.get_message("T", 0, 999, 32, 1 << 20, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::OffsetOverflowBadly, 500));
    let r = store.get_message("nope", 0, 0, 32, 1 << 20, &AcceptAll);
    assert_eq!(r.status, GetMessageStatus::NoMatchedLogicQueue);
    let r = store.get_message("T", 0, 0, 32, 1 << 20, &AcceptAll);
    assert_eq!(r.messages.len(), 32, "in-memory pulls return up to 32 messages");
    store.shutdown().unwrap();
}

struct Tag(i64);

impl MessageFilter for Tag {
    fn matches_tags_code(&self, code: i64) -> bool {
        code == self.0
    }
}

#[tokio::test]
async fn tag_filter_and_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), FlushDiskType::AsyncFlush)).unwrap();
    let mut offsets = Vec::new();
    for i in 0..10 {
        let tag = if i % 2 == 0 { "TagA" } else { "TagB" };
        let r = store.put_messages(&[msg("T", 0, &format!("m{i}"), tag, &format!("k{i} shared"))], true).await;
        offsets.push(r.append.unwrap().offsets[0]);
    }
    wait_dispatched(&store).await;
    let r = store.get_message("T", 0, 0, 32, 1 << 20, &Tag(message::tags_code(Some("TagB"))));
    assert_eq!(r.messages.len(), 5);
    assert_eq!(r.next_begin_offset, 10);
    let r = store.get_message("T", 0, 0, 32, 1 << 20, &Tag(12345));
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::NoMatchedMessage, 10));

    let m = store.lookup_message(offsets[3]).unwrap();
    assert_eq!(&m.body[..], b"m3");
    assert_eq!(m.queue_offset, 3);
    let q = store.query_message("T", "k7", 32, 0, i64::MAX);
    assert_eq!(q.messages.len(), 1);
    assert_eq!(message_body(&q.messages[0]), b"m7");
    assert_eq!(store.query_message("T", "shared", 32, 0, i64::MAX).messages.len(), 10);
    assert_eq!(store.query_message("T", "m4", 32, 0, i64::MAX).messages.len(), 1, "by unique key");
    let t3 = store.message_store_timestamp("T", 0, 3).unwrap();
    assert!(store.offset_in_queue_by_time("T", 0, t3) <= 3);
    assert_eq!(store.offset_in_queue_by_time("T", 0, i64::MAX), 10);
    assert!(store.earliest_message_time("T", 0).unwrap() <= t3);
    store.shutdown().unwrap();
}

#[tokio::test]
async fn reopen_after_clean_shutdown_and_after_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap();
        for i in 0..50 {
            assert!(store.put_messages(&[msg("T", 0, &format!("a{i}"), "A", "")], true).await.is_ok());
        }
        store.shutdown().unwrap();
    }
    assert!(!dir.path().join("abort").exists());
    {
        let store = MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap();
        assert_eq!(store.max_offset_in_queue("T", 0), 50);
        let r = store.put_messages(&[msg("T", 0, "b0", "A", "")], true).await;
        assert_eq!(r.append.unwrap().queue_offset, 50, "queue offsets continue after restart");
        // Dropped without shutdown: like a crash.
    }
    assert!(dir.path().join("abort").exists());
    let store = MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap();
    wait_dispatched(&store).await;
    let all = bodies(&store, "T", 0);
    assert_eq!(all.len(), 51);
    assert_eq!(all[50], "b0");
    assert!(
        MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).is_err(),
        "second open must fail on the lock"
    );
    store.shutdown().unwrap();
}

#[tokio::test]
async fn consume_queues_rebuild_identically_from_the_commit_log() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = MessageStore::open(config(dir.path(), FlushDiskType::AsyncFlush)).unwrap();
        for i in 0..400 {
            store.put_messages(&[msg(&format!("T{}", i % 4), (i / 4) % 2, &format!("m{i}"), "A", "")], true).await;
        }
        store.shutdown().unwrap();
    }
    let before = snapshot(&dir.path().join("consumequeue"));
    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    let store = MessageStore::open(config(dir.path(), FlushDiskType::AsyncFlush)).unwrap();
    store.shutdown().unwrap();
    let after = snapshot(&dir.path().join("consumequeue"));
    assert_eq!(before.len(), 8);
    assert_eq!(before, after, "rebuilt consume queues differ");
}

fn snapshot(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for t in std::fs::read_dir(dir).unwrap().flatten() {
        for q in std::fs::read_dir(t.path()).unwrap().flatten() {
            for f in std::fs::read_dir(q.path()).unwrap().flatten() {
                let name = format!(
                    "{}/{}/{}",
                    t.file_name().to_string_lossy(),
                    q.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                out.insert(name, std::fs::read(f.path()).unwrap());
            }
        }
    }
    out
}

#[tokio::test]
async fn sync_flush_group_commit_and_failed_fsync_poisons() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap());
    let ok = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (store, ok) = (store.clone(), ok.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                let r = store.put_messages(&[msg("T", w, &format!("{w}-{i}"), "A", "")], true).await;
                if r.is_ok() {
                    assert!(store.flushed_offset() >= r.append.unwrap().end_offset, "acknowledged before flushed");
                    ok.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(ok.load(Ordering::Relaxed), 320);

    store.inject_flush_fault(FlushFault::Fail);
    let r = store.put_messages(&[msg("T", 0, "doomed", "A", "")], true).await;
    assert!(matches!(r.status, PutStatus::ServiceNotAvailable(_)), "{:?}", r.status);
    let r = store.put_messages(&[msg("T", 0, "after", "A", "")], true).await;
    match r.status {
        PutStatus::ServiceNotAvailable(why) => assert!(why.contains("flush failed"), "{why}"),
        other => panic!("poisoned store accepted a write: {other:?}"),
    }
}

/// A deferred put that finds the buffer full writes it at once; it must announce those
/// records as a commit would, or consumers and slaves see them only at the dispatcher's idle
/// wake-up or the HA sender's poll.
#[tokio::test]
async fn a_deferred_put_that_writes_the_full_buffer_announces_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), FlushDiskType::AsyncFlush);
    c.mapped_file_size_commit_log = 4 << 20;
    // The flush thread also writes what waits; here only the puts may.
    c.flush_interval_commit_log = Duration::from_secs(3600);
    let store = MessageStore::open(c).unwrap();
    let signal = store.append_signal();
    let body = "x".repeat(8 << 10);
    let (mut announced, mut wrote) = (Vec::new(), Vec::new());
    for i in 0..40 {
        let notified = signal.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let before = store.commit_log_max_offset();
        let r = store.put_messages_deferred(&[msg("T", 0, &body, "A", &format!("k{i}"))], false).await;
        assert_eq!(r.status, PutStatus::PutOk);
        if store.commit_log_max_offset() > before {
            wrote.push(i);
        }
        if tokio::time::timeout(Duration::ZERO, notified).await.is_ok() {
            announced.push(i);
        }
    }
    // Records of ~16 KiB (the body is also the UNIQ_KEY): every 16th put finds 256 KiB waiting
    // and writes them; the others only wait in the buffer.
    assert_eq!(wrote, vec![15, 31], "puts that wrote the buffer");
    assert_eq!(announced, wrote, "puts that announced what they wrote");
    store.commit().unwrap();
    wait_dispatched(&store).await;
    assert_eq!(bodies(&store, "T", 0).len(), 40);
    store.shutdown().unwrap();
}

#[tokio::test]
async fn sync_flush_timeout_reports_but_keeps_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), FlushDiskType::SyncFlush);
    c.sync_flush_timeout = Duration::from_millis(100);
    let store = MessageStore::open(c).unwrap();
    store.inject_flush_fault(FlushFault::Stall(Duration::from_millis(500)));
    let r = store.put_messages(&[msg("T", 0, "late", "A", "")], true).await;
    assert_eq!(r.status, PutStatus::FlushDiskTimeout);
    wait_dispatched(&store).await;
    assert_eq!(bodies(&store, "T", 0), vec!["late"], "a FLUSH_DISK_TIMEOUT message is still stored");
    store.shutdown().unwrap();
}

#[tokio::test]
async fn record_cut_mid_way_is_dropped_with_its_queue_and_index_entries() {
    let dir = tempfile::tempdir().unwrap();
    let last_offset = {
        let store = MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap();
        let mut last = 0;
        for i in 0..20 {
            let r = store.put_messages(&[msg("T", 0, &format!("m{i}"), "A", &format!("key{i}"))], true).await;
            last = r.append.unwrap().offsets[0];
        }
        wait_dispatched(&store).await;
        last
        // dropped without shutdown: a crash
    };
    // Tear the last record: zero everything from its middle on, as a torn write leaves it.
    let seg = dir.path().join("commitlog").join("00000000000000000000");
    let mut bytes = std::fs::read(&seg).unwrap();
    let cut = last_offset as usize + 50;
    bytes[cut..].fill(0);
    std::fs::write(&seg, &bytes).unwrap();

    let store = MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap();
    assert_eq!(store.commit_log_max_offset(), last_offset as u64, "torn record not truncated");
    assert_eq!(store.max_offset_in_queue("T", 0), 19, "consume queue entry of the torn record kept");
    assert!(
        store.query_message("T", "key19", 32, 0, i64::MAX).messages.is_empty(),
        "index entry of the torn record kept"
    );
    assert_eq!(store.query_message("T", "key18", 32, 0, i64::MAX).messages.len(), 1);
    let r = store.put_messages(&[msg("T", 0, "again", "A", "key-again")], true).await;
    let a = r.append.unwrap();
    assert_eq!((a.offsets[0], a.queue_offset), (last_offset, 19));
    wait_dispatched(&store).await;
    let all = bodies(&store, "T", 0);
    assert_eq!(all.len(), 20);
    assert_eq!(all[19], "again");
    store.shutdown().unwrap();
}

#[tokio::test]
async fn reopening_does_not_index_the_last_message_again() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let store = MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap();
        if round == 0 {
            for i in 0..2 {
                store.put_messages(&[msg("T", 0, &format!("m{i}"), "A", "dup-key")], true).await;
            }
        }
        wait_dispatched(&store).await;
        assert_eq!(store.query_message("T", "dup-key", 32, 0, i64::MAX).messages.len(), 2, "open #{round}");
        store.shutdown().unwrap();
    }
}

/// A slave receives the CommitLog in frames cut at any byte: a record split across two appends
/// is waited for, never reported as damage, and dispatched as soon as its rest arrives.
#[tokio::test]
async fn replicated_bytes_cut_mid_record_are_dispatched_when_complete() {
    let logs = super::support::logs();
    let master_dir = tempfile::tempdir().unwrap();
    let master = MessageStore::open(config(master_dir.path(), FlushDiskType::AsyncFlush)).unwrap();
    let mut ends = Vec::new();
    for i in 0..60 {
        let body = "x".repeat(50 + i * 37 % 400);
        let r = master.put_messages(&[msg("SPLIT", 0, &body, "A", &format!("k{i}"))], false).await;
        let a = r.append.unwrap();
        ends.push(a.end_offset);
    }
    let total = master.commit_log_max_offset();
    let bytes = master.commit_log_data(0).unwrap().to_vec();
    assert_eq!(bytes.len() as u64, total, "one segment holds the test data");

    let slave_dir = tempfile::tempdir().unwrap();
    let slave = MessageStore::open(config(slave_dir.path(), FlushDiskType::AsyncFlush)).unwrap();
    let mut at = 0usize;
    for chunk in bytes.chunks(777) {
        slave.append_replicated(at as u64, chunk).unwrap();
        at += chunk.len();
        // Every record wholly received is dispatched; the cut one waits for its rest.
        let complete = ends.iter().filter(|e| **e <= at as u64).count() as i64;
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while slave.max_offset_in_queue("SPLIT", 0) < complete {
            assert!(std::time::Instant::now() < deadline, "records up to {at} not dispatched");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(slave.max_offset_in_queue("SPLIT", 0), complete);
    }
    assert_eq!(bodies(&slave, "SPLIT", 0), bodies(&master, "SPLIT", 0));
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(!text.contains("dispatch failed"), "a split record was reported as damage:\n{text}");
    slave.shutdown().unwrap();
    master.shutdown().unwrap();
}

/// Damaged ConsumeQueue units (negative offset or size, a record past the CommitLog's end) are
/// skipped by reads, never used for arithmetic or a read.
#[tokio::test]
async fn damaged_consume_queue_units_are_skipped() {
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), FlushDiskType::AsyncFlush)).unwrap();
    for i in 0..5 {
        store.put_messages(&[msg("DMG", 0, &format!("m{i}"), "A", "")], false).await;
    }
    wait_dispatched(&store).await;
    let damage = |index: u64, offset: i64, size: i32| {
        let cq = dir.path().join("consumequeue").join("DMG").join("0").join("00000000000000000000");
        let mut f = std::fs::OpenOptions::new().write(true).open(cq).unwrap();
        f.seek(SeekFrom::Start(index * 20)).unwrap();
        f.write_all(&offset.to_be_bytes()).unwrap();
        f.write_all(&size.to_be_bytes()).unwrap();
    };
    damage(1, -5, 100);
    damage(2, 10, -1);
    damage(3, i64::MAX - 10, 100);
    let r = store.get_message("DMG", 0, 0, 32, 1 << 20, &AcceptAll);
    assert_eq!(r.status, GetMessageStatus::Found);
    let got: Vec<_> = r.messages.iter().map(|m| String::from_utf8(message_body(m)).unwrap()).collect();
    assert_eq!(got, vec!["m0", "m4"]);
    assert_eq!(r.next_begin_offset, 5);
    store.shutdown().unwrap();
}
