//! ACL 1.0 on the gRPC door (`aclEnable=true` with `grpcListenPort`): the 5.x SDKs'
//! `authorization` header (`MQv2-HMAC-SHA1 Credential=<ak>, SignedHeaders=x-mq-date-time,
//! Signature=<hex HmacSHA1(secret, x-mq-date-time)>`) checked against `plain_acl.yml`. Unsigned,
//! badly signed and unknown-key requests are UNAUTHORIZED; an account without the topic's or
//! group's permission is FORBIDDEN; white addresses need no signature; nothing refused is stored
//! or delivered.

use ferrocket::grpc::pb::messaging_service_client::MessagingServiceClient;
use ferrocket::grpc::pb::receive_message_response::Content;
use ferrocket::grpc::pb::*;
use tonic::transport::Channel;

use super::acl::start_acl_broker_with;
use super::broker_harness::{TestBroker, GRPC_ANY_PORT};
use super::grpc::{code, message, plain_client, resource, topic, with_id};

type Client = MessagingServiceClient<Channel>;

const ACCOUNTS: &str = "accounts:
  - accessKey: grpcProducer
    secretKey: producerSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['GaTopic=PUB']
  - accessKey: grpcConsumer
    secretKey: consumerSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['GaTopic=SUB']
    groupPerms: ['GaGroup=SUB']
  - accessKey: grpcWhite
    secretKey: whiteSecret
    whiteRemoteAddress: 127.0.0.1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
";

/// How a request is signed.
#[derive(Clone, Copy)]
enum Sig<'a> {
    None,
    /// `(access key, secret key)`: signed as the SDKs sign.
    With(&'a str, &'a str),
    /// A header of the right shape whose signature is not the secret's.
    Forged(&'a str),
}

/// A broker with `aclEnable=true`, `accounts` as its `plain_acl.yml`, a gRPC listener and GaTopic.
async fn acl_broker(accounts: &str) -> (TestBroker, tempfile::TempDir, tempfile::TempDir) {
    let (b, home, store) = start_acl_broker_with(accounts, |c| c.grpc_listen_port = GRPC_ANY_PORT).await;
    topic(&b, "GaTopic", 1, None);
    (b, home, store)
}

/// `Signature.sign` of the Java SDK: upper-case hex of HmacSHA1(secret, date-time).
fn hex_hmac(secret: &str, date_time: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret.as_bytes());
    ring::hmac::sign(&key, date_time.as_bytes()).as_ref().iter().map(|b| format!("{b:02X}")).collect()
}

fn signed<T>(msg: T, sig: Sig<'_>) -> tonic::Request<T> {
    let mut r = with_id(msg);
    let date_time = "20261205T024000Z";
    let (ak, hex) = match sig {
        Sig::None => return r,
        Sig::With(ak, sk) => (ak, hex_hmac(sk, date_time)),
        Sig::Forged(ak) => (ak, hex_hmac("not-the-secret", date_time)),
    };
    let header = format!("MQv2-HMAC-SHA1 Credential={ak}, SignedHeaders=x-mq-date-time, Signature={hex}");
    r.metadata_mut().insert("authorization", header.parse().unwrap());
    r.metadata_mut().insert("x-mq-date-time", date_time.parse().unwrap());
    r
}

async fn send(c: &mut Client, sig: Sig<'_>, body: &[u8]) -> Code {
    let req = SendMessageRequest { messages: vec![message("GaTopic", "ga-id", body)] };
    code(&c.send_message(signed(req, sig)).await.expect("no gRPC error").into_inner().status)
}

fn receive_req(group: &str) -> ReceiveMessageRequest {
    ReceiveMessageRequest {
        group: resource(group),
        message_queue: Some(MessageQueue { topic: resource("GaTopic"), id: -1, ..Default::default() }),
        filter_expression: Some(FilterExpression { r#type: FilterType::Tag as i32, expression: "*".into() }),
        batch_size: 32,
        invisible_duration: Some(prost_types::Duration { seconds: 30, nanos: 0 }),
        auto_renew: false,
        long_polling_timeout: Some(prost_types::Duration { seconds: 5, nanos: 0 }),
        attempt_id: None,
    }
}

/// The status and the messages of one ReceiveMessage.
async fn receive(c: &mut Client, group: &str, sig: Sig<'_>) -> (Code, Vec<Message>) {
    let mut stream = c.receive_message(signed(receive_req(group), sig)).await.expect("no gRPC error").into_inner();
    let (mut status, mut msgs) = (Code::Unspecified, Vec::new());
    while let Some(r) = stream.message().await.expect("stream item") {
        match r.content.expect("content") {
            Content::Status(s) => status = code(&Some(s)),
            Content::Message(m) => msgs.push(m),
            Content::DeliveryTimestamp(_) => {}
        }
    }
    (status, msgs)
}

async fn ack(c: &mut Client, group: &str, handles: &[String], sig: Sig<'_>) -> Code {
    let entries = handles
        .iter()
        .map(|h| AckMessageEntry { message_id: "m".into(), receipt_handle: h.clone(), lite_topic: None })
        .collect();
    let req = AckMessageRequest { group: resource(group), topic: resource("GaTopic"), entries };
    code(&c.ack_message(signed(req, sig)).await.expect("no gRPC error").into_inner().status)
}

/// Messages stored in GaTopic, once every append is dispatched.
async fn stored(b: &TestBroker) -> i64 {
    b.inner.store.await_dispatched(std::time::Duration::from_secs(10)).await;
    b.inner.store.max_offset_in_queue("GaTopic", 0)
}

#[tokio::test]
async fn acl_and_grpc_start_together_and_unsigned_or_forged_requests_are_unauthorized() {
    let (b, _home, _store) = acl_broker(ACCOUNTS).await;
    let mut c = plain_client(&b).await;
    assert_eq!(send(&mut c, Sig::None, b"unsigned").await, Code::Unauthorized);
    assert_eq!(send(&mut c, Sig::Forged("grpcProducer"), b"forged").await, Code::Unauthorized);
    assert_eq!(send(&mut c, Sig::With("nobody12", "producerSecret"), b"unknown").await, Code::Unauthorized);
    // A header that is not the SDKs' shape, and a signature that is not hex.
    for bad in ["MQv2-HMAC-SHA1", "MQv2-HMAC-SHA1 Credential=grpcProducer, Signature=XYZ", "garbage"] {
        let mut req = with_id(SendMessageRequest { messages: vec![message("GaTopic", "ga-id", b"bad")] });
        req.metadata_mut().insert("authorization", bad.parse().unwrap());
        req.metadata_mut().insert("x-mq-date-time", "20261205T024000Z".parse().unwrap());
        let answer = c.send_message(req).await.expect("no gRPC error").into_inner();
        assert_eq!(code(&answer.status), Code::Unauthorized, "{bad}");
    }
    assert_eq!(stored(&b).await, 0, "nothing refused is stored");
    // The signing account's own send lands; an unsigned receive gets nothing of it.
    assert_eq!(send(&mut c, Sig::With("grpcProducer", "producerSecret"), b"signed").await, Code::Ok);
    assert_eq!(stored(&b).await, 1);
    let (st, msgs) = receive(&mut c, "GaGroup", Sig::None).await;
    assert_eq!((st, msgs.len()), (Code::Unauthorized, 0));
    let (st, msgs) = receive(&mut c, "GaGroup", Sig::Forged("grpcConsumer")).await;
    assert_eq!((st, msgs.len()), (Code::Unauthorized, 0));
    // QueryRoute, Heartbeat and Telemetry need a signature too.
    let route = QueryRouteRequest { topic: resource("GaTopic"), endpoints: None };
    let route = c.query_route(signed(route, Sig::None)).await.unwrap().into_inner();
    assert_eq!(code(&route.status), Code::Unauthorized);
    assert!(route.message_queues.is_empty());
    let hb = HeartbeatRequest { group: None, client_type: ClientType::Producer as i32 };
    assert_eq!(code(&c.heartbeat(signed(hb, Sig::None)).await.unwrap().into_inner().status), Code::Unauthorized);
    let settings = TelemetryCommand {
        status: None,
        command: Some(telemetry_command::Command::Settings(Settings {
            client_type: Some(ClientType::Producer as i32),
            pub_sub: Some(settings::PubSub::Publishing(Publishing {
                topics: vec![resource("GaTopic").unwrap()],
                ..Default::default()
            })),
            ..Default::default()
        })),
    };
    let opened = c.telemetry(signed(futures_util::stream::iter([settings.clone()]), Sig::None)).await.unwrap();
    let first = opened.into_inner().message().await.unwrap().expect("an answer");
    assert_eq!(code(&first.status), Code::Unauthorized);
    assert!(first.command.is_none(), "no settings for an unauthenticated stream");
    let signed_stream = signed(futures_util::stream::iter([settings]), Sig::With("grpcProducer", "producerSecret"));
    let first = c.telemetry(signed_stream).await.unwrap().into_inner().message().await.unwrap().expect("an answer");
    assert_eq!(code(&first.status), Code::Ok);
    b.stop().await;
}

#[tokio::test]
async fn permissions_decide_who_sends_receives_acks_forwards_and_ends() {
    let (b, _home, _store) = acl_broker(ACCOUNTS).await;
    let mut c = plain_client(&b).await;
    let consumer = Sig::With("grpcConsumer", "consumerSecret");
    let producer = Sig::With("grpcProducer", "producerSecret");
    assert_eq!(send(&mut c, consumer, b"no PUB").await, Code::Forbidden);
    assert_eq!(stored(&b).await, 0);
    assert_eq!(send(&mut c, producer, b"one").await, Code::Ok);
    assert_eq!(send(&mut c, producer, b"two").await, Code::Ok);
    // The producer has no SUB on the group or the topic; the consumer none on another group.
    let (st, msgs) = receive(&mut c, "GaGroup", producer).await;
    assert_eq!((st, msgs.len()), (Code::Forbidden, 0));
    let (st, msgs) = receive(&mut c, "GaOther", consumer).await;
    assert_eq!((st, msgs.len()), (Code::Forbidden, 0));
    let (st, msgs) = receive(&mut c, "GaGroup", consumer).await;
    assert_eq!((st, msgs.len()), (Code::Ok, 2));
    let handles: Vec<String> =
        msgs.iter().map(|m| m.system_properties.as_ref().unwrap().receipt_handle.clone().unwrap()).collect();
    // Forwarding to the DLQ is a consumer's act: the producer may not, and nothing is forwarded.
    let forward = ForwardMessageToDeadLetterQueueRequest {
        group: resource("GaGroup"),
        topic: resource("GaTopic"),
        receipt_handle: handles[0].clone(),
        message_id: "m".into(),
        delivery_attempt: 1,
        max_delivery_attempts: 1,
        ..Default::default()
    };
    let forwarded = c.forward_message_to_dead_letter_queue(signed(forward, producer)).await.unwrap().into_inner();
    assert_eq!(code(&forwarded.status), Code::Forbidden);
    b.inner.store.await_dispatched(std::time::Duration::from_secs(10)).await;
    assert_eq!(b.inner.store.max_offset_in_queue("%DLQ%GaGroup", 0), 0, "nothing forwarded");
    // Ending a transaction needs PUB on its topic: the consumer is refused before the id is
    // looked at; the producer gets as far as the (made-up) id.
    let end = |sig| {
        let req = EndTransactionRequest {
            topic: resource("GaTopic"),
            message_id: "m".into(),
            transaction_id: "not-a-transaction".into(),
            resolution: TransactionResolution::Commit as i32,
            source: TransactionSource::SourceClient as i32,
            trace_context: String::new(),
        };
        signed(req, sig)
    };
    assert_eq!(code(&c.end_transaction(end(consumer)).await.unwrap().into_inner().status), Code::Forbidden);
    assert_eq!(code(&c.end_transaction(end(producer)).await.unwrap().into_inner().status), Code::InvalidTransactionId);
    assert_eq!(ack(&mut c, "GaGroup", &handles, producer).await, Code::Forbidden);
    assert_eq!(ack(&mut c, "GaGroup", &handles, Sig::None).await, Code::Unauthorized);
    assert_eq!(ack(&mut c, "GaGroup", &handles, consumer).await, Code::Ok);
    // Other consumer RPCs check the group too.
    let assign = QueryAssignmentRequest { topic: resource("GaTopic"), group: resource("GaOther"), endpoints: None };
    let assign = c.query_assignment(signed(assign, consumer)).await.unwrap().into_inner();
    assert_eq!(code(&assign.status), Code::Forbidden);
    let change = ChangeInvisibleDurationRequest {
        group: resource("GaGroup"),
        topic: resource("GaTopic"),
        receipt_handle: handles[0].clone(),
        invisible_duration: Some(prost_types::Duration { seconds: 30, nanos: 0 }),
        message_id: "m".into(),
        ..Default::default()
    };
    let changed = c.change_invisible_duration(signed(change, producer)).await.unwrap().into_inner();
    assert_eq!(code(&changed.status), Code::Forbidden);
    b.stop().await;
}

#[tokio::test]
async fn white_addresses_need_no_signature() {
    // The account's whiteRemoteAddress: any signature (even a wrong one) from 127.0.0.1.
    let (b, _home, _store) = acl_broker(ACCOUNTS).await;
    let mut c = plain_client(&b).await;
    assert_eq!(send(&mut c, Sig::Forged("grpcWhite"), b"white account").await, Code::Ok);
    assert_eq!(stored(&b).await, 1);
    b.stop().await;
    // globalWhiteRemoteAddresses: no header at all.
    let (b, _home, _store) = acl_broker(&format!("globalWhiteRemoteAddresses: ['127.0.0.1']\n{ACCOUNTS}")).await;
    let mut c = plain_client(&b).await;
    assert_eq!(send(&mut c, Sig::None, b"global white").await, Code::Ok);
    let (st, msgs) = receive(&mut c, "GaAnyGroup", Sig::None).await;
    assert_eq!((st, msgs.len()), (Code::Ok, 1));
    b.stop().await;
}
