//! EndTransaction on the gRPC door: the transaction id SendMessage gave commits the half message
//! onto its topic or rolls it back; a forged id, another message's id or another topic ends
//! nothing (INVALID_TRANSACTION_ID). A transaction left open is asked about on its producer's
//! Telemetry stream (RecoverOrphanedTransactionCommand).

use std::time::Duration;

use ferrocket::grpc::pb::*;

use super::grpc::{code, grpc_broker, message, plain_client, prop, resource, send, stored, telemetry, topic, with_id};

fn half(topic: &str, id: &str) -> Message {
    let mut m = message(topic, id, format!("body of {id}").as_bytes());
    m.system_properties.as_mut().unwrap().message_type = MessageType::Transaction as i32;
    m
}

fn end(topic: &str, id: &str, txn: &str, resolution: TransactionResolution) -> EndTransactionRequest {
    EndTransactionRequest {
        topic: resource(topic),
        message_id: id.into(),
        transaction_id: txn.into(),
        resolution: resolution as i32,
        source: TransactionSource::SourceClient as i32,
        trace_context: String::new(),
    }
}

#[tokio::test]
async fn commit_shows_the_message_rollback_and_forgeries_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |_| {}).await;
    topic(&b, "GrpcTxnEnd", 1, Some("TRANSACTION"));
    topic(&b, "GrpcTxnOther", 1, Some("TRANSACTION"));
    let mut c = plain_client(&b).await;
    let mut txn = Vec::new();
    for id in ["commit-me", "roll-me-back"] {
        let r = send(&mut c, vec![half("GrpcTxnEnd", id)]).await;
        assert_eq!(code(&r.status), Code::Ok, "{r:?}");
        txn.push(r.entries[0].transaction_id.clone());
    }
    let ended = |r: tonic::Response<EndTransactionResponse>| code(&r.into_inner().status);
    // Forged or mismatched: nothing ends.
    for (t, id, tx) in [
        ("GrpcTxnEnd", "commit-me", "7FFFFFFFFFFFFFFF0000000000000000".to_owned()),
        ("GrpcTxnEnd", "commit-me", "00000000000000010000000000000000".to_owned()),
        ("GrpcTxnEnd", "commit-me", "not a transaction id".to_owned()),
        ("GrpcTxnEnd", "roll-me-back", txn[0].clone()),
        ("GrpcTxnOther", "commit-me", txn[0].clone()),
    ] {
        let r = c.end_transaction(with_id(end(t, id, &tx, TransactionResolution::Commit))).await.unwrap();
        assert_eq!(ended(r), Code::InvalidTransactionId, "{t} {id} {tx}");
    }
    b.inner.store.await_dispatched(Duration::from_secs(10)).await;
    assert_eq!(b.inner.store.max_offset_in_queue("GrpcTxnEnd", 0), 0, "nothing committed by a forgery");

    let r = c.end_transaction(with_id(end("GrpcTxnEnd", "commit-me", &txn[0], TransactionResolution::Commit))).await;
    assert_eq!(ended(r.unwrap()), Code::Ok);
    let r =
        c.end_transaction(with_id(end("GrpcTxnEnd", "roll-me-back", &txn[1], TransactionResolution::Rollback))).await;
    assert_eq!(ended(r.unwrap()), Code::Ok);
    let got = stored(&b, "GrpcTxnEnd", 0, 0).await.expect("the committed message");
    assert_eq!(got.body.as_ref(), b"body of commit-me");
    assert_eq!(prop(&got, "UNIQ_KEY"), Some("commit-me"));
    assert_eq!(b.inner.store.max_offset_in_queue("GrpcTxnEnd", 0), 1, "the rolled back one never shows");
    // Two op records: both halves are finished.
    assert_eq!(b.inner.store.max_offset_in_queue("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0), 2);
    // Without the client id header.
    let r = c.end_transaction(end("GrpcTxnEnd", "commit-me", &txn[0], TransactionResolution::Commit)).await;
    assert_eq!(ended(r.unwrap()), Code::ClientIdRequired);
    b.stop().await;
}

/// On a SYNC_MASTER with no slave, a commit is stored but not finished: EndTransaction says so,
/// no op record is written (the check service keeps the transaction), and the SDK's retry waits
/// for the message the first commit stored instead of storing it twice (as END_TRANSACTION).
#[tokio::test]
async fn a_commit_the_slaves_did_not_get_is_refused_and_a_retry_stores_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |c| {
        c.broker_role = "SYNC_MASTER".into();
        c.slave_timeout = 200;
    })
    .await;
    topic(&b, "GrpcTxnSync", 1, Some("TRANSACTION"));
    let mut c = plain_client(&b).await;
    let r = send(&mut c, vec![half("GrpcTxnSync", "on-no-slave")]).await;
    let txn = r.entries.first().map(|e| e.transaction_id.clone()).unwrap_or_default();
    assert!(!txn.is_empty(), "the half is stored and has its id: {r:?}");
    let commit = || end("GrpcTxnSync", "on-no-slave", &txn, TransactionResolution::Commit);
    let op = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
    for attempt in 0..2 {
        let r = c.end_transaction(with_id(commit())).await.unwrap().into_inner();
        assert_ne!(code(&r.status), Code::Ok, "attempt {attempt}: not on a slave, not finished");
        b.inner.store.await_dispatched(Duration::from_secs(10)).await;
        assert_eq!(b.inner.store.max_offset_in_queue("GrpcTxnSync", 0), 1, "attempt {attempt}: committed once");
        assert_eq!(b.inner.store.max_offset_in_queue(op, 0), 0, "attempt {attempt}: no op record");
    }
    b.stop().await;
}

/// A transaction its gRPC producer never ends: the check service asks that producer (in its
/// topic's producer group since its heartbeat) on its Telemetry stream (RecoverOrphanedTransactionCommand, with the message as sent and a
/// transaction id), and the producer's answer (EndTransaction, source SERVER_CHECK, that id)
/// commits it. A producer of another topic is not asked.
#[tokio::test]
async fn an_open_transaction_is_recovered_through_the_producers_telemetry_stream() {
    let dir = tempfile::tempdir().unwrap();
    let b = grpc_broker(dir.path(), |c| {
        c.transaction_time_out = 300;
        c.transaction_check_interval = 200;
    })
    .await;
    topic(&b, "GrpcTxnRecover", 1, Some("TRANSACTION"));
    topic(&b, "GrpcTxnBystander", 1, Some("TRANSACTION"));
    let mut c = plain_client(&b).await;
    let publishing = |topic: &str| Settings {
        client_type: Some(ClientType::Producer as i32),
        pub_sub: Some(settings::PubSub::Publishing(Publishing {
            topics: vec![resource(topic).unwrap()],
            ..Default::default()
        })),
        ..Default::default()
    };
    let (_keep, mut producer) = telemetry(&c, "it-txn-producer", publishing("GrpcTxnRecover")).await;
    let (_keep2, mut bystander) = telemetry(&c, "it-txn-bystander", publishing("GrpcTxnBystander")).await;
    for (answers, id) in [(&mut producer, "it-txn-producer"), (&mut bystander, "it-txn-bystander")] {
        let a = answers.message().await.unwrap().expect("settings answered");
        assert_eq!(code(&a.status), Code::Ok, "{a:?}");
        // The heartbeat puts the producer in its topic's producer group.
        let mut hb = tonic::Request::new(HeartbeatRequest { group: None, client_type: ClientType::Producer as i32 });
        hb.metadata_mut().insert("x-mq-client-id", id.parse().unwrap());
        assert_eq!(code(&c.heartbeat(hb).await.unwrap().into_inner().status), Code::Ok);
    }
    let r = send(&mut c, vec![half("GrpcTxnRecover", "left-open")]).await;
    assert_eq!(code(&r.status), Code::Ok, "{r:?}");
    let sent_txn = r.entries[0].transaction_id.clone();

    let asked = tokio::time::timeout(Duration::from_secs(20), producer.message()).await;
    let asked = asked.expect("the producer is asked within 20 s").unwrap().expect("a command");
    let Some(telemetry_command::Command::RecoverOrphanedTransactionCommand(cmd)) = asked.command else {
        panic!("{asked:?}")
    };
    let m = cmd.message.expect("the message");
    assert_eq!(m.topic.as_ref().map(|t| t.name.as_str()), Some("GrpcTxnRecover"));
    assert_eq!(m.body.as_ref(), b"body of left-open");
    let sys = m.system_properties.expect("system properties");
    assert_eq!(sys.message_id, "left-open");
    assert_eq!(sys.message_type, MessageType::Transaction as i32);
    assert_eq!(sys.receipt_handle, None, "a check carries no receipt");
    assert_ne!(cmd.transaction_id, sent_txn, "it names the copy the check stored");

    let mut answer = end("GrpcTxnRecover", "left-open", &cmd.transaction_id, TransactionResolution::Commit);
    answer.source = TransactionSource::SourceServerCheck as i32;
    let r = c.end_transaction(with_id(answer)).await.unwrap().into_inner();
    assert_eq!(code(&r.status), Code::Ok, "{r:?}");
    let got = stored(&b, "GrpcTxnRecover", 0, 0).await.expect("the committed message");
    assert_eq!(got.body.as_ref(), b"body of left-open");
    // The bystander was never asked: its stream has nothing.
    let nothing = tokio::time::timeout(Duration::from_millis(50), bystander.message()).await;
    assert!(nothing.is_err(), "the producer of another topic is not asked: {nothing:?}");
    b.stop().await;
}
