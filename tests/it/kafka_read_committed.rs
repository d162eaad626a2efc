//! Kafka transactions as readers see them (#27.2), over the wire: a `read_committed` fetch stops
//! at the last stable offset, lists the aborted transactions and hands out control batches; a
//! `read_uncommitted` one reads up to the high watermark; ListOffsets LATEST with isolation 1 is
//! the LSO; a fetch parked at the LSO wakes when the transaction ends. A RocketMQ consumer of the
//! same queue sees committed records only. The coordinator is not needed: the records and the
//! markers are appended as it stores them, and the transaction state is set directly.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrocket::broker::BrokerInner;
use ferrocket::core::txn::{KAFKA_CONTROL, KAFKA_COORD_EPOCH, KAFKA_EPOCH, KAFKA_PID, KAFKA_TXN};
use ferrocket::core::{Durability, Protocol, Replicas, Traffic};
use ferrocket::model::message::{properties_to_string, MessageToStore};
use ferrocket::protocol::ResponseCode;
use kafka_protocol::messages::*;
use kafka_protocol::records::{RecordBatchDecoder, RecordSet};

use super::broker::{call_addr, pull, records};
use super::kafka::{create, kafka_broker, name, Conn};
use super::support::*;

/// What one stored message is.
#[derive(Clone, Copy)]
enum Stored {
    Plain,
    Txn(i64),
    Marker(i64, bool),
}

/// Appends one message as the Kafka door stores it; returns its offset.
async fn append(b: &BrokerInner, topic: &str, body: &str, what: Stored) -> i64 {
    let pid;
    let props: Vec<(&str, &str)> = match what {
        Stored::Plain => vec![],
        Stored::Txn(p) => {
            pid = p.to_string();
            vec![(KAFKA_PID, pid.as_str()), (KAFKA_EPOCH, "0"), (KAFKA_TXN, "true")]
        }
        Stored::Marker(p, commit) => {
            pid = p.to_string();
            let kind = if commit { "COMMIT" } else { "ABORT" };
            vec![(KAFKA_PID, pid.as_str()), (KAFKA_EPOCH, "0"), (KAFKA_CONTROL, kind), (KAFKA_COORD_EPOCH, "4")]
        }
    };
    let m = MessageToStore {
        topic: topic.to_owned(),
        queue_id: 0,
        flag: 0,
        body: Bytes::copy_from_slice(body.as_bytes()),
        tags_code: 0,
        properties: properties_to_string(props),
        born_timestamp: 1_000,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    let how =
        Durability { wait_flush: true, replicas: Replicas::Skip, replica_timeout: Duration::ZERO, deferred: false };
    let t = Traffic { protocol: Protocol::Kafka, topic, kind: ferrocket::telemetry::MessageType::Normal };
    b.append(&[m], how, t).await.unwrap().result.queue_offset
}

/// The queue of the tests, offset by offset:
/// `0 p0, 1 p1 | 2 a2, 3 a3 (pid 7, aborted) | 4 c4 (pid 8, committed) | 5 ABORT(7) |
/// 6 o6 (pid 7, open) | 7 COMMIT(8)`: high watermark 8, LSO 6.
async fn fill(b: &BrokerInner, topic: &str) {
    append(b, topic, "p0", Stored::Plain).await;
    append(b, topic, "p1", Stored::Plain).await;
    let first = append(b, topic, "a2", Stored::Txn(7)).await;
    b.txn.begin(topic, 0, 7, first).await;
    append(b, topic, "a3", Stored::Txn(7)).await;
    let first = append(b, topic, "c4", Stored::Txn(8)).await;
    b.txn.begin(topic, 0, 8, first).await;
    let marker = append(b, topic, "", Stored::Marker(7, false)).await;
    b.txn.end(topic, 0, 7, marker, false).await;
    let first = append(b, topic, "o6", Stored::Txn(7)).await;
    b.txn.begin(topic, 0, 7, first).await;
    let marker = append(b, topic, "", Stored::Marker(8, true)).await;
    b.txn.end(topic, 0, 8, marker, true).await;
    b.store.await_dispatched(Duration::from_secs(5)).await;
    assert_eq!(b.store.max_offset_in_queue(topic, 0), 8);
}

fn fetch(topic: &str, offset: i64, isolation: i8, wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation)
        .with_max_wait_ms(wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![fetch_request::FetchTopic::default().with_topic(name(topic)).with_partitions(vec![
            fetch_request::FetchPartition::default().with_fetch_offset(offset).with_partition_max_bytes(1 << 20),
        ])])
}

/// Per batch: offsets, producer id, transactional, control.
fn batches(p: &fetch_response::PartitionData) -> Vec<(Vec<i64>, i64, bool, bool)> {
    let mut data = p.records.clone().unwrap_or_default();
    let sets: Vec<RecordSet> = RecordBatchDecoder::decode_all(&mut data).unwrap();
    sets.iter()
        .map(|s| {
            let r = &s.records[0];
            (s.records.iter().map(|x| x.offset).collect(), r.producer_id, r.transactional, r.control)
        })
        .collect()
}

fn aborted(p: &fetch_response::PartitionData) -> Option<Vec<(i64, i64)>> {
    p.aborted_transactions.as_ref().map(|a| a.iter().map(|t| (t.producer_id.0, t.first_offset)).collect())
}

async fn latest(c: &mut Conn, topic: &str, isolation: i8, timestamp: i64) -> i64 {
    let lo =
        ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_isolation_level(isolation).with_topics(vec![
            list_offsets_request::ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default().with_timestamp(timestamp)]),
        ]);
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &lo).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    r.topics[0].partitions[0].offset
}

#[tokio::test]
async fn read_committed_stops_at_the_lso_with_the_aborted_list_and_control_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "rc", 1).await;
    fill(&b.inner, "rc").await;

    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch("rc", 0, 1, 0)).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark, p.last_stable_offset), (0, 8, 6));
    assert_eq!(aborted(p), Some(vec![(7, 2)]), "the consumer filters producer 7's records before its marker");
    assert_eq!(
        batches(p),
        vec![
            (vec![0, 1], -1, false, false),
            (vec![2, 3], 7, true, false),
            (vec![4], 8, true, false),
            (vec![5], 7, true, true),
        ],
        "nothing at or past the LSO"
    );
    // read_uncommitted: everything up to the high watermark, no aborted list, the LSO still told.
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch("rc", 0, 0, 0)).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.high_watermark, p.last_stable_offset, aborted(p)), (8, 6, None));
    let all = batches(p);
    assert_eq!(all.len(), 6);
    assert_eq!(&all[4..], &[(vec![6], 7, true, false), (vec![7], 8, true, true)]);
    // At the LSO a committed reader gets nothing, and an empty aborted list.
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch("rc", 6, 1, 0)).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.error_code, p.records.as_ref().map(Bytes::len), aborted(p)), (0, Some(0), Some(vec![])));

    assert_eq!(latest(&mut c, "rc", 1, -1).await, 6, "LATEST for read_committed is the LSO");
    assert_eq!(latest(&mut c, "rc", 0, -1).await, 8);
    assert_eq!(latest(&mut c, "rc", 0, 1_000).await, 0);
    assert_eq!(latest(&mut c, "rc", 1, -2).await, 0);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_and_a_pull_held_at_the_lso_wake_when_the_transaction_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "rcw", 1).await;
    fill(&b.inner, "rcw").await;
    let parked = tokio::spawn(async move {
        let start = std::time::Instant::now();
        let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch("rcw", 6, 1, 20_000)).await;
        (r, start.elapsed())
    });
    let rmq = client();
    let addr = b.addr.clone();
    // 6 = SUBSCRIPTION | SUSPEND: a long-polling pull at the LSO.
    let held = tokio::spawn(async move { call_addr(&rmq, &addr, pull("rcw", 0, 6, 6, 20_000)).await });
    let mut parked_count = b.inner.hold.watch_held();
    parked_count.wait_for(|n| *n >= 2).await.unwrap();

    // The coordinator's order: the marker first (its arrival wakes the readers, maybe before
    // the LSO moves), then the end of the transaction.
    let inner: Arc<BrokerInner> = b.inner.clone();
    let marker = append(&inner, "rcw", "", Stored::Marker(7, true)).await;
    inner.txn.end("rcw", 0, 7, marker, true).await;

    let (r, waited) = parked.await.unwrap();
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.high_watermark, p.last_stable_offset), (9, 9));
    assert_eq!(batches(p), vec![(vec![6], 7, true, false), (vec![7], 8, true, true), (vec![8], 7, true, true)]);
    assert!(waited < Duration::from_secs(15), "woken by the end of the transaction ({waited:?})");
    let r = held.await.unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let got: Vec<_> = records(&r.body).iter().map(|m| String::from_utf8_lossy(&m.body).into_owned()).collect();
    assert_eq!(got, ["o6"], "the committed record, never a marker");
    // Woken by the end before the marker is dispatched, the pull stops before the marker (8);
    // after, past it (9): never before the committed record's successor, never past the marker.
    let next = &r.ext_fields["nextBeginOffset"];
    assert!(next == "8" || next == "9", "next offset {next}");
    b.stop().await;
}

#[tokio::test]
async fn a_rocketmq_pull_sees_committed_records_only_and_never_passes_the_lso() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "rcr", 1).await;
    fill(&b.inner, "rcr").await;
    let rmq = client();
    let r = call_addr(&rmq, &b.addr, pull("rcr", 0, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let got: Vec<_> = records(&r.body).iter().map(|m| String::from_utf8_lossy(&m.body).into_owned()).collect();
    assert_eq!(got, ["p0", "p1", "c4"], "no aborted record, no marker, nothing of the open transaction");
    assert_eq!((r.ext_fields["nextBeginOffset"].as_str(), r.ext_fields["maxOffset"].as_str()), ("6", "8"));
    // Only a marker before the LSO: skipped like a tag filter's miss.
    let r = call_addr(&rmq, &b.addr, pull("rcr", 0, 5, 4, 0)).await;
    assert_eq!(
        (r.response_code(), r.ext_fields["nextBeginOffset"].as_str()),
        (ResponseCode::PULL_RETRY_IMMEDIATELY, "6")
    );
    // At the LSO and between it and the high watermark: nothing yet, the offset kept.
    for at in ["6", "7"] {
        let r = call_addr(&rmq, &b.addr, pull("rcr", 0, at.parse().unwrap(), 4, 0)).await;
        assert_eq!((r.response_code(), r.ext_fields["nextBeginOffset"].as_str()), (ResponseCode::PULL_NOT_FOUND, at));
    }
    // The open transaction aborts: its record is never seen, the consumer moves past the marker.
    let marker = append(&b.inner, "rcr", "", Stored::Marker(7, false)).await;
    b.inner.txn.end("rcr", 0, 7, marker, false).await;
    b.inner.store.await_dispatched(Duration::from_secs(5)).await;
    let r = call_addr(&rmq, &b.addr, pull("rcr", 0, 6, 4, 0)).await;
    assert_eq!(
        (r.response_code(), r.ext_fields["nextBeginOffset"].as_str()),
        (ResponseCode::PULL_RETRY_IMMEDIATELY, "9")
    );
    b.stop().await;
}

/// Before the fix: an ABORT marker anybody stored through a RocketMQ send (properties are the
/// sender's) in the middle of an aborted transaction went out as an abort, and a read_committed
/// Java consumer then showed the rest of that transaction.
#[tokio::test]
async fn a_forged_abort_marker_cannot_uncover_an_aborted_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "rcf", 1).await;
    let first = append(&b.inner, "rcf", "x0", Stored::Txn(9)).await;
    b.inner.txn.begin("rcf", 0, 9, first).await;
    let forged = append(&b.inner, "rcf", "", Stored::Marker(9, false)).await;
    append(&b.inner, "rcf", "x2", Stored::Txn(9)).await;
    let marker = append(&b.inner, "rcf", "", Stored::Marker(9, false)).await;
    b.inner.txn.end("rcf", 0, 9, marker, false).await;
    b.inner.store.await_dispatched(Duration::from_secs(5)).await;

    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch("rcf", 0, 1, 0)).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(aborted(p), Some(vec![(9, 0)]));
    let mut data = p.records.clone().unwrap_or_default();
    let sets = RecordBatchDecoder::decode_all(&mut data).unwrap();
    let controls: Vec<(i64, Option<Bytes>)> =
        sets.iter().flat_map(|s| &s.records).filter(|r| r.control).map(|r| (r.offset, r.key.clone())).collect();
    assert_eq!(
        controls,
        vec![(forged, Some(Bytes::from_static(&[0, 0, 0, 1]))), (marker, Some(Bytes::from_static(&[0, 0, 0, 0]))),],
        "the forged abort goes out as a commit marker (ignored), the real one as the abort"
    );
    b.stop().await;
}

/// Before the fix: a RocketMQ producer could write the Kafka transaction properties (they were
/// user properties to the send path), so its message posed as a control record (hidden from
/// RocketMQ consumers, a marker to Kafka ones) or as a record of another producer's transaction.
/// The RocketMQ door now drops them, for single and batch sends; other properties stay.
#[tokio::test]
async fn a_rocketmq_send_cannot_pose_as_a_kafka_transaction_record() {
    use ferrocket::protocol::body::message::{encode_batch, BatchEntry};
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "rcs", 1).await;
    let forged = [
        (KAFKA_PID, "9"),
        (KAFKA_EPOCH, "0"),
        (KAFKA_TXN, "true"),
        (KAFKA_CONTROL, "ABORT"),
        (KAFKA_COORD_EPOCH, "1"),
        ("colour", "red"),
    ];
    let rmq = client();
    let mut one = super::broker::send("rcs", 0, b"single", "T");
    let props = one.ext_fields["i"].clone();
    one.ext_fields.insert("i".into(), format!("{props}{}", properties_to_string(forged)));
    let r = call_addr(&rmq, &b.addr, one).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let entries =
        vec![BatchEntry { flag: 0, body: Bytes::from_static(b"batched"), properties: properties_to_string(forged) }];
    let mut batch = super::broker::send("rcs", 0, &[], "T").with_body(encode_batch(&entries).unwrap());
    batch.ext_fields.insert("m".into(), "true".into());
    let r = call_addr(&rmq, &b.addr, batch).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    b.inner.store.await_dispatched(Duration::from_secs(5)).await;

    let r = call_addr(&rmq, &b.addr, pull("rcs", 0, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let got: Vec<(String, bool, Option<String>)> = records(&r.body)
        .iter()
        .map(|m| {
            let reserved = [KAFKA_PID, KAFKA_EPOCH, KAFKA_TXN, KAFKA_CONTROL, KAFKA_COORD_EPOCH]
                .iter()
                .any(|k| ferrocket::model::message::property_value(&m.properties, k).is_some());
            let colour = ferrocket::model::message::property_value(&m.properties, "colour").map(str::to_owned);
            (String::from_utf8_lossy(&m.body).into_owned(), reserved, colour)
        })
        .collect();
    let red = Some("red".to_owned());
    assert_eq!(got, [("single".into(), false, red.clone()), ("batched".into(), false, red)]);

    // A Kafka read_committed fetch sees two plain records, no control batch.
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch("rcs", 0, 1, 0)).await;
    let p = &r.responses[0].partitions[0];
    let seen = batches(p);
    assert!(seen.iter().all(|&(_, pid, txn, control)| pid == -1 && !txn && !control), "{seen:?}");
    assert_eq!(batches(p).iter().map(|(o, ..)| o.len()).sum::<usize>(), 2);
    b.stop().await;
}
