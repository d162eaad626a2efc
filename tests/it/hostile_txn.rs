//! Transactions against hostile or unlucky conditions (issue #25): a commit the slaves did not
//! get is not acknowledged (nor stored twice when committed again), and one producer's long
//! check immunity does not hold up the checks of everybody else's transactions.

use std::sync::Arc;
use std::time::Duration;

use ferrocket::model::message::properties_to_string;
use ferrocket::protocol::{FrameLimits, RemotingCommand, RequestCode, ResponseCode};
use ferrocket::remoting::{Connection, RemotingClient, RequestHandler};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::broker::{call_addr, send, start_broker, start_broker_on, wait_max_offset};
use super::support::*;
use super::transactions::{end, half, max_offset, physical_offset, HALF, OP};

/// SYNC_MASTER without a slave: the committed message is stored but on no slave. The answer
/// says so, and no op record marks the transaction finished: the half message stays for the
/// check service, which asks the producer again (Java answers SUCCESS and deletes it). A
/// second commit of the same transaction does not store it twice.
#[tokio::test]
async fn a_commit_the_slaves_did_not_get_is_answered_as_such_and_left_to_the_check_service() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.broker_role = "SYNC_MASTER".into();
        c.transaction_check_interval = 100;
        c.transaction_time_out = 0;
    })
    .await;
    let c = client();
    let r = call_addr(&c, &b.addr, half("TXS")).await;
    assert_eq!(r.response_code(), ResponseCode::SLAVE_NOT_AVAILABLE, "stored, on no slave: {:?}", r.remark);
    let (q, p) = (r.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&r.ext_fields["msgId"]));

    let r = call_addr(&c, &b.addr, end("PG", q, p, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SLAVE_NOT_AVAILABLE, "{:?}", r.remark);
    assert_eq!(max_offset(&c, &b.addr, OP, 0).await, "0", "no op record: the transaction is not finished");
    assert_eq!(max_offset(&c, &b.addr, "TXS", 1).await, "1", "the committed message is stored");
    // The producer commits again (as when it answers a check): the message stored by the
    // first commit is waited for again, not stored twice.
    let mut again = end("PG", q, p, 8);
    again.ext_fields.insert("fromTransactionCheck".into(), "true".into());
    let r = call_addr(&c, &b.addr, again).await;
    assert_eq!(r.response_code(), ResponseCode::SLAVE_NOT_AVAILABLE, "{:?}", r.remark);
    assert_eq!(max_offset(&c, &b.addr, "TXS", 1).await, "1", "committed once");
    assert_eq!(max_offset(&c, &b.addr, OP, 0).await, "0");
    // The check service takes the half message up: it puts it again for its check.
    let rechecked = eventually(Duration::from_secs(10), || async {
        max_offset(&c, &b.addr, HALF, 0).await.parse::<i64>().unwrap() >= 2
    })
    .await;
    assert!(rechecked, "the half message was never checked");
    b.stop().await;
}

/// Records the CHECK_TRANSACTION_STATE requests a producer connection receives.
struct Checks(mpsc::UnboundedSender<RemotingCommand>);

impl RequestHandler for Checks {
    async fn handle(&self, _conn: &Arc<Connection>, req: RemotingCommand) -> Option<RemotingCommand> {
        if req.request_code() == RequestCode::CHECK_TRANSACTION_STATE {
            let _ = self.0.send(req);
        }
        None
    }
}

/// A producer of `group` online at `addr`, and the checks it receives.
async fn producer(addr: &str, group: &str) -> (RemotingClient<Checks>, mpsc::UnboundedReceiver<RemotingCommand>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client =
        RemotingClient::new(Arc::new(Checks(tx)), FrameLimits::default(), TaskTracker::new(), CancellationToken::new());
    let hb = serde_json::json!({
        "clientID": format!("127.0.0.1@{group}"),
        "consumerDataSet": [],
        "producerDataSet": [{"groupName": group}],
        "heartbeatFingerprint": 1, "withoutSub": false
    });
    let hb = request(RequestCode::HEART_BEAT, &[]).with_body(serde_json::to_vec(&hb).unwrap());
    let r = client.invoke(addr, hb, Duration::from_secs(10)).await.unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    (client, rx)
}

fn half_of(topic: &str, group: &str, uniq: &str, immunity_secs: Option<&str>) -> RemotingCommand {
    let mut tx = send(topic, 1, b"tx body", "TagT");
    let mut props = vec![("TRAN_MSG", "true"), ("PGROUP", group), ("UNIQ_KEY", uniq)];
    props.extend(immunity_secs.map(|s| ("CHECK_IMMUNITY_TIME_IN_SECONDS", s)));
    tx.ext_fields.insert("i".into(), properties_to_string(props));
    tx.ext_fields.insert("g".into(), ferrocket::store::now_ms().to_string());
    tx
}

/// The first half message asks for a check immunity of about 30 years; the second, from
/// another producer, asks for nothing. The second is checked all the same (the first is put
/// back at the end of the queue, as Java's `putImmunityMsgBackToHalfQueue` does, instead of
/// ending every round).
#[tokio::test]
async fn one_producers_long_check_immunity_does_not_hold_up_other_checks() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.transaction_check_interval = 100;
        c.transaction_time_out = 0;
    })
    .await;
    let (p1, _checks1) = producer(&b.addr, "PG1").await;
    let (p2, mut checks2) = producer(&b.addr, "PG2").await;
    let r = p1.invoke(&b.addr, half_of("TXM", "PG1", "U1", Some("1000000000")), Duration::from_secs(10)).await.unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let r = p2.invoke(&b.addr, half_of("TXM", "PG2", "U2", None), Duration::from_secs(10)).await.unwrap();
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);

    let check = tokio::time::timeout(Duration::from_secs(20), checks2.recv()).await;
    let check = check.expect("PG2's transaction was never checked").unwrap();
    assert_eq!(check.ext_fields.get("transactionId").map(String::as_str), Some("U2"));
    b.stop().await;
}

/// The slave comes back: the producer's next commit of the same transaction waits for the
/// message the first commit stored, finishes the transaction and stores nothing twice.
#[tokio::test]
async fn a_commit_repeated_once_a_slave_is_back_finishes_the_transaction_once() {
    let ns = TestNamesrv::start(|_| {}).await;
    let ns_addr = ns.addr.to_string();
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = start_broker_on(&ns_addr, master_dir.path(), |c| c.broker_role = "SYNC_MASTER".into()).await;
    let c = client();
    let r = call_addr(&c, &master.addr, half("TXR")).await;
    let (q, p) = (r.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&r.ext_fields["msgId"]));
    let r = call_addr(&c, &master.addr, end("PG", q, p, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SLAVE_NOT_AVAILABLE, "{:?}", r.remark);

    let slave = start_broker_on(&ns_addr, slave_dir.path(), |c| {
        c.broker_role = "SLAVE".into();
        c.broker_id = 1;
    })
    .await;
    wait_max_offset(&c, &slave.addr, "TXR", 1, 1).await;
    let r = call_addr(&c, &master.addr, end("PG", q, p, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    assert_eq!(max_offset(&c, &master.addr, OP, 0).await, "1", "finished");
    assert_eq!(max_offset(&c, &master.addr, "TXR", 1).await, "1", "committed once");
    slave.stop().await;
    master.stop().await;
}

/// The producer finishes a transaction while its half message sits in the queue as an
/// immunity copy, and a younger half message holds up the rounds meanwhile: the op record
/// naming the original stays until the copy is reached, so the copy is not checked again.
#[tokio::test]
async fn a_transaction_finished_during_its_immunity_is_not_checked_again() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| {
        c.transaction_check_interval = 100;
        c.transaction_time_out = 1500;
        c.transaction_check_max = 50; // immunities up to 5 s
    })
    .await;
    let c = client();
    let (p1, mut checks1) = producer(&b.addr, "PG1").await;
    let (p2, mut checks2) = producer(&b.addr, "PG2").await;
    let r = p1.invoke(&b.addr, half_of("TXF", "PG1", "U1", Some("1000000")), Duration::from_secs(10)).await.unwrap();
    let (q, p) = (r.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&r.ext_fields["msgId"]));
    p2.invoke(&b.addr, half_of("TXF", "PG2", "U2", None), Duration::from_secs(10)).await.unwrap();
    let half_max = || async { max_offset(&c, &b.addr, HALF, 0).await.parse::<i64>().unwrap() };
    // A round puts the first back (its copy at offset 2) and stops at the second (too young).
    assert!(eventually(Duration::from_secs(10), || async { half_max().await >= 3 }).await);
    // Its producer commits it first-hand, inside its immunity: the op record names offset 0.
    let r = call_addr(&c, &b.addr, end("PG1", q, p, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    // The second comes of age and is checked; the same round reaches the copy.
    let check = tokio::time::timeout(Duration::from_secs(20), checks2.recv()).await;
    assert!(matches!(check, Ok(Some(_))), "PG2's transaction was never checked");
    let progress = request(
        RequestCode::QUERY_CONSUMER_OFFSET,
        &[("consumerGroup", "CID_RMQ_SYS_TRANS"), ("topic", HALF), ("queueId", "0")],
    );
    let past_copy = eventually(Duration::from_secs(10), || async {
        let r = call_addr(&c, &b.addr, progress.clone()).await;
        r.ext_fields.get("offset").and_then(|o| o.parse::<i64>().ok()).is_some_and(|o| o >= 3)
    })
    .await;
    assert!(past_copy, "the check progress never passed the copy");
    // The original, the second, the first's immunity copy, the second's check copy: the copy
    // was found finished, not put back once more.
    assert_eq!(half_max().await, 4);
    assert!(checks1.try_recv().is_err(), "the finished transaction was checked");
    b.stop().await;
}

/// Where a message body starts in a record (v1, IPv4 hosts): after the 84-byte header and the
/// body length.
const BODY_AT: i64 = 88;

async fn view(c: &Client, addr: &str, offset: i64) -> RemotingCommand {
    call_addr(c, addr, request(RequestCode::VIEW_MESSAGE_BY_ID, &[("offset", &offset.to_string())])).await
}

/// A half message forged inside another message's body (a copy of a real one with its offset
/// field set to where that body lands, which anybody who saw the last message id can tell) is
/// not committed, nor viewed by id: END_TRANSACTION and VIEW_MESSAGE_BY_ID name a record by a
/// CommitLog offset the client gives, and only a genuine record starting there is taken. Before,
/// the forged copy was committed: a message nobody's send stored.
#[tokio::test]
async fn a_half_message_forged_inside_a_message_body_is_neither_committed_nor_viewed() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let r = call_addr(&c, &b.addr, half("TXF")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let (q, p) = (r.ext_fields["queueOffset"].parse::<i64>().unwrap(), physical_offset(&r.ext_fields["msgId"]));
    let genuine = view(&c, &b.addr, p).await.body.to_vec();
    assert!(genuine.len() > 36, "the half message is viewed by its id");
    let forge = |at: i64| {
        let mut f = genuine.clone();
        f[28..36].copy_from_slice(&at.to_be_bytes());
        f
    };
    // Carriers of one size: each lands where the previous one ended.
    let (mut forged_at, mut next) = (None, 0);
    for _ in 0..5 {
        let guess = next + BODY_AT;
        let r = call_addr(&c, &b.addr, send("CARRIER", 0, &forge(guess), "T")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        let o = physical_offset(&r.ext_fields["msgId"]);
        let carrier = view(&c, &b.addr, o).await.body.to_vec();
        if o + BODY_AT == guess {
            assert_eq!(
                &carrier[BODY_AT as usize..][..genuine.len()],
                &forge(guess)[..],
                "the forged bytes are in place"
            );
            forged_at = Some(guess);
            break;
        }
        next = o + carrier.len() as i64;
    }
    let at = forged_at.expect("no carrier landed where the previous one ended");

    let r = call_addr(&c, &b.addr, end("PG", q, at, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR, "the forged half message: {:?}", r.remark);
    assert_eq!(max_offset(&c, &b.addr, "TXF", 1).await, "0", "nothing committed");
    let r = view(&c, &b.addr, at).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR, "viewed: {:?}", r.remark);
    let r = view(&c, &b.addr, p + 1).await;
    assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR, "an offset inside a record: {:?}", r.remark);

    let r = call_addr(&c, &b.addr, end("PG", q, p, 8)).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "the genuine one: {:?}", r.remark);
    assert_eq!(max_offset(&c, &b.addr, "TXF", 1).await, "1", "committed once");
    b.stop().await;
}
