//! Issue #25 on the Kafka door: requests a hostile client sends, each written to fail before
//! its fix. Names (invalid Kafka topics, groups that could corrupt `topic@group` offset keys),
//! RocketMQ's system topics and groups (invisible and untouchable), compressed batches that
//! inflate without bound, producer state a client can grow, a frame that announces a size and
//! stalls, and Kafka headers that must still give a tag and keys.

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::broker::{call_addr, send, TestBroker};
use super::kafka::*;
use super::support::*;

const HALF: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const INVALID_GROUP_ID: i16 = 24;

fn group(s: &str) -> GroupId {
    GroupId(StrBytes::from_string(s.to_owned()))
}

fn fetch(topic: &str) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![fetch_request::FetchTopic::default().with_topic(name(topic)).with_partitions(vec![
            fetch_request::FetchPartition::default().with_fetch_offset(0).with_partition_max_bytes(1 << 20),
        ])])
}

fn list_offsets(topic: &str) -> ListOffsetsRequest {
    ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        list_offsets_request::ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default().with_timestamp(-1)]),
    ])
}

fn commit(g: &str, topic: &str, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group(g))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])])
}

fn commit_code(r: &OffsetCommitResponse) -> i16 {
    r.topics[0].partitions[0].error_code
}

fn metadata(topic: &str) -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default().with_name(Some(name(topic)))]))
        .with_allow_auto_topic_creation(true)
}

fn join(g: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(group(g))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(StrBytes::from_static_str(""))
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(Bytes::from_static(b"m"))])
}

/// Stores one half message (a RocketMQ transactional send): `RMQ_SYS_TRANS_HALF_TOPIC` exists and holds it.
async fn half_message(b: &TestBroker) {
    let mut tx = send("TX", 0, b"uncommitted", "TagT");
    tx.ext_fields.insert(
        "i".into(),
        ferrocket::model::message::properties_to_string([("TRAN_MSG", "true"), ("PGROUP", "PG"), ("UNIQ_KEY", "U1")]),
    );
    tx.ext_fields.insert("g".into(), ferrocket::store::now_ms().to_string());
    let r = call_addr(&client(), &b.addr, tx).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
}

/// Before the fix: a Fetch of the half topic answered 0 with the uncommitted message, a Produce
/// appended to it, Metadata described it, and a commit of `CID_RMQ_SYS_TRANS` was stored.
#[tokio::test]
async fn rocketmq_system_topics_and_groups_are_invisible_and_untouchable() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    half_message(&b).await;
    let mut c = Conn::open(port).await;
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch(HALF)).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, TOPIC_AUTHORIZATION_FAILED, "a Kafka client reads no half message");
    assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce(HALF, 1, batch(1, None))).await;
    assert_eq!(first(&r).0, TOPIC_AUTHORIZATION_FAILED, "no forged half or op records");
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &list_offsets(HALF)).await;
    assert_eq!(r.topics[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    for topic in [HALF, "rmq_sys_wheel_timer", "SCHEDULE_TOPIC_XXXX", "TBW102"] {
        let r: MetadataResponse = c.call(ApiKey::Metadata, 12, &metadata(topic)).await;
        assert_eq!(r.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED, "{topic}");
        assert!(r.topics[0].partitions.is_empty(), "{topic}");
    }
    let all: MetadataResponse = c.call(ApiKey::Metadata, 12, &MetadataRequest::default().with_topics(None)).await;
    assert!(all.topics.iter().all(|t| !t.name.as_ref().unwrap().starts_with("RMQ_SYS")), "not listed");
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit("CID_RMQ_SYS_TRANS", "TX", 5)).await;
    assert_eq!(commit_code(&r), GROUP_AUTHORIZATION_FAILED, "no commit past pending transactions");
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit("user-group", HALF, 5)).await;
    assert_eq!(commit_code(&r), TOPIC_AUTHORIZATION_FAILED);
    let del = DeleteTopicsRequest::default().with_topic_names(vec![name(HALF)]);
    let r: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 5, &del).await;
    assert_eq!(r.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    let del = DeleteGroupsRequest::default().with_groups_names(vec![group("CID_RMQ_SYS_TRANS")]);
    let r: DeleteGroupsResponse = c.call(ApiKey::DeleteGroups, 2, &del).await;
    assert_eq!(r.results[0].error_code, GROUP_AUTHORIZATION_FAILED);
    let r: JoinGroupResponse = c.call(ApiKey::JoinGroup, 9, &join("CID_RMQ_SYS_TRANS")).await;
    assert_eq!(r.error_code, GROUP_AUTHORIZATION_FAILED);
    let fc = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![StrBytes::from_static_str("CID_RMQ_SYS_TRANS")]);
    let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 4, &fc).await;
    assert_eq!(r.coordinators[0].error_code, GROUP_AUTHORIZATION_FAILED);
    // The half message is still there for the transaction check, and only it.
    let offsets = call_addr(
        &client(),
        &b.addr,
        request(ferrocket::protocol::RequestCode::GET_MAX_OFFSET, &[("topic", HALF), ("queueId", "0")]),
    )
    .await;
    assert_eq!(offsets.ext_fields.get("offset").map(String::as_str), Some("1"));
    b.stop().await;
}

/// Before the fix: a group with '@' or '/' was committed (its `topic@group` key then read as
/// another group's by DeleteGroups and OffsetFetch, and `%RETRY%../x` became a topic), JoinGroup
/// parked it, and a topic with '/' got UNKNOWN_TOPIC_OR_PARTITION instead of INVALID_TOPIC.
#[tokio::test]
async fn hostile_topic_and_group_names_get_kafkas_codes_and_reach_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "my.topic", 1).await;
    for bad in ["a@b", "../../outside", "x/y", "", "tab\tname", &"g".repeat(250)] {
        let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit(bad, "my.topic", 3)).await;
        assert_eq!(commit_code(&r), INVALID_GROUP_ID, "commit by {bad:?}");
        let r: JoinGroupResponse = c.call(ApiKey::JoinGroup, 9, &join(bad)).await;
        assert_eq!(r.error_code, INVALID_GROUP_ID, "join of {bad:?}");
        let fc = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![StrBytes::from_string(bad.to_owned())]);
        let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 4, &fc).await;
        assert_eq!(r.coordinators[0].error_code, INVALID_GROUP_ID, "coordinator of {bad:?}");
        let dg = DescribeGroupsRequest::default().with_groups(vec![group(bad)]);
        let r: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 5, &dg).await;
        assert_eq!(r.groups[0].error_code, INVALID_GROUP_ID, "describe of {bad:?}");
        let hb = HeartbeatRequest::default().with_group_id(group(bad)).with_member_id(StrBytes::from_static_str("m"));
        let r: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, &hb).await;
        assert_eq!(r.error_code, INVALID_GROUP_ID, "heartbeat of {bad:?}");
    }
    for bad in ["../x", "a/b", "a b", "%RETRY%g", &"t".repeat(250)] {
        let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce(bad, 1, batch(1, None))).await;
        assert_eq!(first(&r).0, INVALID_TOPIC_EXCEPTION, "produce to {bad:?}");
        let r: FetchResponse = c.call(ApiKey::Fetch, 12, &fetch(bad)).await;
        assert_eq!(r.responses[0].partitions[0].error_code, INVALID_TOPIC_EXCEPTION, "fetch of {bad:?}");
        let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &list_offsets(bad)).await;
        assert_eq!(r.topics[0].partitions[0].error_code, INVALID_TOPIC_EXCEPTION, "offsets of {bad:?}");
        let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit("g1", bad, 3)).await;
        assert_eq!(commit_code(&r), INVALID_TOPIC_EXCEPTION, "commit on {bad:?}");
    }
    // Names Kafka allows keep working: '.' in a topic, '.' and ':' in a group.
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("my.topic", 1, batch(1, None))).await;
    assert_eq!(first(&r), (0, 0));
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit("app.consumer:1", "my.topic", 1)).await;
    assert_eq!(commit_code(&r), 0);
    let of = OffsetFetchRequest::default().with_group_id(group("app.consumer:1")).with_topics(None);
    let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 7, &of).await;
    assert_eq!(r.topics[0].partitions[0].committed_offset, 1);
    let outside = dir.path().parent().unwrap().join("outside");
    assert!(!outside.exists());
    b.stop().await;
}

/// A zstd frame of RLE blocks: `mib` MiB of zeros in 4 bytes per 128 KiB (16 KiB for 512 MiB).
fn zstd_zeros(mib: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38]; // magic; no content size; window 128 KiB
    let blocks = mib * 8;
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = (128 * 1024u32) << 3 | 1 << 1 | last; // RLE block of 128 KiB
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

/// A v2 batch header around already compressed records (`codec`: 1 gzip .. 4 zstd).
fn compressed_batch(codec: i16, count: i32, compressed: &[u8]) -> Bytes {
    let mut b = bytes::BytesMut::from(&batch(1, None)[..61]);
    b.extend_from_slice(compressed);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    b[21..23].copy_from_slice(&codec.to_be_bytes());
    b[23..27].copy_from_slice(&(count - 1).to_be_bytes());
    b[57..61].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

/// The process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Before the fix: the 16 KiB batch inflated to 512 MiB (the peak RSS rose by more than that)
/// before MESSAGE_TOO_LARGE. Now the inflating stops at maxMessageSize. The decoder's own bound
/// is proven by `kafka::inflate`'s unit tests; this checks the answer and the peak end to end.
#[tokio::test]
async fn a_zstd_bomb_is_refused_without_inflating_it() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "bomb", 1).await;
    let bomb = compressed_batch(4, 1000, &zstd_zeros(512));
    assert!(bomb.len() < 17 * 1024, "{}", bomb.len());
    let before = peak_rss_kib();
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("bomb", 1, bomb)).await;
    let grown_mib = (peak_rss_kib() - before) / 1024;
    assert_eq!(first(&r).0, 10, "MESSAGE_TOO_LARGE");
    // Tests share the process: leave room for another test's memory at the same moment (the
    // bomb alone grew the peak by 513 MiB before the fix).
    assert!(grown_mib < 384, "the peak RSS grew by {grown_mib} MiB");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("bomb", 1, batch(1, None))).await;
    assert_eq!(first(&r), (0, 0), "nothing was stored, and the broker still serves");
    b.stop().await;
}

async fn init_producer_id(c: &mut Conn) -> i64 {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let r: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 4, &req).await;
    assert_eq!(r.error_code, 0);
    r.producer_id.0
}

async fn latest(c: &mut Conn, topic: &str) -> i64 {
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &list_offsets(topic)).await;
    r.topics[0].partitions[0].offset
}

/// Before the fix: acks=all on a SYNC_MASTER without a slave answered NOT_ENOUGH_REPLICAS after
/// storing the batch (the high watermark moved), and the producer's retry of that idempotent
/// batch was a "duplicate" answered with success, though no slave ever held it.
#[tokio::test]
async fn not_enough_replicas_means_not_appended_and_a_duplicate_waits_like_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let b = super::broker::start_broker(dir.path(), |c| {
        c.kafka_listen_port = super::broker_harness::KAFKA_ANY_PORT;
        c.broker_role = "SYNC_MASTER".into();
    })
    .await;
    let port = b.kafka_port.expect("a Kafka listener");
    let mut c = Conn::open(port).await;
    create(&mut c, "durable", 1).await;
    let pid = init_producer_id(&mut c).await;
    let all = produce("durable", -1, batch(2, Some((pid, 0, 0))));
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &all).await;
    assert_eq!(first(&r).0, 19, "NOT_ENOUGH_REPLICAS");
    assert_eq!(latest(&mut c, "durable").await, 0, "NOT_ENOUGH_REPLICAS: nothing was appended");
    let one = produce("durable", 1, batch(2, Some((pid, 0, 0))));
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &one).await;
    assert_eq!(first(&r), (0, 0), "acks=1 stores it");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &all).await;
    assert_eq!(first(&r).0, 19, "the duplicate meets acks=all no more than the original would");
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &one).await;
    assert_eq!(first(&r), (0, 0), "a duplicate under acks=1: the original offset");
    assert_eq!(latest(&mut c, "durable").await, 2, "stored once");
    b.stop().await;
}

/// Before the fix: a client that announced a 50 MiB frame and sent 10 bytes of it held its
/// connection (and a zeroed 50 MiB buffer) for ever; kafkaConnectionsMaxIdleMs only covered the
/// wait for the next frame's size.
#[tokio::test]
async fn a_frame_that_stalls_midway_is_closed_by_the_idle_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let b = super::broker::start_broker(dir.path(), |c| {
        c.kafka_listen_port = super::broker_harness::KAFKA_ANY_PORT;
        c.kafka_connections_max_idle_ms = 300;
    })
    .await;
    let port = b.kafka_port.expect("a Kafka listener");
    let mut c = Conn::open(port).await;
    c.stream.write_all(&(50 * 1024 * 1024i32).to_be_bytes()).await.unwrap();
    c.stream.write_all(&[0; 10]).await.unwrap();
    let mut rest = [0u8; 16];
    let closed = tokio::time::timeout(std::time::Duration::from_secs(10), c.stream.read(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "the broker closes the stalled connection: {closed:?}");
    b.stop().await;
}

/// Before the fix: any producer id was taken, and each fresh one left sequence state behind for
/// good. Now only ids InitProducerId handed out are served (state expiry: producer_ids' tests).
#[tokio::test]
async fn made_up_producer_ids_get_unknown_producer_id() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "pids", 1).await;
    for pid in [123_456, i64::MAX] {
        let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("pids", 1, batch(1, Some((pid, 0, 0))))).await;
        assert_eq!(first(&r).0, 59, "UNKNOWN_PRODUCER_ID for {pid}");
    }
    let pid = init_producer_id(&mut c).await;
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &produce("pids", 1, batch(1, Some((pid, 0, 0))))).await;
    assert_eq!(first(&r), (0, 0));
    assert_eq!(latest(&mut c, "pids").await, 1, "only the issued producer's batch is stored");
    b.stop().await;
}

async fn committed_offset(c: &mut Conn, g: &str, topic: &str) -> i64 {
    let of = OffsetFetchRequest::default().with_group_id(group(g)).with_topics(Some(vec![
        offset_fetch_request::OffsetFetchRequestTopic::default().with_name(name(topic)).with_partition_indexes(vec![0]),
    ]));
    let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 7, &of).await;
    r.topics[0].partitions[0].committed_offset
}

/// Before the fix: every group that ever committed kept its offsets for good (a client minting
/// group ids grew consumerOffset.json without bound). With kafkaOffsetsRetentionMinutes=0 a
/// group nobody is in expires at the next sweep; one runs when the listener starts.
#[tokio::test]
async fn offsets_of_a_kafka_group_nobody_is_in_expire() {
    let dir = tempfile::tempdir().unwrap();
    let start = |port: u16| {
        super::broker::start_broker(dir.path(), move |c| {
            c.kafka_listen_port = port;
            c.kafka_offsets_retention_minutes = 0;
        })
    };
    let b = start(super::broker_harness::KAFKA_ANY_PORT).await;
    // The restart binds the same port (the advertised address clients know).
    let port = b.kafka_port.expect("a Kafka listener");
    let mut c = Conn::open(port).await;
    create(&mut c, "kept", 1).await;
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit("passing-by", "kept", 7)).await;
    assert_eq!(commit_code(&r), 0);
    assert_eq!(committed_offset(&mut c, "passing-by", "kept").await, 7);
    let listed: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, &ListGroupsRequest::default()).await;
    assert!(listed.groups.iter().any(|g| &*g.group_id.0 == "passing-by"), "a simple group is listed, Empty");
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit("deleted", "kept", 1)).await;
    assert_eq!(commit_code(&r), 0);
    let del = DeleteGroupsRequest::default().with_groups_names(vec![group("deleted")]);
    let r: DeleteGroupsResponse = c.call(ApiKey::DeleteGroups, 2, &del).await;
    assert_eq!(r.results[0].error_code, 0);
    let listed: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, &ListGroupsRequest::default()).await;
    assert!(listed.groups.iter().all(|g| &*g.group_id.0 != "deleted"), "a deleted group is not listed");
    b.stop().await;
    let b = start(port).await;
    let expired = eventually(std::time::Duration::from_secs(10), || async {
        let mut c = Conn::open(port).await;
        committed_offset(&mut c, "passing-by", "kept").await == -1
    })
    .await;
    assert!(expired, "the offsets of a group nobody is in expire");
    b.stop().await;
}

/// The capped decoders take what Kafka clients send: each codec's batch is stored whole.
#[tokio::test]
async fn compressed_batches_of_every_codec_are_stored() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let mut c = Conn::open(port).await;
    create(&mut c, "codecs", 1).await;
    let plain = batch(3, None);
    let recs = &plain[61..];
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(recs).unwrap();
    let mut lz = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
    lz.write_all(recs).unwrap();
    let snappy = snap::raw::Encoder::new().compress_vec(recs).unwrap();
    let codecs = [(1, gz.finish().unwrap()), (2, snappy), (3, lz.finish().0), (4, zstd::encode_all(recs, 3).unwrap())];
    for (i, (codec, compressed)) in codecs.into_iter().enumerate() {
        let r: ProduceResponse =
            c.call(ApiKey::Produce, 9, &produce("codecs", 1, compressed_batch(codec, 3, &compressed))).await;
        assert_eq!(first(&r), (0, 3 * i as i64), "codec {codec}");
    }
    assert_eq!(latest(&mut c, "codecs").await, 12);
    b.stop().await;
}

/// RocketMQ producers may zlib-compress a body (sysFlag COMPRESSED); a Kafka fetch inflates it.
/// Before the fix the fetch budget counted the stored (compressed) bytes only: twenty 1 KiB
/// bodies that each inflate to 1 MiB all went into one 1 MiB fetch, 20 MiB held in memory.
/// On a multi-thread runtime, as the broker runs: the inflating happens in `block_in_place`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_counts_inflated_rocketmq_bodies_against_its_budget() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = kafka_broker(dir.path()).await;
    let c = client();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&vec![0u8; 1 << 20]).unwrap();
    let bomb = z.finish().unwrap();
    assert!(bomb.len() < 2048, "{}", bomb.len());
    for _ in 0..20 {
        let mut req = send("zbomb", 0, &bomb, "A");
        req.ext_fields.insert("f".into(), "1".into()); // sysFlag COMPRESSED
        assert_eq!(call_addr(&c, &b.addr, req).await.response_code(), ferrocket::protocol::ResponseCode::SUCCESS);
    }
    let mut k = Conn::open(port).await;
    let r: FetchResponse = k.call(ApiKey::Fetch, 12, &fetch("zbomb")).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    let held = p.records.as_ref().map_or(0, |r| r.len());
    assert!(held > 0, "nothing fetched");
    assert!(held <= (2 << 20) + (64 << 10), "a 1 MiB fetch held {held} bytes of inflated bodies");
    b.stop().await;
}
