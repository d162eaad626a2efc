//! Timers and delay levels against a store that refuses writes (issue #25): a due timer or
//! delayed message waits for the store and is delivered once it takes writes again, never
//! dropped; a delayed message the store will never take does not hold up its level.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use ferrocket::model::message::properties_to_string;
use ferrocket::protocol::ResponseCode;
use ferrocket::store::now_ms;

use super::broker::{call_addr, pull, records, send, start_broker, wait_max_offset};
use super::support::*;

#[tokio::test]
async fn a_due_timer_waits_while_the_disk_is_full_and_is_delivered_after() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.timer_precision_ms = 100).await;
    let c = client();
    let mut req = send("TMF", 0, b"due while full", "TagT");
    req.ext_fields.insert(
        "i".into(),
        properties_to_string([("TAGS", "TagT"), ("UNIQ_KEY", "K1"), ("WAIT", "true"), ("TIMER_DELAY_MS", "2000")]),
    );
    req.ext_fields.insert("g".into(), now_ms().to_string());
    let r = call_addr(&c, &b.addr, req).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);

    // The disk-ratio gate closes before the timer is due (2 s of margin; were it late, the
    // refusals awaited below would never come and the test fail, not pass): the store
    // refuses every write.
    let store = &b.inner.store;
    store.override_disk_usage(Some(99));
    store.clean_expired_files(SystemTime::now()).unwrap();
    assert!(store.write_refusal().is_some(), "the gate is closed");
    // More refusals than the three tries Java (and ferrocket before #25) gave a delivery.
    let refused = || b.inner.timer.refused_puts.load(Ordering::Relaxed);
    assert!(
        eventually(Duration::from_secs(20), || async { refused() >= 3 }).await,
        "the timer was never refused three times (refused {})",
        refused()
    );
    // Writes resume: the timer message arrives.
    store.override_disk_usage(Some(1));
    store.clean_expired_files(SystemTime::now()).unwrap();
    assert!(store.write_refusal().is_none(), "the gate is open");
    wait_max_offset(&c, &b.addr, "TMF", 0, 1).await;
    let r = call_addr(&c, &b.addr, pull("TMF", 0, 0, 4, 0)).await;
    let got = records(&r.body);
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0].body[..], b"due while full");
    b.stop().await;
}

fn delayed(topic: &str, key: &str, body: &[u8], level: &str) -> ferrocket::protocol::RemotingCommand {
    let mut req = send(topic, 0, body, "TagD");
    req.ext_fields.insert(
        "i".into(),
        properties_to_string([("TAGS", "TagD"), ("UNIQ_KEY", key), ("WAIT", "true"), ("DELAY", level)]),
    );
    req
}

#[tokio::test]
async fn a_due_delayed_message_waits_while_the_disk_is_full_and_is_delivered_after() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |c| c.message_delay_level = "2s".into()).await;
    let c = client();
    let r = call_addr(&c, &b.addr, delayed("DLF", "D1", b"due while full", "1")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    let store = &b.inner.store;
    store.override_disk_usage(Some(99));
    store.clean_expired_files(SystemTime::now()).unwrap();
    let refused = || b.inner.schedule.refused_puts.load(Ordering::Relaxed);
    assert!(
        eventually(Duration::from_secs(20), || async { refused() >= 3 }).await,
        "the delayed message was never refused three times (refused {})",
        refused()
    );
    store.override_disk_usage(Some(1));
    store.clean_expired_files(SystemTime::now()).unwrap();
    wait_max_offset(&c, &b.addr, "DLF", 0, 1).await;
    b.stop().await;
}

/// A delayed message stored under a larger `maxMessageSize` than the broker has after a
/// restart can never be delivered; the message behind it on the same level still is.
#[tokio::test]
async fn a_delayed_message_the_store_will_never_take_does_not_hold_up_its_level() {
    let dir = tempfile::tempdir().unwrap();
    let levels = |c: &mut ferrocket::broker::BrokerConfig| c.message_delay_level = "3s".into();
    let c = client();
    let b = start_broker(dir.path(), levels).await;
    for (key, body) in [("BIG", vec![b'x'; 8192]), ("SMALL", b"small".to_vec())] {
        let r = call_addr(&c, &b.addr, delayed("DLW", key, &body, "1")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    }
    b.stop().await;
    let b = start_broker(dir.path(), |c| {
        levels(c);
        c.max_message_size = 4096;
    })
    .await;
    wait_max_offset(&c, &b.addr, "DLW", 0, 1).await;
    let r = call_addr(&c, &b.addr, pull("DLW", 0, 0, 4, 0)).await;
    let got = records(&r.body);
    assert_eq!(got.iter().map(|m| &m.body[..]).collect::<Vec<_>>(), vec![&b"small"[..]]);
    b.stop().await;
}
