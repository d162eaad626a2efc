//! `ferrocket bench` against an in-process NameServer and broker: every message produced is
//! stored and consumed back, in each send mode.

use std::time::Duration;

use ferrocket::protocol::body::route::ClusterInfo;
use ferrocket::protocol::{RequestCode, ResponseCode};
use ferrocket::tools::bench::{
    consume, produce, BenchError, ConsumeOptions, Limit, ProduceOptions, SendMode, StartFrom,
};

use super::broker::{call_addr, start_broker_on};
use super::support::*;

/// Messages stored in `topic` on `broker`: the sum of its queues' max offsets.
async fn stored(c: &Client, broker: &str, topic: &str, queues: i32) -> i64 {
    let mut sum = 0;
    for q in 0..queues {
        let req = request(RequestCode::GET_MAX_OFFSET, &[("topic", topic), ("queueId", &q.to_string())]);
        let resp = call_addr(c, broker, req).await;
        assert_eq!(resp.response_code(), ResponseCode::SUCCESS);
        sum += resp.ext_fields["offset"].parse::<i64>().unwrap();
    }
    sum
}

async fn wait_registered(c: &Client, ns: &str) {
    let registered = eventually(Duration::from_secs(10), || async {
        let resp = call_addr(c, ns, request(RequestCode::GET_BROKER_CLUSTER_INFO, &[])).await;
        ferrocket::protocol::body::json::from_slice::<ClusterInfo>(&resp.body)
            .is_ok_and(|i| !i.broker_addr_table.is_empty())
    })
    .await;
    assert!(registered, "the broker never registered");
}

/// A NameServer and a broker (16 MiB CommitLog segments) registered with it, and a client; the
/// NameServer and the store directory live as long as the returned guards.
async fn bench_cluster() -> (TestNamesrv, tempfile::TempDir, String, super::broker::TestBroker, Client) {
    let ns = TestNamesrv::start(|_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let ns_addr = ns.addr.to_string();
    let broker = start_broker_on(&ns_addr, dir.path(), |c| c.mapped_file_size_commit_log = 16 * 1024 * 1024).await;
    let c = client();
    wait_registered(&c, &ns_addr).await;
    (ns, dir, ns_addr, broker, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_sync_and_batch_then_consume_every_message() {
    let (_ns, _dir, ns_addr, broker, c) = bench_cluster().await;

    for (mode, topic) in [(SendMode::Sync, "BenchSync"), (SendMode::Batch, "BenchBatch")] {
        let sent = produce(ProduceOptions {
            namesrv: ns_addr.clone(),
            topic: topic.into(),
            size: 256,
            limit: Limit::Count(2000),
            in_flight: 64,
            connections: 2,
            mode,
            batch: 32,
            ..Default::default()
        })
        .await
        .unwrap();
        assert_eq!((sent.msgs, sent.failed), (2000, 0), "{mode:?}: {}", sent.table());
        assert_eq!(sent.bytes, 2000 * 256);
        assert!(sent.latency.is_some_and(|l| l.p50_ms > 0.0 && l.max_ms >= l.p99_ms));
        // The topic was created with 8 queues; every message is in one of them once the
        // dispatcher, which runs behind the append, has caught up.
        let all = eventually(Duration::from_secs(10), || async { stored(&c, &broker.addr, topic, 8).await == 2000 });
        assert!(all.await, "{mode:?}: {} messages in the queues", stored(&c, &broker.addr, topic, 8).await);
    }

    // By count, from the start of the queues.
    let got = consume(ConsumeOptions {
        namesrv: ns_addr.clone(),
        topic: "BenchSync".into(),
        group: "BenchGroupA".into(),
        limit: Some(Limit::Count(2000)),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!((got.msgs, got.failed, got.bytes), (2000, 0, 2000 * 256), "{}", got.table());
    assert!(got.first_message_ms.is_some_and(|ms| ms < 5000.0), "{}", got.table());

    // Draining: no limit, stops at the max offsets seen at the start.
    let got = consume(ConsumeOptions {
        namesrv: ns_addr.clone(),
        topic: "BenchBatch".into(),
        group: "BenchGroupB".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!((got.msgs, got.failed), (2000, 0), "{}", got.table());
    let json: serde_json::Value = serde_json::from_str(&got.to_json()).unwrap();
    assert_eq!(json["received"], 2000);

    // From the end with a time limit: nothing new arrives, nothing is received.
    let got = consume(ConsumeOptions {
        namesrv: ns_addr.clone(),
        topic: "BenchBatch".into(),
        group: "BenchGroupC".into(),
        limit: Some(Limit::Time(Duration::from_millis(1500))),
        from: StartFrom::Latest,
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!((got.msgs, got.failed, got.first_message_ms), (0, 0, None), "{}", got.table());
    broker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneway_sends_are_all_stored() {
    let (_ns, _dir, ns_addr, broker, c) = bench_cluster().await;
    let sent = produce(ProduceOptions {
        namesrv: ns_addr.clone(),
        topic: "BenchOneway".into(),
        size: 100,
        limit: Limit::Count(500),
        in_flight: 16,
        connections: 2,
        queues: 4,
        mode: SendMode::Oneway,
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!((sent.msgs, sent.failed, sent.latency), (500, 0, None));
    // Oneway sends are read before the flush's answer but may still be appending or dispatching.
    let all = eventually(Duration::from_secs(5), || async { stored(&c, &broker.addr, "BenchOneway", 4).await == 500 });
    assert!(all.await, "not every oneway message was stored");
    broker.stop().await;
}

#[tokio::test]
async fn a_bench_that_cannot_start_says_why() {
    let ns = TestNamesrv::start(|_| {}).await;
    // No broker registered: the topic can be neither found nor created.
    let err = produce(ProduceOptions { namesrv: ns.addr.to_string(), topic: "Nowhere".into(), ..Default::default() })
        .await
        .unwrap_err();
    assert!(matches!(err, BenchError::NoRoute { .. }), "{err}");
    assert!(err.to_string().contains("no master broker is registered"), "{err}");
    let err = consume(ConsumeOptions { namesrv: ns.addr.to_string(), topic: "Nowhere".into(), ..Default::default() })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no route for topic Nowhere"), "{err}");

    // Nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = produce(ProduceOptions { namesrv: format!("127.0.0.1:{port}"), ..Default::default() }).await.unwrap_err();
    assert!(matches!(err, BenchError::Namesrv { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!("cannot reach the NameServer at 127.0.0.1:{port}")), "{err}");
}

/// The bench is a client: it may use the wire format, the transport, the domain types and the
/// record layout, never the servers' insides.
#[test]
fn bench_imports_only_what_a_client_may() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools/bench");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.len() >= 5, "{} holds {} files", dir.display(), files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("crate::{"), "{} groups crate imports; name each path", file.display());
        for (at, _) in text.match_indices("crate::") {
            let path = &text[at + "crate::".len()..];
            let allowed = ["protocol", "remoting", "model", "store::commit_log::record"];
            assert!(
                allowed.iter().any(|a| path.starts_with(a)),
                "{} imports crate::{}, which the bench may not use",
                file.display(),
                path.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).next().unwrap_or("")
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timer_messages_from_bench_produce_are_reported_by_bench_consume() {
    let (_ns, _dir, ns_addr, _broker, _c) = bench_cluster().await;
    let sent = produce(ProduceOptions {
        namesrv: ns_addr.clone(),
        topic: "BenchTimers".into(),
        size: 64,
        limit: Limit::Count(1000),
        in_flight: 128,
        connections: 2,
        timer_delay_ms: Some(1500),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!((sent.msgs, sent.failed), (1000, 0), "{}", sent.table());
    let got = consume(ConsumeOptions {
        namesrv: ns_addr,
        topic: "BenchTimers".into(),
        group: "BenchTimerGroup".into(),
        limit: Some(Limit::Count(1000)),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!((got.msgs, got.failed), (1000, 0), "{}", got.table());
    let late = got.timer_lateness.clone().expect("timer lateness reported");
    assert_eq!((late.count, late.early), (1000, 0), "{}", got.table());
    assert!(late.p50_ms >= 0 && late.max_ms >= late.p99_ms, "{late:?}");
    // A burst of timers is entered into the wheel as fast as it arrives, not a read batch per
    // slot: each fires within its precision step (1 s), with room for a loaded machine.
    assert!(late.max_ms < 4000, "a timer was stored {} ms late: {}", late.max_ms, got.table());
    assert!(got.table().contains("timer messages: 1000"), "{}", got.table());
    let json: serde_json::Value = serde_json::from_str(&got.to_json()).unwrap();
    assert_eq!(json["timer_messages"], 1000);
}
