//! END_TRANSACTION over the wire: the checks Java makes before a commit or rollback, what each
//! writes, and the answer a slave gives.

use ferrocket::model::message::properties_to_string;
use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{call_addr, send, start_broker, wait_max_offset};
use super::support::*;

pub(super) const HALF: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub(super) const OP: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";

pub(super) fn half(topic: &str) -> RemotingCommand {
    let mut tx = send(topic, 1, b"tx body", "TagT");
    tx.ext_fields
        .insert("i".into(), properties_to_string([("TRAN_MSG", "true"), ("PGROUP", "PG"), ("UNIQ_KEY", "U1")]));
    // Born now: a half message born longer ago than fileReservedTime is given up unchecked.
    tx.ext_fields.insert("g".into(), ferrocket::store::now_ms().to_string());
    tx
}

pub(super) fn end(group: &str, table_offset: i64, commit_log_offset: i64, kind: i32) -> RemotingCommand {
    request(
        RequestCode::END_TRANSACTION,
        &[
            ("producerGroup", group),
            ("tranStateTableOffset", &table_offset.to_string()),
            ("commitLogOffset", &commit_log_offset.to_string()),
            ("commitOrRollback", &kind.to_string()),
            ("msgId", "U1"),
        ],
    )
}

/// The CommitLog offset in an offset message id (the last 16 hex digits).
pub(super) fn physical_offset(msg_id: &str) -> i64 {
    i64::from_str_radix(&msg_id[msg_id.len() - 16..], 16).unwrap()
}

pub(super) async fn max_offset(c: &Client, addr: &str, topic: &str, queue: i32) -> String {
    let r =
        call_addr(c, addr, request(RequestCode::GET_MAX_OFFSET, &[("topic", topic), ("queueId", &queue.to_string())]))
            .await;
    r.ext_fields.get("offset").cloned().unwrap_or_default()
}

#[tokio::test]
async fn end_transaction_checks_then_commits_or_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let first = call_addr(&c, &b.addr, half("TXE")).await;
    assert_eq!(first.response_code(), ResponseCode::SUCCESS, "{:?}", first.remark);
    let second = call_addr(&c, &b.addr, half("TXE")).await;
    let (q1, p1) =
        (first.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&first.ext_fields["msgId"]));
    let (q2, p2) =
        (second.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&second.ext_fields["msgId"]));
    assert_eq!((q1, q2), (0, 1), "queue offsets of the half queue");
    assert_eq!(first.ext_fields["transactionId"], "U1");
    wait_max_offset(&c, &b.addr, HALF, 0, 2).await;

    // What Java checks, in its order, each refused with its remark and nothing written.
    for (req, remark) in [
        (end("PG", q1, p1 + 1, 8), "Find prepared transaction message failed"),
        (end("OTHER", q1, p1, 8), "The producer group wrong"),
        (end("PG", q2, p1, 8), "The transaction state table offset wrong"),
    ] {
        let r = call_addr(&c, &b.addr, req).await;
        assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);
        assert_eq!(r.remark.as_deref(), Some(remark));
    }
    let r = call_addr(&c, &b.addr, end("PG", q1, p1, 5)).await;
    assert_ne!(r.response_code(), ResponseCode::SUCCESS, "commitOrRollback 5 is not a type");
    assert_eq!(max_offset(&c, &b.addr, "TXE", 1).await, "0");
    assert_eq!(max_offset(&c, &b.addr, OP, 0).await, "0");

    // Commit: the message on its real queue, one op record.
    let r = call_addr(&c, &b.addr, end("PG", q1, p1, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "TXE", 1, 1).await;
    wait_max_offset(&c, &b.addr, OP, 0, 1).await;
    // Rollback: an op record only.
    let r = call_addr(&c, &b.addr, end("PG", q2, p2, 12)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, OP, 0, 2).await;
    assert_eq!(max_offset(&c, &b.addr, "TXE", 1).await, "1");
    b.stop().await;
}

#[tokio::test]
async fn a_transaction_nobody_answers_is_given_up_after_transaction_check_max_checks() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.transaction_check_interval = 100;
        c.transaction_time_out = 0;
        c.transaction_check_max = 2;
    })
    .await;
    let c = client();
    let r = call_addr(&c, &b.addr, half("TXG")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    // No producer is online: each check puts the half message again (checks 1 and 2), the third
    // round gives it up onto TRANS_CHECK_MAX_TIME_TOPIC, created for it with one queue.
    wait_max_offset(&c, &b.addr, "TRANS_CHECK_MAX_TIME_TOPIC", 0, 1).await;
    assert_eq!(max_offset(&c, &b.addr, HALF, 0).await, "3", "the original and two checked copies");
    assert_eq!(max_offset(&c, &b.addr, "TXG", 1).await, "0", "never delivered");
    let all = call_addr(&c, &b.addr, request(RequestCode::GET_ALL_TOPIC_CONFIG, &[])).await;
    let table: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
    assert_eq!(table["topicConfigTable"]["TRANS_CHECK_MAX_TIME_TOPIC"]["readQueueNums"], 1);
    b.stop().await;
}

#[tokio::test]
async fn a_late_first_hand_answer_past_the_immunity_time_is_an_illegal_operation() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let mut tx = half("TXI");
    tx.ext_fields.insert(
        "i".into(),
        properties_to_string([("TRAN_MSG", "true"), ("PGROUP", "PG"), ("CHECK_IMMUNITY_TIME_IN_SECONDS", "7")]),
    );
    // Born at 1 ms after the epoch: long past max(7 s, transactionTimeOut).
    tx.ext_fields.insert("g".into(), "1".into());
    let r = call_addr(&c, &b.addr, tx).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let (q, p) = (r.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&r.ext_fields["msgId"]));
    let r = call_addr(&c, &b.addr, end("PG", q, p, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::ILLEGAL_OPERATION);
    // Answering a check is still accepted.
    let mut from_check = end("PG", q, p, 8);
    from_check.ext_fields.insert("fromTransactionCheck".into(), "true".into());
    let r = call_addr(&c, &b.addr, from_check).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "TXI", 1, 1).await;
    b.stop().await;
}

/// Two answers to checks of one transaction store its message once. A producer answers every
/// check it is sent; each check names its own copy of the half message (same producer group,
/// UNIQ_KEY, born host and time), and each answer stored the message on its real topic, as in
/// Java. Here the second commit only marks its copy finished, and a contradicting rollback is
/// refused.
#[tokio::test]
async fn two_answers_to_checks_of_one_transaction_commit_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    // Two copies of one transaction, as the check service's re-puts are.
    let h = half("TXD");
    let mut copies = Vec::new();
    for _ in 0..2 {
        let r = call_addr(&c, &b.addr, h.clone()).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        copies.push((r.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&r.ext_fields["msgId"])));
    }
    let answer = |(q, p): (i64, i64), kind: i32| {
        let mut e = end("PG", q, p, kind);
        e.ext_fields.insert("fromTransactionCheck".into(), "true".into());
        e
    };
    let (r1, r2) =
        tokio::join!(call_addr(&c, &b.addr, answer(copies[0], 8)), call_addr(&c, &b.addr, answer(copies[1], 8)));
    assert_eq!((r1.response_code(), r2.response_code()), (ResponseCode::SUCCESS, ResponseCode::SUCCESS));
    // A repeated answer for the same copy changes nothing either.
    let r = call_addr(&c, &b.addr, answer(copies[0], 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let r = call_addr(&c, &b.addr, answer(copies[1], 12)).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR, "a rollback after the commit: {:?}", r.remark);
    assert!(r.remark.as_deref().unwrap_or("").contains("already committed"), "{:?}", r.remark);
    // Every answer wrote an op record (each copy is finished), after any message it stored.
    wait_max_offset(&c, &b.addr, OP, 0, 4).await;
    assert_eq!(max_offset(&c, &b.addr, "TXD", 1).await, "1", "the transaction's message, stored once");
    b.stop().await;
}
