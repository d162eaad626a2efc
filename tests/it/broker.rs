//! The broker over real TCP with ferrocket's own client (the official Java client drives it in
//! compat-tests/): send, long-polling pull, offsets, heartbeats, bad requests, restart.

use std::time::{Duration, Instant};

use ferrocket::model::message::{decode_offset_msg_id, properties_to_string};
use ferrocket::protocol::body::message::{encode_batch, BatchEntry};
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};
use ferrocket::store::commit_log::record;
use tokio_util::sync::CancellationToken;

pub use super::broker_harness::{call_addr, start_broker, start_broker_on, TestBroker};
use super::support::*;

pub fn send(topic: &str, queue: i32, body: &[u8], tags: &str) -> RemotingCommand {
    let props = properties_to_string([("TAGS", tags), ("KEYS", "k1 k2"), ("WAIT", "true")]);
    request(
        RequestCode::SEND_MESSAGE_V2,
        &[
            ("a", "PG"),
            ("b", topic),
            ("c", "TBW102"),
            ("d", "4"),
            ("e", &queue.to_string()),
            ("f", "0"),
            ("g", "1"),
            ("h", "0"),
            ("i", &props),
        ],
    )
    .with_body(body.to_vec())
}

pub fn pull(topic: &str, queue: i32, offset: i64, sys_flag: i32, suspend_ms: i64) -> RemotingCommand {
    request(
        RequestCode::PULL_MESSAGE,
        &[
            ("consumerGroup", "CG"),
            ("topic", topic),
            ("queueId", &queue.to_string()),
            ("queueOffset", &offset.to_string()),
            ("maxMsgNums", "32"),
            ("sysFlag", &sys_flag.to_string()),
            ("commitOffset", "0"),
            ("suspendTimeoutMillis", &suspend_ms.to_string()),
            ("subscription", "*"),
            ("subVersion", "0"),
        ],
    )
}

/// The dispatcher runs behind the append: wait until `n` messages are in the queue.
pub async fn wait_max_offset(c: &Client, addr: &str, topic: &str, queue: i32, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let max = request(RequestCode::GET_MAX_OFFSET, &[("topic", topic), ("queueId", &queue.to_string())]);
        if call_addr(c, addr, max).await.ext_fields["offset"] == n.to_string() {
            return;
        }
        assert!(Instant::now() < deadline, "{topic}/{queue} never reached {n} messages");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn records(body: &[u8]) -> Vec<ferrocket::model::message::StoredMessage> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let m = record::decode(&body[pos..], true).expect("pull body holds whole records");
        pos += m.total_size as usize;
        out.push(m);
    }
    out
}

#[tokio::test]
async fn send_then_pull_returns_the_stored_records() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let body = vec![b'x'; 1500];
    let mut ids = Vec::new();
    for i in 0..10 {
        let r = call_addr(&c, &b.addr, send("BT", 1, &body, if i % 2 == 0 { "A" } else { "B" })).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        assert_eq!(r.ext_fields["queueId"], "1");
        assert_eq!(r.ext_fields["queueOffset"], i.to_string());
        assert_eq!(r.ext_fields["MSG_REGION"], "DefaultRegion");
        let (host, offset) = decode_offset_msg_id(&r.ext_fields["msgId"]).unwrap();
        assert_eq!(host.to_string(), b.addr);
        ids.push(offset);
    }
    wait_max_offset(&c, &b.addr, "BT", 1, 10).await;
    // 4 = SUBSCRIPTION bit: no heartbeat needed. 15 KB of records go out by writev, uncopied.
    let r = call_addr(&c, &b.addr, pull("BT", 1, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(r.ext_fields["nextBeginOffset"], "10");
    assert_eq!(r.ext_fields["maxOffset"], "10");
    let msgs = records(&r.body);
    assert_eq!(msgs.len(), 10);
    assert_eq!(msgs.iter().map(|m| m.commit_log_offset).collect::<Vec<_>>(), ids);
    assert!(msgs[3].properties.contains("CLUSTER\u{1}DefaultCluster"));
    assert!(msgs[3].properties.contains("UNIQ_KEY\u{1}"), "broker adds UNIQ_KEY when missing");

    let mut tagged = pull("BT", 1, 0, 4, 0);
    tagged.ext_fields.insert("subscription".into(), "B".into());
    let r = call_addr(&c, &b.addr, tagged).await;
    assert_eq!(records(&r.body).len(), 5, "tag filter");

    let r = call_addr(&c, &b.addr, pull("BT", 1, 10, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::PULL_NOT_FOUND);
    let r = call_addr(&c, &b.addr, pull("BT", 1, 99, 4, 0)).await;
    assert_eq!((r.response_code(), r.ext_fields["nextBeginOffset"].as_str()), (ResponseCode::PULL_OFFSET_MOVED, "10"));

    let batch = encode_batch(&[
        BatchEntry { flag: 0, body: "b1".into(), properties: properties_to_string([("UNIQ_KEY", "U1")]) },
        BatchEntry { flag: 0, body: "b2".into(), properties: properties_to_string([("UNIQ_KEY", "U2")]) },
    ])
    .unwrap();
    let mut req = send("BT", 2, &[], "A").with_body(batch);
    req.code = RequestCode::SEND_BATCH_MESSAGE.0;
    req.ext_fields.insert("m".into(), "true".into());
    let r = call_addr(&c, &b.addr, req).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(r.ext_fields["msgId"].split(',').count(), 2);
    b.stop().await;
}

#[tokio::test]
async fn long_polling_answers_on_arrival_or_at_the_suspend_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    call_addr(&c, &b.addr, send("LP", 0, b"first", "A")).await;
    wait_max_offset(&c, &b.addr, "LP", 0, 1).await;
    // 2 | 4 = SUSPEND | SUBSCRIPTION.
    let started = Instant::now();
    let r = call_addr(&c, &b.addr, pull("LP", 0, 1, 6, 400)).await;
    assert_eq!(r.response_code(), ResponseCode::PULL_NOT_FOUND);
    assert!(
        started.elapsed() >= Duration::from_millis(350),
        "answered before the suspend time: {:?}",
        started.elapsed()
    );

    let c2 = client();
    let addr = b.addr.clone();
    let mut parked = b.inner.hold.watch_held();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let r = call_addr(&c2, &addr, pull("LP", 0, 1, 6, 10_000)).await;
        (r, started.elapsed())
    });
    // Send once the pull is held, so the answer comes from the arrival, not from the first read.
    parked.wait_for(|n| *n >= 1).await.unwrap();
    call_addr(&c, &b.addr, send("LP", 0, b"second", "A")).await;
    let (r, waited) = waiting.await.unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    assert_eq!(&records(&r.body)[0].body[..], b"second");
    assert!(waited < Duration::from_secs(3), "held pull not woken by the arrival: {waited:?}");
    b.stop().await;
}

#[tokio::test]
async fn bad_requests_get_codes_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let mut req = send("BAD", 0, b"x", "A");
    req.ext_fields.remove("b");
    let r = call_addr(&c, &b.addr, req).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
    assert!(r.remark.unwrap().contains("<b>"), "remark names the missing field");

    let mut req = pull("BT", 0, 0, 4, 0);
    req.ext_fields.insert("queueOffset".into(), "zero".into());
    let r = call_addr(&c, &b.addr, req).await;
    assert!(r.remark.unwrap().contains("queueOffset"));

    let create = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", "RO"),
            ("readQueueNums", "2"),
            ("writeQueueNums", "2"),
            ("perm", "4"),
            ("topicFilterType", "SINGLE_TAG"),
            ("order", "false"),
        ],
    );
    assert_eq!(call_addr(&c, &b.addr, create).await.response_code(), ResponseCode::SUCCESS);
    let r = call_addr(&c, &b.addr, send("RO", 0, b"x", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::NO_PERMISSION);
    let max = request(RequestCode::GET_MAX_OFFSET, &[("topic", "RO"), ("queueId", "0")]);
    assert_eq!(call_addr(&c, &b.addr, max).await.ext_fields["offset"], "0", "rejected send was stored");

    assert_eq!(
        call_addr(&c, &b.addr, send("SCHEDULE_TOPIC_XXXX", 0, b"x", "A")).await.response_code(),
        ResponseCode::NO_PERMISSION
    );
    let r = call_addr(&c, &b.addr, send("bad topic!", 0, b"x", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::INVALID_PARAMETER);
    let r = call_addr(&c, &b.addr, send("RO2", 99, b"x", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::INVALID_PARAMETER, "{:?}", r.remark);
    let r = call_addr(&c, &b.addr, request(RequestCode(7777), &[])).await;
    assert_eq!(r.remark.as_deref(), Some(" request type 7777 not supported"));
    let big = send("BIG", 0, &vec![0u8; 4 * 1024 * 1024 + 1], "A");
    assert_eq!(call_addr(&c, &b.addr, big).await.response_code(), ResponseCode::MESSAGE_ILLEGAL);
    b.stop().await;
}

#[tokio::test]
async fn offsets_groups_and_topics_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let c = client();
    {
        let b = start_broker(dir.path(), |_| {}).await;
        call_addr(&c, &b.addr, send("RS", 0, b"m", "A")).await;
        wait_max_offset(&c, &b.addr, "RS", 0, 1).await;
        let hb = serde_json::json!({
            "clientID": "127.0.0.1@1#1",
            "consumerDataSet": [{"groupName":"CG","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",
              "subscriptionDataSet":[{"topic":"RS","subString":"*","subVersion":5,"expressionType":"TAG","tagsSet":[],"codeSet":[]}]}],
            "producerDataSet": [{"groupName":"PG"}],
            "heartbeatFingerprint": 7, "withoutSub": false
        });
        let r =
            call_addr(&c, &b.addr, request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap()))
                .await;
        assert_eq!(r.ext_fields.get("IS_SUPPORT_HEART_BEAT_V2").map(String::as_str), Some("true"));
        let list =
            call_addr(&c, &b.addr, request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, &[("consumerGroup", "CG")])).await;
        assert_eq!(String::from_utf8_lossy(&list.body), r#"{"consumerIdList":["127.0.0.1@1#1"]}"#);
        let q =
            request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", "CG"), ("topic", "RS"), ("queueId", "0")]);
        assert_eq!(
            call_addr(&c, &b.addr, q.clone()).await.ext_fields["offset"],
            "0",
            "new group on a young queue starts at 0"
        );
        let q3 =
            request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", "CG"), ("topic", "RS"), ("queueId", "3")]);
        assert_eq!(call_addr(&c, &b.addr, q3).await.response_code(), ResponseCode::QUERY_NOT_FOUND, "empty queue");
        // A pull relying on the heartbeat's subscription, committing offset 1.
        let mut p = pull("RS", 0, 0, 1 | 2, 0);
        p.ext_fields.insert("commitOffset".into(), "1".into());
        p.ext_fields.insert("subVersion".into(), "5".into());
        p.ext_fields.remove("subscription");
        assert_eq!(call_addr(&c, &b.addr, p.clone()).await.response_code(), ResponseCode::SUCCESS);
        p.ext_fields.insert("subVersion".into(), "6".into());
        assert_eq!(call_addr(&c, &b.addr, p).await.response_code(), ResponseCode::SUBSCRIPTION_NOT_LATEST);
        let v2 = serde_json::json!({"clientID": "127.0.0.1@1#1", "consumerDataSet": [{"groupName":"CG","subscriptionDataSet":[]}], "heartbeatFingerprint": 7, "withoutSub": true});
        let r =
            call_addr(&c, &b.addr, request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&v2).unwrap()))
                .await;
        assert_eq!(r.ext_fields["IS_SUB_CHANGE"], "false", "same fingerprint, known channel");
        b.stop().await;
    }
    let b = start_broker(dir.path(), |_| {}).await;
    let q = request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", "CG"), ("topic", "RS"), ("queueId", "0")]);
    assert_eq!(call_addr(&c, &b.addr, q).await.ext_fields["offset"], "1", "committed offset lost in restart");
    let all = call_addr(&c, &b.addr, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
    assert!(String::from_utf8_lossy(&all.body).contains("\"RS\""), "topic lost in restart");
    assert!(dir.path().join("config").join("subscriptionGroup.json").exists());
    b.stop().await;
}

#[tokio::test]
async fn delay_levels_and_send_back_to_retry_and_dlq() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.message_delay_level = "1s 2s".into()).await;
    let c = client();
    let mut delayed = send("DL", 0, b"later", "A");
    let props = properties_to_string([("TAGS", "A"), ("DELAY", "1"), ("WAIT", "true")]);
    delayed.ext_fields.insert("i".into(), props);
    let sent_at = Instant::now();
    assert_eq!(call_addr(&c, &b.addr, delayed).await.response_code(), ResponseCode::SUCCESS);
    // Not delivered before its delay: the first time the queue holds it is at least 1 s after the
    // send (polled every 5 ms), checked below.
    wait_max_offset(&c, &b.addr, "DL", 0, 1).await;
    let waited = sent_at.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_millis(2500),
        "level 1 (1 s) delivered after {waited:?}"
    );
    let r = call_addr(&c, &b.addr, pull("DL", 0, 0, 4, 0)).await;
    let m = &records(&r.body)[0];
    assert_eq!(&m.body[..], b"later");
    assert!(!m.properties.contains("DELAY\u{1}"), "DELAY kept after delivery");

    // Send the delivered message back: level 1 goes to %RETRY%CG after a second...
    let back = |offset: i64, level: &str| {
        request(
            RequestCode::CONSUMER_SEND_MSG_BACK,
            &[("offset", &offset.to_string()), ("group", "CG"), ("delayLevel", level), ("maxReconsumeTimes", "16")],
        )
    };
    assert_eq!(call_addr(&c, &b.addr, back(m.commit_log_offset, "1")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "%RETRY%CG", 0, 1).await;
    let r = call_addr(&c, &b.addr, pull("%RETRY%CG", 0, 0, 4, 0)).await;
    let retried = &records(&r.body)[0];
    assert_eq!(retried.reconsume_times, 1);
    assert!(retried.properties.contains("RETRY_TOPIC\u{1}DL"));
    // ...and level -1 straight to %DLQ%CG.
    assert_eq!(
        call_addr(&c, &b.addr, back(retried.commit_log_offset, "-1")).await.response_code(),
        ResponseCode::SUCCESS
    );
    wait_max_offset(&c, &b.addr, "%DLQ%CG", 0, 1).await;
    let missing = back(1 << 40, "0");
    assert_eq!(call_addr(&c, &b.addr, missing).await.response_code(), ResponseCode::SYSTEM_ERROR);
    b.stop().await;
}

#[tokio::test]
async fn shutdown_answers_held_pulls_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    call_addr(&c, &b.addr, send("SD", 0, b"m", "A")).await;
    wait_max_offset(&c, &b.addr, "SD", 0, 1).await;
    let addr = b.addr.clone();
    let mut parked = b.inner.hold.watch_held();
    let held = tokio::spawn(async move { c.invoke(&addr, pull("SD", 0, 1, 6, 30_000), Duration::from_secs(40)).await });
    parked.wait_for(|n| *n >= 1).await.unwrap();
    let started = Instant::now();
    b.stop().await;
    assert!(started.elapsed() < Duration::from_secs(5), "shutdown waited for the held pull: {:?}", started.elapsed());
    let answered = tokio::time::timeout(Duration::from_secs(2), held)
        .await
        .expect("held pull still pending after shutdown")
        .unwrap();
    // Answered with "nothing new", or cut by the closing connection; never left hanging.
    if let Ok(r) = answered {
        assert_eq!(r.response_code(), ResponseCode::PULL_NOT_FOUND);
    }
}

#[tokio::test]
async fn the_vip_port_serves_the_same_requests() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let port: u16 = b.addr.rsplit(':').next().unwrap().parse().unwrap();
    let vip = format!("127.0.0.1:{}", port - 2);
    let c = client();
    // Java slaves fetch their master's metadata here (MixAll.brokerVIPChannel).
    let all = call_addr(&c, &vip, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
    assert_eq!(all.response_code(), ResponseCode::SUCCESS);
    assert!(String::from_utf8_lossy(&all.body).contains("TBW102"));
    b.stop().await;
}

/// A consumer that answers GET_CONSUMER_STATUS_FROM_CLIENT with fixed offsets.
struct StatusAnswering;

impl ferrocket::remoting::RequestHandler for StatusAnswering {
    async fn handle(
        &self,
        _conn: &std::sync::Arc<ferrocket::remoting::Connection>,
        req: RemotingCommand,
    ) -> Option<RemotingCommand> {
        (req.request_code() == RequestCode::GET_CONSUMER_STATUS_FROM_CLIENT).then(|| {
            RemotingCommand::response_to(&req, ResponseCode::SUCCESS).with_body(
                r#"{"consumerTable":{},"messageQueueTable":{{"brokerName":"broker-t","queueId":0,"topic":"ST"}:7}}"#,
            )
        })
    }
}

#[tokio::test]
async fn consumer_status_is_asked_from_each_consumer_and_relayed() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let consumer = ferrocket::remoting::RemotingClient::new(
        std::sync::Arc::new(StatusAnswering),
        ferrocket::protocol::FrameLimits::default(),
        tokio_util::task::TaskTracker::new(),
        CancellationToken::new(),
    );
    let hb = serde_json::json!({"clientID": "c-1", "consumerDataSet": [{"groupName":"SG","subscriptionDataSet":[{"topic":"ST","subString":"*"}]}]});
    let r = consumer
        .invoke(
            &b.addr,
            request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap()),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    let admin = client();
    let r = call_addr(&admin, &b.addr, request(RequestCode(223), &[("topic", "ST"), ("group", "SG")])).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        r#"{"consumerTable":{"c-1":{{"brokerName":"broker-t","queueId":0,"topic":"ST"}:7}},"messageQueueTable":{}}"#
    );
    // `clientAddr` selects a client by its client id (as Java compares it)
    let one = |id: &'static str| request(RequestCode(223), &[("topic", "ST"), ("group", "SG"), ("clientAddr", id)]);
    let r = call_addr(&admin, &b.addr, one("c-1")).await;
    assert!(String::from_utf8_lossy(&r.body).contains("\"c-1\""), "{}", String::from_utf8_lossy(&r.body));
    let r = call_addr(&admin, &b.addr, one("c-2")).await;
    assert!(!String::from_utf8_lossy(&r.body).contains("\"c-1\""), "{}", String::from_utf8_lossy(&r.body));
    let r = call_addr(&admin, &b.addr, request(RequestCode(223), &[("topic", "ST"), ("group", "nobody")])).await;
    assert_eq!(r.response_code(), ResponseCode::CONSUMER_NOT_ONLINE);
    b.stop().await;
}
