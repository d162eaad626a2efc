//! Crash tests that really kill: a child process appends under load and is SIGKILLed at random
//! moments; the store is then recovered and checked. The child is this test binary itself,
//! re-run on the ignored `crash_child` test with the store directory in the environment.
//!
//! `FERROCKET_CRASH_CYCLES` sets the number of kill cycles (default 20).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferrocket::store::{AcceptAll, FlushDiskType, GetMessageStatus, MessageStore};

use super::store::{config, msg};

const CHILD_DIR: &str = "FERROCKET_CRASH_CHILD_DIR";
const CHILD_FLUSH: &str = "FERROCKET_CRASH_CHILD_FLUSH";
const QUEUES: i32 = 4;

/// `sync`: SYNC_FLUSH; `async`: ASYNC_FLUSH; `deferred`: ASYNC_FLUSH with deferred puts, each
/// acknowledged after a commit (as the broker's connection writer does).
fn flush_type(name: &str) -> FlushDiskType {
    if name == "sync" {
        FlushDiskType::SyncFlush
    } else {
        FlushDiskType::AsyncFlush
    }
}

/// The child: appends from 8 writers until killed, printing `ACK <body>` after each
/// acknowledged put. Only runs when started by the parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "started as a child process by the crash tests"]
async fn crash_child() {
    let (Ok(dir), Ok(flush)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_FLUSH)) else { return };
    let store = std::sync::Arc::new(MessageStore::open(config(dir.as_ref(), flush_type(&flush))).unwrap());
    let generation = std::process::id();
    let mut tasks = Vec::new();
    for w in 0..8 {
        let (store, flush) = (store.clone(), flush.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                let body = format!("{generation}-{w}-{i}");
                let m = [msg("CrashTopic", w % QUEUES, &body, "T", "")];
                let r = if flush == "deferred" {
                    let r = store.put_messages_deferred(&m, true).await;
                    store.commit().unwrap();
                    r
                } else {
                    store.put_messages(&m, true).await
                };
                if r.is_ok() {
                    println!("ACK {body}");
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Runs one child for `run_for`, kills it with SIGKILL, returns the bodies it acknowledged.
fn run_and_kill(dir: &std::path::Path, flush: &str, run_for: Duration) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "crash::crash_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_DIR, dir)
        .env(CHILD_FLUSH, flush)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("ACK ").map(str::to_owned))
            .collect::<Vec<_>>()
    });
    std::thread::sleep(run_for);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap()
}

/// Every message readable from every queue, checking offsets are contiguous.
fn read_all(dir: &std::path::Path, flush: FlushDiskType) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let store = MessageStore::open(config(dir, flush)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.dispatched_offset() < store.commit_log_max_offset() {
            assert!(Instant::now() < deadline, "dispatch did not catch up after recovery");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut bodies = Vec::new();
        for q in 0..QUEUES {
            let mut offset = store.min_offset_in_queue("CrashTopic", q);
            loop {
                let r = store.get_message("CrashTopic", q, offset, 32, 1 << 20, &AcceptAll);
                if r.status != GetMessageStatus::Found {
                    assert!(
                        offset >= store.max_offset_in_queue("CrashTopic", q),
                        "hole in queue {q} at {offset}: {:?}",
                        r.status
                    );
                    break;
                }
                for (i, m) in r.messages.iter().enumerate() {
                    let decoded = ferrocket::store::commit_log::record::decode(m, true).expect("torn record readable");
                    assert_eq!(decoded.queue_offset, offset + i as i64, "queue offsets not contiguous");
                    bodies.push(String::from_utf8(decoded.body.to_vec()).unwrap());
                }
                offset = r.next_begin_offset;
            }
            assert!(store.commit_log_max_offset() >= store.flushed_offset());
        }
        store.shutdown().unwrap();
        bodies
    })
}

fn cycles() -> usize {
    std::env::var("FERROCKET_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

/// Pseudo-random kill delays (no extra dependency): 50..350 ms.
fn delays() -> impl Iterator<Item = Duration> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id());
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some(Duration::from_millis(50 + x % 300))
    })
}

/// Kill cycles in `mode` (see [`flush_type`]): every acknowledged message is recovered.
fn loses_no_acknowledged_message_across_kills(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut acked = std::collections::HashSet::new();
    for (cycle, delay) in delays().take(cycles()).enumerate() {
        acked.extend(run_and_kill(dir.path(), mode, delay));
        let stored = read_all(dir.path(), flush_type(mode));
        let mut seen = std::collections::HashSet::new();
        for b in &stored {
            assert!(seen.insert(b.clone()), "cycle {cycle}: message {b} stored twice");
        }
        let missing: Vec<_> = acked.iter().filter(|a| !seen.contains(*a)).take(5).collect();
        assert!(missing.is_empty(), "cycle {cycle}: acknowledged messages lost: {missing:?}");
    }
    eprintln!("{mode} crash loop: {} cycles, {} acknowledged messages all recovered", cycles(), acked.len());
    assert!(acked.len() > 100, "children acknowledged too little to prove anything: {}", acked.len());
}

#[test]
fn sync_flush_loses_no_acknowledged_message_across_kills() {
    loses_no_acknowledged_message_across_kills("sync");
}

/// A process crash (not a power loss) under ASYNC_FLUSH: a deferred put is acknowledged once
/// committed, so its bytes are in the page cache and survive the process.
#[test]
fn async_flush_deferred_puts_lose_no_acknowledged_message_across_kills() {
    loses_no_acknowledged_message_across_kills("deferred");
}

#[test]
fn async_flush_store_stays_consistent_across_kills() {
    let dir = tempfile::tempdir().unwrap();
    let mut total = 0;
    for delay in delays().take(cycles()) {
        total += run_and_kill(dir.path(), "async", delay).len();
        // read_all asserts: no torn record readable, queue offsets contiguous, no CQ unit past
        // the CommitLog end (a unit past it would be unreadable and fail the hole check).
        let stored = read_all(dir.path(), FlushDiskType::AsyncFlush);
        let unique: std::collections::HashSet<_> = stored.iter().collect();
        assert_eq!(unique.len(), stored.len(), "a message is stored twice");
    }
    eprintln!("async crash loop: {} cycles, {total} acknowledged messages, store consistent", cycles());
    assert!(total > 100, "children acknowledged too little: {total}");
}
