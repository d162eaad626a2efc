//! Compacted topics through both doors (#27.3): a topic created with `+cleanup.policy=COMPACTION`
//! (mqadmin updateTopic), written by RocketMQ sends with KEYS and a Kafka tombstone, compacted,
//! its old CommitLog segments deleted by retention; then a RocketMQ pull from offset 0 and a
//! Kafka fetch from offset 0 both see exactly the latest record per key, at its original offset.

use std::time::{Duration, SystemTime};

use bytes::{Buf, Bytes};
use ferrocket::kafka::records::{self, Record};
use ferrocket::model::message::{properties_to_string, property_value};
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};
use kafka_protocol::messages::*;

use super::broker::{records as pulled_records, wait_max_offset};
use super::broker_harness::*;
use super::kafka::{first, name, produce, Conn};
use super::support::*;

const TOPIC: &str = "CompactedT";
const KEYS: usize = 10;
const SENDS: usize = 300;

fn send_keyed(key: &str, body: &[u8]) -> RemotingCommand {
    let props = properties_to_string([("TAGS", "A"), ("KEYS", key), ("WAIT", "true")]);
    let ext = [
        ("a", "PG"),
        ("b", TOPIC),
        ("c", "TBW102"),
        ("d", "1"),
        ("e", "0"),
        ("f", "0"),
        ("g", "1"),
        ("h", "0"),
        ("i", props.as_str()),
    ];
    request(RequestCode::SEND_MESSAGE_V2, &ext).with_body(body.to_vec())
}

fn value(i: usize) -> String {
    format!("value-{i:04}-{}", "x".repeat(600))
}

/// (offset, key, value or None) pulled with PULL_MESSAGE from offset 0 to the end.
async fn pull_all(c: &Client, addr: &str) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    let mut offset = 0i64;
    for _ in 0..1000 {
        let r = call_addr(c, addr, super::broker::pull(TOPIC, 0, offset, 4, 0)).await;
        let code = r.response_code();
        let next: i64 = r.ext_fields["nextBeginOffset"].parse().unwrap();
        let max: i64 = r.ext_fields["maxOffset"].parse().unwrap();
        if code == ResponseCode::SUCCESS {
            for m in pulled_records(&r.body) {
                let key = property_value(&m.properties, "KEYS").unwrap_or("").to_owned();
                let null = property_value(&m.properties, "KAFKA_NULL_VALUE").is_some();
                let v = (!null).then(|| String::from_utf8(m.body.to_vec()).unwrap());
                out.push((m.queue_offset, key, v));
            }
        }
        if next >= max {
            return out;
        }
        assert!(next > offset, "pull at {offset} did not move on ({code:?}, {:?})", r.remark);
        offset = next;
    }
    panic!("pulls never reached the end");
}

/// (offset, key, value) fetched with Fetch v12 from offset 0 to the high watermark.
async fn fetch_all(c: &mut Conn) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    let mut offset = 0i64;
    for _ in 0..1000 {
        let req = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![fetch_request::FetchTopic::default().with_topic(name(TOPIC)).with_partitions(vec![
                fetch_request::FetchPartition::default().with_fetch_offset(offset).with_partition_max_bytes(1 << 20),
            ])]);
        let r: FetchResponse = c.call(ApiKey::Fetch, 12, &req).await;
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "fetch at {offset}");
        let mut data = p.records.clone().unwrap_or_default();
        let mut last = offset - 1;
        while data.len() >= 12 {
            let base = (&data[0..8]).get_i64();
            let len = (&data[8..12]).get_i32() as usize;
            // The produce-side parser wants base offset 0 (the CRC does not cover it).
            let mut one = bytes::BytesMut::from(&data.split_to(12 + len)[..]);
            one[..8].fill(0);
            let batch = records::parse_one_batch(one.freeze(), 1 << 20).unwrap();
            for (i, rec) in records::records(&batch).unwrap().into_iter().enumerate() {
                let Record { key, value, .. } = rec;
                let key = String::from_utf8(key.unwrap().to_vec()).unwrap();
                let v = value.map(|v| String::from_utf8(v.to_vec()).unwrap());
                last = base + i as i64;
                out.push((last, key, v));
            }
        }
        if last + 1 >= p.high_watermark {
            return out;
        }
        assert!(last >= offset, "fetch at {offset} returned nothing below the high watermark {}", p.high_watermark);
        offset = last + 1;
    }
    panic!("fetches never reached the end");
}

#[tokio::test]
async fn a_compacted_topic_keeps_the_latest_value_per_key_for_both_doors_after_retention() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.kafka_listen_port = KAFKA_ANY_PORT;
        c.mapped_file_size_commit_log = 64 * 1024;
        c.file_reserved_time = 1;
        // Compaction runs when the test says so.
        c.compaction_schedule_internal = 3_600_000;
    })
    .await;
    let c = client();
    let create = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", TOPIC),
            ("readQueueNums", "1"),
            ("writeQueueNums", "1"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
            ("order", "false"),
            ("attributes", "+cleanup.policy=COMPACTION"),
        ],
    );
    assert_eq!(call_addr(&c, &b.addr, create).await.response_code(), ResponseCode::SUCCESS);

    for i in 0..SENDS {
        let r = call_addr(&c, &b.addr, send_keyed(&format!("k{}", i % KEYS), value(i).as_bytes())).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    }
    // A Kafka tombstone for k3, through the other door.
    let mut kc = Conn::open(b.kafka_port.unwrap()).await;
    let tombstone = Record { timestamp: 1, key: Some(Bytes::from_static(b"k3")), value: None, headers: vec![] };
    let mut batch = bytes::BytesMut::new();
    records::write_batch(&mut batch, 0, &[tombstone]);
    let r: ProduceResponse = kc.call(ApiKey::Produce, 9, &produce(TOPIC, 1, batch.freeze())).await;
    assert_eq!(first(&r), (0, SENDS as i64));
    wait_max_offset(&c, &b.addr, TOPIC, 0, SENDS as i64 + 1).await;

    let store = b.inner.store.clone();
    store.override_disk_usage(Some(1));
    let later = SystemTime::now() + Duration::from_secs(2 * 3600);
    assert_eq!(store.clean_expired_files(later).unwrap(), 0, "before compaction every segment is needed");
    let stats = store.compact_now(TOPIC, 0, ferrocket::store::now_ms()).unwrap().expect("a compacted topic");
    assert_eq!(stats.end, SENDS as i64 + 1);
    let deleted = store.clean_expired_files(later).unwrap();
    assert!(deleted >= 2, "the compacted segments go ({deleted})");
    assert!(store.commit_log_min_offset() > 0);

    // The latest value of each key at its original offset; k3's latest is the tombstone.
    let mut want: Vec<(i64, String, Option<String>)> = (SENDS - KEYS..SENDS)
        .filter(|i| i % KEYS != 3)
        .map(|i| (i as i64, format!("k{}", i % KEYS), Some(value(i))))
        .collect();
    want.push((SENDS as i64, "k3".into(), None));
    assert_eq!(pull_all(&c, &b.addr).await, want, "RocketMQ pull from offset 0");
    assert_eq!(fetch_all(&mut kc).await, want, "Kafka fetch from offset 0");

    // Offsets stay stable: a new record follows the old end, and both doors read it after the gap.
    let r = call_addr(&c, &b.addr, send_keyed("k0", b"newest")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    assert_eq!(r.ext_fields["queueOffset"], (SENDS + 1).to_string());
    wait_max_offset(&c, &b.addr, TOPIC, 0, SENDS as i64 + 2).await;
    want.push((SENDS as i64 + 1, "k0".into(), Some("newest".into())));
    assert_eq!(pull_all(&c, &b.addr).await, want);
    assert_eq!(fetch_all(&mut kc).await, want);
    b.stop().await;
}

const CRASH_CHILD_DIR: &str = "FERROCKET_COMPACTION_CRASH_DIR";
const CRASH_TOPIC: &str = "CrashCompacted";

fn crash_store(dir: &std::path::Path) -> ferrocket::store::MessageStore {
    let mut c = super::store::config(dir, ferrocket::store::FlushDiskType::SyncFlush);
    c.compaction_interval = Duration::from_secs(3600);
    let store = ferrocket::store::MessageStore::open(c).unwrap();
    let policy = ferrocket::store::compaction::CompactionPolicy::default();
    store.set_compaction_lookup(std::sync::Arc::new(move |t| (t == CRASH_TOPIC).then_some(policy)));
    store
}

/// The child: one writer of keyed records (SYNC_FLUSH, `ACK key body offset` once durable) while
/// another thread compacts the queue over and over, until SIGKILL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "started as a child process by the compaction kill test"]
async fn compaction_crash_child() {
    let Ok(dir) = std::env::var(CRASH_CHILD_DIR) else { return };
    let store = std::sync::Arc::new(crash_store(dir.as_ref()));
    let compactor = store.clone();
    std::thread::spawn(move || loop {
        let _ = compactor.compact_now(CRASH_TOPIC, 0, ferrocket::store::now_ms());
    });
    let generation = std::process::id();
    for i in 0u64.. {
        let (key, body) = (format!("k{}", i % 40), format!("{generation}-{i}"));
        let r = store.put_messages(&[super::store::msg(CRASH_TOPIC, 0, &body, "T", &key)], true).await;
        if let (true, Some(a)) = (r.is_ok(), r.append) {
            println!("ACK {key} {body} {}", a.queue_offset);
        }
    }
}

/// SIGKILL while passes run (at pseudo-random numbers of acknowledged records): after each
/// restart the queue reads from offset 0 with offsets increasing, and every key's latest record
/// is at or after the last one acknowledged for it.
#[test]
fn a_kill_during_compaction_loses_no_latest_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked: std::collections::HashMap<String, i64> = Default::default();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id());
    let cycles = std::env::var("FERROCKET_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(5usize);
    for cycle in 0..cycles {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let kill_after = 100 + (x % 400) as usize;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "compaction::compaction_crash_child", "--nocapture", "--test-threads", "1"])
            .env(CRASH_CHILD_DIR, dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let mut seen = 0;
        for line in lines.map_while(Result::ok) {
            let Some(ack) = line.strip_prefix("ACK ") else { continue };
            let mut f = ack.split(' ');
            let (key, _body, offset) =
                (f.next().unwrap(), f.next().unwrap(), f.next().unwrap().parse::<i64>().unwrap());
            acked.insert(key.to_owned(), offset);
            seen += 1;
            if seen == kill_after {
                break;
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = crash_store(dir.path());
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while store.dispatched_offset() < store.commit_log_max_offset() {
                assert!(std::time::Instant::now() < deadline, "dispatch did not catch up after recovery");
                store.await_dispatched(Duration::from_millis(100)).await;
            }
            let end = store.compacted_end(CRASH_TOPIC, 0);
            let (mut offset, mut last_offset) = (0i64, -1i64);
            let mut latest: std::collections::HashMap<String, i64> = Default::default();
            let mut below_end = std::collections::HashSet::new();
            loop {
                let r = store.get_message(CRASH_TOPIC, 0, offset, 32, 1 << 20, &ferrocket::store::AcceptAll);
                for m in &r.messages {
                    let m = ferrocket::store::commit_log::record::decode(m, true).expect("a whole record");
                    assert!(m.queue_offset > last_offset, "cycle {cycle}: offsets go back at {}", m.queue_offset);
                    last_offset = m.queue_offset;
                    let key = property_value(&m.properties, "KEYS").unwrap().to_owned();
                    if m.queue_offset < end {
                        assert!(below_end.insert(key.clone()), "cycle {cycle}: {key} twice below the compacted end");
                    }
                    latest.insert(key, m.queue_offset);
                }
                if r.next_begin_offset >= r.max_offset {
                    break;
                }
                assert!(r.next_begin_offset > offset, "cycle {cycle}: read stuck at {offset} ({:?})", r.status);
                offset = r.next_begin_offset;
            }
            for (key, acked_at) in &acked {
                let at = latest.get(key).copied().unwrap_or(-1);
                assert!(at >= *acked_at, "cycle {cycle}: {key} acknowledged at {acked_at}, latest read at {at}");
            }
            store.shutdown().unwrap();
        });
    }
}

/// The Kafka door: CreateTopics with `cleanup.policy=compact` is accepted, kept as RocketMQ's
/// COMPACTION, read back as `compact`; produced records are compacted like any others.
#[tokio::test]
async fn a_topic_created_compacted_through_kafka_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = super::kafka::kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    let config = |k: &str, v: &str| {
        create_topics_request::CreatableTopicConfig::default()
            .with_name(kafka_protocol::protocol::StrBytes::from_string(k.to_owned()))
            .with_value(Some(kafka_protocol::protocol::StrBytes::from_string(v.to_owned())))
    };
    let req = CreateTopicsRequest::default().with_topics(vec![create_topics_request::CreatableTopic::default()
        .with_name(name("kcompact"))
        .with_num_partitions(1)
        .with_replication_factor(1)
        .with_configs(vec![config("cleanup.policy", "compact")])]);
    let r: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 7, &req).await;
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let attributes = b.inner.topics.get("kcompact").unwrap().attributes;
    assert_eq!(attributes.get("cleanup.policy").map(String::as_str), Some("COMPACTION"));

    let recs: Vec<Record> = ["a", "b", "a", "c", "a"]
        .iter()
        .enumerate()
        .map(|(i, k)| Record {
            timestamp: 1,
            key: Some(Bytes::copy_from_slice(k.as_bytes())),
            value: Some(Bytes::from(format!("v{i}"))),
            headers: vec![],
        })
        .collect();
    let mut batch = bytes::BytesMut::new();
    records::write_batch(&mut batch, 0, &recs);
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("kcompact", 1, batch.freeze())).await;
    assert_eq!(first(&r), (0, 0));
    b.inner.store.await_dispatched(Duration::from_secs(10)).await;
    let stats = b.inner.store.compact_now("kcompact", 0, ferrocket::store::now_ms()).unwrap().expect("compacted");
    assert_eq!((stats.end, stats.records_kept), (5, 3));
    let r = b.inner.store.get_message("kcompact", 0, 0, 32, 1 << 20, &ferrocket::store::AcceptAll);
    let got: Vec<(i64, String)> = r
        .messages
        .iter()
        .map(|m| ferrocket::store::commit_log::record::decode(m, true).unwrap())
        .map(|m| (m.queue_offset, String::from_utf8(m.body.to_vec()).unwrap()))
        .collect();
    assert_eq!(got, vec![(1, "v1".to_owned()), (3, "v3".to_owned()), (4, "v4".to_owned())]);
    b.stop().await;
}
