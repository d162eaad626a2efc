//! Kafka transactions over the wire (KIP-98, transactions V1 with KIP-890 part 1's produce
//! checks): control records in every partition, the LSO in `core.txn`, zombie fencing,
//! TxnOffsetCommit applied at commit only, timeouts, ListTransactions / DescribeTransactions;
//! and kill -9 of a broker process with a transaction open and with one in PrepareCommit.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use ferrocket::store::AcceptAll;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::broker_harness::*;
use super::kafka::{batch, create, kafka_broker, name, Conn};

pub(super) fn tid(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_owned()))
}

fn gid(s: &str) -> GroupId {
    GroupId(StrBytes::from_string(s.to_owned()))
}

/// A transactional v2 batch of `n` records.
pub(super) fn txn_batch(n: usize, pid: i64, epoch: i16, seq: i32) -> Bytes {
    let mut b = BytesMut::from(&batch(n, Some((pid, epoch, seq)))[..]);
    b[21..23].copy_from_slice(&0x10i16.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

pub(super) fn txn_produce(id: &str, topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    ProduceRequest::default().with_transactional_id(Some(tid(id))).with_acks(-1).with_timeout_ms(5000).with_topic_data(
        vec![TopicProduceData::default().with_name(name(topic)).with_partition_data(vec![
            PartitionProduceData::default().with_index(partition).with_records(Some(records)),
        ])],
    )
}

/// Produce v9: (error code, base offset).
pub(super) async fn send(c: &mut Conn, req: &ProduceRequest) -> (i16, i64) {
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, req).await;
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

async fn init(c: &mut Conn, id: &str, timeout_ms: i32) -> InitProducerIdResponse {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(Some(tid(id)))
        .with_transaction_timeout_ms(timeout_ms)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    c.call(ApiKey::InitProducerId, 4, &req).await
}

/// InitProducerId until it is not CONCURRENT_TRANSACTIONS (a fenced transaction is aborting).
pub(super) async fn init_ready(c: &mut Conn, id: &str, timeout_ms: i32) -> (i64, i16) {
    loop {
        let r = init(c, id, timeout_ms).await;
        if r.error_code != 51 {
            assert_eq!(r.error_code, 0);
            return (r.producer_id.0, r.producer_epoch);
        }
    }
}

pub(super) async fn add(c: &mut Conn, id: &str, pid: i64, epoch: i16, topic: &str, parts: Vec<i32>) -> Vec<i16> {
    let req = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(tid(id))
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(name(topic))
            .with_partitions(parts)]);
    let r: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 3, &req).await;
    r.results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| t.results_by_partition.iter().map(|p| p.partition_error_code))
        .collect()
}

pub(super) async fn end(c: &mut Conn, version: i16, id: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
    let req = EndTxnRequest::default()
        .with_transactional_id(tid(id))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(commit);
    let r: EndTxnResponse = c.call(ApiKey::EndTxn, version, &req).await;
    r.error_code
}

/// The control records stored in (topic, queue): (offset, COMMIT|ABORT, producer id).
pub(super) fn markers(b: &TestBroker, topic: &str, queue: i32) -> Vec<(i64, String, i64)> {
    let store = &b.inner.core.store;
    let r = store.get_message(topic, queue, 0, 1000, 64 << 20, &AcceptAll);
    r.messages
        .iter()
        .filter_map(|m| {
            let m = ferrocket::store::commit_log::record::decode(m, true)?;
            let prop = |k: &str| ferrocket::model::message::property_value(&m.properties, k).map(str::to_owned);
            let control = prop("KAFKA_CONTROL")?;
            assert!(m.body.is_empty(), "a control record has no body");
            Some((m.queue_offset, control, prop("KAFKA_PID")?.parse().ok()?))
        })
        .collect()
}

/// Waits (bounded) until the control records of (topic, queue) are `expected` (dispatched).
pub(super) async fn markers_are(b: &TestBroker, topic: &str, queue: i32, expected: Vec<(i64, String, i64)>) {
    until(&format!("markers {expected:?} in {topic}-{queue}"), || markers(b, topic, queue) == expected).await;
}

/// Waits (bounded) until `f` holds; the store dispatches and the sweeper runs on their own.
pub(super) async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(super) fn lso(b: &TestBroker, topic: &str, q: i32) -> (i64, i64) {
    let hw = b.inner.core.store.max_offset_in_queue(topic, q);
    (b.inner.core.txn.last_stable_offset(topic, q, hw), hw)
}

#[tokio::test]
async fn commit_and_abort_write_one_control_record_per_partition_and_the_lso_follows() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "tx", 2).await;
    let fc = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_coordinator_keys(vec![StrBytes::from_static_str("app")]);
    let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 4, &fc).await;
    assert_eq!((r.coordinators[0].error_code, r.coordinators[0].port), (0, i32::from(port)));
    let (pid, epoch) = init_ready(&mut c, "app", 60_000).await;
    assert_eq!(epoch, 0);
    // KIP-890 part 1: a partition not added to the transaction is refused.
    assert_eq!(
        send(&mut c, &txn_produce("app", "tx", 0, txn_batch(1, pid, epoch, 0))).await.0,
        48,
        "INVALID_TXN_STATE"
    );
    let r: ProduceResponse =
        c.call(ApiKey::Produce, 11, &txn_produce("app", "tx", 0, txn_batch(1, pid, epoch, 0))).await;
    assert_eq!(r.responses[0].partition_responses[0].error_code, 120, "TRANSACTION_ABORTABLE from Produce v11");
    assert_eq!(add(&mut c, "app", pid, epoch, "tx", vec![0, 1]).await, vec![0, 0]);
    assert_eq!(send(&mut c, &txn_produce("app", "tx", 0, txn_batch(3, pid, epoch, 0))).await, (0, 0));
    assert_eq!(send(&mut c, &txn_produce("app", "tx", 1, txn_batch(2, pid, epoch, 0))).await, (0, 0));
    until("records dispatched", || lso(&b, "tx", 0).1 == 3 && lso(&b, "tx", 1).1 == 2).await;
    assert_eq!(lso(&b, "tx", 0), (0, 3), "the open transaction holds the LSO at its first offset");
    let dp = DescribeProducersRequest::default().with_topics(vec![describe_producers_request::TopicRequest::default()
        .with_name(name("tx"))
        .with_partition_indexes(vec![0, 9])]);
    let r: DescribeProducersResponse = c.call(ApiKey::DescribeProducers, 0, &dp).await;
    let (p0, p9) = (&r.topics[0].partitions[0], &r.topics[0].partitions[1]);
    let st = &p0.active_producers[0];
    assert_eq!((p0.error_code, st.producer_id.0, st.last_sequence, st.current_txn_start_offset), (0, pid, 2, 0));
    assert_eq!(p9.error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(end(&mut c, 3, "app", pid, epoch, true).await, 0);
    assert_eq!(end(&mut c, 3, "app", pid, epoch, true).await, 0, "a retried commit");
    markers_are(&b, "tx", 0, vec![(3, "COMMIT".into(), pid)]).await;
    markers_are(&b, "tx", 1, vec![(2, "COMMIT".into(), pid)]).await;
    until("markers dispatched", || lso(&b, "tx", 0) == (4, 4) && lso(&b, "tx", 1) == (3, 3)).await;
    assert!(b.inner.core.txn.aborted_between("tx", 0, 0, 10).is_empty());

    // The next transaction aborts: its range is recorded as aborted.
    assert_eq!(add(&mut c, "app", pid, epoch, "tx", vec![0]).await, vec![0]);
    assert_eq!(send(&mut c, &txn_produce("app", "tx", 0, txn_batch(2, pid, epoch, 3))).await, (0, 4));
    assert_eq!(end(&mut c, 3, "app", pid, epoch, false).await, 0);
    markers_are(&b, "tx", 0, vec![(3, "COMMIT".into(), pid), (6, "ABORT".into(), pid)]).await;
    assert_eq!(markers(&b, "tx", 1).len(), 1, "only the partitions of the transaction get a marker");
    let aborted = b.inner.core.txn.aborted_between("tx", 0, 0, 10);
    assert_eq!((aborted.len(), aborted[0].producer_id, aborted[0].last_offset), (1, pid, 6));
    assert!(aborted[0].first_offset <= 4);
    assert_eq!(end(&mut c, 3, "app", pid, epoch, true).await, 48, "commit after an abort: INVALID_TXN_STATE");
    b.stop().await;
}

#[tokio::test]
async fn a_second_producer_with_the_same_transactional_id_fences_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "zombie", 1).await;
    let (pid, epoch) = init_ready(&mut c, "z", 60_000).await;
    assert_eq!(add(&mut c, "z", pid, epoch, "zombie", vec![0]).await, vec![0]);
    assert_eq!(send(&mut c, &txn_produce("z", "zombie", 0, txn_batch(2, pid, epoch, 0))).await, (0, 0));
    // The new instance: its first InitProducerId aborts the zombie's transaction.
    assert_eq!(init(&mut c, "z", 60_000).await.error_code, 51, "CONCURRENT_TRANSACTIONS while it aborts");
    let (pid2, epoch2) = init_ready(&mut c, "z", 60_000).await;
    assert_eq!((pid2, epoch2), (pid, epoch + 2), "fenced once for the abort, bumped again for the new one");
    markers_are(&b, "zombie", 0, vec![(2, "ABORT".into(), pid)]).await;
    // The zombie: fenced everywhere, in the wording of each version.
    assert_eq!(
        send(&mut c, &txn_produce("z", "zombie", 0, txn_batch(1, pid, epoch, 2))).await.0,
        47,
        "INVALID_PRODUCER_EPOCH"
    );
    assert_eq!(end(&mut c, 3, "z", pid, epoch, true).await, 90, "PRODUCER_FENCED");
    assert_eq!(end(&mut c, 1, "z", pid, epoch, true).await, 47, "INVALID_PRODUCER_EPOCH before EndTxn v2");
    assert_eq!(add(&mut c, "z", pid, epoch, "zombie", vec![0]).await, vec![90]);
    b.stop().await;
}

async fn offset_of(c: &mut Conn, group: &str, topic: &str) -> i64 {
    let of = OffsetFetchRequest::default().with_group_id(gid(group)).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default().with_name(name(topic)).with_partition_indexes(vec![0]),
    ]));
    let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 7, &of).await;
    r.topics[0].partitions[0].committed_offset
}

async fn txn_commit_offset(c: &mut Conn, id: &str, pid: i64, epoch: i16, group: &str, topic: &str, offset: i64) -> i16 {
    let add = AddOffsetsToTxnRequest::default()
        .with_transactional_id(tid(id))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_group_id(gid(group));
    let r: AddOffsetsToTxnResponse = c.call(ApiKey::AddOffsetsToTxn, 3, &add).await;
    assert_eq!(r.error_code, 0);
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(tid(id))
        .with_group_id(gid(group))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_generation_id(-1)
        .with_topics(vec![TxnOffsetCommitRequestTopic::default().with_name(name(topic)).with_partitions(vec![
            TxnOffsetCommitRequestPartition::default().with_partition_index(0).with_committed_offset(offset),
        ])]);
    let r: TxnOffsetCommitResponse = c.call(ApiKey::TxnOffsetCommit, 3, &req).await;
    r.topics[0].partitions[0].error_code
}

#[tokio::test]
async fn txn_offset_commit_is_visible_only_after_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "src", 1).await;
    let (pid, epoch) = init_ready(&mut c, "eos", 60_000).await;
    assert_eq!(txn_commit_offset(&mut c, "eos", pid, epoch, "g", "src", 5).await, 0);
    assert_eq!(offset_of(&mut c, "g", "src").await, -1, "pending until the commit");
    assert_eq!(end(&mut c, 3, "eos", pid, epoch, true).await, 0);
    assert_eq!(offset_of(&mut c, "g", "src").await, 5);
    assert_eq!(txn_commit_offset(&mut c, "eos", pid, epoch, "g", "src", 9).await, 0);
    assert_eq!(end(&mut c, 3, "eos", pid, epoch, false).await, 0);
    assert_eq!(offset_of(&mut c, "g", "src").await, 5, "an abort discards them");
    // Without AddOffsetsToTxn first: not part of the transaction.
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(tid("eos"))
        .with_group_id(gid("other"))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_generation_id(-1)
        .with_topics(vec![TxnOffsetCommitRequestTopic::default().with_name(name("src")).with_partitions(vec![
            TxnOffsetCommitRequestPartition::default().with_partition_index(0).with_committed_offset(1),
        ])]);
    let r: TxnOffsetCommitResponse = c.call(ApiKey::TxnOffsetCommit, 3, &req).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 48, "INVALID_TXN_STATE");
    b.stop().await;
}

#[tokio::test]
async fn a_timed_out_transaction_is_aborted_and_its_producer_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.kafka_listen_port = KAFKA_ANY_PORT;
        c.kafka_transaction_cleanup_interval_ms = 20;
        c.kafka_transaction_max_timeout_ms = 1000;
    })
    .await;
    let mut c = Conn::open(b.kafka_port.unwrap()).await;
    create(&mut c, "slow", 1).await;
    assert_eq!(init(&mut c, "s", 1001).await.error_code, 50, "INVALID_TRANSACTION_TIMEOUT over the maximum");
    let (pid, epoch) = init_ready(&mut c, "s", 200).await;
    assert_eq!(add(&mut c, "s", pid, epoch, "slow", vec![0]).await, vec![0]);
    assert_eq!(send(&mut c, &txn_produce("s", "slow", 0, txn_batch(1, pid, epoch, 0))).await, (0, 0));
    until("the timeout aborts", || markers(&b, "slow", 0).len() == 1).await;
    markers_are(&b, "slow", 0, vec![(1, "ABORT".into(), pid)]).await;
    assert_eq!(end(&mut c, 3, "s", pid, epoch, true).await, 90, "the timed-out producer is fenced");
    // The markers are written in PrepareAbort; CompleteAbort follows once they all are.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r: ListTransactionsResponse =
            c.call(ApiKey::ListTransactions, 1, &ListTransactionsRequest::default().with_duration_filter(-1)).await;
        let listed: Vec<_> = r
            .transaction_states
            .iter()
            .map(|t| (t.transactional_id.0.to_string(), t.transaction_state.to_string()))
            .collect();
        if listed == vec![("s".to_owned(), "CompleteAbort".to_owned())] {
            break;
        }
        assert_eq!(listed, vec![("s".to_owned(), "PrepareAbort".to_owned())], "only on the way to CompleteAbort");
        assert!(Instant::now() < deadline, "never CompleteAbort: {listed:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let req = DescribeTransactionsRequest::default().with_transactional_ids(vec![tid("s"), tid("none"), tid("")]);
    let r: DescribeTransactionsResponse = c.call(ApiKey::DescribeTransactions, 0, &req).await;
    let d = &r.transaction_states;
    assert_eq!(
        (d[0].error_code, d[0].producer_id.0, d[0].producer_epoch, d[0].transaction_timeout_ms),
        (0, pid, epoch + 1, 200)
    );
    assert_eq!((d[1].error_code, d[2].error_code), (105, 42), "TRANSACTIONAL_ID_NOT_FOUND, INVALID_REQUEST");
    b.stop().await;
}
