//! Hostile names (#25, point 1): topic and group names from the wire are checked where they
//! enter, and the store refuses a record whose topic would leave its root. Each test replays an
//! attack found against an earlier build: a timer's REAL_TOPIC, a send-back's group and a
//! heartbeat's group that climbed out of the store with `..`.

use std::path::Path;
use std::time::Duration;

use ferrocket::model::message::properties_to_string;
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};
use ferrocket::store::now_ms;

use super::broker::{call_addr, pull, records, send, start_broker, wait_max_offset};
use super::support::*;

/// Every path below `dir` whose name contains `needle` (the store's root is `dir/store`).
fn found_below(dir: &Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().contains(needle) {
                out.push(p.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out
}

fn with_props(mut req: RemotingCommand, props: &[(&str, &str)]) -> RemotingCommand {
    req.ext_fields.insert("i".into(), properties_to_string(props.iter().copied()));
    req.ext_fields.insert("g".into(), now_ms().to_string());
    req
}

#[tokio::test]
async fn a_timer_message_naming_a_climbing_real_topic_creates_nothing_outside_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let b = start_broker(&root, |c| c.timer_precision_ms = 100).await;
    let c = client();
    // Straight onto the timer topic, due at once: REAL_TOPIC climbs from consumequeue/ to `dir`.
    let attack = with_props(
        send("rmq_sys_wheel_timer", 0, b"x", "T"),
        &[("TIMER_OUT_MS", "1"), ("REAL_TOPIC", "../../escaped-timer"), ("REAL_QID", "0"), ("WAIT", "true")],
    );
    let r = call_addr(&c, &b.addr, attack).await;
    assert_eq!(r.response_code(), ResponseCode::NO_PERMISSION, "{:?}", r.remark);
    // A real timer due after the attack's: once it is delivered, the wheel has passed the attack's.
    let canary = with_props(
        send("CANARY", 0, b"c", "T"),
        &[("TIMER_DELAY_MS", "300"), ("UNIQ_KEY", "canary"), ("WAIT", "true")],
    );
    assert_eq!(call_addr(&c, &b.addr, canary).await.response_code(), ResponseCode::SUCCESS);
    assert!(
        eventually(Duration::from_secs(15), || async {
            let r = call_addr(&c, &b.addr, pull("CANARY", 0, 0, 4, 0)).await;
            r.response_code() == ResponseCode::SUCCESS && !records(&r.body).is_empty()
        })
        .await,
        "the canary timer was never delivered"
    );
    assert_eq!(found_below(dir.path(), "escaped-timer"), Vec::<std::path::PathBuf>::new());
    b.stop().await;
}

#[tokio::test]
async fn a_send_back_naming_a_climbing_group_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let b = start_broker(&root, |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("SB", 0, b"m", "A")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "SB", 0, 1).await;
    let m = records(&call_addr(&c, &b.addr, pull("SB", 0, 0, 4, 0)).await.body).remove(0);
    // `%DLQ%..` is a directory, the next `..` its parent: consumequeue -> store -> `dir`.
    let back = request(
        RequestCode::CONSUMER_SEND_MSG_BACK,
        &[
            ("offset", &m.commit_log_offset.to_string()),
            ("group", "../../../escaped-group"),
            ("delayLevel", "-1"),
            ("maxReconsumeTimes", "16"),
        ],
    );
    let r = call_addr(&c, &b.addr, back).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    // A legitimate send-back after it is dispatched: the attack's record, had it been stored,
    // came before it.
    let ok = request(
        RequestCode::CONSUMER_SEND_MSG_BACK,
        &[("offset", &m.commit_log_offset.to_string()), ("group", "CG"), ("delayLevel", "-1")],
    );
    assert_eq!(call_addr(&c, &b.addr, ok).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "%DLQ%CG", 0, 1).await;
    assert_eq!(found_below(dir.path(), "escaped-group"), Vec::<std::path::PathBuf>::new());
    let topics = call_addr(&c, &b.addr, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
    assert!(!String::from_utf8_lossy(&topics.body).contains("escaped-group"), "a topic was created for it");
    b.stop().await;
}

#[tokio::test]
async fn heartbeats_offsets_and_admin_requests_with_illegal_names_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("KEEP", 0, b"m", "A")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "KEEP", 0, 1).await;
    // consumequeue/.. is the store's root: deleting that "topic" removed the whole store.
    for topic in ["..", ".", "../consumequeue", ""] {
        let del = request(RequestCode::DELETE_TOPIC_IN_BROKER, &[("topic", topic)]);
        assert_ne!(call_addr(&c, &b.addr, del).await.response_code(), ResponseCode::SUCCESS, "{topic:?}");
    }
    assert!(dir.path().join("consumequeue").join("KEEP").exists(), "the store's queues were deleted");
    assert_eq!(records(&call_addr(&c, &b.addr, pull("KEEP", 0, 0, 4, 0)).await.body).len(), 1);
    let hb = serde_json::json!({
        "clientID": "127.0.0.1@1#1",
        "consumerDataSet": [{"groupName":"../../evil-hb","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",
          "consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",
          "subscriptionDataSet":[{"topic":"T","subString":"*","subVersion":5,"expressionType":"TAG","tagsSet":[],"codeSet":[]}]}],
        "producerDataSet": [],
        "heartbeatFingerprint": 7, "withoutSub": false
    });
    let r =
        call_addr(&c, &b.addr, request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap())).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let offset = request(
        RequestCode::UPDATE_CONSUMER_OFFSET,
        &[("consumerGroup", "g@x"), ("topic", "T@y"), ("queueId", "0"), ("commitOffset", "5")],
    );
    assert_ne!(call_addr(&c, &b.addr, offset).await.response_code(), ResponseCode::SUCCESS);
    let group = request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[])
        .with_body(br#"{"groupName":"bad/evil-admin","consumeEnable":true}"#.to_vec());
    assert_ne!(call_addr(&c, &b.addr, group).await.response_code(), ResponseCode::SUCCESS);
    let long = "g".repeat(121);
    let lock = request(RequestCode::LOCK_BATCH_MQ, &[])
        .with_body(format!(r#"{{"consumerGroup":"{long}","clientId":"c","mqSet":[]}}"#).into_bytes());
    assert_ne!(call_addr(&c, &b.addr, lock).await.response_code(), ResponseCode::SUCCESS);

    let topics = call_addr(&c, &b.addr, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
    assert!(!String::from_utf8_lossy(&topics.body).contains("evil"), "a topic was created");
    let groups = call_addr(&c, &b.addr, request(RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, &[])).await;
    assert!(!String::from_utf8_lossy(&groups.body).contains("evil"), "a group was created");
    let offsets = call_addr(&c, &b.addr, request(RequestCode::GET_ALL_CONSUMER_OFFSET, &[])).await;
    assert!(!String::from_utf8_lossy(&offsets.body).contains("g@x"), "an offset was stored");
    b.stop().await;
}

/// One record as a master would ship it, at `physical_offset`, queue offset 0.
fn raw_record(topic: &str, body: &str, physical_offset: u64) -> Vec<u8> {
    use ferrocket::store::commit_log::record;
    let m = super::store::msg(topic, 0, body, "A", "k");
    let mut out = Vec::new();
    let p = record::encode(&m, &mut out);
    record::patch(&mut out, p, 0, physical_offset as i64, now_ms());
    out
}

#[tokio::test]
async fn the_store_refuses_a_climbing_topic_and_its_dispatcher_skips_one_it_was_shipped() {
    use ferrocket::store::{FlushDiskType, MessageStore, PutStatus};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let config = super::store::config(&root, FlushDiskType::AsyncFlush);
    let store = MessageStore::open(config.clone()).unwrap();
    let r = store.put_messages(&[super::store::msg("../../escaped-put", 0, "x", "A", "k")], true).await;
    assert!(matches!(r.status, PutStatus::MessageIllegal(_)), "{:?}", r.status);

    // A master (or an older build) shipped a record the store must not make a queue for, then a
    // good one: the good one is dispatched, the bad one skipped, nothing lands outside.
    let bad = raw_record("../../escaped-shipped", "bad", 0);
    let good = raw_record("GOOD", "good", bad.len() as u64);
    store.append_replicated(0, &bad).unwrap();
    store.append_replicated(bad.len() as u64, &good).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.max_offset_in_queue("GOOD", 0) < 1 {
        assert!(std::time::Instant::now() < deadline, "the record after the bad one was never dispatched");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(found_below(dir.path(), "escaped"), Vec::<std::path::PathBuf>::new());
    store.shutdown().unwrap();
    drop(store);
    // Recovery rebuilds the queues from the CommitLog, meets the bad record again, and starts.
    std::fs::remove_dir_all(root.join("consumequeue")).unwrap();
    let store = MessageStore::open(config).unwrap();
    assert_eq!(store.max_offset_in_queue("GOOD", 0), 1);
    assert_eq!(found_below(dir.path(), "escaped"), Vec::<std::path::PathBuf>::new());
    store.shutdown().unwrap();
}
