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
pub mod order;
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
    /// Pops held for long polling, per (group, topic).
    polling: Mutex<HashMap<(String, String), usize>>,
    /// PULL or POP per (topic, group), loaded on first use.
    modes: std::sync::OnceLock<mode::RequestModes>,
}

impl PopService {
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

    /// Counts a held pop of (group, topic); `None` when `limit` (popPollingSize) are already held.
    fn enter_polling(&self, group: &str, topic: &str, limit: usize) -> Option<PollingGuard<'_>> {
        let mut m = self.polling.lock().unwrap_or_else(|e| e.into_inner());
        let key = (group.to_owned(), topic.to_owned());
        let n = m.entry(key.clone()).or_default();
        if *n >= limit {
            return None;
        }
        *n += 1;
        Some(PollingGuard { service: self, key })
    }
}

struct PollingGuard<'a> {
    service: &'a PopService,
    key: (String, String),
}

impl Drop for PollingGuard<'_> {
    fn drop(&mut self) {
        let mut m = self.service.polling.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.key);
            }
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
