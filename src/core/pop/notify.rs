//! Notifications (`NotificationProcessor`): whether a queue of a topic (queue -1: any readable
//! queue) or of its POP retry topic has messages a pop by the group would read, held for long
//! polling until one has. Held like a pop (`Core::wait_for_arrivals`, woken by the dispatcher
//! and by revives) and counted apart from pops, with its own popPollingSize cap per
//! (group, topic). An orderly notification skips queues locked by an orderly pop.
//!
//! May import: `model`, `store`, `meta` (through `Core`).

use std::time::Duration;

use super::receive::{PopError, PopRequest};
use super::state::QueueKey;
use super::{pop_retry_topic, Hold};
use crate::core::Core;
use crate::store::AcceptAll;

/// A notification, as every door asks it.
pub struct NotifyRequest<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    /// A queue of `topic`, or -1 for any readable queue.
    pub queue_id: i32,
    /// How long to hold the request when no queue has messages (0: answer at once).
    pub poll: Duration,
    pub retry_v2: bool,
    pub order: bool,
    /// An orderly client's attempt id: the queue its own lost pop locked is not blocked for it.
    pub attempt: Option<&'a str>,
}

impl Core {
    /// Whether a pop would find messages now or within `poll`.
    pub async fn pop_notification(&self, req: &NotifyRequest<'_>) -> Result<bool, PopError> {
        self.pop.restored().await;
        let pop = PopRequest {
            group: req.group,
            topic: req.topic,
            queue_id: req.queue_id,
            max_nums: 1,
            invisible_ms: 0,
            poll: req.poll,
            init_from_min: true,
            retry_v2: req.retry_v2,
            filter: &AcceptAll,
            order: req.order,
            attempt: None,
        };
        let retry = pop_retry_topic(req.topic, req.group, req.retry_v2);
        let queues = self.pop_queues(&pop, &retry);
        let now = self.has_pop_messages(req, &queues);
        if now || req.poll.is_zero() || queues.is_empty() {
            return Ok(now);
        }
        let Some(_held) = self.pop.enter_polling(
            req.group,
            req.topic,
            req.queue_id,
            Hold::Notification,
            self.config.pop_polling_size,
        ) else {
            return Err(PopError::PollingFull);
        };
        let deadline = tokio::time::Instant::now() + req.poll;
        let mut waits = queues;
        if !waits.iter().any(|(t, _)| *t == retry) {
            waits.push((retry.clone(), 0));
        }
        let found = self
            .wait_for_arrivals(waits.iter().map(|(t, q)| (t.as_str(), *q)), deadline, || {
                let queues = self.pop_queues(&pop, &retry);
                std::future::ready(self.has_pop_messages(req, &queues).then_some(()))
            })
            .await;
        Ok(found.is_some())
    }

    fn has_pop_messages(&self, req: &NotifyRequest<'_>, queues: &[(String, i32)]) -> bool {
        queues.iter().any(|(topic, queue_id)| {
            let key = QueueKey { group: req.group.to_owned(), topic: topic.clone(), queue_id: *queue_id };
            if req.order && self.pop.table().order_blocked_for(&key, req.attempt) {
                return false;
            }
            self.store.max_offset_in_queue(topic, *queue_id) > self.pop_position(&key)
        })
    }
}
