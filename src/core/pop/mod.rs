//! POP consumption, for every door (RocketMQ remoting POP_MESSAGE today, the 5.x gRPC
//! ReceiveMessage next): the broker keeps which messages a group has popped and not acked, hides
//! them for their invisible time, and redelivers those not acked in time through the group's
//! POP retry topic.
//!
//! ```text
//!   pop (receive.rs)   queue -1 = all readable queues from a random one; the retry topic
//!                      %RETRY%{group}_{topic} first 20 % of the time; long polling on
//!                      Core::wait_for_arrivals; PollingFull past popPollingSize
//!       -> state.rs    PopTable: checkpoints (start, popTime) per (group, topic, queue),
//!                      revive timer by deadline; committed offset = acked prefix
//!   ack / change (ack.rs)   handle.rs: the ExtraInfoUtil handle, parsed or refused
//!   revive (revive.rs) a task sleeping until the next deadline: re-puts each unacked message to
//!                      the retry topic with reconsumeTimes+1 (the DLQ %DLQ%{group} once
//!                      reconsumeTimes reached the group's retryMaxTimes)
//! ```
//!
//! Owns: [`PopService`] (a field of [`Core`](super::Core)), the handle format, the POP retry
//! topic names (`KeyBuilder.buildPopRetryTopic`), the request modes (`mode.rs`,
//! messageRequestMode.json).
//!
//! Persistence (`persist.rs`): checkpoints, acks and revives are appended to the CommitLog on
//! `rmq_sys_POP_STATE_<cluster>` and replayed at start, so kill -9 loses no checkpoint and
//! redelivers nothing acked (a revive interrupted between its re-put and its record is
//! redelivered twice: at least once). Orderly (FIFO) pops (`order.rs`) lock a queue until its
//! messages are acked or expire, then redeliver from it.
//!
//! May import: `model`, `store`, `meta` (through `Core`), `persist`, `filter` (`filter.rs`). Never a front end (`broker`, `kafka`,
//! `grpc`), a codec (`protocol`) or `remoting`: no wire type here.

pub mod ack;
pub mod dlq;
pub mod filter;
pub mod handle;
pub mod mode;
pub mod notify;
pub mod order;
pub mod peek;
pub mod persist;
pub mod present;
pub mod receive;
pub mod revive;
pub mod state;

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::Notify;

pub use handle::{Handle, HandleError, TopicMark};
pub use receive::{PopError, PopRequest, Popped, PoppedMessage, PoppedQueue};
pub use state::{AckOutcome, QueueKey};

use crate::model::group::RETRY_GROUP_TOPIC_PREFIX;

/// Shortest and longest invisible time a pop or change may ask for (the issue's 10 s..12 h is
/// the gRPC door's rule; remoting clients use shorter ones, so the floor here is 1 s).
pub const MIN_INVISIBLE_MS: i64 = 1_000;
pub const MAX_INVISIBLE_MS: i64 = 12 * 3600 * 1000;
/// Most messages one pop returns.
pub const MAX_POP_NUMS: usize = 32;

/// The POP state of a broker.
#[derive(Default)]
pub struct PopService {
    pub(crate) table: Mutex<state::PopTable>,
    /// Rung when a checkpoint is added: the revive task looks at the earliest deadline again.
    pub(crate) wake: Notify,
    /// Pops and notifications held for long polling, per (group, topic).
    polling: Mutex<HashMap<(String, String), Held>>,
    /// PULL or POP per (topic, group), loaded on first use.
    modes: std::sync::OnceLock<mode::RequestModes>,
    /// Closed by a master from its start until the table is restored from the state log:
    /// pops, acks, changes and notifications wait at it, so that none sees the table before
    /// the replay (a pop served then started a queue again at its first message).
    restored: Restored,
}

/// An open-or-closed gate (open by default: a core without a broker has nothing to restore).
struct Restored(tokio::sync::watch::Sender<bool>);

impl Default for Restored {
    fn default() -> Self {
        Self(tokio::sync::watch::channel(true).0)
    }
}

impl PopService {
    /// Closes the gate until [`Core::pop_restore`] has replayed the state log (a master, before
    /// its listeners start).
    pub fn hold_until_restored(&self) {
        self.restored.0.send_replace(false);
    }

    pub(crate) fn mark_restored(&self) {
        self.restored.0.send_replace(true);
    }

    /// Waits until the table is restored (at once when it is).
    pub(crate) async fn restored(&self) {
        let mut rx = self.restored.0.subscribe();
        let _ = rx.wait_for(|open| *open).await;
    }

    pub(crate) fn table(&self) -> std::sync::MutexGuard<'_, state::PopTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checkpoints held (messages popped and not acked, grouped by pop).
    pub fn checkpoints(&self) -> usize {
        self.table().checkpoints()
    }

    /// The request modes, loaded from `dir`/messageRequestMode.json on first use.
    pub fn request_modes(&self, dir: &std::path::Path) -> &mode::RequestModes {
        self.modes.get_or_init(|| mode::RequestModes::load(dir.join(mode::FILE)))
    }

    /// Counts a held request of (group, topic) asking `queue_id` (-1: any queue); `None` when
    /// `limit` (popPollingSize) requests of that kind are already held for (group, topic).
    fn enter_polling(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        kind: Hold,
        limit: usize,
    ) -> Option<PollingGuard<'_>> {
        let mut m = self.polling.lock().unwrap_or_else(|e| e.into_inner());
        let key = (group.to_owned(), topic.to_owned());
        let held = m.entry(key.clone()).or_default();
        let n = match kind {
            Hold::Pop => &mut held.pops,
            Hold::Notification => &mut held.notifications,
        };
        if *n >= limit {
            if held.pops + held.notifications == 0 {
                m.remove(&key);
            }
            return None;
        }
        *n += 1;
        if kind == Hold::Pop {
            *held.per_queue.entry(queue_id).or_default() += 1;
        }
        Some(PollingGuard { service: self, key, queue_id, kind })
    }

    /// Pops of (group, topic) held for long polling that asked `queue_id` (-1: any queue),
    /// Java's `pollingMap` size for `buildPollingKey(topic, group, queueId)` (POLLING_INFO).
    pub fn held_pops(&self, group: &str, topic: &str, queue_id: i32) -> usize {
        let m = self.polling.lock().unwrap_or_else(|e| e.into_inner());
        let key = (group.to_owned(), topic.to_owned());
        m.get(&key).and_then(|h| h.per_queue.get(&queue_id)).copied().unwrap_or(0)
    }
}

/// What a held request is: POLLING_INFO counts pops only (Java keeps notifications in a
/// `PopLongPollingService` of their own); each kind has its own popPollingSize cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    Pop,
    Notification,
}

#[derive(Default)]
struct Held {
    pops: usize,
    notifications: usize,
    /// Held pops by the queue asked (-1: any); bounded by `pops`, so by popPollingSize.
    per_queue: HashMap<i32, usize>,
}

struct PollingGuard<'a> {
    service: &'a PopService,
    key: (String, String),
    queue_id: i32,
    kind: Hold,
}

impl Drop for PollingGuard<'_> {
    fn drop(&mut self) {
        let mut m = self.service.polling.lock().unwrap_or_else(|e| e.into_inner());
        let Some(h) = m.get_mut(&self.key) else { return };
        match self.kind {
            Hold::Pop => {
                h.pops = h.pops.saturating_sub(1);
                if let Some(n) = h.per_queue.get_mut(&self.queue_id) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        h.per_queue.remove(&self.queue_id);
                    }
                }
            }
            Hold::Notification => h.notifications = h.notifications.saturating_sub(1),
        }
        if h.pops + h.notifications == 0 {
            m.remove(&self.key);
        }
    }
}

/// `KeyBuilder.buildPopRetryTopic`: `%RETRY%{group}_{topic}`, or with `+` when `v2`.
pub fn pop_retry_topic(topic: &str, group: &str, v2: bool) -> String {
    let sep = if v2 { '+' } else { '_' };
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}{sep}{topic}")
}

/// The stored topic a handle's mark names for `topic` asked by `group`.
pub fn marked_topic(mark: TopicMark, topic: &str, group: &str) -> String {
    match mark {
        TopicMark::Normal => topic.to_owned(),
        TopicMark::RetryV1 => pop_retry_topic(topic, group, false),
        TopicMark::RetryV2 => pop_retry_topic(topic, group, true),
    }
}

#[cfg(test)]
mod tests;
