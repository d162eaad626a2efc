//! Long polling (`PullRequestHoldService`): a pull that finds nothing waits until the store
//! dispatches a message to its queue or its suspend time passes. Waiting costs nothing: the
//! dispatcher's arrival callback wakes the waiters of that queue, no polling.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Default)]
pub struct PullHold {
    /// topic -> queue id -> signal: looked up by `&str`, no allocation per arrival.
    queues: Mutex<HashMap<String, HashMap<i32, Arc<Notify>>>>,
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
        if let Some(s) = queues.get(topic).and_then(|q| q.get(&queue_id)) {
            return s.clone();
        }
        queues.entry(topic.to_owned()).or_default().entry(queue_id).or_insert_with(|| Arc::new(Notify::new())).clone()
    }

    /// Called by the store's dispatcher for every new message.
    pub fn message_arrived(&self, topic: &str, queue_id: i32) {
        let signal = {
            let queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
            queues.get(topic).and_then(|q| q.get(&queue_id)).cloned()
        };
        if let Some(s) = signal {
            s.notify_waiters();
        }
    }
}
