//! The gRPC consumer RPCs driven by the tonic client: QueryAssignment, ReceiveMessage (status,
//! messages, delivery timestamp; long polling; filters), AckMessage, ChangeInvisibleDuration,
//! ForwardMessageToDeadLetterQueue, the opaque receipt handles (forged, altered and stale ones
//! refused) and orderly (FIFO) groups.

use std::time::Duration;

use ferrocket::grpc::pb::messaging_service_client::MessagingServiceClient;
use ferrocket::grpc::pb::receive_message_response::Content;
use ferrocket::grpc::pb::*;
use ferrocket::model::group::SubscriptionGroupConfig;
use tonic::transport::Channel;

use super::grpc::{code, grpc_broker, message, plain_client, resource, send, stored, topic, with_id};

type Client = MessagingServiceClient<Channel>;

fn secs(s: i64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration { seconds: s, nanos: 0 })
}

fn receive_req(group: &str, topic: &str, batch: i32, invisible_s: i64) -> ReceiveMessageRequest {
    ReceiveMessageRequest {
        group: resource(group),
        message_queue: Some(MessageQueue { topic: resource(topic), id: -1, ..Default::default() }),
        filter_expression: Some(FilterExpression { r#type: FilterType::Tag as i32, expression: "*".into() }),
        batch_size: batch,
        invisible_duration: secs(invisible_s),
        auto_renew: false,
        long_polling_timeout: secs(5),
        attempt_id: None,
    }
}

/// The status and messages of one ReceiveMessage; asserts the delivery timestamp comes last.
async fn receive(c: &mut Client, req: ReceiveMessageRequest) -> (Code, Vec<Message>) {
    let mut stream = c.receive_message(with_id(req)).await.expect("no gRPC error").into_inner();
    let mut items = Vec::new();
    while let Some(r) = stream.message().await.expect("stream item") {
        items.push(r.content.expect("content"));
    }
    assert!(matches!(items.last(), Some(Content::DeliveryTimestamp(_))), "delivery timestamp last: {items:?}");
    let Some(Content::Status(s)) = items.first() else { panic!("status first: {items:?}") };
    let status = code(&Some(s.clone()));
    let msgs = items.into_iter().filter_map(|c| if let Content::Message(m) = c { Some(m) } else { None }).collect();
    (status, msgs)
}

fn handle(m: &Message) -> String {
    m.system_properties.as_ref().and_then(|s| s.receipt_handle.clone()).expect("a receipt handle")
}

fn attempt(m: &Message) -> i32 {
    m.system_properties.as_ref().and_then(|s| s.delivery_attempt).expect("a delivery attempt")
}

async fn ack(c: &mut Client, group: &str, topic: &str, handles: &[String]) -> AckMessageResponse {
    let entries = handles
        .iter()
        .map(|h| AckMessageEntry { message_id: "m".into(), receipt_handle: h.clone(), lite_topic: None })
        .collect();
    let req = AckMessageRequest { group: resource(group), topic: resource(topic), entries };
    c.ack_message(with_id(req)).await.expect("no gRPC error").into_inner()
}

async fn change(
    c: &mut Client,
    group: &str,
    topic: &str,
    h: &str,
    invisible_s: i64,
) -> ChangeInvisibleDurationResponse {
    let req = ChangeInvisibleDurationRequest {
        group: resource(group),
        topic: resource(topic),
        receipt_handle: h.into(),
        invisible_duration: secs(invisible_s),
        message_id: "m".into(),
        ..Default::default()
    };
    c.change_invisible_duration(with_id(req)).await.expect("no gRPC error").into_inner()
}

async fn send_n(c: &mut Client, t: &str, n: usize) {
    for i in 0..n {
        let r = send(c, vec![message(t, &format!("id{i}"), format!("body{i}").as_bytes())]).await;
        assert_eq!(code(&r.status), Code::Ok);
    }
}

#[tokio::test]
async fn receive_then_ack_and_a_used_handle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GcTopic", 2, None);
    let mut c = plain_client(&b).await;
    send_n(&mut c, "GcTopic", 3).await;
    let (st, msgs) = receive(&mut c, receive_req("GcGroup", "GcTopic", 32, 30)).await;
    assert_eq!(st, Code::Ok);
    assert_eq!(msgs.len(), 3);
    let mut bodies: Vec<_> = msgs.iter().map(|m| String::from_utf8_lossy(&m.body).into_owned()).collect();
    bodies.sort();
    assert_eq!(bodies, ["body0", "body1", "body2"]);
    for m in &msgs {
        let sys = m.system_properties.as_ref().unwrap();
        assert_eq!(attempt(m), 1);
        assert_eq!(sys.tag.as_deref(), Some("TagA"));
        assert_eq!(sys.keys, ["k1", "k2"]);
        assert_eq!(m.topic.as_ref().unwrap().name, "GcTopic");
        let digest = sys.body_digest.as_ref().unwrap();
        assert_eq!(digest.r#type, DigestType::Md5 as i32);
        assert_eq!(digest.checksum.len(), 32, "the MD5 in hex, as the Java proxy sends it");
        assert_eq!(sys.invisible_duration, secs(30));
        assert!(sys.queue_offset.is_some() && sys.store_timestamp.is_some());
    }
    let handles: Vec<String> = msgs.iter().map(handle).collect();
    let acked = ack(&mut c, "GcGroup", "GcTopic", &handles).await;
    assert_eq!(code(&acked.status), Code::Ok, "{acked:?}");
    assert!(acked.entries.iter().all(|e| code(&e.status) == Code::Ok));
    // Nothing left: MESSAGE_NOT_FOUND after the (minimum, 5 s) long poll.
    let started = std::time::Instant::now();
    let (st, msgs) = receive(&mut c, receive_req("GcGroup", "GcTopic", 32, 30)).await;
    assert_eq!((st, msgs.len()), (Code::MessageNotFound, 0));
    assert!(started.elapsed() >= Duration::from_millis(4_900), "held for the long poll");
    // A handle acked once is used up.
    let again = ack(&mut c, "GcGroup", "GcTopic", &handles[..1]).await;
    assert_eq!(code(&again.status), Code::InvalidReceiptHandle);
    b.stop().await;
}

#[tokio::test]
async fn a_changed_handle_is_new_and_a_nack_redelivers_with_attempt_two() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GcChange", 1, None);
    let mut c = plain_client(&b).await;
    send_n(&mut c, "GcChange", 1).await;
    let (_, msgs) = receive(&mut c, receive_req("GcG", "GcChange", 1, 30)).await;
    let first = handle(&msgs[0]);
    let changed = change(&mut c, "GcG", "GcChange", &first, 60).await;
    assert_eq!(code(&changed.status), Code::Ok);
    assert_ne!(changed.receipt_handle, first);
    // The old handle is stale now.
    assert_eq!(
        code(&ack(&mut c, "GcG", "GcChange", std::slice::from_ref(&first)).await.status),
        Code::InvalidReceiptHandle
    );
    // A nack (invisible 0) redelivers at once, attempt 2.
    let nacked = change(&mut c, "GcG", "GcChange", &changed.receipt_handle, 0).await;
    assert_eq!(code(&nacked.status), Code::Ok);
    let (st, again) = receive(&mut c, receive_req("GcG", "GcChange", 1, 30)).await;
    assert_eq!(st, Code::Ok);
    assert_eq!(attempt(&again[0]), 2);
    assert_eq!(again[0].body.as_ref(), b"body0");
    assert_eq!(again[0].topic.as_ref().unwrap().name, "GcChange", "a retry is handed out under the asked topic");
    // Neither earlier handle acks the redelivered copy; its own does.
    let old = [first, changed.receipt_handle.clone(), nacked.receipt_handle.clone()];
    let r = ack(&mut c, "GcG", "GcChange", &old).await;
    assert!(r.entries.iter().all(|e| code(&e.status) == Code::InvalidReceiptHandle), "{r:?}");
    let r = ack(&mut c, "GcG", "GcChange", &[handle(&again[0])]).await;
    assert_eq!(code(&r.status), Code::Ok);
    b.stop().await;
}

#[tokio::test]
async fn forged_and_altered_handles_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GcForge", 1, None);
    let mut c = plain_client(&b).await;
    send_n(&mut c, "GcForge", 1).await;
    let (_, msgs) = receive(&mut c, receive_req("GcF", "GcForge", 1, 30)).await;
    let good = handle(&msgs[0]);
    let mut altered = good.clone().into_bytes();
    altered[3] = if altered[3] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    // The remoting form of the same handle: what a forger would write.
    let remoting = format!("0 {} 30000 0 0 {} 0 0", 1, b.inner.config.broker_name);
    let bad = ["garbage".to_owned(), altered, remoting, String::new(), "A".repeat(5000)];
    let r = ack(&mut c, "GcF", "GcForge", &bad).await;
    assert_eq!(code(&r.status), Code::InvalidReceiptHandle, "{r:?}");
    assert_eq!(r.entries.len(), bad.len());
    // Another group cannot use it either.
    assert_eq!(
        code(&ack(&mut c, "GcOther", "GcForge", std::slice::from_ref(&good)).await.status),
        Code::InvalidReceiptHandle
    );
    assert_eq!(code(&change(&mut c, "GcF", "GcForge", "garbage", 30).await.status), Code::InvalidReceiptHandle);
    // One good, one bad: MULTIPLE_RESULTS, each entry with its own status.
    let r = ack(&mut c, "GcF", "GcForge", &[good, "garbage".into()]).await;
    assert_eq!(code(&r.status), Code::MultipleResults);
    assert_eq!(code(&r.entries[0].status), Code::Ok);
    assert_eq!(code(&r.entries[1].status), Code::InvalidReceiptHandle);
    b.stop().await;
}

#[tokio::test]
async fn bad_requests_get_their_codes() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |c| c.enable_property_filter = true).await;
    topic(&b, "GcBad", 1, None);
    let mut c = plain_client(&b).await;
    let (st, _) = receive(&mut c, receive_req("GcB", "GcBad", 1, 5)).await;
    assert_eq!(st, Code::IllegalInvisibleTime);
    let (st, _) = receive(&mut c, receive_req("GcB", "GcBad", 1, 13 * 3600)).await;
    assert_eq!(st, Code::IllegalInvisibleTime);
    let mut sql = receive_req("GcB", "GcBad", 1, 30);
    sql.filter_expression = Some(FilterExpression { r#type: FilterType::Sql as i32, expression: "a >".into() });
    assert_eq!(receive(&mut c, sql).await.0, Code::IllegalFilterExpression);
    assert_eq!(receive(&mut c, receive_req("CID_RMQ_SYS_TRANS", "GcBad", 1, 30)).await.0, Code::IllegalConsumerGroup);
    assert_eq!(receive(&mut c, receive_req("bad group", "GcBad", 1, 30)).await.0, Code::IllegalConsumerGroup);
    assert_eq!(receive(&mut c, receive_req("GcB", "bad topic", 1, 30)).await.0, Code::IllegalTopic);
    assert_eq!(receive(&mut c, receive_req("GcB", "GcMissing", 1, 30)).await.0, Code::TopicNotFound);
    assert_eq!(receive(&mut c, receive_req("GcB", "GcBad", 0, 30)).await.0, Code::BadRequest);
    // Less than the 5 s minimum left of the call's deadline.
    let mut short = with_id(receive_req("GcB", "GcBad", 1, 30));
    short.set_timeout(Duration::from_secs(2));
    let mut stream = c.receive_message(short).await.expect("no gRPC error").into_inner();
    let first = stream.message().await.unwrap().and_then(|r| r.content);
    assert!(matches!(first, Some(Content::Status(s)) if s.code == Code::IllegalPollingTime as i32));
    let ch = change(&mut c, "GcB", "GcBad", "x", 13 * 3600).await;
    assert_eq!(code(&ch.status), Code::IllegalInvisibleTime);
    b.stop().await;
}

#[tokio::test]
async fn filters_select_by_tag_and_sql() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |c| c.enable_property_filter = true).await;
    topic(&b, "GcFilter", 1, None);
    let mut c = plain_client(&b).await;
    for (i, tag) in ["TagA", "TagB", "TagC"].iter().enumerate() {
        let mut m = message("GcFilter", &format!("f{i}"), tag.as_bytes());
        m.system_properties.as_mut().unwrap().tag = Some((*tag).into());
        m.user_properties.insert("n".into(), i.to_string());
        assert_eq!(code(&send(&mut c, vec![m]).await.status), Code::Ok);
    }
    let mut by_tag = receive_req("GcFt", "GcFilter", 32, 30);
    by_tag.filter_expression =
        Some(FilterExpression { r#type: FilterType::Tag as i32, expression: "TagB || TagC".into() });
    let (_, msgs) = receive(&mut c, by_tag).await;
    let bodies: Vec<&[u8]> = msgs.iter().map(|m| m.body.as_ref()).collect();
    assert_eq!(bodies, [b"TagB".as_ref(), b"TagC"]);
    assert_eq!(msgs[0].user_properties.get("n").map(String::as_str), Some("1"));
    let mut by_sql = receive_req("GcFs", "GcFilter", 32, 30);
    by_sql.filter_expression = Some(FilterExpression { r#type: FilterType::Sql as i32, expression: "n = '0'".into() });
    let (_, msgs) = receive(&mut c, by_sql).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].body.as_ref(), b"TagA");
    b.stop().await;
}

#[tokio::test]
async fn a_fifo_group_gets_every_queue_and_one_queue_stays_locked_until_acked_or_retried() {
    let dir = tempfile::tempdir().unwrap();
    // Receives that find the queue locked answer after 1 s, not the 5 s default minimum.
    let b = grpc_broker(dir.path(), |c| c.grpc_client_consumer_min_long_polling_timeout_millis = 1_000).await;
    topic(&b, "GcFifo", 2, Some("FIFO"));
    b.inner
        .groups
        .update(SubscriptionGroupConfig { consume_message_orderly: true, ..SubscriptionGroupConfig::named("GcFifoG") });
    let mut c = plain_client(&b).await;
    let assign =
        |group: &str| QueryAssignmentRequest { topic: resource("GcFifo"), group: resource(group), endpoints: None };
    let fifo = c.query_assignment(with_id(assign("GcFifoG"))).await.unwrap().into_inner();
    assert_eq!(code(&fifo.status), Code::Ok);
    let ids: Vec<i32> = fifo.assignments.iter().map(|a| a.message_queue.as_ref().unwrap().id).collect();
    assert_eq!(ids, [0, 1]);
    let normal = c.query_assignment(with_id(assign("GcNormalG"))).await.unwrap().into_inner();
    assert_eq!(normal.assignments.iter().map(|a| a.message_queue.as_ref().unwrap().id).collect::<Vec<_>>(), [-1]);
    let port = b.grpc_port.unwrap();
    let ep = normal.assignments[0].message_queue.as_ref().unwrap().broker.as_ref().unwrap().endpoints.as_ref().unwrap();
    assert_eq!(ep.addresses[0].port, i32::from(port));
    for i in 0..2 {
        let mut m = message("GcFifo", &format!("o{i}"), format!("o{i}").as_bytes());
        m.system_properties.as_mut().unwrap().message_group = Some("orderA".into());
        assert_eq!(code(&send(&mut c, vec![m]).await.status), Code::Ok);
    }
    let attempt = |id: &str| ReceiveMessageRequest {
        attempt_id: Some(id.into()),
        long_polling_timeout: secs(1),
        ..receive_req("GcFifoG", "GcFifo", 1, 30)
    };
    let (st, first) = receive(&mut c, attempt("attempt-1")).await;
    assert_eq!(st, Code::Ok);
    assert_eq!(first[0].body.as_ref(), b"o0");
    assert_eq!(first[0].system_properties.as_ref().unwrap().message_group.as_deref(), Some("orderA"));
    // The queue is locked until o0 is acked.
    let (st, none) = receive(&mut c, ReceiveMessageRequest { attempt_id: None, ..attempt("") }).await;
    assert_eq!((st, none.len()), (Code::MessageNotFound, 0));
    let (st, none) = receive(&mut c, attempt("attempt-2")).await;
    assert_eq!((st, none.len()), (Code::MessageNotFound, 0));
    // Except for a receive retried with the attempt id of the one that locked it (the SDKs retry
    // a receive whose answer was lost with the same id): o0 again, still its first delivery.
    let (st, first) = receive(&mut c, attempt("attempt-1")).await;
    assert_eq!(st, Code::Ok);
    assert_eq!(first.iter().map(|m| m.body.as_ref()).collect::<Vec<_>>(), [b"o0"]);
    assert_eq!(first[0].system_properties.as_ref().unwrap().delivery_attempt, Some(1));
    // A receive held on the locked queue gets o1 as soon as o0 is acked, not at its poll's end.
    let mut held = receive_req("GcFifoG", "GcFifo", 1, 30);
    held.long_polling_timeout = secs(20);
    let mut other = c.clone();
    let waiting = tokio::spawn(async move { receive(&mut other, held).await });
    let started = std::time::Instant::now();
    let parked = super::support::eventually(Duration::from_secs(10), || async {
        b.inner.pop.held_pops("GcFifoG", "GcFifo", -1) == 1
    });
    assert!(parked.await, "the receive never reached its long poll");
    assert_eq!(code(&ack(&mut c, "GcFifoG", "GcFifo", &[handle(&first[0])]).await.status), Code::Ok);
    let (st, second) = waiting.await.unwrap();
    assert_eq!(st, Code::Ok);
    assert_eq!(second[0].body.as_ref(), b"o1");
    assert!(started.elapsed() < Duration::from_secs(10), "woken by the ack: {:?}", started.elapsed());
    b.stop().await;
}

#[tokio::test]
async fn forward_to_dlq_stores_and_acks() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GcDlq", 1, None);
    let mut c = plain_client(&b).await;
    send_n(&mut c, "GcDlq", 1).await;
    let (_, msgs) = receive(&mut c, receive_req("GcD", "GcDlq", 1, 30)).await;
    let h = handle(&msgs[0]);
    let req = ForwardMessageToDeadLetterQueueRequest {
        group: resource("GcD"),
        topic: resource("GcDlq"),
        receipt_handle: h.clone(),
        message_id: "id0".into(),
        delivery_attempt: 1,
        max_delivery_attempts: 1,
        lite_topic: None,
    };
    let r = c.forward_message_to_dead_letter_queue(with_id(req.clone())).await.unwrap().into_inner();
    assert_eq!(code(&r.status), Code::Ok);
    let dlq = stored(&b, "%DLQ%GcD", 0, 0).await.expect("the message in the DLQ");
    assert_eq!(dlq.body.as_ref(), b"body0");
    assert_eq!(super::grpc::prop(&dlq, "DLQ_ORIGIN_TOPIC"), Some("GcDlq"));
    // Acked: the handle is used up, and a second forward stores nothing.
    let again = c.forward_message_to_dead_letter_queue(with_id(req)).await.unwrap().into_inner();
    assert_eq!(code(&again.status), Code::InvalidReceiptHandle);
    assert_eq!(b.inner.store.max_offset_in_queue("%DLQ%GcD", 0), 1);
    b.stop().await;
}

#[tokio::test]
async fn an_auto_renewed_message_is_hidden_a_minute_and_acked_with_its_first_handle() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GcRenew", 1, None);
    let mut c = plain_client(&b).await;
    send_n(&mut c, "GcRenew", 1).await;
    let mut req = receive_req("GcR", "GcRenew", 1, 0);
    req.auto_renew = true;
    let (st, msgs) = receive(&mut c, req).await;
    assert_eq!(st, Code::Ok, "auto_renew needs no invisible duration");
    assert_eq!(msgs[0].system_properties.as_ref().unwrap().invisible_duration, secs(60));
    let r = ack(&mut c, "GcR", "GcRenew", &[handle(&msgs[0])]).await;
    assert_eq!(code(&r.status), Code::Ok);
    assert_eq!(b.inner.pop.checkpoints(), 0, "acked: nothing left to renew or revive");
    b.stop().await;
}

#[tokio::test]
async fn a_held_receive_returns_when_a_message_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GcHeld", 4, None);
    let mut c = plain_client(&b).await;
    // A first receive fixes where the group starts on each queue.
    let (st, _) = receive(&mut c, receive_req("GcH", "GcHeld", 32, 30)).await;
    assert_eq!(st, Code::MessageNotFound);
    let mut held = receive_req("GcH", "GcHeld", 32, 30);
    held.long_polling_timeout = secs(20);
    let mut other = c.clone();
    let started = std::time::Instant::now();
    let waiting = tokio::spawn(async move { receive(&mut other, held).await });
    send_n(&mut c, "GcHeld", 1).await;
    let (st, msgs) = waiting.await.unwrap();
    assert_eq!((st, msgs.len()), (Code::Ok, 1));
    assert!(started.elapsed() < Duration::from_secs(10), "woken by the arrival: {:?}", started.elapsed());
    b.stop().await;
}

/// gRPC traffic is counted under its own door: `protocol="grpc"` in the message metrics, in
/// (SendMessage) and out (ReceiveMessage), never as remoting.
#[tokio::test]
async fn grpc_traffic_is_counted_as_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b = grpc_broker(dir.path(), |c| {
        c.metrics_prom_exporter_host = "127.0.0.1".into();
        c.metrics_prom_exporter_port = metrics_port;
        c.broker_cluster_name = "GrpcMetrics".into();
    })
    .await;
    topic(&b, "GrpcCounted", 2, None);
    let mut c = plain_client(&b).await;
    send_n(&mut c, "GrpcCounted", 2).await;
    let (st, msgs) = receive(&mut c, receive_req("GrpcCountedGroup", "GrpcCounted", 32, 30)).await;
    assert_eq!((st, msgs.len()), (Code::Ok, 2));
    let text = super::metrics::http_get(metrics_port, "/metrics").await;
    let get = |name: &str, more: &[(&str, &str)]| {
        let labels: Vec<_> =
            [("cluster", "GrpcMetrics"), ("topic", "GrpcCounted")].into_iter().chain(more.iter().copied()).collect();
        super::metrics::sample(&text, name, &labels)
    };
    assert_eq!(get("rocketmq_messages_in_total", &[("protocol", "grpc")]), Some(2.0), "{text}");
    let out = [("protocol", "grpc"), ("consumer_group", "GrpcCountedGroup")];
    assert_eq!(get("rocketmq_messages_out_total", &out), Some(2.0), "{text}");
    assert_eq!(get("rocketmq_messages_in_total", &[("protocol", "remoting")]), None);
    b.stop().await;
}
