//! The Kafka listener over TCP, for what the real clients never send: newer ApiVersions,
//! Produce v0-2, replayed idempotent batches, sequence gaps, bad CRCs, acks=0, unknown APIs,
//! versions out of range, oversized frames; and a fetch parked until a produce wakes it.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use ferrocket::kafka::records::{self, Record};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::broker_harness::*;

pub(super) struct Conn {
    pub(super) stream: TcpStream,
    correlation: i32,
}

impl Conn {
    pub(super) async fn open(port: u16) -> Self {
        Self { stream: TcpStream::connect(("127.0.0.1", port)).await.unwrap(), correlation: 0 }
    }

    pub(super) async fn send<R: Encodable + HeaderVersion>(&mut self, key: ApiKey, version: i16, body: &R) -> i32 {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("it")));
        let mut buf = BytesMut::new();
        header.encode(&mut buf, key.request_header_version(version)).unwrap();
        body.encode(&mut buf, version).unwrap();
        self.raw(&buf).await;
        self.correlation
    }

    pub(super) async fn raw(&mut self, frame_body: &[u8]) {
        let mut out = BytesMut::new();
        out.put_i32(frame_body.len() as i32);
        out.put_slice(frame_body);
        self.stream.write_all(&out).await.unwrap();
    }

    /// The next response frame (without its size), or `None` when the broker closed.
    pub(super) async fn recv(&mut self) -> Option<Bytes> {
        let size = tokio::time::timeout(Duration::from_secs(20), self.stream.read_i32()).await.ok()?.ok()?;
        let mut buf = vec![0; size as usize];
        self.stream.read_exact(&mut buf).await.ok()?;
        Some(Bytes::from(buf))
    }

    pub(super) async fn call<Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        body: &(impl Encodable + HeaderVersion),
    ) -> Resp {
        let correlation = self.send(key, version, body).await;
        let mut frame = self.recv().await.expect("a response");
        let header = ResponseHeader::decode(&mut frame, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, correlation);
        Resp::decode(&mut frame, version).unwrap()
    }
}

/// A request header (v1 layout) for an API or version the codec cannot encode.
pub(super) fn raw_header(key: i16, version: i16, correlation: i32) -> BytesMut {
    let mut b = BytesMut::new();
    b.put_i16(key);
    b.put_i16(version);
    b.put_i32(correlation);
    b.put_i16(2);
    b.put_slice(b"it");
    b
}

pub(super) async fn kafka_broker(dir: &std::path::Path) -> (TestBroker, u16) {
    let b = start_broker(dir, |c| c.kafka_listen_port = KAFKA_ANY_PORT).await;
    let port = b.kafka_port.expect("a Kafka listener");
    (b, port)
}

pub(super) fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

pub(super) async fn create(c: &mut Conn, topic: &str, partitions: i32) {
    let req = CreateTopicsRequest::default().with_topics(vec![create_topics_request::CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(1)]);
    let r: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 7, &req).await;
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
}

/// A v2 batch of `n` records, idempotent when `pid` is given (producer id, epoch, base sequence).
pub(super) fn batch(n: usize, pid: Option<(i64, i16, i32)>) -> Bytes {
    let recs: Vec<Record> = (0..n)
        .map(|i| Record {
            timestamp: 1000 + i as i64,
            key: None,
            value: Some(Bytes::from(format!("v{i}"))),
            headers: vec![],
        })
        .collect();
    let mut b = BytesMut::new();
    records::write_batch(&mut b, 0, &recs);
    if let Some((id, epoch, seq)) = pid {
        b[43..51].copy_from_slice(&id.to_be_bytes());
        b[51..53].copy_from_slice(&epoch.to_be_bytes());
        b[53..57].copy_from_slice(&seq.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    b.freeze()
}

pub(super) fn produce(topic: &str, acks: i16, records: Bytes) -> ProduceRequest {
    ProduceRequest::default().with_acks(acks).with_timeout_ms(5000).with_topic_data(vec![TopicProduceData::default()
        .with_name(name(topic))
        .with_partition_data(vec![PartitionProduceData::default().with_index(0).with_records(Some(records))])])
}

pub(super) fn first(r: &ProduceResponse) -> (i16, i64) {
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

#[tokio::test]
async fn versions_kip511_and_produce_v0_to_2_are_answered_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    let r: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    let produce_range = r.api_keys.iter().find(|k| k.api_key == 0).map(|k| (k.min_version, k.max_version));
    assert_eq!(produce_range, Some((0, 11)), "Produce advertised from 0 for librdkafka");
    for hidden in [68, 17, 36] {
        assert!(r.api_keys.iter().all(|k| k.api_key != hidden), "API {hidden} must not be advertised");
    }
    // A newer ApiVersions than ours: v0 body, UNSUPPORTED_VERSION, our ApiVersions range.
    let mut v9 = raw_header(18, 9, 42);
    v9.put_slice(b"\0whatever a future version carries");
    c.raw(&v9).await;
    let mut frame = c.recv().await.unwrap();
    assert_eq!(frame.get_i32(), 42);
    let v0 = ApiVersionsResponse::decode(&mut frame, 0).unwrap();
    assert_eq!(v0.error_code, 35);
    assert_eq!(v0.api_keys.len(), 1);
    assert_eq!((v0.api_keys[0].api_key, v0.api_keys[0].max_version), (18, 4));
    // Produce v2, encoded by hand (the codec has no v0-2): UNSUPPORTED_VERSION per partition.
    let mut body = raw_header(0, 2, 77);
    body.put_i16(1); // acks
    body.put_i32(1000);
    body.put_i32(1);
    body.put_i16(1);
    body.put_slice(b"T");
    body.put_i32(1);
    body.put_i32(3);
    body.put_i32(4);
    body.put_slice(b"junk");
    c.raw(&body).await;
    let mut frame = c.recv().await.unwrap();
    assert_eq!(frame.get_i32(), 77);
    assert_eq!((frame.get_i32(), frame.get_i16()), (1, 1));
    assert_eq!(frame.split_to(1), Bytes::from_static(b"T"));
    assert_eq!((frame.get_i32(), frame.get_i32(), frame.get_i16()), (1, 3, 35));
    assert_eq!((frame.get_i64(), frame.get_i64(), frame.get_i32(), frame.remaining()), (-1, -1, 0, 0));
    b.stop().await;
}

#[tokio::test]
async fn a_replayed_idempotent_batch_is_stored_once_and_a_gap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "idem", 1).await;
    let init: InitProducerIdResponse = c
        .call(
            ApiKey::InitProducerId,
            4,
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        )
        .await;
    assert_eq!((init.error_code, init.producer_epoch), (0, 0));
    let pid = init.producer_id.0;
    let first_batch = produce("idem", -1, batch(3, Some((pid, 0, 0))));
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &first_batch).await;
    assert_eq!(first(&r), (0, 0));
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &first_batch).await;
    assert_eq!(first(&r), (0, 0), "the replay gets the original offset");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("idem", -1, batch(2, Some((pid, 0, 10))))).await;
    assert_eq!(first(&r).0, 45, "a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("idem", -1, batch(2, Some((pid, 0, 3))))).await;
    assert_eq!(first(&r), (0, 3));
    let lo = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        list_offsets_request::ListOffsetsTopic::default()
            .with_name(name("idem"))
            .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default().with_timestamp(-1)]),
    ]);
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &lo).await;
    assert_eq!(r.topics[0].partitions[0].offset, 5, "3 + 2 records stored, the replay not");
    // By record time: the batches carry timestamps 1000, 1001, 1002 and 1000, 1001.
    let at = |ts: i64| {
        let mut q = lo.clone();
        q.topics[0].partitions[0].timestamp = ts;
        q
    };
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &at(1002)).await;
    assert_eq!((r.topics[0].partitions[0].offset, r.topics[0].partitions[0].timestamp), (2, 1002));
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &at(0)).await;
    assert_eq!((r.topics[0].partitions[0].offset, r.topics[0].partitions[0].timestamp), (0, 1000));
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &at(-3)).await;
    assert_eq!(
        (r.topics[0].partitions[0].offset, r.topics[0].partitions[0].timestamp),
        (2, 1002),
        "MAX_TIMESTAMP: the largest record timestamp, not the newest record"
    );
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &at(999_999)).await;
    assert_eq!((r.topics[0].partitions[0].offset, r.topics[0].partitions[0].timestamp), (-1, -1), "none that late");
    b.stop().await;
}

#[tokio::test]
async fn bad_batches_and_acks_zero_and_bad_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "bad", 1).await;
    let mut corrupt = BytesMut::from(&batch(1, None)[..]);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("bad", 1, corrupt.clone().freeze())).await;
    assert_eq!(first(&r).0, 2, "CORRUPT_MESSAGE");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("nope", 1, batch(1, None))).await;
    assert_eq!(first(&r).0, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    // acks=0: no answer; the next request's answer comes next.
    c.send(ApiKey::Produce, 9, &produce("bad", 0, batch(1, None))).await;
    let r: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    assert_eq!(r.error_code, 0);
    // acks=0 that fails: the connection is closed.
    c.send(ApiKey::Produce, 9, &produce("bad", 0, corrupt.freeze())).await;
    assert!(c.recv().await.is_none(), "a failed acks=0 produce closes the connection");
    // Not advertised, below the range, oversized: closed.
    for (key, version) in [(68, 1), (1, 3), (999, 0)] {
        let mut c = Conn::open(port).await;
        c.raw(&raw_header(key, version, 1)).await;
        assert!(c.recv().await.is_none(), "API {key} v{version}: the connection is closed");
    }
    let mut c = Conn::open(port).await;
    c.stream.write_all(&(200 * 1024 * 1024i32).to_be_bytes()).await.unwrap();
    assert!(c.recv().await.is_none());
    // The broker still serves.
    let mut c = Conn::open(port).await;
    let r: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    assert_eq!(r.error_code, 0);
    b.stop().await;
}

#[tokio::test]
async fn a_parked_fetch_is_woken_by_a_produce() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "wake", 1).await;
    let fetch = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(20_000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![fetch_request::FetchTopic::default().with_topic(name("wake")).with_partitions(vec![
            fetch_request::FetchPartition::default().with_fetch_offset(0).with_partition_max_bytes(1 << 20),
        ])]);
    // Nothing to read: the answer waits max_wait_ms, then comes empty.
    let short = fetch.clone().with_max_wait_ms(300);
    let start = std::time::Instant::now();
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &short).await;
    assert!(start.elapsed() >= Duration::from_millis(250), "answered before max_wait_ms: {:?}", start.elapsed());
    assert_eq!(r.responses[0].partitions[0].records.as_ref().map(|b| b.len()), Some(0));
    let parked = tokio::spawn(async move {
        let start = std::time::Instant::now();
        let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch).await;
        (r, start.elapsed())
    });
    // A produce on another connection wakes the parked fetch (if the produce wins the race, the
    // fetch finds the records at once: either way it must not wait for max_wait_ms).
    let mut p = Conn::open(port).await;
    let r: ProduceResponse = p.call(ApiKey::Produce, 9, &produce("wake", 1, batch(2, None))).await;
    assert_eq!(first(&r), (0, 0));
    let (r, waited) = parked.await.unwrap();
    let part = &r.responses[0].partitions[0];
    assert_eq!((part.error_code, part.high_watermark), (0, 2));
    let mut recs = part.records.clone().unwrap();
    assert!(recs.len() > records::HEADER_LEN);
    assert_eq!((&recs[0..8]).get_i64(), 0, "base offset");
    recs.advance(57);
    assert_eq!(recs.get_i32(), 2, "both records in one batch");
    assert!(waited < Duration::from_secs(15), "woken by the produce, not by max_wait_ms ({waited:?})");
    b.stop().await;
}

#[tokio::test]
async fn oversized_batches_and_acks_all_without_a_slave_get_kafkas_codes() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.kafka_listen_port = super::broker_harness::KAFKA_ANY_PORT;
        c.max_message_size = 4096;
        c.broker_role = "SYNC_MASTER".into();
    })
    .await;
    let port = b.kafka_port.expect("a Kafka listener");
    let mut c = Conn::open(port).await;
    create(&mut c, "big", 1).await;
    let big: Vec<Record> = (0..10)
        .map(|_| Record { timestamp: 1, key: None, value: Some(Bytes::from(vec![7u8; 1000])), headers: vec![] })
        .collect();
    let mut oversized = BytesMut::new();
    records::write_batch(&mut oversized, 0, &big);
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("big", 1, oversized.freeze())).await;
    assert_eq!(first(&r), (10, -1), "MESSAGE_TOO_LARGE over maxMessageSize");
    assert!(r.responses[0].partition_responses[0]
        .error_message
        .as_deref()
        .is_some_and(|m| m.contains("maxMessageSize")));
    // acks=1 is answered once stored; acks=all on a SYNC_MASTER with no slave: NOT_ENOUGH_REPLICAS.
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("big", 1, batch(1, None))).await;
    assert_eq!(first(&r), (0, 0));
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("big", -1, batch(1, None))).await;
    assert_eq!(first(&r).0, 19, "NOT_ENOUGH_REPLICAS");
    b.stop().await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_kafka_connections_max_idle_ms() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.kafka_listen_port = super::broker_harness::KAFKA_ANY_PORT;
        c.kafka_connections_max_idle_ms = 300;
    })
    .await;
    let port = b.kafka_port.expect("a Kafka listener");
    let mut c = Conn::open(port).await;
    let r: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await;
    assert_eq!(r.error_code, 0);
    let start = std::time::Instant::now();
    assert!(c.recv().await.is_none(), "the broker closes a silent connection");
    assert!(start.elapsed() >= Duration::from_millis(250), "not before the idle time: {:?}", start.elapsed());
    b.stop().await;
}

/// A fetch hands records out compressed with the codec they were produced with (#27.6; before:
/// always uncompressed, more bytes on the wire than the producer sent).
#[tokio::test]
async fn a_fetch_returns_batches_compressed_as_they_were_produced() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "packed", 1).await;
    let value = Bytes::from("compressible ".repeat(80));
    let recs: Vec<Record> = (0..50)
        .map(|i| Record { timestamp: 1000 + i, key: None, value: Some(value.clone()), headers: vec![] })
        .collect();
    for codec in [3i16, 0, 4] {
        let mut batch = BytesMut::new();
        records::write_batch_compressed(&mut batch, 0, &recs, records::BatchHeader::PLAIN, codec);
        let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("packed", -1, batch.freeze())).await;
        assert_eq!(first(&r).0, 0);
    }
    let fetch =
        FetchRequest::default().with_replica_id(BrokerId(-1)).with_max_wait_ms(0).with_max_bytes(1 << 20).with_topics(
            vec![fetch_request::FetchTopic::default().with_topic(name("packed")).with_partitions(vec![
                fetch_request::FetchPartition::default().with_fetch_offset(0).with_partition_max_bytes(1 << 20),
            ])],
        );
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch).await;
    let mut data = r.responses[0].partitions[0].records.clone().unwrap();
    let mut seen = Vec::new();
    while data.len() >= records::HEADER_LEN {
        let len = i32::from_be_bytes(data[8..12].try_into().unwrap()) as usize + 12;
        let one = data.split_to(len);
        let base = i64::from_be_bytes(one[0..8].try_into().unwrap());
        let codec = records::codec(i16::from_be_bytes(one[21..23].try_into().unwrap()));
        seen.push((base, codec, one.len() < 50 * value.len() / 4));
    }
    assert_eq!(seen, [(0, 3, true), (50, 0, false), (100, 4, true)], "(base offset, codec, small)");
    b.stop().await;
}
