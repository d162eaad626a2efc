//! One core under both doors (#26): a Kafka produce goes through the same append as a RocketMQ
//! send, so its traffic is in the same metrics (told apart by `protocol`), its records carry the
//! properties every broker writes (a RocketMQ consumer gets a message id), a parked Kafka fetch
//! is counted like a held pull, and a topic it creates is registered before it is answered.

use std::time::Duration;

use ferrocket::protocol::ResponseCode;
use kafka_protocol::messages::*;

use super::broker::{call_addr, pull, records, send, wait_max_offset};
use super::kafka::{batch, create, first, name, produce, Conn};
use super::metrics::{http_get, sample};
use super::support::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_traffic_is_counted_and_stored_like_rocketmq_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let (kafka_port, metrics_port) = (free_port(), free_port());
    let b = super::broker::start_broker(dir.path(), |c| {
        c.kafka_listen_port = kafka_port;
        c.kafka_advertised_address = format!("127.0.0.1:{kafka_port}");
        c.metrics_prom_exporter_host = "127.0.0.1".into();
        c.metrics_prom_exporter_port = metrics_port;
        c.broker_cluster_name = "OneCoreCluster".into();
    })
    .await;
    let mut k = Conn::open(kafka_port).await;
    create(&mut k, "both", 1).await;
    let r: ProduceResponse = k.call(ApiKey::Produce, 9, &produce("both", 1, batch(3, None))).await;
    assert_eq!(first(&r), (0, 0));
    let c = client();
    let r = call_addr(&c, &b.addr, send("both", 0, b"from-rocketmq", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "both", 0, 4).await;

    // The Kafka records carry what the broker writes into every message.
    let r = call_addr(&c, &b.addr, pull("both", 0, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    let stored = records(r.body.as_ref());
    assert_eq!(stored.len(), 4);
    for m in &stored {
        let props = ferrocket::model::message::parse_properties(&m.properties);
        assert!(props.get("UNIQ_KEY").is_some_and(|u| u.len() >= 32), "{props:?}");
        assert_eq!(props.get("CLUSTER").map(String::as_str), Some("OneCoreCluster"), "{props:?}");
        assert!(props.contains_key("MSG_REGION") && props.contains_key("TRACE_ON"), "{props:?}");
    }
    let ids: std::collections::HashSet<_> =
        stored.iter().map(|m| ferrocket::model::message::parse_properties(&m.properties)["UNIQ_KEY"].clone()).collect();
    assert_eq!(ids.len(), 4, "one message id each");

    // A Kafka fetch of the same queue, counted as Kafka traffic out.
    let fetch =
        FetchRequest::default().with_replica_id(BrokerId(-1)).with_max_wait_ms(0).with_max_bytes(1 << 20).with_topics(
            vec![fetch_request::FetchTopic::default().with_topic(name("both")).with_partitions(vec![
                fetch_request::FetchPartition::default().with_fetch_offset(0).with_partition_max_bytes(1 << 20),
            ])],
        );
    let r: FetchResponse = k.call(ApiKey::Fetch, 12, &fetch).await;
    assert_eq!(r.responses[0].partitions[0].high_watermark, 4);

    let text = http_get(metrics_port, "/metrics").await;
    let node = [("cluster", "OneCoreCluster"), ("topic", "both")];
    let get = |name: &str, more: &[(&str, &str)]| {
        let labels: Vec<_> = node.iter().chain(more).copied().collect();
        sample(&text, name, &labels).unwrap_or_else(|| panic!("no {name} {more:?} in\n{text}"))
    };
    assert_eq!(get("rocketmq_messages_in_total", &[("protocol", "kafka"), ("message_type", "normal")]), 3.0);
    assert_eq!(get("rocketmq_messages_in_total", &[("protocol", "remoting")]), 1.0);
    assert!(get("rocketmq_throughput_in_total", &[("protocol", "kafka")]) > 3.0 * 30.0);
    assert_eq!(get("rocketmq_messages_out_total", &[("protocol", "kafka"), ("consumer_group", "")]), 4.0);
    // Per-API request latency: Produce (0) once, Fetch (1) once, CreateTopics (19) once.
    let rpc = |api: &str| {
        let labels = [("cluster", "OneCoreCluster"), ("protocol_type", "kafka"), ("request_code", api)];
        sample(&text, "rocketmq_rpc_latency_count", &labels).unwrap_or_else(|| panic!("no latency of API {api}"))
    };
    assert_eq!((rpc("0"), rpc("1"), rpc("19")), (1.0, 1.0, 1.0));
    b.stop().await;
}

/// A fetch parked for `min.bytes` is a held request (`ferrocket_held_pulls`) while it waits, and
/// the produce that arrives wakes it.
#[tokio::test]
async fn a_parked_fetch_is_held_like_a_pull() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = super::kafka::kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "held", 1).await;
    let fetch = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(30_000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![fetch_request::FetchTopic::default().with_topic(name("held")).with_partitions(vec![
            fetch_request::FetchPartition::default().with_fetch_offset(0).with_partition_max_bytes(1 << 20),
        ])]);
    let parked = tokio::spawn(async move {
        let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch).await;
        r
    });
    let hold = b.inner.hold.clone();
    tokio::time::timeout(Duration::from_secs(10), async {
        while hold.held() == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the fetch parks and is counted");
    let mut p = Conn::open(port).await;
    let r: ProduceResponse = p.call(ApiKey::Produce, 9, &produce("held", 1, batch(1, None))).await;
    assert_eq!(first(&r), (0, 0));
    let r = tokio::time::timeout(Duration::from_secs(10), parked).await.expect("woken by the produce").unwrap();
    assert_eq!(r.responses[0].partitions[0].high_watermark, 1);
    assert_eq!(hold.held(), 0);
    b.stop().await;
}
