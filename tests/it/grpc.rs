//! The gRPC door (`grpcListenPort`, apache.rocketmq.v2.MessagingService) driven by the client
//! tonic generates from the same protos: the client id header, Telemetry settings, QueryRoute,
//! SendMessage's checks, FIFO queue selection (Guava's consistentHash, as the Java proxy),
//! delayed and transactional sends, all read back from the store.

use std::time::Duration;

use ferrocket::grpc::pb::messaging_service_client::MessagingServiceClient;
use ferrocket::grpc::pb::*;
use ferrocket::model::TopicConfig;
use tonic::transport::Channel;

use super::broker_harness::{start_broker, TestBroker, GRPC_ANY_PORT};
use super::support::eventually;

pub const CLIENT_ID: &str = "it-grpc-client";

pub async fn grpc_broker(
    dir: &std::path::Path,
    tweak: impl FnOnce(&mut ferrocket::broker::BrokerConfig),
) -> TestBroker {
    start_broker(dir, |c| {
        c.grpc_listen_port = GRPC_ANY_PORT;
        tweak(c);
    })
    .await
}

/// A topic of `queues` queues typed by `message.type` (none: untyped).
pub fn topic(b: &TestBroker, name: &str, queues: i32, message_type: Option<&str>) {
    let mut tc = TopicConfig {
        topic_name: name.into(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        ..TopicConfig::default()
    };
    if let Some(t) = message_type {
        tc.attributes.insert(ferrocket::grpc::MESSAGE_TYPE_ATTRIBUTE.into(), t.into());
    }
    b.inner.topics.update(tc);
}

pub async fn plain_client(b: &TestBroker) -> MessagingServiceClient<Channel> {
    let port = b.grpc_port.expect("a gRPC listener");
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}")).unwrap().connect().await;
    MessagingServiceClient::new(channel.expect("gRPC connect"))
}

/// `msg` with the client id header.
pub fn with_id<T>(msg: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("x-mq-client-id", CLIENT_ID.parse().unwrap());
    r
}

pub fn resource(name: &str) -> Option<Resource> {
    Some(Resource { resource_namespace: String::new(), name: name.into() })
}

pub fn message(topic: &str, id: &str, body: &[u8]) -> Message {
    Message {
        topic: resource(topic),
        user_properties: Default::default(),
        system_properties: Some(SystemProperties {
            message_id: id.into(),
            message_type: MessageType::Normal as i32,
            tag: Some("TagA".into()),
            keys: vec!["k1".into(), "k2".into()],
            ..Default::default()
        }),
        body: bytes::Bytes::copy_from_slice(body),
    }
}

pub async fn send(c: &mut MessagingServiceClient<Channel>, msgs: Vec<Message>) -> SendMessageResponse {
    c.send_message(with_id(SendMessageRequest { messages: msgs })).await.expect("no gRPC error").into_inner()
}

/// Opens a Telemetry stream as `client_id` and sends `settings` on it: the sender (the stream
/// ends when it is dropped) and the server's side of the stream.
pub async fn telemetry(
    c: &MessagingServiceClient<Channel>,
    client_id: &str,
    settings: Settings,
) -> (tokio::sync::mpsc::Sender<TelemetryCommand>, tonic::Streaming<TelemetryCommand>) {
    let (tx, rx) = tokio::sync::mpsc::channel::<TelemetryCommand>(4);
    let inbound = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut req = tonic::Request::new(inbound);
    req.metadata_mut().insert("x-mq-client-id", client_id.parse().unwrap());
    let answers = c.clone().telemetry(req).await.expect("telemetry opens").into_inner();
    tx.send(TelemetryCommand { status: None, command: Some(telemetry_command::Command::Settings(settings)) })
        .await
        .unwrap();
    (tx, answers)
}

pub fn code(s: &Option<Status>) -> Code {
    Code::try_from(s.as_ref().map_or(0, |s| s.code)).unwrap_or(Code::Unspecified)
}

/// The properties of the message at `offset` of queue `queue` of `topic`, once dispatched.
pub async fn stored(
    b: &TestBroker,
    topic: &str,
    queue: i32,
    offset: i64,
) -> Option<ferrocket::model::message::StoredMessage> {
    b.inner.store.await_dispatched(Duration::from_secs(10)).await;
    let r = b.inner.store.get_message(topic, queue, offset, 1, 1 << 20, &ferrocket::store::AcceptAll);
    r.messages.first().and_then(|m| ferrocket::store::commit_log::record::decode(m, true))
}

pub fn prop<'a>(m: &'a ferrocket::model::message::StoredMessage, k: &str) -> Option<&'a str> {
    ferrocket::model::message::property_value(&m.properties, k)
}

#[tokio::test]
async fn every_rpc_needs_the_client_id() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GrpcIdTopic", 4, None);
    let mut c = plain_client(&b).await;
    let route = c.query_route(QueryRouteRequest { topic: resource("GrpcIdTopic"), endpoints: None }).await.unwrap();
    assert_eq!(code(&route.get_ref().status), Code::ClientIdRequired);
    assert!(route.get_ref().message_queues.is_empty());
    let sent =
        c.send_message(SendMessageRequest { messages: vec![message("GrpcIdTopic", "id0", b"x")] }).await.unwrap();
    assert_eq!(code(&sent.get_ref().status), Code::ClientIdRequired);
    assert_eq!(b.inner.store.max_offset_in_queue("GrpcIdTopic", 0), 0);
    let hb = c.heartbeat(HeartbeatRequest { group: None, client_type: ClientType::Producer as i32 }).await.unwrap();
    assert_eq!(code(&hb.get_ref().status), Code::ClientIdRequired);
    b.stop().await;
}

#[tokio::test]
async fn telemetry_answers_settings_merged_and_refuses_what_java_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |c| c.max_message_size = 1000).await;
    topic(&b, "GrpcTelemetry", 4, None);
    let mut c = plain_client(&b).await;
    // A heartbeat before any Settings: the client is not known.
    let hb = c.heartbeat(with_id(HeartbeatRequest { group: None, client_type: ClientType::Producer as i32 })).await;
    assert_eq!(code(&hb.unwrap().get_ref().status), Code::UnrecognizedClientType);

    let (tx, rx) = tokio::sync::mpsc::channel::<TelemetryCommand>(4);
    let inbound = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut answers = c.telemetry(with_id(inbound)).await.expect("telemetry opens").into_inner();
    // A command before Settings.
    let early = TelemetryCommand {
        status: None,
        command: Some(telemetry_command::Command::ThreadStackTrace(ThreadStackTrace::default())),
    };
    tx.send(early).await.unwrap();
    let a = answers.message().await.unwrap().expect("an answer");
    assert_eq!(code(&a.status), Code::UnrecognizedClientType);
    let publishing = Settings {
        client_type: Some(ClientType::Producer as i32),
        pub_sub: Some(settings::PubSub::Publishing(Publishing {
            topics: vec![Resource { resource_namespace: String::new(), name: "GrpcTelemetry".into() }],
            ..Default::default()
        })),
        ..Default::default()
    };
    tx.send(TelemetryCommand { status: None, command: Some(telemetry_command::Command::Settings(publishing)) })
        .await
        .unwrap();
    let a = answers.message().await.unwrap().expect("settings answered");
    assert_eq!(code(&a.status), Code::Ok);
    let Some(telemetry_command::Command::Settings(s)) = a.command else { panic!("{a:?}") };
    assert_eq!(s.backoff_policy.as_ref().map(|p| p.max_attempts), Some(3));
    let Some(settings::PubSub::Publishing(p)) = s.pub_sub else { panic!("{s:?}") };
    assert_eq!(p.max_body_size, 1000);
    let hb = c.heartbeat(with_id(HeartbeatRequest { group: None, client_type: ClientType::Producer as i32 })).await;
    assert_eq!(code(&hb.unwrap().get_ref().status), Code::Ok);

    // Settings without publishing or subscription: a gRPC error, as Java.
    let (tx2, rx2) = tokio::sync::mpsc::channel::<TelemetryCommand>(4);
    let inbound = futures_util::stream::unfold(rx2, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut answers2 = c.telemetry(with_id(inbound)).await.unwrap().into_inner();
    tx2.send(TelemetryCommand {
        status: None,
        command: Some(telemetry_command::Command::Settings(Settings::default())),
    })
    .await
    .unwrap();
    let err = answers2.message().await.expect_err("INVALID_ARGUMENT");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    drop((tx, tx2));
    b.stop().await;
}

#[tokio::test]
async fn bad_sends_are_refused_in_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |c| c.max_message_size = 1024).await;
    topic(&b, "GrpcBad", 2, None);
    let mut c = plain_client(&b).await;
    let cases: Vec<(Message, Code)> = vec![
        (message("bad topic!", "a", b"x"), Code::IllegalTopic),
        (message("rmq_sys_wheel_timer", "a", b"x"), Code::IllegalTopic),
        (message("NoSuchTopicHere", "a", b"x"), Code::TopicNotFound),
        (message("GrpcBad", "a", &[7; 1025]), Code::MessageBodyTooLarge),
        (message("GrpcBad", "a", b""), Code::MessageBodyEmpty),
        (message("GrpcBad", "", b"x"), Code::IllegalMessageId),
        (
            {
                let mut m = message("GrpcBad", "a", b"x");
                m.user_properties.insert("UNIQ_KEY".into(), "forged".into());
                m
            },
            Code::IllegalMessagePropertyKey,
        ),
        (
            {
                let mut m = message("GrpcBad", "a", b"x");
                m.system_properties.as_mut().unwrap().tag = Some("a|b".into());
                m
            },
            Code::IllegalMessageTag,
        ),
        (
            {
                // A FIFO message to a NORMAL (untyped) topic, as the Java proxy's type check.
                let mut m = message("GrpcBad", "a", b"x");
                m.system_properties.as_mut().unwrap().message_group = Some("g".into());
                m
            },
            Code::MessagePropertyConflictWithType,
        ),
        (
            {
                let mut m = message("GrpcBad", "a", b"x");
                for i in 0..129 {
                    m.user_properties.insert(format!("k{i}"), "v".into());
                }
                m
            },
            Code::MessagePropertiesTooLarge,
        ),
    ];
    for (m, want) in cases {
        let r = send(&mut c, vec![m.clone()]).await;
        assert_eq!(code(&r.status), want, "{m:?}");
        assert!(r.entries.is_empty());
    }
    let r = send(&mut c, vec![]).await;
    assert_eq!(code(&r.status), Code::MessageCorrupted);
    for q in 0..2 {
        assert_eq!(b.inner.store.max_offset_in_queue("GrpcBad", q), 0, "nothing stored");
    }
    b.stop().await;
}

#[tokio::test]
async fn route_and_fifo_sends_land_where_the_java_proxy_puts_them() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GrpcFifo", 8, Some("FIFO"));
    let mut c = plain_client(&b).await;
    let route = c
        .query_route(with_id(QueryRouteRequest { topic: resource("GrpcFifo"), endpoints: None }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&route.status), Code::Ok);
    assert_eq!(route.message_queues.len(), 8);
    let q = &route.message_queues[3];
    assert_eq!((q.id, q.permission), (3, Permission::ReadWrite as i32));
    assert_eq!(q.accept_message_types, vec![MessageType::Fifo as i32]);
    let broker = q.broker.as_ref().unwrap();
    let addr = &broker.endpoints.as_ref().unwrap().addresses[0];
    assert_eq!((addr.host.as_str(), addr.port), ("127.0.0.1", i32::from(b.grpc_port.unwrap())));

    // Guava: consistentHash("FIFO_GROUP_7".hashCode(), 8) = 4, ("order-1", 8) = 3.
    for (i, (group, queue)) in [("FIFO_GROUP_7", 4), ("order-1", 3), ("FIFO_GROUP_7", 4)].into_iter().enumerate() {
        let mut m = message("GrpcFifo", &format!("fifo-{i}"), format!("body-{i}").as_bytes());
        let sys = m.system_properties.as_mut().unwrap();
        sys.message_type = MessageType::Fifo as i32;
        sys.message_group = Some(group.into());
        let r = send(&mut c, vec![m]).await;
        assert_eq!(code(&r.status), Code::Ok, "{r:?}");
        assert_eq!(r.entries[0].message_id, format!("fifo-{i}"));
        let at = r.entries[0].offset;
        let got = stored(&b, "GrpcFifo", queue, at).await.expect("stored on the group's queue");
        assert_eq!(prop(&got, "__SHARDINGKEY"), Some(group));
        assert_eq!(prop(&got, "UNIQ_KEY"), Some(format!("fifo-{i}").as_str()));
        assert_eq!(prop(&got, "TAGS"), Some("TagA"));
        assert_eq!(prop(&got, "KEYS"), Some("k1 k2"));
        assert_eq!(got.body.as_ref(), format!("body-{i}").as_bytes());
    }
    assert_eq!(b.inner.store.max_offset_in_queue("GrpcFifo", 4), 2);
    assert_eq!(b.inner.store.max_offset_in_queue("GrpcFifo", 3), 1);
    b.stop().await;
}

#[tokio::test]
async fn delayed_and_transactional_sends_wait_where_the_broker_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GrpcDelay", 1, Some("DELAY"));
    topic(&b, "GrpcTxn", 1, Some("TRANSACTION"));
    let mut c = plain_client(&b).await;
    let due = ferrocket::store::now_ms() + 2000;
    let mut m = message("GrpcDelay", "delayed-1", b"later");
    let sys = m.system_properties.as_mut().unwrap();
    sys.message_type = MessageType::Delay as i32;
    sys.delivery_timestamp =
        Some(prost_types::Timestamp { seconds: due / 1000, nanos: ((due % 1000) * 1_000_000) as i32 });
    let r = send(&mut c, vec![m]).await;
    assert_eq!(code(&r.status), Code::Ok, "{r:?}");
    b.inner.store.await_dispatched(Duration::from_secs(10)).await;
    assert_eq!(b.inner.store.max_offset_in_queue("GrpcDelay", 0), 0, "not visible before its time");
    assert!(
        eventually(Duration::from_secs(15), || async { b.inner.store.max_offset_in_queue("GrpcDelay", 0) == 1 }).await,
        "delivered by the timer"
    );
    let got = stored(&b, "GrpcDelay", 0, 0).await.unwrap();
    assert!(ferrocket::store::now_ms() >= due - 1000, "not delivered before its time (timer precision 1 s)");
    assert_eq!(got.body.as_ref(), b"later");

    let mut m = message("GrpcTxn", "txn-1", b"half");
    m.system_properties.as_mut().unwrap().message_type = MessageType::Transaction as i32;
    let r = send(&mut c, vec![m]).await;
    assert_eq!(code(&r.status), Code::Ok, "{r:?}");
    assert!(!r.entries[0].transaction_id.is_empty());
    b.inner.store.await_dispatched(Duration::from_secs(10)).await;
    assert_eq!(b.inner.store.max_offset_in_queue("GrpcTxn", 0), 0, "a half message is invisible");
    let half = stored(&b, "RMQ_SYS_TRANS_HALF_TOPIC", 0, r.entries[0].offset).await.expect("the half message");
    assert_eq!(prop(&half, "REAL_TOPIC"), Some("GrpcTxn"));
    assert_eq!(prop(&half, "PGROUP"), Some("GrpcTxn"));
    b.stop().await;
}

/// `ferrocket admin update-topic -a message.type=DELAY` (UPDATE_AND_CREATE_TOPIC with
/// mqadmin's `attributes` header) types the topic QueryRoute reports.
#[tokio::test]
async fn admin_update_topic_sets_the_message_type() {
    use ferrocket::tools::admin_cmd::{run, AdminCommand};
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    let ns = b.ns.as_ref().unwrap().addr.to_string();
    let update = || AdminCommand::UpdateTopic {
        topic: "GrpcTyped".into(),
        cluster: Some(b.inner.config.broker_cluster_name.clone()),
        broker: None,
        read_queues: 2,
        write_queues: 2,
        perm: 6,
        attributes: vec!["+message.type=DELAY".into()],
    };
    // Until the broker's first registration has reached the NameServer.
    let done =
        eventually(Duration::from_secs(10), || async { run(&ns, update()).await.is_ok_and(|o| o.contains("OK")) });
    assert!(done.await, "update-topic -a +message.type=DELAY");
    let mut c = plain_client(&b).await;
    let route = c
        .query_route(with_id(QueryRouteRequest { topic: resource("GrpcTyped"), endpoints: None }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(code(&route.status), Code::Ok);
    assert_eq!(route.message_queues.len(), 2);
    assert!(route.message_queues.iter().all(|q| q.accept_message_types == vec![MessageType::Delay as i32]));
    b.stop().await;
}

/// `grpcClientConsumerMin|MaxLongPollingTimeoutMillis`: the maximum is what a consumer's Settings
/// say, and no receive is held longer, whatever it asks.
#[tokio::test]
async fn the_long_polling_bounds_are_the_proxys_keys() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |c| {
        c.grpc_client_consumer_min_long_polling_timeout_millis = 1_000;
        c.grpc_client_consumer_max_long_polling_timeout_millis = 2_000;
    })
    .await;
    topic(&b, "GrpcPollBounds", 1, None);
    let mut c = plain_client(&b).await;
    let subscribing = Settings {
        client_type: Some(ClientType::SimpleConsumer as i32),
        pub_sub: Some(settings::PubSub::Subscription(Subscription {
            group: resource("GrpcPollBoundsG"),
            ..Default::default()
        })),
        ..Default::default()
    };
    let (_tx, mut answers) = telemetry(&c, CLIENT_ID, subscribing).await;
    let a = answers.message().await.unwrap().expect("settings answered");
    let Some(telemetry_command::Command::Settings(s)) = a.command else { panic!("{a:?}") };
    let Some(settings::PubSub::Subscription(sub)) = s.pub_sub else { panic!("{s:?}") };
    assert_eq!(sub.long_polling_timeout, Some(prost_types::Duration { seconds: 2, nanos: 0 }));

    let req = ReceiveMessageRequest {
        group: resource("GrpcPollBoundsG"),
        message_queue: Some(MessageQueue { topic: resource("GrpcPollBounds"), id: -1, ..Default::default() }),
        filter_expression: Some(FilterExpression { r#type: FilterType::Tag as i32, expression: "*".into() }),
        batch_size: 1,
        invisible_duration: Some(prost_types::Duration { seconds: 30, nanos: 0 }),
        long_polling_timeout: Some(prost_types::Duration { seconds: 20, nanos: 0 }),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let mut stream = c.receive_message(with_id(req)).await.expect("no gRPC error").into_inner();
    let first = stream.message().await.unwrap().and_then(|r| r.content);
    let Some(receive_message_response::Content::Status(st)) = first else { panic!("{first:?}") };
    assert_eq!(code(&Some(st)), Code::MessageNotFound);
    // Held its 2 s (the configured maximum), not the 20 s it asked for.
    let held = started.elapsed();
    assert!(held >= Duration::from_millis(1_900) && held < Duration::from_secs(15), "held {held:?}");
    b.stop().await;
}
