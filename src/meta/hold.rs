//! Long polling (`PullRequestHoldService`): a pull that finds nothing waits until the store
//! dispatches a message to its queue or its suspend time passes. Waiting costs nothing: the
//! dispatcher's arrival callback wakes the waiters of that queue, no polling.
//!
//! A queue's signal lives in the table while someone holds it; signals nobody holds are swept
//! out whenever the table has doubled since the last sweep (at least [`SWEEP_MIN`] entries), so
//! pulls and fetches of ever new queues leave at most that many behind.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

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

#[derive(Default)]
pub struct PullHold {
    queues: Mutex<Queues>,
    /// Pulls (and Kafka fetches) waiting right now.
    held: AtomicUsize,
}

/// Counts one waiting pull while it lives.
pub struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PullHold {
    /// Marks a pull as waiting until the guard is dropped.
    pub fn enter(&self) -> Held<'_> {
        self.held.fetch_add(1, Ordering::Relaxed);
        Held(&self.held)
    }

    /// Pulls waiting right now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
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
