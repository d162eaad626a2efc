//! Cold-read flow control over real TCP (Java's `ColdDataCgCtrService`, RIP-62):
//! GET_COLD_DATA_FLOW_CTR_INFO (2003), UPDATE_COLD_DATA_FLOW_CTR_CONFIG (2001),
//! REMOVE_COLD_DATA_FLOW_CTR_CONFIG (2002), and a push consumer group over its cold-read
//! threshold answered SYSTEM_BUSY until the accumulators are cleared.

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::acl::{sign, start_acl_broker};
use super::broker::{pull, send, wait_max_offset};
use super::broker_harness::{call_addr, start_broker, TestBroker};
use super::support::*;

const GET: RequestCode = RequestCode(2003);
const UPDATE: RequestCode = RequestCode(2001);
const REMOVE: RequestCode = RequestCode(2002);
const FLOW_CTR_REMARK: &str = "This consumer group is reading cold data. It has been flow control";

fn info(r: &RemotingCommand) -> serde_json::Value {
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&r.body)))
}

fn update(body: &str) -> RemotingCommand {
    request(UPDATE, &[]).with_body(body.as_bytes().to_vec())
}

fn remove(group: &str) -> RemotingCommand {
    request(REMOVE, &[]).with_body(group.as_bytes().to_vec())
}

/// [`pull`] as `group`, without suspension.
fn pull_as(group: &str, offset: i64) -> RemotingCommand {
    let mut req = pull("COLD", 0, offset, 0x4, 0);
    req.ext_fields.insert("consumerGroup".into(), group.into());
    req
}

/// A broker with cold-read flow control on, a threshold of 1 byte, every message cold, and four
/// messages on COLD/0.
async fn cold_broker(dir: &std::path::Path) -> (TestBroker, Client) {
    let b = start_broker(dir, |c| {
        c.set("coldDataFlowControlEnable", "true").unwrap();
        c.set("cgColdReadThreshold", "1").unwrap();
        // Every stored message is further from the CommitLog's end than 0 % of the memory.
        c.set("accessMessageInMemoryHotRatio", "0").unwrap();
        // No periodic clear during the test (the housekeeping loop sleeps this long): the test clears.
        c.flush_consumer_offset_interval = 3_600_000;
    })
    .await;
    let c = client();
    for _ in 0..4 {
        assert_eq!(call_addr(&c, &b.addr, send("COLD", 0, b"cold", "A")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "COLD", 0, 4).await;
    (b, c)
}

#[tokio::test]
async fn info_shape_defaults_update_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    assert_eq!(v["runtimeTable"], serde_json::json!({}), "{v}");
    assert_eq!(v["configTable"], serde_json::json!({}), "{v}");
    assert_eq!(v["cgColdReadThreshold"], 3 * 1024 * 1024, "Java's default: {v}");
    assert_eq!(v["globalColdReadThreshold"], 100 * 1024 * 1024, "Java's default: {v}");
    assert_eq!(v["globalAcc"], 0, "{v}");

    // mqadmin's body: `MixAll.properties2String`, `key=value` lines.
    let r = call_addr(&c, &b.addr, update("gA=1024\ngB=2048\n")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    assert_eq!(v["configTable"], serde_json::json!({"gA": 1024, "gB": 2048}), "{v}");
    let r = call_addr(&c, &b.addr, update("gA=4096")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    assert_eq!(call_addr(&c, &b.addr, remove("gB")).await.response_code(), ResponseCode::SUCCESS);
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    assert_eq!(v["configTable"], serde_json::json!({"gA": 4096}), "{v}");

    // Hostile bodies change nothing.
    for bad in ["gC=lots", "gC=-5", "../x=10", "gC", "gC=99999999999999999999999"] {
        let r = call_addr(&c, &b.addr, update(bad)).await;
        assert_ne!(r.response_code(), ResponseCode::SUCCESS, "{bad:?} accepted");
    }
    let r = call_addr(&c, &b.addr, request(UPDATE, &[]).with_body(vec![0xff, 0xfe, b'=', b'1'])).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "non-UTF-8 accepted");
    let r = call_addr(&c, &b.addr, remove("../x")).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "an illegal group name is refused");
    let many: String = (0..20_000).map(|i| format!("g{i}=1\n")).collect();
    let r = call_addr(&c, &b.addr, update(&many)).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "the config table is capped");
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    assert_eq!(v["configTable"], serde_json::json!({"gA": 4096}), "nothing of a refused body is kept: {v}");
    b.stop().await;
}

#[tokio::test]
async fn a_group_over_its_threshold_is_flow_controlled_until_the_reset() {
    let dir = tempfile::tempdir().unwrap();
    let (b, c) = cold_broker(dir.path()).await;
    // gB has its own, large threshold.
    assert_eq!(call_addr(&c, &b.addr, update("gB=100000000")).await.response_code(), ResponseCode::SUCCESS);

    let r = call_addr(&c, &b.addr, pull_as("gA", 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "the first cold read is served: {:?}", r.remark);
    let r = call_addr(&c, &b.addr, pull_as("gA", 1)).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_BUSY, "{:?}", r.remark);
    assert_eq!(r.remark.as_deref(), Some(FLOW_CTR_REMARK));
    for offset in [0, 1, 2] {
        let r = call_addr(&c, &b.addr, pull_as("gB", offset)).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "gB is under its threshold: {:?}", r.remark);
    }
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    let a = v["runtimeTable"]["gA"]["coldAcc"].as_i64().unwrap();
    let bb = v["runtimeTable"]["gB"]["coldAcc"].as_i64().unwrap();
    assert!(a > 0 && bb > a, "gA read 4 messages, gB 4 + 3 + 2: {v}");
    assert_eq!(v["globalAcc"].as_i64(), Some(a + bb), "{v}");
    assert!(v["runtimeTable"]["gA"]["lastColdReadTimeMills"].as_i64().unwrap() > 0, "{v}");
    assert!(v["runtimeTable"]["gA"]["createTimeMills"].as_i64().unwrap() > 0, "{v}");

    // Java's clear (every 5 s): the accumulators go back to zero, gA reads again.
    let now = ferrocket::store::now_ms();
    b.inner.cold_ctr.clear_data_acc(now);
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    assert_eq!((v["globalAcc"].as_i64(), v["runtimeTable"]["gA"]["coldAcc"].as_i64()), (Some(0), Some(0)), "{v}");
    let r = call_addr(&c, &b.addr, pull_as("gA", 1)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "after the reset: {:?}", r.remark);
    // A system group is never counted nor held.
    let r = call_addr(&c, &b.addr, pull_as("TOOLS_CONSUMER", 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    // A group that read nothing cold for a minute leaves the runtime table.
    b.inner.cold_ctr.clear_data_acc(now + 61_000);
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    assert_eq!(v["runtimeTable"], serde_json::json!({}), "{v}");
    assert_eq!(v["configTable"], serde_json::json!({"gB": 100000000}), "the admin's config stays: {v}");

    // Off (live): no flow control, nothing counted.
    let off = request(RequestCode::UPDATE_BROKER_CONFIG, &[]).with_body(b"coldDataFlowControlEnable=false".to_vec());
    assert_eq!(call_addr(&c, &b.addr, off).await.response_code(), ResponseCode::SUCCESS);
    for offset in [0, 1, 2] {
        assert_eq!(call_addr(&c, &b.addr, pull_as("gA", offset)).await.response_code(), ResponseCode::SUCCESS);
    }
    let v = info(&call_addr(&c, &b.addr, request(GET, &[])).await);
    assert_eq!((v["globalAcc"].as_i64(), &v["runtimeTable"]), (Some(0), &serde_json::json!({})), "{v}");
    b.stop().await;
}

#[tokio::test]
async fn a_pull_consumers_cold_pull_is_held_then_reads_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let (b, c) = cold_broker(dir.path()).await;
    let hb = serde_json::json!({
        "clientID": "127.0.0.1@1#1",
        "consumerDataSet": [{"groupName":"gP","consumeType":"CONSUME_ACTIVELY","messageModel":"CLUSTERING",
          "consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[]}],
        "producerDataSet": [], "heartbeatFingerprint": 1, "withoutSub": false
    });
    let hb = request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap());
    assert_eq!(call_addr(&c, &b.addr, hb).await.response_code(), ResponseCode::SUCCESS);
    let r = call_addr(&c, &b.addr, pull_as("gP", 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let started = std::time::Instant::now();
    let r = call_addr(&c, &b.addr, pull_as("gP", 1)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "a pull consumer is held, not refused: {:?}", r.remark);
    assert!(started.elapsed() >= std::time::Duration::from_millis(2900), "held {:?}", started.elapsed());
    assert_eq!(r.ext_fields["nextBeginOffset"], "2", "one message after the hold");
    b.stop().await;
}

#[tokio::test]
async fn acl_update_and_remove_are_admin_only_info_needs_a_signature() {
    const ACCOUNTS: &str = "\
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
  - accessKey: adminUser
    secretKey: adminSecret
    admin: true
";
    let (b, _home, _store) = start_acl_broker(ACCOUNTS).await;
    let c = client();
    for req in [update("gA=10"), remove("gA")] {
        let r = call_addr(&c, &b.addr, sign(req.clone(), "RocketMQ", "12345678")).await;
        assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR, "{:?}", r.remark);
        let r = call_addr(&c, &b.addr, sign(req, "adminUser", "adminSecret")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    }
    let r = call_addr(&c, &b.addr, request(GET, &[])).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "unsigned");
    let r = call_addr(&c, &b.addr, sign(request(GET, &[]), "RocketMQ", "12345678")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    b.stop().await;
}
