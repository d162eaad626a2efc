//! Waiting for arrivals, for every door: a RocketMQ pull held for long polling and a Kafka fetch
//! waiting for `min.bytes` both register on the queues' signals, re-check, and sleep until the
//! store's dispatcher wakes a queue, the deadline passes or the broker closes. Each waiter is
//! counted (`ferrocket_held_pulls`) while it waits.
//!
//! May import: `meta` (the signals).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::Core;

impl Core {
    /// Calls `check` until it returns `Some`, waking on an arrival in any of `queues`; `None`
    /// once `deadline` passed or the broker is closing. Every call of `check` comes after the
    /// wake-ups are armed, so an arrival between a check and the wait is never missed.
    pub async fn wait_for_arrivals<'q, T, F, Fut>(
        &self,
        queues: impl IntoIterator<Item = (&'q str, i32)>,
        deadline: Instant,
        mut check: F,
    ) -> Option<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let signals: Vec<Arc<Notify>> = queues.into_iter().map(|(t, q)| self.hold.signal(t, q)).collect();
        let _held = self.hold.enter();
        loop {
            let mut waits: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> =
                signals.iter().map(|s| Box::pin(s.notified())).collect();
            for w in &mut waits {
                w.as_mut().enable();
            }
            if let Some(found) = check().await {
                return Some(found);
            }
            if Instant::now() >= deadline || self.closing.is_cancelled() || waits.is_empty() {
                return None;
            }
            tokio::select! {
                _ = futures_util::future::select_all(waits) => {}
                _ = tokio::time::sleep_until(deadline) => return None,
                _ = self.closing.cancelled() => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::meta::config::BrokerConfig;

    fn core(dir: &std::path::Path) -> Arc<Core> {
        let config = BrokerConfig { store_path_root_dir: dir.to_owned(), ..BrokerConfig::default() };
        Arc::new(Core::open(config).unwrap())
    }

    #[tokio::test]
    async fn an_arrival_wakes_the_waiter_which_is_counted_while_it_waits() {
        let dir = tempfile::tempdir().unwrap();
        let c = core(dir.path());
        let checks = Arc::new(AtomicUsize::new(0));
        let (c2, n) = (c.clone(), checks.clone());
        let far = Instant::now() + Duration::from_secs(60);
        let waiter = tokio::spawn(async move {
            c2.wait_for_arrivals([("T", 1)], far, || {
                let k = n.fetch_add(1, Ordering::SeqCst);
                async move { (k >= 1).then_some(k) }
            })
            .await
        });
        while c.hold.held() == 0 {
            tokio::task::yield_now().await;
        }
        c.hold.message_arrived("T", 0); // another queue: no wake-up
        c.hold.message_arrived("T", 1);
        assert_eq!(waiter.await.unwrap(), Some(1), "woken once, by its own queue");
        assert_eq!(c.hold.held(), 0, "no longer counted");
    }

    #[tokio::test]
    async fn the_deadline_and_the_close_end_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        let c = core(dir.path());
        let past = Instant::now();
        let none: Option<()> = c.wait_for_arrivals([("T", 0)], past, || async { None }).await;
        assert_eq!(none, None);
        c.closing.cancel();
        let far = Instant::now() + Duration::from_secs(60);
        let none: Option<()> = c.wait_for_arrivals([("T", 0)], far, || async { None }).await;
        assert_eq!(none, None, "closing answers at once");
    }
}
