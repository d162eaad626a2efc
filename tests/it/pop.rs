//! POP over RocketMQ remoting (POP_MESSAGE 200050, ACK_MESSAGE 200051,
//! CHANGE_MESSAGE_INVISIBLETIME 200053): handles built as the Java client builds them from the
//! response header, redelivery through the POP retry topic, and hostile input (garbage and
//! forged handles, invalid names, out-of-range numbers, acks twice and after redelivery).

use std::time::{Duration, Instant};

use ferrocket::model::message::{property_value, StoredMessage};
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{call_addr, records, send, start_broker, start_broker_on, wait_max_offset};
use super::support::*;

fn pop(group: &str, topic: &str, queue: i32, max: i32, invisible: i64, poll: i64) -> RemotingCommand {
    request(
        RequestCode::POP_MESSAGE,
        &[
            ("consumerGroup", group),
            ("topic", topic),
            ("queueId", &queue.to_string()),
            ("maxMsgNums", &max.to_string()),
            ("invisibleTime", &invisible.to_string()),
            ("pollTime", &poll.to_string()),
            ("bornTime", "0"),
            ("initMode", "0"),
            ("exp", "*"),
            ("expType", "TAG"),
        ],
    )
}

fn ack(code: RequestCode, group: &str, topic: &str, queue: i32, handle: &str, offset: i64) -> RemotingCommand {
    let mut r = request(
        code,
        &[
            ("consumerGroup", group),
            ("topic", topic),
            ("queueId", &queue.to_string()),
            ("extraInfo", handle),
            ("offset", &offset.to_string()),
        ],
    );
    if code == RequestCode::CHANGE_MESSAGE_INVISIBLETIME {
        r.ext_fields.insert("invisibleTime".into(), "60000".into());
    }
    r
}

/// Each message with its handle, built as `MQClientAPIImpl.processPopResponse` does: the
/// `POP_CK` property if the broker set one, else from startOffsetInfo and the header.
fn handles(r: &RemotingCommand, broker: &str) -> Vec<(StoredMessage, String)> {
    let ext = &r.ext_fields;
    let starts: Vec<Vec<&str>> = ext["startOffsetInfo"].split(';').map(|s| s.split(' ').collect()).collect();
    records(&r.body)
        .into_iter()
        .map(|m| {
            if let Some(ck) = property_value(&m.properties, "POP_CK") {
                let ck = ck.to_owned();
                return (m, ck);
            }
            let start = starts.iter().find(|s| s[0] == "0" && s[1] == m.queue_id.to_string()).expect("startOffsetInfo");
            let h = format!(
                "{} {} {} {} 0 {broker} {} {}",
                start[2], ext["popTime"], ext["invisibleTime"], ext["reviveQid"], m.queue_id, m.queue_offset
            );
            (m, h)
        })
        .collect()
}

async fn call_long(c: &Client, addr: &str, req: RemotingCommand) -> RemotingCommand {
    c.invoke(addr, req, Duration::from_secs(30)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popped_messages_are_acked_once_and_the_unacked_come_back_through_the_retry_topic() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let broker = b.inner.config.broker_name.clone();
    let c = client();
    for body in [b"one".as_slice(), b"two"] {
        assert_eq!(call_addr(&c, &b.addr, send("POPT", 0, body, "A")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "POPT", 0, 2).await;

    let popped_at = Instant::now();
    let r = call_addr(&c, &b.addr, pop("PG", "POPT", -1, 32, 2_000, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(r.ext_fields["msgOffsetInfo"], "0 0 0,1");
    let got = handles(&r, &broker);
    assert_eq!(got.len(), 2);
    let (first, second) = (&got[0], &got[1]);
    assert_eq!(first.0.body.as_ref(), b"one");

    let a = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "PG", "POPT", 0, &first.1, 0)).await;
    assert_eq!(a.response_code(), ResponseCode::SUCCESS, "{:?}", a.remark);
    let twice = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "PG", "POPT", 0, &first.1, 0)).await;
    assert_eq!(twice.response_code(), ResponseCode::NO_MESSAGE, "acked twice");

    // Nothing visible now; the unacked second message comes back after its 2 s.
    let r = call_long(&c, &b.addr, pop("PG", "POPT", -1, 32, 60_000, 10_000)).await;
    let took = popped_at.elapsed();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let again = handles(&r, &broker);
    assert_eq!(again.len(), 1);
    let (m, h) = &again[0];
    assert_eq!((m.body.as_ref(), m.topic.as_str(), m.reconsume_times), (b"two".as_slice(), "POPT", 1));
    assert!(h.split(' ').nth(4) == Some("1"), "a retry handle: {h}");
    eprintln!("redelivered after {took:?} (invisible time 2 s)");
    assert!(took >= Duration::from_secs(2), "redelivered before its invisible time: {took:?}");
    assert!(took < Duration::from_secs(6), "redelivered late: {took:?}");

    // The old handle never acks the redelivered copy; the new one does.
    let old = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "PG", "POPT", 0, &second.1, 1)).await;
    assert_eq!(old.response_code(), ResponseCode::NO_MESSAGE);
    let retry = "%RETRY%PG_POPT";
    let new = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "PG", retry, 0, h, m.queue_offset)).await;
    assert_eq!(new.response_code(), ResponseCode::SUCCESS, "{:?}", new.remark);
    // Every message acked: the group's offsets sit at the ends of both queues.
    let q =
        request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", "PG"), ("topic", "POPT"), ("queueId", "0")]);
    assert_eq!(call_addr(&c, &b.addr, q).await.ext_fields["offset"], "2");
    let none = call_addr(&c, &b.addr, pop("PG", "POPT", -1, 32, 60_000, 0)).await;
    assert_eq!(none.response_code(), ResponseCode::POLLING_TIMEOUT, "nothing is redelivered after its ack");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_of_invisible_time_gives_a_new_handle_and_stales_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("POPC", 1, b"x", "A")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "POPC", 1, 1).await;
    let r = call_addr(&c, &b.addr, pop("CG", "POPC", 1, 1, 2_000, 0)).await;
    let (m, h) = handles(&r, &b.inner.config.broker_name).remove(0);
    let ch = call_addr(&c, &b.addr, ack(RequestCode::CHANGE_MESSAGE_INVISIBLETIME, "CG", "POPC", 1, &h, 0)).await;
    assert_eq!(ch.response_code(), ResponseCode::SUCCESS, "{:?}", ch.remark);
    // The client's new handle: `buildExtraInfo(offset, popTime, invisibleTime, reviveQid, ...)`.
    let e = &ch.ext_fields;
    let new = format!(
        "{} {} {} {} 0 {} 1 {}",
        m.queue_offset, e["popTime"], e["invisibleTime"], e["reviveQid"], b.inner.config.broker_name, 0
    );
    let stale = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "CG", "POPC", 1, &h, 0)).await;
    assert_eq!(stale.response_code(), ResponseCode::NO_MESSAGE);
    let a = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "CG", "POPC", 1, &new, 0)).await;
    assert_eq!(a.response_code(), ResponseCode::SUCCESS, "{:?}", a.remark);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_pop_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("POPH", 0, b"x", "A")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "POPH", 0, 1).await;
    let refused = [
        pop("bad group!", "POPH", -1, 1, 60_000, 0),
        pop("G", "bad/topic", -1, 1, 60_000, 0),
        pop("G", "POPH", -1, 0, 60_000, 0),
        pop("G", "POPH", -1, 33, 60_000, 0),
        pop("G", "POPH", -1, i32::MAX, 60_000, 0),
        pop("G", "POPH", -1, 1, 0, 0),
        pop("G", "POPH", -1, 1, i64::MAX, 0),
        pop("G", "POPH", -1, 1, 60_000, -1),
        pop("G", "POPH", 99, 1, 60_000, 0),
        pop("G", "POPH", -2, 1, 60_000, 0),
    ];
    for r in refused {
        let what = format!("{:?}", r.ext_fields);
        let resp = call_addr(&c, &b.addr, r).await;
        assert_ne!(resp.response_code(), ResponseCode::SUCCESS, "{what}");
    }
    let missing = call_addr(&c, &b.addr, pop("G", "NOPE", -1, 1, 60_000, 0)).await;
    assert_eq!(missing.response_code(), ResponseCode::TOPIC_NOT_EXIST);

    let r = call_addr(&c, &b.addr, pop("G", "POPH", -1, 1, 60_000, 0)).await;
    let (_, h) = handles(&r, &b.inner.config.broker_name).remove(0);
    let fields: Vec<&str> = h.split(' ').collect();
    let forged_time = format!("{} {} {}", fields[0], fields[1].parse::<i64>().unwrap() + 1, fields[2..].join(" "));
    let long = "1 ".repeat(10_000);
    for (handle, code) in [
        ("", ResponseCode::SYSTEM_ERROR), // an empty header field reads as missing
        ("garbage", ResponseCode::INVALID_PARAMETER),
        ("0 1 2 3 9 b 0 0", ResponseCode::INVALID_PARAMETER),
        ("-1 1 2 0 0 b 0 0", ResponseCode::INVALID_PARAMETER),
        (long.as_str(), ResponseCode::INVALID_PARAMETER),
        (forged_time.as_str(), ResponseCode::NO_MESSAGE),
    ] {
        for code_kind in [RequestCode::ACK_MESSAGE, RequestCode::CHANGE_MESSAGE_INVISIBLETIME] {
            let resp = call_addr(&c, &b.addr, ack(code_kind, "G", "POPH", 0, handle, 0)).await;
            assert_eq!(resp.response_code(), code, "{code_kind:?} {handle:.40}: {:?}", resp.remark);
        }
    }
    let out_of_range = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "G", "POPH", 0, &h, 1_000)).await;
    assert_eq!(out_of_range.response_code(), ResponseCode::NO_MESSAGE);
    let bad_queue = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "G", "POPH", 77, &h, 0)).await;
    assert_eq!(bad_queue.response_code(), ResponseCode::MESSAGE_ILLEGAL);
    let other_group = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "H", "POPH", 0, &h, 0)).await;
    assert_eq!(other_group.response_code(), ResponseCode::NO_MESSAGE, "another group's handle");
    // After all that, the real handle still acks.
    let a = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "G", "POPH", 0, &h, 0)).await;
    assert_eq!(a.response_code(), ResponseCode::SUCCESS, "{:?}", a.remark);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_modes_and_assignments_refuse_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("POPA", 0, b"x", "A")).await.response_code(), ResponseCode::SUCCESS);
    let body = |topic: &str, group: &str| {
        format!(r#"{{"topic":"{topic}","consumerGroup":"{group}","mode":"POP","popShareQueueNum":0}}"#).into_bytes()
    };
    let set = |b: Vec<u8>| request(RequestCode::SET_MESSAGE_REQUEST_MODE, &[]).with_body(b);
    for (bad, code) in [
        (b"garbage".to_vec(), ResponseCode::INVALID_PARAMETER),
        (body("%RETRY%G", "G"), ResponseCode::NO_PERMISSION),
        (body("NOPE", "G"), ResponseCode::TOPIC_NOT_EXIST),
        (body("POPA", "no group here"), ResponseCode::INVALID_PARAMETER),
        (body("POPA", "NOGROUP"), ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST),
    ] {
        let r = call_addr(&c, &b.addr, set(bad)).await;
        assert_eq!(r.response_code(), code, "{:?}", r.remark);
    }
    // A pop creates its group; then the mode can be set and is kept in messageRequestMode.json.
    call_addr(&c, &b.addr, pop("G", "POPA", -1, 1, 60_000, 0)).await;
    let r = call_addr(&c, &b.addr, set(body("POPA", "G"))).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let file = std::fs::read_to_string(b.inner.config.config_dir().join("messageRequestMode.json")).unwrap();
    assert!(file.contains("\"POPA\"") && file.contains("\"POP\""), "{file}");
    // Without a connected consumer there is nothing to assign (Java: null).
    let q = br#"{"topic":"POPA","consumerGroup":"G","clientId":"c1","strategyName":"AVG","messageModel":"CLUSTERING"}"#;
    let r = call_addr(&c, &b.addr, request(RequestCode::QUERY_ASSIGNMENT, &[]).with_body(q.to_vec())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    assert_eq!(String::from_utf8_lossy(&r.body), r#"{"messageQueueAssignments":null}"#);
    let r = call_addr(&c, &b.addr, request(RequestCode::QUERY_ASSIGNMENT, &[]).with_body(b"{}".to_vec())).await;
    assert_eq!(r.response_code(), ResponseCode::INVALID_PARAMETER, "{:?}", r.remark);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orderly_pop_locks_its_queue_and_redelivers_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let broker = b.inner.config.broker_name.clone();
    let c = client();
    for body in [b"m0".as_slice(), b"m1"] {
        assert_eq!(call_addr(&c, &b.addr, send("POPO", 0, body, "A")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "POPO", 0, 2).await;
    let ordered = |max: i32, invisible: i64, poll: i64| {
        let mut r = pop("OG", "POPO", 0, max, invisible, poll);
        r.ext_fields.insert("order".into(), "true".into());
        r
    };
    let r = call_addr(&c, &b.addr, ordered(1, 1_000, 0)).await;
    assert_eq!(r.ext_fields["reviveQid"], "999");
    let (m, _) = handles(&r, &broker).remove(0);
    assert_eq!(m.body.as_ref(), b"m0");
    let locked = call_addr(&c, &b.addr, ordered(32, 60_000, 0)).await;
    assert_eq!(locked.response_code(), ResponseCode::POLLING_TIMEOUT, "the queue is locked while m0 is out");
    // m0 expires unacked: the held pop is woken and gets it again, from the queue, counted.
    let again = call_long(&c, &b.addr, ordered(32, 60_000, 10_000)).await;
    assert_eq!(again.response_code(), ResponseCode::SUCCESS, "{:?}", again.remark);
    let got = handles(&again, &broker);
    let bodies: Vec<&[u8]> = got.iter().map(|(m, _)| m.body.as_ref()).collect();
    assert_eq!(bodies, vec![b"m0".as_slice(), b"m1"], "redelivered in order");
    assert_eq!(got[0].0.topic, "POPO");
    assert_eq!(again.ext_fields["orderCountInfo"], "0 qo0%0 1");
    for (m, h) in &got {
        let a = call_addr(&c, &b.addr, ack(RequestCode::ACK_MESSAGE, "OG", "POPO", 0, h, m.queue_offset)).await;
        assert_eq!(a.response_code(), ResponseCode::SUCCESS, "{:?}", a.remark);
    }
    let q =
        request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", "OG"), ("topic", "POPO"), ("queueId", "0")]);
    assert_eq!(call_addr(&c, &b.addr, q).await.ext_fields["offset"], "2");
    b.stop().await;
}

/// Popped messages are counted out under the remoting door (`rocketmq_messages_out_total`).
#[tokio::test]
async fn popped_messages_are_counted_out() {
    let dir = tempfile::tempdir().unwrap();
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b = start_broker(dir.path(), |c| {
        c.metrics_prom_exporter_host = "127.0.0.1".into();
        c.metrics_prom_exporter_port = metrics_port;
        c.broker_cluster_name = "PopMetrics".into();
    })
    .await;
    let c = client();
    for body in [b"one".as_slice(), b"two", b"three"] {
        assert_eq!(call_addr(&c, &b.addr, send("POPM", 0, body, "A")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "POPM", 0, 3).await;
    let r = call_addr(&c, &b.addr, pop("PMG", "POPM", -1, 32, 30_000, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let text = super::metrics::http_get(metrics_port, "/metrics").await;
    let labels = [("cluster", "PopMetrics"), ("topic", "POPM"), ("protocol", "remoting"), ("consumer_group", "PMG")];
    assert_eq!(super::metrics::sample(&text, "rocketmq_messages_out_total", &labels), Some(3.0), "{text}");
    b.stop().await;
}

/// The queues QUERY_ASSIGNMENT gives `client` of group G on topic POPM, as (broker, queue id).
async fn assigned(c: &Client, addr: &str, client: &str) -> Vec<(String, i64)> {
    let q = format!(
        r#"{{"topic":"POPM","consumerGroup":"G","clientId":"{client}","strategyName":"AVG","messageModel":"CLUSTERING"}}"#
    );
    let r = call_addr(c, addr, request(RequestCode::QUERY_ASSIGNMENT, &[]).with_body(q.into_bytes())).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let mut out: Vec<(String, i64)> = body["messageQueueAssignments"]
        .as_array()
        .map(|a| a.iter().map(|m| &m["messageQueue"]).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|q| (q["brokerName"].as_str().unwrap().to_owned(), q["queueId"].as_i64().unwrap()))
        .collect();
    out.sort();
    out
}

/// QUERY_ASSIGNMENT divides the queues of every broker of the topic's route, as the NameServer
/// has it (Java's `TopicRouteInfoManager`): a client with clientRebalance=false asks one broker of
/// the route, at random, for its whole assignment. Before, each broker gave its own queues only,
/// so the other master's messages went unread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assignment_covers_every_broker_of_the_route() {
    let ns = TestNamesrv::start(|_| {}).await;
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let named = |n: &'static str| move |c: &mut ferrocket::broker::BrokerConfig| c.broker_name = n.into();
    let a = start_broker_on(&ns.addr.to_string(), da.path(), named("broker-a")).await;
    let b = start_broker_on(&ns.addr.to_string(), db.path(), named("broker-b")).await;
    let c = client();
    for x in [&a, &b] {
        assert_eq!(call_addr(&c, &x.addr, send("POPM", 0, b"x", "A")).await.response_code(), ResponseCode::SUCCESS);
        let hb = serde_json::json!({
            "clientID": "c1", "producerDataSet": [], "heartbeatFingerprint": 1, "withoutSub": false,
            "consumerDataSet": [{"groupName":"G","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",
              "consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",
              "subscriptionDataSet":[{"topic":"POPM","subString":"*","subVersion":1,"expressionType":"TAG"}]}]
        });
        let r =
            call_addr(&c, &x.addr, request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap()))
                .await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    }
    // Both brokers registered the topic (at once, as topics change).
    assert!(
        eventually(Duration::from_secs(10), || both_in_route(&c, ns.addr)).await,
        "the route never had both brokers"
    );
    let every: Vec<(String, i64)> =
        ["broker-a", "broker-b"].iter().flat_map(|n| (0..4).map(move |q| (n.to_string(), q))).collect();
    assert_eq!(assigned(&c, &a.addr, "c1").await, every, "one client of the group: every queue of both brokers");
    assert_eq!(assigned(&c, &b.addr, "c1").await, every, "whichever broker is asked");
    // In POP mode, each broker's queues are shared as queue -1.
    let mode = br#"{"topic":"POPM","consumerGroup":"G","mode":"POP","popShareQueueNum":0}"#.to_vec();
    call_addr(&c, &a.addr, pop("G", "POPM", -1, 1, 60_000, 0)).await;
    let r = call_addr(&c, &a.addr, request(RequestCode::SET_MESSAGE_REQUEST_MODE, &[]).with_body(mode)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(assigned(&c, &a.addr, "c1").await, [("broker-a".to_owned(), -1), ("broker-b".to_owned(), -1)]);
    a.stop().await;
    b.stop().await;
}

async fn both_in_route(c: &Client, ns: std::net::SocketAddr) -> bool {
    let r = call(c, ns, request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", "POPM")])).await;
    String::from_utf8_lossy(&r.body).matches("\"readQueueNums\"").count() == 2
}
