//! The read-only and batch POP codes over RocketMQ remoting: PEEK_MESSAGE 200052, NOTIFICATION
//! 200054, POLLING_INFO 200055 and BATCH_ACK_MESSAGE 200151 (the body Java's
//! `MQClientAPIImpl.batchAckMessageAsync` sends), with hostile input: bad names, numbers out of
//! range, garbage, huge and over-long batch-ack bodies, stale and forged entries.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{call_addr, records, send, start_broker, wait_max_offset};
use super::support::*;

fn pop(group: &str, topic: &str, queue: i32, poll: i64) -> RemotingCommand {
    let q = queue.to_string();
    let p = poll.to_string();
    request(
        RequestCode::POP_MESSAGE,
        &[
            ("consumerGroup", group),
            ("topic", topic),
            ("queueId", &q),
            ("maxMsgNums", "32"),
            ("invisibleTime", "60000"),
            ("pollTime", &p),
            ("bornTime", "0"),
            ("initMode", "0"),
            ("exp", "*"),
            ("expType", "TAG"),
        ],
    )
}

fn peek(group: &str, topic: &str, queue: i32, max: i32) -> RemotingCommand {
    let (q, m) = (queue.to_string(), max.to_string());
    request(
        RequestCode::PEEK_MESSAGE,
        &[("consumerGroup", group), ("topic", topic), ("queueId", &q), ("maxMsgNums", &m)],
    )
}

fn notification(group: &str, topic: &str, queue: i32, poll: i64) -> RemotingCommand {
    let (q, p) = (queue.to_string(), poll.to_string());
    request(
        RequestCode::NOTIFICATION,
        &[("consumerGroup", group), ("topic", topic), ("queueId", &q), ("pollTime", &p), ("bornTime", "0")],
    )
}

fn polling_info(group: &str, topic: &str, queue: i32) -> RemotingCommand {
    let q = queue.to_string();
    request(RequestCode::POLLING_INFO, &[("consumerGroup", group), ("topic", topic), ("queueId", &q)])
}

fn batch_ack(body: impl Into<Vec<u8>>) -> RemotingCommand {
    request(RequestCode::BATCH_ACK_MESSAGE, &[]).with_body(body.into())
}

/// A `BatchAck` entry as fastjson writes it; `bits` are offsets past `so`.
fn entry(group: &str, topic: &str, retry: &str, queue: i32, so: i64, pt: &str, bits: &[usize]) -> String {
    let mut bytes = vec![0u8; bits.iter().max().map_or(0, |m| m / 8 + 1)];
    for b in bits {
        bytes[b / 8] |= 1 << (b % 8);
    }
    let b = STANDARD.encode(bytes);
    format!(
        r#"{{"b":"{b}","c":"{group}","it":60000,"pt":{pt},"q":{queue},"r":"{retry}","rq":0,"so":{so},"t":"{topic}"}}"#
    )
}

fn body(entries: &[String]) -> String {
    format!(r#"{{"acks":[{}],"brokerName":"b"}}"#, entries.join(","))
}

async fn committed(c: &Client, addr: &str, group: &str, topic: &str) -> String {
    let q =
        request(RequestCode::QUERY_CONSUMER_OFFSET, &[("consumerGroup", group), ("topic", topic), ("queueId", "0")]);
    call_addr(c, addr, q).await.ext_fields["offset"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peek_reads_what_a_pop_would_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    for body in [b"one".as_slice(), b"two", b"three"] {
        assert_eq!(call_addr(&c, &b.addr, send("PKT", 0, body, "A")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "PKT", 0, 3).await;
    for _ in 0..2 {
        let r = call_addr(&c, &b.addr, peek("PKG", "PKT", -1, 2)).await;
        assert_eq!((r.response_code(), r.remark.as_deref()), (ResponseCode::SUCCESS, Some("FOUND")));
        let bodies: Vec<Vec<u8>> = records(&r.body).into_iter().map(|m| m.body.to_vec()).collect();
        assert_eq!(bodies, vec![b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(r.ext_fields["restNum"], "3");
    }
    assert_eq!(b.inner.pop.checkpoints(), 0, "a peek records no checkpoint");
    // The pop after the peeks still gets all three; a peek then finds nothing left.
    let p = call_addr(&c, &b.addr, pop("PKG", "PKT", -1, 0)).await;
    assert_eq!(records(&p.body).len(), 3, "{:?}", p.remark);
    let r = call_addr(&c, &b.addr, peek("PKG", "PKT", 0, 32)).await;
    assert_eq!((r.response_code(), r.remark.as_deref()), (ResponseCode::PULL_NOT_FOUND, Some("NO_MESSAGE_IN_QUEUE")));
    assert_eq!(r.ext_fields["restNum"], "0");

    for (bad, code) in [
        (peek("bad group!", "PKT", -1, 1), ResponseCode::INVALID_PARAMETER),
        (peek("G", "bad/topic", -1, 1), ResponseCode::INVALID_PARAMETER),
        (peek("G", "PKT", -1, 0), ResponseCode::INVALID_PARAMETER),
        (peek("G", "PKT", -1, 33), ResponseCode::INVALID_PARAMETER),
        (peek("G", "PKT", -1, i32::MAX), ResponseCode::INVALID_PARAMETER),
        (peek("G", "PKT", 99, 1), ResponseCode::INVALID_PARAMETER),
        (peek("G", "NOPE", -1, 1), ResponseCode::TOPIC_NOT_EXIST),
        (request(RequestCode::PEEK_MESSAGE, &[("topic", "PKT")]), ResponseCode::SYSTEM_ERROR),
    ] {
        let what = format!("{:?}", bad.ext_fields);
        let r = call_addr(&c, &b.addr, bad).await;
        assert_eq!(r.response_code(), code, "{what}: {:?}", r.remark);
    }
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_is_held_until_a_message_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.pop_polling_size = 1).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("NTT", 0, b"x", "A")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "NTT", 0, 1).await;
    let r = call_addr(&c, &b.addr, notification("NG", "NTT", -1, 0)).await;
    assert_eq!((r.response_code(), r.ext_fields["hasMsg"].as_str()), (ResponseCode::SUCCESS, "true"));
    // Popped: nothing left for the group.
    assert_eq!(records(&call_addr(&c, &b.addr, pop("NG", "NTT", -1, 0)).await.body).len(), 1);
    let r = call_addr(&c, &b.addr, notification("NG", "NTT", 0, 0)).await;
    assert_eq!(r.ext_fields["hasMsg"], "false");
    let r = call_addr(&c, &b.addr, notification("NG", "NTT", -1, 200)).await;
    assert_eq!(r.ext_fields["hasMsg"], "false", "nothing arrived within the poll time");

    // A held notification answers when a message arrives.
    let mut held = b.inner.hold.watch_held();
    let (c2, addr) = (client(), b.addr.clone());
    let waiting = tokio::spawn(async move { call_addr(&c2, &addr, notification("NG", "NTT", -1, 30_000)).await });
    held.wait_for(|n| *n >= 1).await.unwrap();
    // Past popPollingSize (1) held notifications of (group, topic): answered at once.
    let full = call_addr(&c, &b.addr, notification("NG", "NTT", -1, 30_000)).await;
    assert_eq!((full.ext_fields["hasMsg"].as_str(), full.ext_fields["pollingFull"].as_str()), ("false", "true"));
    // Held notifications are not pops.
    assert_eq!(call_addr(&c, &b.addr, polling_info("NG", "NTT", -1)).await.ext_fields["pollingNum"], "0");
    assert_eq!(call_addr(&c, &b.addr, send("NTT", 0, b"y", "A")).await.response_code(), ResponseCode::SUCCESS);
    let r = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken by the arrival").unwrap();
    assert_eq!((r.response_code(), r.ext_fields["hasMsg"].as_str()), (ResponseCode::SUCCESS, "true"));

    for (bad, code) in [
        (notification("bad group!", "NTT", -1, 0), ResponseCode::INVALID_PARAMETER),
        (notification("NG", "bad/topic", -1, 0), ResponseCode::INVALID_PARAMETER),
        (notification("NG", "NTT", -1, -1), ResponseCode::INVALID_PARAMETER),
        (notification("NG", "NTT", 99, 0), ResponseCode::INVALID_PARAMETER),
        (notification("NG", "NOPE", -1, 0), ResponseCode::TOPIC_NOT_EXIST),
    ] {
        let what = format!("{:?}", bad.ext_fields);
        let r = call_addr(&c, &b.addr, bad).await;
        assert_eq!(r.response_code(), code, "{what}: {:?}", r.remark);
    }
    // An absurd pollTime is held at most 60 s, not i64::MAX ms: it answers at once here.
    let r = call_addr(&c, &b.addr, notification("NG", "NTT", -1, i64::MAX)).await;
    assert_eq!(r.ext_fields["hasMsg"], "true");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_info_counts_the_held_pops_of_a_queue() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("PIT", 0, b"x", "A")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "PIT", 0, 1).await;
    assert_eq!(records(&call_addr(&c, &b.addr, pop("PIG", "PIT", 0, 0)).await.body).len(), 1);
    assert_eq!(call_addr(&c, &b.addr, polling_info("PIG", "PIT", 0)).await.ext_fields["pollingNum"], "0");

    let mut held = b.inner.hold.watch_held();
    let (c2, addr) = (client(), b.addr.clone());
    let waiting = tokio::spawn(async move { call_addr(&c2, &addr, pop("PIG", "PIT", 0, 30_000)).await });
    held.wait_for(|n| *n >= 1).await.unwrap();
    assert_eq!(call_addr(&c, &b.addr, polling_info("PIG", "PIT", 0)).await.ext_fields["pollingNum"], "1");
    assert_eq!(call_addr(&c, &b.addr, polling_info("PIG", "PIT", -1)).await.ext_fields["pollingNum"], "0");
    assert_eq!(call_addr(&c, &b.addr, send("PIT", 0, b"y", "A")).await.response_code(), ResponseCode::SUCCESS);
    let r = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken by the arrival").unwrap();
    assert_eq!(records(&r.body).len(), 1);
    assert_eq!(call_addr(&c, &b.addr, polling_info("PIG", "PIT", 0)).await.ext_fields["pollingNum"], "0");

    for (bad, code) in [
        (polling_info("bad group!", "PIT", 0), ResponseCode::INVALID_PARAMETER),
        (polling_info("PIG", "bad/topic", 0), ResponseCode::INVALID_PARAMETER),
        (polling_info("PIG", "PIT", 99), ResponseCode::INVALID_PARAMETER),
        (polling_info("PIG", "NOPE", 0), ResponseCode::TOPIC_NOT_EXIST),
        (polling_info("NEVER_SEEN", "PIT", 0), ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST),
    ] {
        let what = format!("{:?}", bad.ext_fields);
        let r = call_addr(&c, &b.addr, bad).await;
        assert_eq!(r.response_code(), code, "{what}: {:?}", r.remark);
    }
    assert!(!b.inner.groups.contains("NEVER_SEEN"), "POLLING_INFO creates no group");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_ack_acks_each_offset_of_its_bitset_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    for body in [b"m0".as_slice(), b"m1", b"m2"] {
        assert_eq!(call_addr(&c, &b.addr, send("BAT", 0, body, "A")).await.response_code(), ResponseCode::SUCCESS);
    }
    wait_max_offset(&c, &b.addr, "BAT", 0, 3).await;
    let p = call_addr(&c, &b.addr, pop("BG", "BAT", 0, 0)).await;
    assert_eq!(p.ext_fields["msgOffsetInfo"], "0 0 0,1,2");
    let pt = p.ext_fields["popTime"].clone();
    let forged_pt = (pt.parse::<i64>().unwrap() + 1).to_string();

    let r = call_addr(&c, &b.addr, batch_ack(body(&[entry("BG", "BAT", "0", 0, 0, &pt, &[0, 2])]))).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(committed(&c, &b.addr, "BG", "BAT").await, "1", "offset 1 is still out");
    // Stale (acked before), forged (another pop time) or elsewhere: nothing is acked.
    for stale in [
        entry("BG", "BAT", "0", 0, 0, &pt, &[0, 2]),
        entry("BG", "BAT", "0", 0, 0, &forged_pt, &[1]),
        entry("OTHER", "BAT", "0", 0, 0, &pt, &[1]),
        entry("BG", "BAT", "1", 0, 0, &pt, &[1]),
        entry("BG", "NOPE", "0", 0, 0, &pt, &[1]),
        entry("BG", "BAT", "0", 77, 0, &pt, &[1]),
        entry("BG", "BAT", "0", 0, i64::MAX, &pt, &[1, 9]),
        entry("BG", "BAT", "0", 0, 0, &pt, &[5_000]),
    ] {
        let r = call_addr(&c, &b.addr, batch_ack(body(std::slice::from_ref(&stale)))).await;
        assert_eq!(r.response_code(), ResponseCode::NO_MESSAGE, "{stale}: {:?}", r.remark);
    }
    assert_eq!(committed(&c, &b.addr, "BG", "BAT").await, "1");
    // A body mixing a stale entry and a pending one acks the pending one.
    let mixed = body(&[entry("BG", "BAT", "0", 0, 0, &pt, &[0]), entry("BG", "BAT", "0", 0, 0, &pt, &[1])]);
    let r = call_addr(&c, &b.addr, batch_ack(mixed)).await;
    assert_eq!((r.response_code(), r.remark.as_deref()), (ResponseCode::SUCCESS, Some("acked 1, stale 1")));
    assert_eq!(committed(&c, &b.addr, "BG", "BAT").await, "3");
    assert_eq!(b.inner.pop.checkpoints(), 0);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_batch_ack_bodies_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    assert_eq!(call_addr(&c, &b.addr, send("BAH", 0, b"x", "A")).await.response_code(), ResponseCode::SUCCESS);
    wait_max_offset(&c, &b.addr, "BAH", 0, 1).await;
    let p = call_addr(&c, &b.addr, pop("HG", "BAH", 0, 0)).await;
    let pt = p.ext_fields["popTime"].clone();
    let good = entry("HG", "BAH", "0", 0, 0, &pt, &[0]);

    let absurd_bits = format!(
        r#"{{"acks":[{{"c":"HG","t":"BAH","r":"0","so":0,"pt":{pt},"b":"{}"}}]}}"#,
        STANDARD.encode(vec![0xffu8; 64 << 10])
    );
    let many = body(&vec![good.clone(); 5_000]);
    let huge = format!(r#"{{"acks":[{good}],"pad":"{}"}}"#, "x".repeat(2 << 20));
    for (bad, code, why) in [
        (Vec::new(), ResponseCode::NO_MESSAGE, "no message"),
        (br#"{"acks":[]}"#.to_vec(), ResponseCode::NO_MESSAGE, "no message"),
        (b"garbage".to_vec(), ResponseCode::INVALID_PARAMETER, "not JSON"),
        (b"{\"acks\":[{\"c\":".to_vec(), ResponseCode::INVALID_PARAMETER, "not JSON"),
        (br#"{"acks":"x"}"#.to_vec(), ResponseCode::INVALID_PARAMETER, "not a JSON array"),
        (absurd_bits.into_bytes(), ResponseCode::INVALID_PARAMETER, "bitSet is longer"),
        (many.into_bytes(), ResponseCode::INVALID_PARAMETER, "entries"),
        (huge.into_bytes(), ResponseCode::INVALID_PARAMETER, "bytes"),
        (
            body(&[good.clone(), entry("bad group!", "BAH", "0", 0, 0, &pt, &[0])]).into_bytes(),
            ResponseCode::INVALID_PARAMETER,
            "group",
        ),
        (
            body(&[good.clone(), entry("HG", "bad/topic", "0", 0, 0, &pt, &[0])]).into_bytes(),
            ResponseCode::INVALID_PARAMETER,
            "topic",
        ),
        (
            body(&[good.clone(), entry("HG", "BAH", "7", 0, 0, &pt, &[0])]).into_bytes(),
            ResponseCode::INVALID_PARAMETER,
            "retry",
        ),
    ] {
        let what = String::from_utf8_lossy(&bad[..bad.len().min(60)]).into_owned();
        let r = call_addr(&c, &b.addr, batch_ack(bad)).await;
        assert_eq!(r.response_code(), code, "{what}: {:?}", r.remark);
        let remark = r.remark.unwrap_or_default();
        assert!(remark.to_lowercase().contains(&why.to_lowercase()), "{what}: {remark}");
    }
    // Nothing of a refused body was acked: the good entry still acks alone.
    let r = call_addr(&c, &b.addr, batch_ack(body(&[good]))).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    b.stop().await;
}

/// ACL 1.0: the four codes need SUB on their topic and group, a batch ack on every entry's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pop_codes_need_sub_on_topic_and_group() {
    let (b, _home, _store) = super::acl::start_acl_broker(super::hostile_acl::FILE).await;
    let c = client();
    let sign = |r| super::acl::sign(r, "RocketMQ", "12345678");
    let sent = call_addr(&c, &b.addr, sign(send("allowed", 0, b"x", "A"))).await;
    assert_eq!(sent.response_code(), ResponseCode::SUCCESS, "{:?}", sent.remark);
    let acl_refused = |r: &RemotingCommand| {
        r.response_code() == ResponseCode::SYSTEM_ERROR
            && r.remark.as_deref().is_some_and(|m| m.contains("AclException"))
    };
    for (topic, group) in [("secret", "G1"), ("allowed", "deniedGroup")] {
        let denied = entry(group, topic, "0", 0, 0, "1", &[0]);
        for r in [
            peek(group, topic, 0, 1),
            notification(group, topic, 0, 0),
            polling_info(group, topic, 0),
            batch_ack(body(&[entry("G1", "allowed", "0", 0, 0, "1", &[0]), denied.clone()])),
        ] {
            let what = format!("{:?} {topic} {group}", r.request_code());
            let r = call_addr(&c, &b.addr, sign(r)).await;
            assert!(acl_refused(&r), "{what}: {:?} {:?}", r.response_code(), r.remark);
        }
    }
    let garbage = call_addr(&c, &b.addr, sign(batch_ack(b"garbage".to_vec()))).await;
    assert!(acl_refused(&garbage), "{:?}", garbage.remark);
    // Allowed: served.
    let r = call_addr(&c, &b.addr, sign(peek("G1", "allowed", 0, 1))).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    b.stop().await;
}
