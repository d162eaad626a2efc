//! Transactions against hostile or unlucky conditions (issue #25): a commit the slaves did not
//! get is not acknowledged.

use std::time::Duration;

use ferrocket::protocol::ResponseCode;

use super::broker::{call_addr, start_broker};
use super::support::*;
use super::transactions::{end, half, max_offset, physical_offset, HALF, OP};

/// SYNC_MASTER without a slave: the committed message is stored but on no slave. The answer
/// says so, and no op record marks the transaction finished: the half message stays for the
/// check service, which asks the producer again (Java answers SUCCESS and deletes it).
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
    // The check service takes the half message up: it puts it again for its check.
    let rechecked = eventually(Duration::from_secs(10), || async {
        max_offset(&c, &b.addr, HALF, 0).await.parse::<i64>().unwrap() >= 2
    })
    .await;
    assert!(rechecked, "the half message was never checked");
    b.stop().await;
}
