//! Long polling (`PullRequestHoldService`): a pull that finds nothing waits until the store
//! dispatches a message to its queue or its suspend time passes. Waiting costs nothing: the
//! dispatcher's arrival callback wakes the waiters of that queue, no polling.
//!
//! A queue's signal lives in the table while someone holds it; signals nobody holds are swept
//! out whenever the table has doubled since the last sweep (at least [`SWEEP_MIN`] entries), so
//! pulls and fetches of ever new queues leave at most that many behind.
//!
//! The number of held pulls is a `watch` value: the `ferrocket_held_pulls` gauge reads it, and a
//! test waits on it ([`PullHold::watch_held`]) for a pull to park instead of sleeping.
//!
//! Owns: the per-queue arrival signals and the held-pull count. May import: nothing of ferrocket
//! (tokio's `Notify` and `watch` only); the store's arrival listener calls
//! `message_arrived`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Notify};

/// Signals kept at least before a sweep.
const SWEEP_MIN: usize = 1024;

#[derive(Default)]
struct Queues {
    /// topic -> queue id -> signal: looked up by `&str`, no allocation per arrival.
    map: HashMap<String, HashMap<i32, Arc<Notify>>>,
    /// Signals in `map`.
    entries: usize,
    /// The size at which the next insert sweeps first.
    sweep_at: usize,
}

impl Queues {
    /// Drops the signals nobody holds (the table's is the only reference).
    fn sweep(&mut self) {
        for queues in self.map.values_mut() {
            queues.retain(|_, s| Arc::strong_count(s) > 1);
        }
        self.map.retain(|_, q| !q.is_empty());
        self.entries = self.map.values().map(HashMap::len).sum();
    }
}

pub struct PullHold {
    queues: Mutex<Queues>,
    /// Pulls waiting right now; receivers see every change.
    held: watch::Sender<usize>,
}

impl Default for PullHold {
    fn default() -> Self {
        Self { queues: Mutex::default(), held: watch::Sender::new(0) }
    }
}

/// Counts one waiting pull while it lives.
pub struct Held<'a>(&'a watch::Sender<usize>);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl PullHold {
    /// Marks a pull as waiting until the guard is dropped.
    pub fn enter(&self) -> Held<'_> {
        self.held.send_modify(|n| *n += 1);
        Held(&self.held)
    }

    /// Pulls waiting right now.
    pub fn held(&self) -> usize {
        *self.held.borrow()
    }

    /// The number of held pulls, as it changes: `wait_for(|n| *n >= 1)` returns once a pull
    /// has parked (it has registered as held and is about to wait for its queue's signal).
    pub fn watch_held(&self) -> watch::Receiver<usize> {
        self.held.subscribe()
    }

    /// The wake-up signal of a queue.
    pub fn signal(&self, topic: &str, queue_id: i32) -> Arc<Notify> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = queues.map.get(topic).and_then(|q| q.get(&queue_id)) {
            return s.clone();
        }
        if queues.entries >= queues.sweep_at.max(SWEEP_MIN) {
            queues.sweep();
            queues.sweep_at = queues.entries * 2;
        }
        queues.entries += 1;
        let s = Arc::new(Notify::new());
        queues.map.entry(topic.to_owned()).or_default().insert(queue_id, s.clone());
        s
    }

    /// Queue signals in the table (held or not yet swept).
    pub fn signals(&self) -> usize {
        self.queues.lock().unwrap_or_else(|e| e.into_inner()).map.values().map(HashMap::len).sum()
    }

    /// Called by the store's dispatcher for every new message.
    pub fn message_arrived(&self, topic: &str, queue_id: i32) {
        let signal = {
            let queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
            queues.map.get(topic).and_then(|q| q.get(&queue_id)).cloned()
        };
        if let Some(s) = signal {
            s.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_parked_pull_is_seen_by_watchers_and_leaving_counts_down() {
        let hold = PullHold::default();
        let mut parked = hold.watch_held();
        assert_eq!(*parked.borrow_and_update(), 0);
        let guard = hold.enter();
        assert!(parked.has_changed().unwrap(), "entering is an event watchers see");
        assert_eq!(*parked.wait_for(|n| *n >= 1).await.unwrap(), 1);
        assert_eq!(hold.held(), 1);
        drop(guard);
        assert_eq!(*parked.wait_for(|n| *n == 0).await.unwrap(), 0);
        assert_eq!(hold.held(), 0);
    }

    #[test]
    fn signals_nobody_holds_are_swept_and_held_ones_kept() {
        let hold = PullHold::default();
        let kept = hold.signal("KEPT", 0);
        for i in 0..100_000 {
            drop(hold.signal(&format!("T{i}"), i % 7));
        }
        assert!(hold.signals() <= SWEEP_MIN + 1, "{} signals left", hold.signals());
        // The held signal is the table's: an arrival on its queue reaches it.
        let woken = kept.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        hold.message_arrived("KEPT", 0);
        assert!(futures_util::FutureExt::now_or_never(woken).is_some(), "the held signal was swept");
        // Many held at once are all kept.
        let many: Vec<_> = (0..3000).map(|i| hold.signal("M", i)).collect();
        assert!(hold.signals() >= many.len());
        drop(many);
        drop(hold.signal("X", 0));
        for i in 0..SWEEP_MIN * 8 {
            drop(hold.signal("Y", i as i32));
        }
        assert!(hold.signals() <= 2 * 3001 + 1, "{}", hold.signals());
    }
}
