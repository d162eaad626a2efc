//! Kafka topic configs kept (CreateTopics, AlterConfigs, IncrementalAlterConfigs, DescribeConfigs),
//! DeleteRecords moving the log start both doors see, and per-topic retention enforced (#27.4).

use std::time::Duration;

use ferrocket::store::{AcceptAll, GetMessageStatus};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::broker_harness::*;
use super::kafka::{batch, first, kafka_broker, name, produce, Conn};

fn st(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

async fn create_with(
    c: &mut Conn,
    topic: &str,
    configs: &[(&str, &str)],
) -> create_topics_response::CreatableTopicResult {
    let configs =
        configs.iter().map(|(k, v)| CreatableTopicConfig::default().with_name(st(k)).with_value(Some(st(v)))).collect();
    let req = CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(1)
        .with_replication_factor(1)
        .with_configs(configs)]);
    let r: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 7, &req).await;
    r.topics.into_iter().next().unwrap()
}

/// (value, source) of each described config of `topic`.
pub(super) async fn describe(c: &mut Conn, topic: &str) -> Vec<(String, String, i8)> {
    let req = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(st(topic))
            .with_configuration_keys(None),
    ]);
    let r: DescribeConfigsResponse = c.call(ApiKey::DescribeConfigs, 4, &req).await;
    assert_eq!(r.results[0].error_code, 0);
    r.results[0]
        .configs
        .iter()
        .map(|e| (e.name.to_string(), e.value.as_deref().unwrap_or("").to_owned(), e.config_source))
        .collect()
}

fn get<'a>(d: &'a [(String, String, i8)], key: &str) -> (&'a str, i8) {
    d.iter().find(|e| e.0 == key).map(|e| (e.1.as_str(), e.2)).unwrap_or_else(|| panic!("{key} not described"))
}

async fn incremental(
    c: &mut Conn,
    topic: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, String) {
    let configs = ops
        .iter()
        .map(|(k, op, v)| {
            incremental_alter_configs_request::AlterableConfig::default()
                .with_name(st(k))
                .with_config_operation(*op)
                .with_value(v.map(st))
        })
        .collect();
    let req = IncrementalAlterConfigsRequest::default().with_validate_only(validate_only).with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(st(topic))
            .with_configs(configs),
    ]);
    let r: IncrementalAlterConfigsResponse = c.call(ApiKey::IncrementalAlterConfigs, 1, &req).await;
    let res = &r.responses[0];
    (res.error_code, res.error_message.as_deref().unwrap_or("").to_owned())
}

const DYNAMIC: i8 = 1;
const DEFAULT: i8 = 5;
const INVALID_CONFIG: i16 = 40;

/// Before: CreateTopics dropped its configs, DescribeConfigs read back the broker-wide 72 h, and
/// there was no AlterConfigs. Now configs are checked, kept across a restart and changed as Kafka.
#[tokio::test]
async fn topic_configs_are_kept_altered_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    // What Kafka Streams sends for a repartition topic.
    let repartition = [
        ("cleanup.policy", "delete"),
        ("segment.bytes", "52428800"),
        ("retention.ms", "-1"),
        ("message.timestamp.type", "CreateTime"),
    ];
    let r = create_with(&mut c, "app-repartition", &repartition).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let created = r.configs.unwrap();
    assert!(created
        .iter()
        .any(|e| &*e.name == "retention.ms" && e.value.as_deref() == Some("-1") && e.config_source == DYNAMIC));
    let d = describe(&mut c, "app-repartition").await;
    assert_eq!(get(&d, "retention.ms"), ("-1", DYNAMIC));
    assert_eq!(get(&d, "cleanup.policy"), ("delete", DYNAMIC));
    assert_eq!(get(&d, "segment.bytes"), ("52428800", DYNAMIC));
    assert_eq!(get(&d, "retention.bytes"), ("-1", DEFAULT));
    // Refused: unknown keys, a second replica; nothing is created.
    for configs in [[("cleanup.policy", "bogus")], [("no.such.config", "1")], [("min.insync.replicas", "2")]] {
        let r = create_with(&mut c, "refused", &configs).await;
        assert_eq!(r.error_code, INVALID_CONFIG, "{configs:?}");
        assert!(r.error_message.is_some_and(|m| !m.is_empty()));
    }
    assert!(b.inner.core.topics.get("refused").is_none());
    // IncrementalAlterConfigs: validate_only changes nothing; SET, DELETE, APPEND as Kafka.
    assert_eq!(incremental(&mut c, "app-repartition", &[("retention.bytes", 0, Some("4096"))], true).await.0, 0);
    assert_eq!(get(&describe(&mut c, "app-repartition").await, "retention.bytes"), ("-1", DEFAULT));
    let ops = [("retention.bytes", 0, Some("4096")), ("retention.ms", 1, None), ("cleanup.policy", 2, Some("delete"))];
    assert_eq!(incremental(&mut c, "app-repartition", &ops, false).await.0, 0);
    let (code, why) = incremental(&mut c, "app-repartition", &[("cleanup.policy", 2, Some("bogus"))], false).await;
    assert_eq!(code, INVALID_CONFIG);
    assert!(why.contains("bogus"), "{why}");
    // AlterConfigs replaces the whole set.
    let alter =
        AlterConfigsRequest::default().with_resources(vec![alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(st("app-repartition"))
            .with_configs(vec![alter_configs_request::AlterableConfig::default()
                .with_name(st("retention.ms"))
                .with_value(Some(st("86400000")))])]);
    let r: AlterConfigsResponse = c.call(ApiKey::AlterConfigs, 2, &alter).await;
    assert_eq!(r.responses[0].error_code, 0);
    b.stop().await;
    // Kept in topics.json: read back after a restart.
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    let d = describe(&mut c, "app-repartition").await;
    assert_eq!(get(&d, "retention.ms"), ("86400000", DYNAMIC));
    assert_eq!(get(&d, "retention.bytes"), ("-1", DEFAULT), "AlterConfigs reset what it did not name");
    assert_eq!(get(&d, "segment.bytes").1, DEFAULT);
    let attributes = b.inner.core.topics.get("app-repartition").unwrap().attributes;
    assert_eq!(attributes.get("retention.ms").map(String::as_str), Some("86400000"));
    b.stop().await;
}

async fn delete_records(c: &mut Conn, topic: &str, offset: i64) -> (i16, i64) {
    let req = DeleteRecordsRequest::default().with_timeout_ms(5000).with_topics(vec![
        delete_records_request::DeleteRecordsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![delete_records_request::DeleteRecordsPartition::default().with_offset(offset)]),
    ]);
    let r: DeleteRecordsResponse = c.call(ApiKey::DeleteRecords, 2, &req).await;
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.low_watermark)
}

async fn earliest(c: &mut Conn, topic: &str) -> i64 {
    let lo = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        list_offsets_request::ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default().with_timestamp(-2)]),
    ]);
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &lo).await;
    r.topics[0].partitions[0].offset
}

async fn fetch_code(c: &mut Conn, topic: &str, offset: i64) -> i16 {
    let fetch =
        FetchRequest::default().with_replica_id(BrokerId(-1)).with_max_wait_ms(0).with_max_bytes(1 << 20).with_topics(
            vec![fetch_request::FetchTopic::default().with_topic(name(topic)).with_partitions(vec![
                fetch_request::FetchPartition::default().with_fetch_offset(offset).with_partition_max_bytes(1 << 20),
            ])],
        );
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch).await;
    r.responses[0].partitions[0].error_code
}

/// Before: DeleteRecords was not served (the connection closed). Now it moves the log start that
/// ListOffsets, Fetch and RocketMQ pulls all honour, never lowers it, and it survives a restart.
#[tokio::test]
async fn delete_records_moves_the_log_start_both_doors_see() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    super::kafka::create(&mut c, "purged", 1).await;
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("purged", 1, batch(5, None))).await;
    assert_eq!(first(&r), (0, 0));
    assert_eq!(delete_records(&mut c, "purged", 3).await, (0, 3));
    assert_eq!(earliest(&mut c, "purged").await, 3);
    assert_eq!(fetch_code(&mut c, "purged", 1).await, 1, "below the start: OFFSET_OUT_OF_RANGE");
    assert_eq!(fetch_code(&mut c, "purged", 3).await, 0);
    let pull = b.inner.store.get_message("purged", 0, 1, 32, 1 << 20, &AcceptAll);
    assert_eq!(
        (pull.status, pull.next_begin_offset),
        (GetMessageStatus::OffsetTooSmall, 3),
        "a RocketMQ pull is moved"
    );
    assert_eq!(delete_records(&mut c, "purged", 9).await.0, 1, "beyond the high watermark");
    assert_eq!(delete_records(&mut c, "purged", 2).await, (0, 3), "never lowers");
    assert_eq!(delete_records(&mut c, "purged", -1).await, (0, 5), "-1: the high watermark");
    assert_eq!(delete_records(&mut c, "nope", 0).await.0, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    b.stop().await;
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    assert_eq!(earliest(&mut c, "purged").await, 5, "the start survives a restart");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("purged", 1, batch(1, None))).await;
    assert_eq!(first(&r), (0, 5), "offsets go on");
    b.stop().await;
}

/// Polls `earliest` until `done` or 20 s pass.
async fn wait_earliest(c: &mut Conn, topic: &str, done: impl Fn(i64) -> bool) -> i64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let e = earliest(c, topic).await;
        if done(e) || tokio::time::Instant::now() > deadline {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Before: retention.ms per topic was accepted and ignored. Now the sweep (every
/// kafkaLogRetentionCheckIntervalMs) moves the start past what retention.ms and retention.bytes
/// no longer keep; a topic without them keeps everything.
#[tokio::test]
async fn per_topic_retention_ms_and_bytes_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.kafka_listen_port = KAFKA_ANY_PORT;
        c.kafka_log_retention_check_interval_ms = 100;
    })
    .await;
    let mut c = Conn::open(b.kafka_port.unwrap()).await;
    super::kafka::create(&mut c, "kept", 1).await;
    assert_eq!(create_with(&mut c, "by-time", &[("retention.ms", "1")]).await.error_code, 0);
    super::kafka::create(&mut c, "by-size", 1).await;
    for t in ["kept", "by-time", "by-size"] {
        let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce(t, 1, batch(6, None))).await;
        assert_eq!(first(&r), (0, 0));
    }
    // retention.bytes = the size of the newest two stored records (+1).
    b.inner.store.await_dispatched(Duration::from_secs(5)).await;
    let sizes = b.inner.store.unit_sizes("by-size", 0, 0, 100);
    assert_eq!(sizes.len(), 6);
    let limit = (sizes[4] + sizes[5] + 1).to_string();
    assert_eq!(incremental(&mut c, "by-size", &[("retention.bytes", 0, Some(&limit))], false).await.0, 0);
    assert_eq!(wait_earliest(&mut c, "by-time", |e| e == 6).await, 6, "retention.ms: everything older than 1 ms goes");
    assert_eq!(wait_earliest(&mut c, "by-size", |e| e == 4).await, 4, "retention.bytes keeps the newest two");
    assert_eq!(earliest(&mut c, "kept").await, 0, "no retention set: nothing goes");
    b.stop().await;
}

/// Kafka records with `key` and value `v`.
fn keyed(pairs: &[(Option<&str>, &str)]) -> bytes::Bytes {
    let recs: Vec<ferrocket::kafka::records::Record> = pairs
        .iter()
        .enumerate()
        .map(|(i, (k, v))| ferrocket::kafka::records::Record {
            timestamp: 1000 + i as i64,
            key: k.map(|k| bytes::Bytes::from(k.to_owned())),
            value: Some(bytes::Bytes::from(v.to_string())),
            headers: vec![],
        })
        .collect();
    let mut b = bytes::BytesMut::new();
    ferrocket::kafka::records::write_batch(&mut b, 0, &recs);
    b.freeze()
}

/// Before: `cleanup.policy=compact` was refused (what every Kafka Streams state store's changelog
/// asks for). Now a topic created compacted through Kafka is compacted by the store (latest value
/// per key at its original offset), refuses records without a key as Kafka does, and per-topic
/// retention leaves its live set alone.
#[tokio::test]
async fn a_topic_created_compacted_through_kafka_is_compacted_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.kafka_listen_port = KAFKA_ANY_PORT;
        c.kafka_log_retention_check_interval_ms = 100;
    })
    .await;
    let mut c = Conn::open(b.kafka_port.unwrap()).await;
    let changelog = [("cleanup.policy", "compact"), ("retention.ms", "1"), ("min.cleanable.dirty.ratio", "0.01")];
    let r = create_with(&mut c, "app-store-changelog", &changelog).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert_eq!(get(&describe(&mut c, "app-store-changelog").await, "cleanup.policy"), ("compact", DYNAMIC));
    let tc = b.inner.core.topics.get("app-store-changelog").unwrap();
    assert_eq!(tc.attributes.get("cleanup.policy").map(String::as_str), Some("COMPACTION"), "RocketMQ 5's value");

    let r: ProduceResponse =
        c.call(ApiKey::Produce, 9, &produce("app-store-changelog", 1, keyed(&[(None, "x")]))).await;
    assert_eq!(first(&r).0, 87, "INVALID_RECORD: a compacted topic needs keys");
    let pairs = [(Some("a"), "a1"), (Some("b"), "b1"), (Some("a"), "a2"), (Some("c"), "c1"), (Some("b"), "b2")];
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("app-store-changelog", 1, keyed(&pairs))).await;
    assert_eq!(first(&r), (0, 0));
    b.inner.store.await_dispatched(Duration::from_secs(5)).await;

    let stats = b.inner.store.compact_now("app-store-changelog", 0, ferrocket::store::now_ms()).unwrap();
    assert!(stats.is_some(), "the store compacts the topic the Kafka door created");
    let pull = b.inner.store.get_message("app-store-changelog", 0, 0, 32, 1 << 20, &AcceptAll);
    let kept: Vec<(i64, String)> = pull
        .messages
        .iter()
        .map(|m| {
            let m = ferrocket::store::commit_log::record::decode(m, false).unwrap();
            (m.queue_offset, String::from_utf8(m.body.to_vec()).unwrap())
        })
        .collect();
    assert_eq!(kept, vec![(2, "a2".to_owned()), (3, "c1".to_owned()), (4, "b2".to_owned())]);

    // retention.ms=1 empties a delete-policy topic at the next sweep; a compacted one keeps its
    // live set.
    let start = earliest(&mut c, "app-store-changelog").await;
    assert!(start <= 2, "the first live record stays readable: {start}");
    assert_eq!(create_with(&mut c, "swept", &[("retention.ms", "1")]).await.error_code, 0);
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("swept", 1, batch(3, None))).await;
    assert_eq!(first(&r), (0, 0));
    assert_eq!(wait_earliest(&mut c, "swept", |e| e == 3).await, 3, "a sweep ran");
    // A second sweep starts after the first ended: the compacted topic was swept at least once.
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("swept", 1, batch(3, None))).await;
    assert_eq!(first(&r), (0, 3));
    assert_eq!(wait_earliest(&mut c, "swept", |e| e == 6).await, 6, "another sweep ran");
    assert_eq!(earliest(&mut c, "app-store-changelog").await, start, "retention left the compacted topic alone");
    b.stop().await;
}

/// Under aclEnable: DeleteRecords needs PUB and SUB on the topic (Kafka's DELETE), config changes
/// need an admin; refusals are per topic, the connection stays open.
#[tokio::test]
async fn delete_records_and_config_changes_are_authorized() {
    let k = super::kafka_sasl::broker().await;
    let (mut admin, r) = super::kafka_sasl::plain(k.port, "adminUser", "adminSecret77").await;
    assert_eq!(r.error_code, 0);
    for t in ["allowed", "writeonly"] {
        super::kafka::create(&mut admin, t, 1).await;
        let r: ProduceResponse = admin.call(ApiKey::Produce, 9, &produce(t, 1, batch(3, None))).await;
        assert_eq!(first(&r), (0, 0));
    }
    let (mut user, r) = super::kafka_sasl::plain(k.port, "producer1", "producerSecret9").await;
    assert_eq!(r.error_code, 0);
    assert_eq!(delete_records(&mut user, "allowed", 1).await, (0, 1), "PUB and SUB");
    assert_eq!(delete_records(&mut user, "writeonly", 1).await.0, 29, "PUB alone: TOPIC_AUTHORIZATION_FAILED");
    let set = [("retention.ms", 0, Some("1000"))];
    assert_eq!(incremental(&mut user, "allowed", &set, false).await.0, 29, "not an admin");
    assert_eq!(incremental(&mut admin, "allowed", &set, false).await.0, 0);
    assert_eq!(earliest(&mut admin, "writeonly").await, 0, "nothing deleted");
    k.b.stop().await;
}

/// Before: refused configs left no line in the broker's log. Now a refusal is one WARN naming
/// the client, the API and the reason, and the same kind of refusal again within a minute is
/// counted, not logged.
#[tokio::test]
async fn a_refusal_is_one_rate_limited_warn_line_naming_client_api_and_reason() {
    let logs = super::support::logs();
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    for t in ["warned-isr-1", "warned-isr-2", "warned-isr-3"] {
        assert_eq!(create_with(&mut c, t, &[("min.insync.replicas", "2")]).await.error_code, INVALID_CONFIG);
    }
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    let lines: Vec<&str> =
        text.lines().filter(|l| l.contains("Kafka request refused") && l.contains("warned-isr")).collect();
    assert_eq!(lines.len(), 1, "one line for three refusals within a minute: {lines:?}");
    let line = lines[0];
    assert!(line.contains("WARN") && line.contains("warned-isr-1"), "{line}");
    assert!(
        line.contains("client_id=it") && line.contains("CreateTopics") && line.contains("peer=127.0.0.1:"),
        "{line}"
    );
    assert!(line.contains("min.insync.replicas=2 is not supported"), "{line}");
    b.stop().await;
}

/// Records with these timestamps, in one batch.
fn timed(timestamps: &[i64]) -> bytes::Bytes {
    use ferrocket::kafka::records::{self, Record};
    let recs: Vec<Record> = timestamps
        .iter()
        .map(|&ts| Record {
            timestamp: ts,
            key: None,
            value: Some(bytes::Bytes::from(format!("at{ts}"))),
            headers: vec![],
        })
        .collect();
    let mut b = bytes::BytesMut::new();
    records::write_batch(&mut b, 0, &recs);
    b.freeze()
}

async fn max_timestamp(c: &mut Conn, topic: &str) -> (i64, i64) {
    let lo = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        list_offsets_request::ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default().with_timestamp(-3)]),
    ]);
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &lo).await;
    (r.topics[0].partitions[0].offset, r.topics[0].partitions[0].timestamp)
}

/// ListOffsets -3 from the queue's running maximum (#27.6): later records are folded in, and a
/// maximum DeleteRecords took away is found again among the records left.
#[tokio::test]
async fn max_timestamp_is_a_running_maximum_that_forgets_deleted_records() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    super::kafka::create(&mut c, "maxts", 1).await;
    assert_eq!(max_timestamp(&mut c, "maxts").await, (-1, -1), "an empty partition has none");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("maxts", 1, timed(&[100, 300, 200]))).await;
    assert_eq!(first(&r), (0, 0));
    assert_eq!(max_timestamp(&mut c, "maxts").await, (1, 300));
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("maxts", 1, timed(&[250, 300]))).await;
    assert_eq!(first(&r), (0, 3));
    assert_eq!(max_timestamp(&mut c, "maxts").await, (1, 300), "the first of equal timestamps");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("maxts", 1, timed(&[400]))).await;
    assert_eq!(first(&r), (0, 5));
    assert_eq!(max_timestamp(&mut c, "maxts").await, (5, 400), "a later, larger one");
    assert_eq!(delete_records(&mut c, "maxts", 6).await, (0, 6));
    assert_eq!(max_timestamp(&mut c, "maxts").await, (-1, -1), "every record deleted");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("maxts", 1, timed(&[50, 70, 60]))).await;
    assert_eq!(first(&r), (0, 6));
    assert_eq!(max_timestamp(&mut c, "maxts").await, (7, 70));
    assert_eq!(delete_records(&mut c, "maxts", 8).await, (0, 8));
    assert_eq!(max_timestamp(&mut c, "maxts").await, (8, 60), "the maximum was deleted: found again");
    b.stop().await;
}
