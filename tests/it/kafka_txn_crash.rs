//! Kafka transactions across kill -9 of a broker process (the wire helpers are `kafka_txn`'s):
//! a transaction open at the kill and one in PrepareCommit, and a kill during EndTxn(commit).

use std::time::{Duration, Instant};

use kafka_protocol::messages::*;

use super::broker_harness::*;
use super::kafka::{create, Conn};
use super::kafka_txn::{add, end, init_ready, lso, markers, markers_are, send, tid, txn_batch, txn_produce, until};

const CHILD_DIR: &str = "FERROCKET_TXN_CHILD_DIR";

/// The child: a broker with a Kafka listener on the directory the parent names, printing its
/// Kafka port, serving until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "started as a child process by the transaction crash tests"]
async fn txn_crash_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else { return };
    let b = start_broker(dir.as_ref(), |c| c.kafka_listen_port = KAFKA_ANY_PORT).await;
    println!("PORT {}", b.kafka_port.unwrap());
    std::future::pending::<()>().await;
}

/// The child broker process, killed (SIGKILL) when dropped: a failed test leaves none behind.
struct Child(std::process::Child);

impl Child {
    fn kill_9(&mut self) {
        self.0.kill().unwrap(); // SIGKILL
        self.0.wait().unwrap();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the child broker on `dir`: the process and its Kafka port.
fn spawn_child(dir: &std::path::Path) -> (Child, u16) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "kafka_txn_crash::txn_crash_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_DIR, dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Child(child);
    let mut lines = BufReader::new(stdout).lines();
    // libtest's "test ... " may precede it on the same line.
    let port = lines.find_map(|l| l.ok()?.rsplit_once("PORT ")?.1.trim().parse().ok()).expect("the child's port");
    (child, port)
}

/// A transaction open at kill -9 holds the LSO after the restart and is aborted when its
/// timeout passes; one that reached PrepareCommit is completed at start-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_with_a_transaction_open_and_with_one_prepared() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, port) = spawn_child(dir.path());
    let mut c = Conn::open(port).await;
    create(&mut c, "crash", 2).await;
    let (open_pid, e1) = init_ready(&mut c, "open", 8000).await;
    assert_eq!(add(&mut c, "open", open_pid, e1, "crash", vec![0]).await, vec![0]);
    assert_eq!(send(&mut c, &txn_produce("open", "crash", 0, txn_batch(2, open_pid, e1, 0))).await, (0, 0));
    let (prep_pid, e2) = init_ready(&mut c, "prepared", 60_000).await;
    assert_eq!(add(&mut c, "prepared", prep_pid, e2, "crash", vec![1]).await, vec![0]);
    assert_eq!(send(&mut c, &txn_produce("prepared", "crash", 1, txn_batch(3, prep_pid, e2, 0))).await, (0, 0));
    child.kill_9();
    // What a crash between persisting PrepareCommit and writing the markers leaves: the log
    // says PrepareCommit (that write is the only one EndTxn makes before the markers).
    let log = dir.path().join("config").join("kafkaTransactions.json");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut table: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(table["open"]["state"], "Ongoing");
    table["prepared"]["state"] = "PrepareCommit".into();
    std::fs::write(&log, serde_json::to_vec(&table).unwrap()).unwrap();

    let b = start_broker(dir.path(), |cfg| {
        cfg.kafka_listen_port = KAFKA_ANY_PORT;
        cfg.kafka_transaction_cleanup_interval_ms = 50;
    })
    .await;
    until("the prepared transaction's marker", || markers(&b, "crash", 1) == vec![(3, "COMMIT".into(), prep_pid)])
        .await;
    until("dispatch after recovery", || b.inner.core.store.max_offset_in_queue("crash", 0) == 2).await;
    assert_eq!(lso(&b, "crash", 0), (0, 2), "the open transaction holds the LSO again after the restart");
    until("the open transaction's abort after its timeout", || markers(&b, "crash", 0).len() == 1).await;
    markers_are(&b, "crash", 0, vec![(2, "ABORT".into(), open_pid)]).await;
    until("LSO past the abort", || lso(&b, "crash", 0) == (3, 3)).await;
    let aborted = b.inner.core.txn.aborted_between("crash", 0, 0, 3);
    assert_eq!((aborted[0].producer_id, aborted[0].first_offset, aborted[0].last_offset), (open_pid, 0, 2));
    let mut c = Conn::open(b.kafka_port.unwrap()).await;
    assert_eq!(end(&mut c, 3, "prepared", prep_pid, e2, true).await, 0, "the client's retried commit succeeds");
    assert_eq!(
        end(&mut c, 3, "open", open_pid, e1, true).await,
        90,
        "the crashed open transaction's producer is fenced"
    );
    b.stop().await;
}

/// kill -9 with EndTxn(commit) in flight: after the restart every partition of the transaction
/// ends the same way: COMMIT everywhere (PrepareCommit was on disk: completed at start-up, a
/// marker already written may be written again), or ABORT everywhere after its timeout (the
/// crash came first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_commit_ends_every_partition_the_same_way() {
    let state = kill_9_during_a_commit(false).await;
    assert!(state == "CompleteCommit" || state == "CompleteAbort", "{state}");
}

/// The real process killed as soon as its transaction log says PrepareCommit (its markers
/// partly written or not at all): the commit completes after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_right_after_prepare_commit_completes_the_commit() {
    assert_eq!(kill_9_during_a_commit(true).await, "CompleteCommit");
}

/// Runs the race: kill at once after sending EndTxn, or once `after_prepare` sees
/// PrepareCommit (or later) in the log; returns the transaction's final state.
async fn kill_9_during_a_commit(after_prepare: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, port) = spawn_child(dir.path());
    let mut c = Conn::open(port).await;
    create(&mut c, "racing", 3).await;
    let (pid, epoch) = init_ready(&mut c, "race", 2000).await;
    assert_eq!(add(&mut c, "race", pid, epoch, "racing", vec![0, 1, 2]).await, vec![0, 0, 0]);
    for q in 0..3 {
        assert_eq!(send(&mut c, &txn_produce("race", "racing", q, txn_batch(1, pid, epoch, 0))).await, (0, 0));
    }
    let commit = EndTxnRequest::default()
        .with_transactional_id(tid("race"))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(true);
    c.send(ApiKey::EndTxn, 3, &commit).await; // not waiting for the answer
    if after_prepare {
        let log = dir.path().join("config").join("kafkaTransactions.json");
        let prepared = || {
            std::fs::read_to_string(&log)
                .is_ok_and(|t| t.contains("\"PrepareCommit\"") || t.contains("\"CompleteCommit\""))
        };
        until("PrepareCommit on disk", prepared).await;
    }
    child.kill_9();
    let b = start_broker(dir.path(), |cfg| {
        cfg.kafka_listen_port = KAFKA_ANY_PORT;
        cfg.kafka_transaction_cleanup_interval_ms = 50;
    })
    .await;
    let mut c = Conn::open(b.kafka_port.unwrap()).await;
    let describe = DescribeTransactionsRequest::default().with_transactional_ids(vec![tid("race")]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let state = loop {
        let r: DescribeTransactionsResponse = c.call(ApiKey::DescribeTransactions, 0, &describe).await;
        let state = r.transaction_states[0].transaction_state.to_string();
        if state.starts_with("Complete") && (0..3).all(|q| !markers(&b, "racing", q).is_empty()) {
            break state;
        }
        assert!(Instant::now() < deadline, "the transaction did not end after the restart: {state}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let kinds: std::collections::BTreeSet<String> = (0..3)
        .flat_map(|q| markers(&b, "racing", q))
        .map(|(_, kind, marker_pid)| {
            assert_eq!(marker_pid, pid);
            kind
        })
        .collect();
    eprintln!("kill -9 during EndTxn(commit): {state}, markers {kinds:?}");
    let expected = if state == "CompleteCommit" { "COMMIT" } else { "ABORT" };
    assert_eq!(kinds, [expected.to_owned()].into(), "every partition ends the same way");
    for q in 0..3 {
        let hw = b.inner.core.store.max_offset_in_queue("racing", q);
        assert_eq!(b.inner.core.txn.last_stable_offset("racing", q, hw), hw, "nothing left open in {q}");
    }
    b.stop().await;
    state
}
