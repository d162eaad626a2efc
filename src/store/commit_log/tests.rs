//! Unit tests of `store::commit_log` (through `use super::*`): they may import what it may, plus test crates.

use super::*;
use std::sync::mpsc;

use bytes::Bytes;

/// Tests: faults and pauses injected into the write path.
#[derive(Default)]
pub(super) struct TestHooks {
    /// The next write of waiting records fails.
    pub fail_next_write: AtomicBool,
    /// Run inside the next write of waiting records, before its bytes go out (writer lock held).
    pub in_write: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Run by the next commit that has to take the writer lock (records wait or are being
    /// written), before it does.
    pub commit_locks: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl TestHooks {
    pub(super) fn run(slot: &Mutex<Option<Box<dyn FnOnce() + Send>>>) {
        let hook = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(hook) = hook {
            hook();
        }
    }
}

fn msg(topic: &str, queue_id: i32, body: usize) -> MessageToStore {
    MessageToStore {
        topic: topic.into(),
        queue_id,
        flag: 0,
        body: Bytes::from(vec![b'x'; body]),
        properties: "TAGS\u{1}A\u{2}".into(),
        tags_code: 0,
        born_timestamp: 1,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

#[test]
fn appends_assign_offsets_and_roll_with_a_blank() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::load(dir.path(), 1024, false).unwrap();
    let a = log.append(&[msg("T", 0, 300)], || 10, false).unwrap();
    assert_eq!(a.offsets, vec![0]);
    assert_eq!(a.queue_offset, 0);
    let b = log.append(&[msg("T", 0, 300)], || 11, false).unwrap();
    assert_eq!(b.queue_offset, 1);
    // A third does not fit in the 1024-byte segment: blank, then the next segment.
    let c = log.append(&[msg("T", 0, 300)], || 12, false).unwrap();
    assert_eq!(c.offsets, vec![1024]);
    assert_eq!(c.queue_offset, 2);
    let other = log.append(&[msg("U", 3, 10)], || 13, false).unwrap();
    assert_eq!(other.queue_offset, 0);
    let m = log.message(1024).unwrap();
    assert_eq!((m.queue_offset, m.store_timestamp, m.commit_log_offset), (2, 12, 1024));

    let mut seen = Vec::new();
    let end = log.scan_valid(0, true, |d| seen.push((d.topic.to_string(), d.queue_offset)));
    assert_eq!(end, log.max_offset());
    assert_eq!(seen.len(), 4);
    assert!(log.append(&[msg("T", 0, 2000)], || 1, false).is_err(), "larger than a segment");
}

#[test]
fn batch_records_are_consecutive() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::load(dir.path(), 64 * 1024, false).unwrap();
    let r = log.append(&[msg("T", 1, 5), msg("T", 1, 6), msg("T", 1, 7)], || 5, false).unwrap();
    assert_eq!(r.offsets.len(), 3);
    for (i, off) in r.offsets.iter().enumerate() {
        let m = log.message(*off as u64).unwrap();
        assert_eq!(m.queue_offset, i as i64);
        assert_eq!(m.body.len(), 5 + i);
    }
    assert_eq!(log.append(&[msg("T", 1, 5)], || 6, false).unwrap().queue_offset, 3);
}

#[test]
fn torn_tail_is_found_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let end_of_two = {
        let log = CommitLog::load(dir.path(), 64 * 1024, false).unwrap();
        log.append(&[msg("T", 0, 100)], || 1, false).unwrap();
        let r = log.append(&[msg("T", 0, 100)], || 2, false).unwrap();
        log.append(&[msg("T", 0, 100)], || 3, false).unwrap();
        r.end_offset
    };
    // Corrupt the third record's body.
    let path = dir.path().join("00000000000000000000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[end_of_two as usize + 90] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();

    let log = CommitLog::load(dir.path(), 64 * 1024, false).unwrap();
    let end = log.scan_valid(0, true, |_| {});
    assert_eq!(end, end_of_two);
    log.truncate(end).unwrap();
    assert_eq!(log.max_offset(), end_of_two);
    log.set_queue_offset("T", 0, 2);
    let r = log.append(&[msg("T", 0, 1)], || 4, false).unwrap();
    assert_eq!((r.offsets[0] as u64, r.queue_offset), (end_of_two, 2));
}

#[test]
fn deferred_records_are_invisible_until_committed_and_keep_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::load(dir.path(), 1024, false).unwrap();
    assert!(!log.commit().unwrap(), "nothing deferred yet");
    let a = log.append(&[msg("T", 0, 100)], || 10, true).unwrap();
    let b = log.append(&[msg("T", 0, 100)], || 11, true).unwrap();
    assert_eq!((a.offsets.clone(), a.queue_offset), (vec![0], 0));
    assert_eq!((b.offsets.clone(), b.queue_offset), (vec![a.end_offset as i64], 1));
    assert_eq!(log.max_offset(), 0, "deferred records are not readable");
    assert!(log.message(0).is_none());
    assert!(log.commit().unwrap());
    assert_eq!(log.max_offset(), b.end_offset);
    assert_eq!(log.message(b.offsets[0] as u64).unwrap().queue_offset, 1);
    assert!(!log.commit().unwrap(), "committed once");

    // An append that is not deferred writes what waits before it, in order, with itself.
    let c = log.append(&[msg("T", 0, 50)], || 12, true).unwrap();
    let d = log.append(&[msg("U", 0, 50)], || 13, false).unwrap();
    assert_eq!(log.max_offset(), d.end_offset);
    assert_eq!(log.message(c.offsets[0] as u64).unwrap().store_timestamp, 12);
    assert!(!log.commit().unwrap());

    // A deferred record that does not fit: the waiting ones and the blank are written, the
    // record goes to the next segment (still deferred).
    let e = log.append(&[msg("T", 0, 50)], || 14, true).unwrap();
    let f = log.append(&[msg("T", 0, 300)], || 15, true).unwrap();
    assert_eq!(f.offsets, vec![1024]);
    assert_eq!(log.max_offset(), 1024, "the first segment was completed");
    assert_eq!(log.message(e.offsets[0] as u64).unwrap().queue_offset, 3);
    assert!(log.commit().unwrap());
    assert_eq!(log.max_offset(), f.end_offset);
    let mut seen = Vec::new();
    let end = log.scan_valid(0, true, |r| seen.push((r.topic.to_string(), r.queue_offset)));
    assert_eq!(end, f.end_offset);
    let expected = [("T", 0), ("T", 1), ("T", 2), ("U", 0), ("T", 3), ("T", 4)];
    assert_eq!(seen, expected.map(|(t, q)| (t.to_owned(), q)));
}

#[test]
fn deferred_records_past_the_limit_are_written_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::load(dir.path(), 4 << 20, false).unwrap();
    let mut last = None;
    while log.max_offset() == 0 {
        let r = log.append(&[msg("T", 0, 4000)], || 1, true).unwrap();
        assert!(r.end_offset <= (MAX_PENDING + 4200) as u64, "deferred past the limit: {}", r.end_offset);
        last = Some(r);
    }
    assert_eq!(log.max_offset(), last.unwrap().end_offset);
    assert!(!log.commit().unwrap());
}

#[test]
fn a_failed_write_of_deferred_records_fails_every_later_commit() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::load(dir.path(), 64 * 1024, false).unwrap();
    log.append(&[msg("T", 0, 100)], || 1, true).unwrap();
    log.hooks.fail_next_write.store(true, Ordering::Release);
    // An append that is not deferred writes what waits with itself: it fails, and the deferred
    // record before it is lost with it.
    assert!(log.append(&[msg("T", 0, 100)], || 2, false).is_err());
    assert_eq!(log.max_offset(), 0);
    assert!(log.commit().is_err(), "the deferred record's owner must learn it is lost");
    assert!(log.commit().is_err(), "and so must every later commit");
}

/// Connection B deferred a record; connection A's commit is writing it (and that write will
/// fail). B's commit must neither return "nothing pending" while A's write is in flight nor
/// succeed afterwards: B would acknowledge a lost message.
#[test]
fn a_commit_waits_for_the_write_in_flight_that_carries_its_records() {
    #[derive(Debug)]
    enum Event {
        BTakesTheLock,
        BDone(Result<bool, String>),
    }
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(CommitLog::load(dir.path(), 64 * 1024, false).unwrap());
    log.append(&[msg("T", 0, 100)], || 1, true).unwrap(); // B's record, deferred
    let (writing_tx, writing_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    *log.hooks.in_write.lock().unwrap() = Some(Box::new(move || {
        writing_tx.send(()).unwrap();
        let _ = release_rx.recv(); // until released (or the test is over)
    }));
    log.hooks.fail_next_write.store(true, Ordering::Release);
    let a = std::thread::spawn({
        let log = log.clone();
        move || log.commit().map_err(|e| e.to_string())
    });
    writing_rx.recv().unwrap(); // A is inside the write of B's record

    let (events_tx, events_rx) = mpsc::channel();
    let hook_tx = events_tx.clone();
    *log.hooks.commit_locks.lock().unwrap() = Some(Box::new(move || hook_tx.send(Event::BTakesTheLock).unwrap()));
    let b = std::thread::spawn({
        let log = log.clone();
        move || events_tx.send(Event::BDone(log.commit().map_err(|e| e.to_string()))).unwrap()
    });
    let first = events_rx.recv().unwrap();
    assert!(
        matches!(first, Event::BTakesTheLock),
        "B's commit returned {first:?} while A was still writing B's record"
    );
    drop(release_tx);
    assert!(a.join().unwrap().is_err(), "A's write failed");
    let Event::BDone(b_result) = events_rx.recv().unwrap() else { panic!("B reported twice") };
    assert!(b_result.is_err(), "B must learn its record is lost, got {b_result:?}");
    b.join().unwrap();
}
