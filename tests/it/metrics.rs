//! `/metrics` after real traffic: the counters, histograms and gauges hold the values the
//! traffic implies (Java 5.x's names and labels), and the endpoint answers only GET /metrics.

use std::time::Duration;

use ferrocket::protocol::{RequestCode, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::broker::{call_addr, pull, send, start_broker, wait_max_offset};
use super::support::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub(super) async fn http_get(port: u16, path: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out)).await.unwrap().unwrap();
    out
}

/// The value of the sample of `name` whose labels include every one of `labels`.
pub(super) fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let rest = l.strip_prefix(name)?;
        let (labels_part, value) = match rest.strip_prefix('{') {
            Some(r) => r.split_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        labels
            .iter()
            .all(|(k, v)| labels_part.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
            .then(|| value.trim().parse().ok())?
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_traffic_have_the_values_the_traffic_implies() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let b = start_broker(dir.path(), |c| {
        c.metrics_prom_exporter_host = "127.0.0.1".into();
        c.metrics_prom_exporter_port = port;
        c.broker_cluster_name = "MetricsCluster".into();
    })
    .await;
    let c = client();
    let topic = "MetricsT";
    for i in 0..7 {
        let r = call_addr(&c, &b.addr, send(topic, 0, format!("body-{i:03}").as_bytes(), "A")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, topic, 0, 7).await;
    let r = call_addr(&c, &b.addr, pull(topic, 0, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    let commit = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[("consumerGroup", "CG"), ("topic", topic), ("queueId", "0"), ("commitOffset", "2")],
    );
    call_addr(&c, &b.addr, commit).await;

    let text = http_get(port, "/metrics").await;
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    let node = [("cluster", "MetricsCluster"), ("node_type", "broker"), ("node_id", "broker-t")];
    let with = |more: &[(&'static str, &'static str)]| node.iter().chain(more).copied().collect::<Vec<_>>();
    let get = |name: &str, more: &[(&'static str, &'static str)]| {
        sample(&text, name, &with(more)).unwrap_or_else(|| panic!("no {name} {more:?} in\n{text}"))
    };
    let t = [("topic", topic)];
    assert_eq!(
        get("rocketmq_messages_in_total", &[("topic", topic), ("message_type", "normal"), ("is_system", "false")]),
        7.0
    );
    let stored = get("rocketmq_throughput_in_total", &t);
    assert!(stored > 7.0 * 8.0 && stored < 7.0 * 400.0, "stored bytes {stored}");
    assert_eq!(get("rocketmq_message_size_count", &t), 7.0);
    assert_eq!(get("rocketmq_message_size_bucket", &[("topic", topic), ("le", "1024")]), 7.0);
    assert_eq!(get("rocketmq_messages_out_total", &[("topic", topic), ("consumer_group", "CG")]), 7.0);
    assert_eq!(get("rocketmq_throughput_out_total", &[("topic", topic), ("consumer_group", "CG")]), stored);
    assert_eq!(get("rocketmq_consumer_lag_messages", &[("topic", topic), ("consumer_group", "CG")]), 5.0);
    assert_eq!(get("rocketmq_consumer_inflight_messages", &[("topic", topic), ("consumer_group", "CG")]), 5.0);
    let sends =
        get("rocketmq_rpc_latency_count", &[("request_code", "310"), ("response_code", "0"), ("result", "success")]);
    assert_eq!(sends, 7.0);
    assert!(get("rocketmq_topic_number", &[]) >= 1.0);
    assert_eq!(get("rocketmq_broker_permission", &[]), 6.0);
    // Present (its value depends on the flush thread's timing).
    get("rocketmq_storage_flush_behind_bytes", &[]);
    assert!(get("rocketmq_storage_size", &[]) >= stored);
    assert_eq!(get("ferrocket_held_pulls", &[]), 0.0);
    assert!(get("ferrocket_connections", &[("listener", "remoting")]) >= 1.0, "this test's connection is open");

    // Three more messages: the lag grows to 8, what is in flight (pulled up to 7, committed 2)
    // stays 5.
    for i in 7..10 {
        call_addr(&c, &b.addr, send(topic, 0, format!("body-{i:03}").as_bytes(), "A")).await;
    }
    wait_max_offset(&c, &b.addr, topic, 0, 10).await;
    let again = http_get(port, "/metrics").await;
    let group = with(&[("topic", topic), ("consumer_group", "CG")]);
    assert_eq!(sample(&again, "rocketmq_consumer_lag_messages", &group), Some(8.0), "{again}");
    assert_eq!(sample(&again, "rocketmq_consumer_inflight_messages", &group), Some(5.0), "{again}");

    // A parked pull is counted while it waits.
    let held = tokio::spawn({
        let (c, addr) = (client(), b.addr.clone());
        async move { call_addr(&c, &addr, pull(topic, 1, 0, 6, 5_000)).await }
    });
    let counted = eventually(Duration::from_secs(5), || async {
        sample(&http_get(port, "/metrics").await, "ferrocket_held_pulls", &node) == Some(1.0)
    })
    .await;
    assert!(counted, "the parked pull was not counted");
    call_addr(&c, &b.addr, send(topic, 1, b"wake", "A")).await;
    held.await.unwrap();

    assert!(http_get(port, "/other").await.starts_with("HTTP/1.1 404"));
    b.stop().await;
}
