//! A log start offset (Kafka DeleteRecords, topic retention) survives `kill -9`: every start the
//! store acknowledged before the kill is there after recovery. The child is this test binary,
//! re-run on the ignored `log_start_child` test; it prints `START <n>` after each acknowledged
//! move, and the parent kills it once it has seen some.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use ferrocket::store::{FlushDiskType, MessageStore};

use super::store::{config, msg};

const CHILD_DIR: &str = "FERROCKET_LOG_START_CHILD_DIR";
const RECORDS: i64 = 400;

#[tokio::test]
#[ignore = "started as a child process by log_start_survives_kill_9"]
async fn log_start_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else { return };
    let store = MessageStore::open(config(dir.as_ref(), FlushDiskType::SyncFlush)).unwrap();
    for i in 0..RECORDS {
        assert!(store.put_messages(&[msg("Purged", 0, &format!("m{i}"), "T", "")], true).await.is_ok());
    }
    store.await_dispatched(Duration::from_secs(10)).await;
    for n in 1..=RECORDS {
        assert_eq!(store.advance_log_start("Purged", 0, n).unwrap(), n);
        println!("START {n}");
    }
    // Killed before the end, or waits to be.
    tokio::time::sleep(Duration::from_secs(60)).await;
}

#[test]
fn log_start_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "crash_log_start::log_start_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_DIR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acknowledged = 0i64;
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if let Some(n) = line.strip_prefix("START ").and_then(|n| n.parse::<i64>().ok()) {
            acknowledged = n;
            if n >= 25 {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL, while it moves the start on
    child.wait().unwrap();
    assert!(acknowledged >= 25, "the child acknowledged {acknowledged} moves");
    let store = MessageStore::open(config(dir.path(), FlushDiskType::SyncFlush)).unwrap();
    assert_eq!(store.max_offset_in_queue("Purged", 0), RECORDS, "recovered");
    let start = store.min_offset_in_queue("Purged", 0);
    assert!(start >= acknowledged, "start {start} after the kill, {acknowledged} acknowledged before it");
    store.shutdown().unwrap();
}
