//! Config files under a burst of changes, with a real kill: a child process runs a broker, the
//! parent creates 10,000 topics over many connections and SIGKILLs the child right after the
//! last answer; topics.json must then hold every topic, and nothing may have logged an error.
//! The child is this test binary, re-run on the ignored `config_child` test.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use ferrocket::protocol::{RequestCode, ResponseCode};

use super::broker::start_broker;
use super::support::*;

const CHILD_DIR: &str = "FERROCKET_CONFIG_CHILD_DIR";
const TOPICS: usize = 10_000;
const CONNECTIONS: usize = 16;

/// The child: a broker on `CHILD_DIR`; prints `READY <addr>` and serves until killed. Its log
/// (warnings and errors) goes to stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "started as a child process by the config file tests"]
async fn config_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else { return };
    let _ = tracing_subscriber::fmt().with_ansi(false).with_env_filter("warn").with_writer(std::io::stderr).try_init();
    let b = start_broker(dir.as_ref(), |_| {}).await;
    println!("READY {}", b.addr);
    std::future::pending::<()>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_created_in_a_burst_survive_kill_9_right_after_the_last_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "config_files::config_child", "--nocapture", "--test-threads", "1"])
            .env(CHILD_DIR, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // libtest prints the test's name on the same line, before READY.
    let stdout = child.0.stdout.take().unwrap();
    let (ready, addr) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some((_, a)) = line.split_once("READY ") {
                let _ = ready.send(a.trim().to_owned());
            }
        }
    });
    let addr = addr.recv_timeout(Duration::from_secs(60)).expect("child broker not ready within 60 s");
    let stderr = child.0.stderr.take().unwrap();
    let log = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());

    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            let client = std::sync::Arc::new(client()); // a connection of its own
            let mut pending = Vec::new();
            for i in (c..TOPICS).step_by(CONNECTIONS) {
                let req = request(
                    RequestCode::UPDATE_AND_CREATE_TOPIC,
                    &[
                        ("topic", &format!("BurstTopic{i}")),
                        ("readQueueNums", "4"),
                        ("writeQueueNums", "4"),
                        ("perm", "6"),
                    ],
                );
                let (client, addr) = (client.clone(), addr.clone());
                // Pipelined: all of this connection's requests in flight at once.
                pending.push(tokio::spawn(async move { client.invoke(&addr, req, Duration::from_secs(120)).await }));
            }
            for p in pending {
                let r = p.await.unwrap().expect("no answer within 120 s");
                assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    child.0.kill().unwrap(); // SIGKILL, right after the last answer
    child.0.wait().unwrap();
    let log = log.join().unwrap();

    let text = std::fs::read_to_string(dir.path().join("config").join("topics.json")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let table = file["topicConfigTable"].as_object().unwrap();
    let missing: Vec<usize> = (0..TOPICS).filter(|i| !table.contains_key(&format!("BurstTopic{i}"))).collect();
    assert!(missing.is_empty(), "{} topics lost, e.g. {:?}", missing.len(), &missing[..missing.len().min(5)]);
    assert!(!log.contains("ERROR"), "the broker logged errors:\n{}", &log[..log.len().min(4000)]);
}

/// The child broker, SIGKILLed when the test ends however it ends (a failed assertion too).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
