//! Auto renew for push consumers (Java's `DefaultReceiptHandleManager`): a message received
//! with `auto_renew` is hidden for the default 60 s and, until the client acks it (or changes
//! its invisible time, or forwards it), the broker renews it 10 s before it would show again,
//! for at most 3 h, and forgets it when the client's Telemetry stream ends or it terminates (the
//! message shows again when its last renewal runs out). The client keeps its first receipt
//! handle; an ack with it is done under the renewed one ([`Renewals::take`]).
//!
//! The table is bounded (past [`MAX_ENTRIES`] a message is simply not renewed) and held across
//! a round of renewals, so an ack never races a renewal of its message.
//!
//! May import: `core`, `store` (the clock), `grpc`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;

use super::Grpc;
use crate::core::pop::{marked_topic, Handle};
use crate::store::now_ms;

/// Messages renewed at once, all clients together.
pub const MAX_ENTRIES: usize = 100_000;
/// `renewAheadTimeMillis`, `renewMaxTimeMillis`, and the invisible time a renewal sets.
const RENEW_AHEAD_MS: i64 = 10_000;
const RENEW_MAX_MS: i64 = 3 * 3600 * 1000;
const RENEW_TO_MS: i64 = super::consume::DEFAULT_INVISIBLE_MS;
const TICK: Duration = Duration::from_secs(1);

#[derive(Clone)]
struct Entry {
    client: String,
    group: String,
    /// The topic the client asked.
    topic: String,
    handle: Handle,
    started: i64,
}

/// Receipt handles renewed for their clients, by the receipt the client holds.
#[derive(Default)]
pub struct Renewals {
    table: Mutex<HashMap<String, Entry>>,
}

impl Renewals {
    /// Renews `handle` (sealed as `receipt`) until it is taken or its client goes.
    pub async fn add(&self, client: &str, group: &str, topic: &str, receipt: &str, handle: Handle) {
        let mut t = self.table.lock().await;
        if t.len() >= MAX_ENTRIES {
            return;
        }
        let e = Entry { client: client.into(), group: group.into(), topic: topic.into(), handle, started: now_ms() };
        t.insert(receipt.to_owned(), e);
    }

    /// The current handle of `receipt` (of `group`), no longer renewed.
    pub async fn take(&self, group: &str, receipt: &str) -> Option<Handle> {
        let mut t = self.table.lock().await;
        if t.get(receipt).is_some_and(|e| e.group == group) {
            return t.remove(receipt).map(|e| e.handle);
        }
        None
    }

    /// Forgets every message of `client`.
    pub async fn drop_client(&self, client: &str) {
        self.table.lock().await.retain(|_, e| e.client != client);
    }

    #[cfg(test)]
    async fn len(&self) -> usize {
        self.table.lock().await.len()
    }
}

/// Renews due handles every second until the door shuts down.
pub async fn run(g: Arc<Grpc>) {
    loop {
        tokio::select! {
            _ = g.shutdown.cancelled() => return,
            _ = tokio::time::sleep(TICK) => {}
        }
        renew_due(&g, now_ms()).await;
    }
}

/// One round: each handle within [`RENEW_AHEAD_MS`] of showing again is hidden for another
/// minute; one past [`RENEW_MAX_MS`] or stale is forgotten.
async fn renew_due(g: &Grpc, now: i64) {
    let mut t = g.renewals.table.lock().await;
    let due: Vec<String> = t
        .iter()
        .filter(|(_, e)| e.handle.pop_time.saturating_add(e.handle.invisible_time) - now <= RENEW_AHEAD_MS)
        .map(|(k, _)| k.clone())
        .collect();
    for receipt in due {
        let Some(e) = t.get(&receipt).cloned() else { continue };
        if now - e.started > RENEW_MAX_MS {
            t.remove(&receipt);
            continue;
        }
        let stored = marked_topic(e.handle.mark, &e.topic, &e.group);
        let Some(offset) = e.handle.queue_offset else {
            t.remove(&receipt);
            continue;
        };
        let changed = g.core.pop_change_invisible(&e.group, &stored, e.handle.queue_id, &e.handle, offset, RENEW_TO_MS);
        match changed.await {
            Some(c) => {
                if let Some(entry) = t.get_mut(&receipt) {
                    entry.handle.ck_offset = c.start_offset;
                    entry.handle.pop_time = c.pop_time;
                    entry.handle.invisible_time = c.invisible_time;
                }
            }
            None => {
                t.remove(&receipt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::door::{DoorRole, DoorSession};
    use crate::core::pop::{PopRequest, TopicMark};
    use crate::core::Core;
    use crate::grpc::{BoxFuture, BrokerSide, EndTxn, EndTxnError};
    use crate::model::message::MessageToStore;
    use crate::store::AcceptAll;

    struct NoBroker;

    impl BrokerSide for NoBroker {
        fn divert_delayed(&self, _: &mut MessageToStore) -> Result<(), String> {
            Ok(())
        }
        fn to_half(&self, _: &mut MessageToStore) {}
        fn end_transaction(&self, _: EndTxn) -> BoxFuture<'_, Result<(), EndTxnError>> {
            Box::pin(async { Ok(()) })
        }
        fn client_seen(&self, _: DoorSession, _: DoorRole) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
        fn client_gone(&self, _: u64) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
    }

    /// A door over a fresh core with one message popped for 60 s: its handle.
    async fn popped(dir: &std::path::Path) -> (Arc<Grpc>, Handle) {
        let config = crate::meta::config::BrokerConfig { store_path_root_dir: dir.to_owned(), ..Default::default() };
        let core = Arc::new(Core::open(config).unwrap());
        core.topics.create_if_absent("T", 1, crate::model::perm::READ | crate::model::perm::WRITE, 0);
        let m = MessageToStore {
            topic: "T".into(),
            queue_id: 0,
            flag: 0,
            body: bytes::Bytes::from_static(b"m"),
            properties: String::new(),
            tags_code: 0,
            born_timestamp: 1,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_host: core.store_host,
            sys_flag: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        core.store.put_messages(&[m], false).await;
        core.store.await_dispatched(Duration::from_secs(5)).await;
        let req = PopRequest {
            group: "g",
            topic: "T",
            queue_id: -1,
            max_nums: 1,
            invisible_ms: RENEW_TO_MS,
            poll: Duration::ZERO,
            init_from_min: true,
            retry_v2: false,
            filter: &AcceptAll,
            order: false,
            attempt: None,
        };
        let p = core.pop(&req).await.unwrap();
        let q = &p.queues[0];
        let handle = Handle {
            ck_offset: q.start_offset,
            pop_time: q.pop_time,
            invisible_time: p.invisible_time,
            revive_qid: 0,
            mark: TopicMark::Normal,
            broker_name: "b".into(),
            queue_id: 0,
            queue_offset: Some(q.messages[0].queue_offset),
        };
        let g = Grpc::new(core, Arc::new(NoBroker), ("127.0.0.1".into(), 1));
        (g, handle)
    }

    #[tokio::test]
    async fn a_due_handle_is_renewed_and_acked_under_its_new_form() {
        let dir = tempfile::tempdir().unwrap();
        let (g, h) = popped(dir.path()).await;
        g.renewals.add("c", "g", "T", "r", h.clone()).await;
        // Not due yet: nothing changes.
        renew_due(&g, now_ms()).await;
        assert_eq!(g.renewals.table.lock().await["r"].handle, h);
        // 55 s later it is within 10 s of showing again: renewed under a new checkpoint.
        renew_due(&g, h.pop_time + 55_000).await;
        let renewed = g.renewals.table.lock().await["r"].handle.clone();
        assert_ne!(renewed, h);
        assert_eq!(g.core.pop_ack("g", "T", 0, &h, 0).await, crate::core::pop::AckOutcome::Stale);
        // Another group's take gets nothing; the client's ack takes the renewed handle.
        assert!(g.renewals.take("g2", "r").await.is_none());
        let taken = g.renewals.take("g", "r").await.unwrap();
        assert_eq!(taken, renewed);
        assert_eq!(g.core.pop_ack("g", "T", 0, &taken, 0).await, crate::core::pop::AckOutcome::Acked);
        assert_eq!(g.renewals.len().await, 0);
    }

    #[tokio::test]
    async fn renewal_stops_after_three_hours_and_when_the_client_goes() {
        let dir = tempfile::tempdir().unwrap();
        let (g, h) = popped(dir.path()).await;
        g.renewals.add("c", "g", "T", "r", h.clone()).await;
        renew_due(&g, now_ms() + RENEW_MAX_MS + 1).await;
        assert_eq!(g.renewals.len().await, 0);
        g.renewals.add("c", "g", "T", "r", h.clone()).await;
        g.renewals.add("c2", "g", "T", "r2", h).await;
        g.renewals.drop_client("c").await;
        assert_eq!(g.renewals.len().await, 1);
    }
}
