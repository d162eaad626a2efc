//! Timer messages over the wire: a message with TIMER_DELAY_SEC/MS or TIMER_DELIVER_MS waits on
//! `rmq_sys_wheel_timer` and reaches its real queue when due (never before), also across a
//! restart and past the roll window; a disabled wheel refuses them as Java does.

use std::time::Duration;

use ferrocket::model::message::{properties_to_string, property_value, StoredMessage};
use ferrocket::protocol::{RemotingCommand, ResponseCode};
use ferrocket::store::now_ms;

use super::broker::{call_addr, pull, records, send, start_broker, wait_max_offset, TestBroker};
use super::support::*;

const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";

fn timer_send(topic: &str, queue: i32, key: &str, props: &[(&str, &str)]) -> RemotingCommand {
    let mut req = send(topic, queue, format!("body {key}").as_bytes(), "TagT");
    let mut all = vec![("TAGS", "TagT"), ("UNIQ_KEY", key), ("WAIT", "true")];
    all.extend_from_slice(props);
    req.ext_fields.insert("i".into(), properties_to_string(all));
    req.ext_fields.insert("g".into(), now_ms().to_string());
    req
}

async fn max_offset(c: &Client, b: &TestBroker, topic: &str, queue: i32) -> i64 {
    let r = call_addr(
        c,
        &b.addr,
        request(ferrocket::protocol::RequestCode::GET_MAX_OFFSET, &[("topic", topic), ("queueId", &queue.to_string())]),
    )
    .await;
    r.ext_fields.get("offset").and_then(|o| o.parse().ok()).unwrap_or(-1)
}

/// Waits until `topic`/`queue` holds `n` messages, then returns them.
async fn delivered(c: &Client, b: &TestBroker, topic: &str, queue: i32, n: i64) -> Vec<StoredMessage> {
    assert!(
        eventually(Duration::from_secs(15), || async { max_offset(c, b, topic, queue).await >= n }).await,
        "{topic}/{queue} never got {n} messages"
    );
    let r = call_addr(c, &b.addr, pull(topic, queue, 0, 4, 0)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    records(&r.body)
}

fn prop<'a>(m: &'a StoredMessage, k: &str) -> Option<&'a str> {
    property_value(&m.properties, k)
}

#[tokio::test]
async fn timer_messages_wait_for_their_time_then_reach_their_queue() {
    let dir = tempfile::tempdir().unwrap();
    // 100 ms slots and a roll window of 5 slots: the 1.5 s timer is rolled over several times.
    let b = start_broker(dir.path(), |c| {
        c.timer_precision_ms = 100;
        c.timer_roll_window_slot = 5;
    })
    .await;
    let c = client();
    let sent_at = now_ms();
    let deliver_at = sent_at + 700;
    let cases = [
        ("K-MS", vec![("TIMER_DELAY_MS", "1500".to_string())], sent_at + 1500),
        ("K-AT", vec![("TIMER_DELIVER_MS", deliver_at.to_string())], deliver_at),
        ("K-NOW", vec![("TIMER_DELAY_SEC", "0".to_string())], 0),
    ];
    for (key, props, _) in &cases {
        let props: Vec<(&str, &str)> = props.iter().map(|(k, v)| (*k, v.as_ref())).collect();
        let r = call_addr(&c, &b.addr, timer_send("TM", 2, key, &props)).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{key}: {:?}", r.remark);
        assert_eq!(r.ext_fields["queueId"], "2", "the requested queue is answered");
        assert_eq!(r.ext_fields.contains_key("recallHandle"), *key != "K-NOW", "{key}");
    }
    // The immediate one is there at once; the others wait on the timer topic.
    wait_max_offset(&c, &b.addr, TIMER_TOPIC, 0, 2).await;
    let first = delivered(&c, &b, "TM", 2, 1).await;
    assert_eq!(prop(&first[0], "UNIQ_KEY"), Some("K-NOW"));
    assert_eq!(prop(&first[0], "TIMER_OUT_MS"), None, "not a timer message");

    let all = delivered(&c, &b, "TM", 2, 3).await;
    assert_eq!(all.len(), 3, "each delivered once");
    for (key, _, due) in &cases[..2] {
        let m = all.iter().find(|m| prop(m, "UNIQ_KEY") == Some(key)).unwrap();
        assert!(m.store_timestamp >= *due, "{key} delivered {} ms early", due - m.store_timestamp);
        assert_eq!(&m.body[..], format!("body {key}").as_bytes());
        assert_eq!(prop(m, "TAGS"), Some("TagT"));
        assert_eq!((prop(m, "REAL_TOPIC"), prop(m, "REAL_QID")), (None, None));
        assert_eq!(prop(m, "WAIT"), Some("false"));
        let dequeued: i64 = prop(m, "TIMER_DEQUEUE_MS").unwrap().parse().unwrap();
        assert!(dequeued >= *due);
        assert!(prop(m, "TIMER_ENQUEUE_MS").is_some() && prop(m, "TIMER_OUT_MS").is_some());
    }
    let rolled = all.iter().find(|m| prop(m, "UNIQ_KEY") == Some("K-MS")).unwrap();
    let rolls: i32 = prop(rolled, "TIMER_ROLL_TIMES").unwrap_or("0").parse().unwrap();
    assert!(rolls >= 1, "1.5 s is past a 0.5 s roll window: rolled {rolls} times");

    // What a Java slave copies from its master: the timer checkpoint, 56 bytes of Java's layout.
    let r = call_addr(&c, &b.addr, request(ferrocket::protocol::RequestCode::GET_TIMER_CHECK_POINT, &[])).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(r.body.len(), 56);
    let read_time = i64::from_be_bytes(r.body[..8].try_into().unwrap());
    assert!(read_time > sent_at && read_time % 100 == 0, "lastReadTimeMs {read_time}");
    let info = call_addr(&c, &b.addr, request(ferrocket::protocol::RequestCode::GET_BROKER_RUNTIME_INFO, &[])).await;
    let text = String::from_utf8_lossy(&info.body);
    assert!(text.contains("\"timerReadBehind\"") && text.contains("\"timerOffsetBehind\""), "{text}");
    b.stop().await;
}

#[tokio::test]
async fn timers_survive_a_restart_and_those_due_meanwhile_come_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let tweak = |c: &mut ferrocket::broker::BrokerConfig| c.timer_precision_ms = 100;
    let b = start_broker(dir.path(), tweak).await;
    let c = client();
    let due = now_ms() + 1000;
    for (key, at) in [("DUE", due), ("LATER", due + 600_000)] {
        let r = call_addr(&c, &b.addr, timer_send("TR", 0, key, &[("TIMER_DELIVER_MS", &at.to_string())])).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    }
    wait_max_offset(&c, &b.addr, TIMER_TOPIC, 0, 2).await;
    b.stop().await;
    wait_for_wall_clock(due).await;

    let b = start_broker(dir.path(), tweak).await;
    let got = delivered(&c, &b, "TR", 0, 1).await;
    assert_eq!(got.len(), 1, "only the due timer");
    assert_eq!(prop(&got[0], "UNIQ_KEY"), Some("DUE"));
    assert!(got[0].store_timestamp >= due);
    b.stop().await;

    // Once more: the delivered timer is not delivered again after another restart.
    let b = start_broker(dir.path(), tweak).await;
    let marker = call_addr(&c, &b.addr, timer_send("TR", 0, "NOW", &[])).await;
    assert_eq!(marker.response_code(), ResponseCode::SUCCESS);
    // The engine reads the timer topic before the clock passes another slot; a re-delivery would
    // land before or next to this marker.
    let got = delivered(&c, &b, "TR", 0, 2).await;
    let keys: Vec<_> = got.iter().map(|m| prop(m, "UNIQ_KEY").unwrap_or("")).collect();
    assert_eq!(keys, ["DUE", "NOW"]);
    b.stop().await;
}

/// Returns once the wall clock passed `t` (the broker is down meanwhile: nothing to wait on).
async fn wait_for_wall_clock(t: i64) {
    while now_ms() <= t + 200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_disabled_wheel_or_a_delay_past_the_maximum_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.timer_wheel_enable = false).await;
    let c = client();
    let r = call_addr(&c, &b.addr, timer_send("TD", 0, "K", &[("TIMER_DELAY_SEC", "5")])).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
    assert_eq!(r.remark.as_deref(), Some("accurate timer message is not enabled, timerWheelEnable is false"));
    assert_eq!(max_offset(&c, &b, "TD", 0).await, 0, "nothing stored");
    let r = call_addr(&c, &b.addr, request(ferrocket::protocol::RequestCode::GET_TIMER_CHECK_POINT, &[])).await;
    assert_eq!((r.response_code(), r.remark.as_deref()), (ResponseCode::SYSTEM_ERROR, Some("The checkpoint is null")));
    b.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.timer_max_delay_sec = 60).await;
    let r = call_addr(&c, &b.addr, timer_send("TD", 0, "K", &[("TIMER_DELAY_SEC", "61")])).await;
    assert_eq!(r.response_code(), ResponseCode::MESSAGE_ILLEGAL);
    assert!(r.remark.as_deref().unwrap_or("").contains("max delay 60000ms"), "{:?}", r.remark);
    let r = call_addr(&c, &b.addr, timer_send("TD", 0, "K", &[("TIMER_DELAY_SEC", "60")])).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "the maximum itself is accepted");
    b.stop().await;
}
