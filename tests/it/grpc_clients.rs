//! The gRPC door's clients in the broker's client tables, as Java's proxy registers them in local
//! mode: a heartbeat puts a producer in its topics' producer groups (topics the broker has) and a consumer in its group
//! (CLUSTERING, push = CONSUME_PASSIVELY, its subscriptions, its SDK's language), where
//! mqadmin's connection lists read them; the end of the Telemetry stream and
//! NotifyClientTermination take them out. A subscription to a name that is not a topic is
//! refused at the heartbeat.

use std::time::Duration;

use ferrocket::grpc::pb::*;

use super::grpc::{code, grpc_broker, plain_client, resource, telemetry, topic};
use super::support::eventually;

fn with(id: &str, language: &str, group: Option<&str>, client_type: ClientType) -> tonic::Request<HeartbeatRequest> {
    let mut r =
        tonic::Request::new(HeartbeatRequest { group: group.and_then(resource), client_type: client_type as i32 });
    r.metadata_mut().insert("x-mq-client-id", id.parse().unwrap());
    r.metadata_mut().insert("x-mq-language", language.parse().unwrap());
    r
}

fn consumer(group: &str, topic: &str, expression: &str) -> Settings {
    Settings {
        client_type: Some(ClientType::PushConsumer as i32),
        pub_sub: Some(settings::PubSub::Subscription(Subscription {
            group: resource(group),
            subscriptions: vec![SubscriptionEntry {
                topic: resource(topic),
                expression: Some(FilterExpression { r#type: FilterType::Tag as i32, expression: expression.into() }),
            }],
            ..Default::default()
        })),
        ..Default::default()
    }
}

#[tokio::test]
async fn heartbeats_put_grpc_clients_in_the_broker_groups_and_their_end_takes_them_out() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GrpcClientsT", 2, None);
    let mut c = plain_client(&b).await;
    let publishing = Settings {
        client_type: Some(ClientType::Producer as i32),
        pub_sub: Some(settings::PubSub::Publishing(Publishing {
            topics: vec![resource("GrpcClientsT").unwrap(), resource("GrpcClientsNoSuchTopic").unwrap()],
            ..Default::default()
        })),
        ..Default::default()
    };
    let (_p, mut p_answers) = telemetry(&c, "it-clients-p", publishing).await;
    let (c_tx, mut c_answers) =
        telemetry(&c, "it-clients-c", consumer("GrpcClientsG", "GrpcClientsT", "TagA||TagB")).await;
    let (_bad, mut bad_answers) = telemetry(&c, "it-clients-bad", consumer("GrpcClientsG", "no/topic", "*")).await;
    for answers in [&mut p_answers, &mut c_answers, &mut bad_answers] {
        assert_eq!(code(&answers.message().await.unwrap().expect("settings answered").status), Code::Ok);
    }
    // Before a heartbeat, nobody is in the tables.
    assert!(b.inner.producers.channels("GrpcClientsT").is_empty());
    let hb = c.heartbeat(with("it-clients-p", "JAVA", None, ClientType::Producer)).await.unwrap();
    assert_eq!(code(&hb.into_inner().status), Code::Ok);
    let hb = c.heartbeat(with("it-clients-c", "GOLANG", Some("GrpcClientsG"), ClientType::PushConsumer)).await;
    assert_eq!(code(&hb.unwrap().into_inner().status), Code::Ok);
    let hb = c.heartbeat(with("it-clients-bad", "JAVA", Some("GrpcClientsG"), ClientType::PushConsumer)).await;
    assert_eq!(code(&hb.unwrap().into_inner().status), Code::IllegalTopic, "a subscription to no topic");

    let producers = b.inner.producers.channels("GrpcClientsT");
    assert_eq!(producers.iter().map(|p| p.client_id.as_str()).collect::<Vec<_>>(), ["it-clients-p"]);
    assert_eq!(producers[0].language.name(), "JAVA");
    assert!(producers[0].link.remoting().is_none(), "a gRPC session, not a remoting connection");
    assert!(b.inner.producers.channels("GrpcClientsNoSuchTopic").is_empty(), "only topics the broker has");
    let group = b.inner.consumers.group("GrpcClientsG").expect("the consumer's group");
    assert_eq!(group.client_ids(), ["it-clients-c"], "the refused one is not in it");
    assert_eq!(group.consume_type, "CONSUME_PASSIVELY");
    assert_eq!(group.message_model, "CLUSTERING");
    assert_eq!(group.channels.values().next().unwrap().language.name(), "GO");
    let sub = &group.subscriptions["GrpcClientsT"];
    assert_eq!(sub.tags_set.iter().map(String::as_str).collect::<Vec<_>>(), ["TagA", "TagB"]);

    // The consumer's stream ends: it leaves its group.
    drop(c_tx);
    drop(c_answers);
    let left =
        eventually(Duration::from_secs(10), || async { b.inner.consumers.group("GrpcClientsG").is_none() }).await;
    assert!(left, "the consumer left its group when its Telemetry stream ended");
    // The producer says it terminates: it leaves its topic's group.
    let mut bye = tonic::Request::new(NotifyClientTerminationRequest { group: None });
    bye.metadata_mut().insert("x-mq-client-id", "it-clients-p".parse().unwrap());
    assert_eq!(code(&c.notify_client_termination(bye).await.unwrap().into_inner().status), Code::Ok);
    assert!(b.inner.producers.channels("GrpcClientsT").is_empty(), "the producer left");
    b.stop().await;
}

/// mqadmin's requests that go to a consumer reach a gRPC one on its Telemetry stream, as with
/// Java's proxy: `consumerStatus` with jstack (GET_CONSUMER_RUNNING_INFO) is a
/// PrintThreadStackTraceCommand, `consumeMessage` (CONSUME_MESSAGE_DIRECTLY) a
/// VerifyMessageCommand carrying the message; each answer counts only under its nonce.
#[tokio::test]
async fn mqadmin_reaches_a_grpc_consumer_for_its_thread_stacks_and_a_direct_consume() {
    use ferrocket::protocol::{RequestCode, ResponseCode};
    use telemetry_command::Command;

    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GrpcAdminT", 1, None);
    let mut c = plain_client(&b).await;
    let r = super::grpc::send(&mut c, vec![super::grpc::message("GrpcAdminT", "direct-1", b"consume me")]).await;
    assert_eq!(code(&r.status), Code::Ok);
    let m = super::grpc::stored(&b, "GrpcAdminT", 0, 0).await.expect("stored");
    let (m_host, m_offset) = (m.store_host, m.commit_log_offset);
    let msg_id = ferrocket::model::message::offset_msg_id(m_host, m_offset);
    let (tx, mut answers) = telemetry(&c, "it-admin-c", consumer("GrpcAdminG", "GrpcAdminT", "*")).await;
    assert_eq!(code(&answers.message().await.unwrap().unwrap().status), Code::Ok);
    let hb = c.heartbeat(with("it-admin-c", "JAVA", Some("GrpcAdminG"), ClientType::PushConsumer)).await;
    assert_eq!(code(&hb.unwrap().into_inner().status), Code::Ok);
    let admin = std::sync::Arc::new(super::support::client());
    let ask = |code: RequestCode, extra: (&'static str, String)| {
        let mut r = super::support::request(code, &[("consumerGroup", "GrpcAdminG"), ("clientId", "it-admin-c")]);
        r.ext_fields.insert(extra.0.into(), extra.1);
        let (admin, addr) = (admin.clone(), b.addr.clone());
        tokio::spawn(async move { super::broker_harness::call_addr(&admin, &addr, r).await })
    };
    let answer = |status: Code, command: Command| TelemetryCommand {
        status: Some(Status { code: status as i32, message: String::new() }),
        command: Some(command),
    };

    // consumerStatus -s: the thread stacks.
    let running = ask(RequestCode::GET_CONSUMER_RUNNING_INFO, ("jstackEnable", "true".into()));
    let asked = answers.message().await.unwrap().expect("a command");
    let Some(Command::PrintThreadStackTraceCommand(p)) = asked.command else { panic!("{asked:?}") };
    let forged = ThreadStackTrace { nonce: "not-the-nonce".into(), thread_stack_trace: Some("forged".into()) };
    tx.send(answer(Code::Ok, Command::ThreadStackTrace(forged))).await.unwrap();
    let real = ThreadStackTrace { nonce: p.nonce, thread_stack_trace: Some("\"main\" RUNNABLE".into()) };
    tx.send(answer(Code::Ok, Command::ThreadStackTrace(real))).await.unwrap();
    let r = running.await.unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let info: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(info["jstack"], "\"main\" RUNNABLE", "the answer under the nonce, not the forged one");

    // consumeMessage: the message, and the client's verdict.
    let direct = ask(RequestCode::CONSUME_MESSAGE_DIRECTLY, ("msgId", msg_id));
    let asked = answers.message().await.unwrap().expect("a command");
    let Some(Command::VerifyMessageCommand(v)) = asked.command else { panic!("{asked:?}") };
    let m = v.message.expect("the message");
    assert_eq!((m.topic.unwrap().name.as_str(), m.body.as_ref()), ("GrpcAdminT", &b"consume me"[..]));
    assert_eq!(m.system_properties.unwrap().message_id, "direct-1");
    let verdict = VerifyMessageResult { nonce: v.nonce };
    tx.send(answer(Code::FailedToConsumeMessage, Command::VerifyMessageResult(verdict))).await.unwrap();
    let r = direct.await.unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let result: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(result["consumeResult"], "CR_LATER");
    // A message id that names nothing, and one inside the record (its bytes would be read as a
    // made-up size): refused, nothing sent to the client.
    let missing = ask(RequestCode::CONSUME_MESSAGE_DIRECTLY, ("msgId", "7F00000100002A9F00000000FFFFFFFF".into()));
    assert_eq!(missing.await.unwrap().response_code(), ResponseCode::SYSTEM_ERROR);
    let inside = ferrocket::model::message::offset_msg_id(m_host, m_offset + 8);
    let inside = ask(RequestCode::CONSUME_MESSAGE_DIRECTLY, ("msgId", inside));
    assert_eq!(inside.await.unwrap().response_code(), ResponseCode::SYSTEM_ERROR);
    let nothing = tokio::time::timeout(Duration::from_millis(100), answers.message()).await;
    assert!(nothing.is_err(), "no command for a refused id: {nothing:?}");
    b.stop().await;
}
