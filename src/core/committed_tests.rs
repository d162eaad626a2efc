//! Committed reads over a real store: the LSO bound, markers and aborted records filtered out,
//! and a read held at the LSO woken by the end of the transaction.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::core::txn::{KAFKA_CONTROL, KAFKA_COORD_EPOCH, KAFKA_EPOCH, KAFKA_PID, KAFKA_TXN};
use crate::core::{Durability, Protocol, Replicas, Traffic};
use crate::meta::config::BrokerConfig;
use crate::model::message::{properties_to_string, MessageToStore};
use crate::store::{AcceptAll, GetMessageStatus};

fn core(dir: &std::path::Path) -> Arc<Core> {
    let config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1024 * 1024,
        clean_file_forcibly_enable: false,
        ..BrokerConfig::default()
    };
    Arc::new(Core::open(config).unwrap())
}

/// One stored message: plain (`None`), transactional (`Some((pid, None))`) or a marker
/// (`Some((pid, Some(commit)))`).
fn msg(body: &str, txn: Option<(i64, Option<bool>)>) -> MessageToStore {
    let pid;
    let props: Vec<(&str, &str)> = match txn {
        None => vec![],
        Some((p, None)) => {
            pid = p.to_string();
            vec![(KAFKA_PID, pid.as_str()), (KAFKA_EPOCH, "0"), (KAFKA_TXN, "true")]
        }
        Some((p, Some(commit))) => {
            pid = p.to_string();
            let kind = if commit { "COMMIT" } else { "ABORT" };
            vec![(KAFKA_PID, pid.as_str()), (KAFKA_EPOCH, "0"), (KAFKA_CONTROL, kind), (KAFKA_COORD_EPOCH, "0")]
        }
    };
    MessageToStore {
        topic: "T".to_owned(),
        queue_id: 0,
        flag: 0,
        body: Bytes::copy_from_slice(body.as_bytes()),
        tags_code: 0,
        properties: properties_to_string(props),
        born_timestamp: 1,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

async fn put(c: &Core, m: MessageToStore) -> i64 {
    let how =
        Durability { wait_flush: true, replicas: Replicas::Skip, replica_timeout: Duration::ZERO, deferred: false };
    let t = Traffic { protocol: Protocol::Kafka, topic: "T", kind: crate::telemetry::MessageType::Normal };
    let offset = c.append(&[m], how, t).await.unwrap().result.queue_offset;
    c.store.await_dispatched(Duration::from_secs(5)).await;
    offset
}

fn bodies(r: &GetMessageResult) -> Vec<String> {
    r.messages.iter().map(|m| String::from_utf8_lossy(&record::decode(m, false).unwrap().body).into_owned()).collect()
}

#[tokio::test]
async fn a_committed_read_stops_at_the_lso_and_skips_markers_and_aborted_records() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path());
    put(&c, msg("p0", None)).await;
    put(&c, msg("p1", None)).await;
    let first = put(&c, msg("a2", Some((7, None)))).await;
    c.txn.begin("T", 0, 7, first).await;
    put(&c, msg("a3", Some((7, None)))).await;
    let first = put(&c, msg("c4", Some((8, None)))).await;
    c.txn.begin("T", 0, 8, first).await;
    let marker = put(&c, msg("", Some((7, Some(false))))).await;
    c.txn.end("T", 0, 7, marker, false).await;
    assert_eq!(c.txn.last_stable_offset("T", 0, 6), 4, "producer 8's transaction is open");

    let r = c.get_committed("T", 0, 0, 32, usize::MAX, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset, r.max_offset), (GetMessageStatus::Found, 4, 6));
    assert_eq!(bodies(&r), ["p0", "p1"], "the aborted records are filtered out, nothing at the LSO read");
    let r = c.get_committed("T", 0, 2, 32, usize::MAX, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::NoMatchedMessage, 4), "moves past them");
    let r = c.get_committed("T", 0, 4, 32, usize::MAX, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::OffsetOverflowOne, 4), "held at the LSO");
    let r = c.get_committed("T", 0, 5, 32, usize::MAX, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::OffsetOverflowOne, 5), "past it: kept, not moved");
    let r = c.get_committed("T", 0, 99, 32, usize::MAX, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::OffsetOverflowBadly, 4), "moved to the LSO");

    let marker = put(&c, msg("", Some((8, Some(true))))).await;
    c.txn.end("T", 0, 8, marker, true).await;
    let r = c.get_committed("T", 0, 4, 32, usize::MAX, &AcceptAll);
    assert_eq!((r.status, r.next_begin_offset), (GetMessageStatus::Found, 7));
    assert_eq!(bodies(&r), ["c4"], "the committed record, no marker");
    // A plain queue reads as before, uncommitted records of no transaction included.
    let plain = c.get_committed("U", 0, 0, 32, usize::MAX, &AcceptAll);
    assert_eq!(plain.status, GetMessageStatus::NoMatchedLogicQueue);
}

#[tokio::test]
async fn a_read_held_at_the_lso_is_woken_by_the_end_of_the_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let c = core(dir.path());
    let first = put(&c, msg("o0", Some((7, None)))).await;
    c.txn.begin("T", 0, 7, first).await;
    // The marker is stored (and its arrival rung) before the coordinator ends the transaction:
    // the end itself must wake the held read, or it sleeps on the old LSO.
    let marker = put(&c, msg("", Some((7, Some(true))))).await;
    let (c2, far) = (c.clone(), tokio::time::Instant::now() + Duration::from_secs(60));
    let held = tokio::spawn(async move {
        c2.wait_for_arrivals([("T", 0)], far, || {
            let r = c2.get_committed("T", 0, 0, 32, usize::MAX, &AcceptAll);
            std::future::ready((r.status == GetMessageStatus::Found).then_some(r.next_begin_offset))
        })
        .await
    });
    let mut parked = c.hold.watch_held();
    parked.wait_for(|n| *n >= 1).await.unwrap();
    c.txn.end("T", 0, 7, marker, true).await;
    let woken = tokio::time::timeout(Duration::from_secs(10), held).await.expect("woken by the end, not the deadline");
    assert_eq!(woken.unwrap(), Some(2));
}
