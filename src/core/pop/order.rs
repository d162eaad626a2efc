//! Orderly (FIFO) pops (`ConsumerOrderInfoManager`): a queue popped in order stays locked for
//! its group while the pop's checkpoint lives (until every message of it is acked, or its
//! invisible time passes). An expired orderly checkpoint is not re-put to the retry topic: the
//! queue is rewound to its first unacked message, which is delivered again from the queue with
//! its delivery count (`orderCountInfo`, the client's reconsumeTimes) raised; messages acked
//! past that point are skipped when read again.
//!
//! A pop that names the attempt id of the pop holding the lock (`needBlock`: the client lost its
//! answer and asks again) is not blocked: the queue is rewound as on expiry, without raising the
//! delivery counts (`mergeOffsetConsumedCount` keeps them for the same attempt), and the same
//! messages are popped again. Only the latest orderly pop's attempt id is kept, in memory, at most
//! [`MAX_ATTEMPT_ID`] bytes; after a restart the lock is waited out as before.
//!
//! Unlike Java (`consumerOrderInfo.json`), the order state lives in the POP state log like every
//! checkpoint (`persist.rs`: `ock`, `rw` and `rr` records); delivery counts older than the replay
//! point restart at 0.
//!
//! May import: nothing outside `core::pop`, and `core` to log the rewinds.

use super::persist::Rec;
use super::state::{CkId, PopTable, QueueKey};
use crate::core::Core;

/// The longest attempt id remembered (the SDKs send a UUID); a longer one is not matched.
pub const MAX_ATTEMPT_ID: usize = 128;

impl PopTable {
    /// Whether a live orderly checkpoint locks the queue.
    pub fn order_blocked(&self, key: &QueueKey) -> bool {
        self.queues.get(key).is_some_and(|q| q.cks.values().any(|c| c.order && !c.reviving))
    }

    /// Whether the queue is locked for a pop with `attempt`: not when the only live orderly
    /// checkpoint is that attempt's.
    pub fn order_blocked_for(&self, key: &QueueKey, attempt: Option<&str>) -> bool {
        self.order_blocked(key) && attempt.and_then(|a| self.attempt_ck(key, a)).is_none()
    }

    /// Remembers `attempt` as the id of the orderly pop that made checkpoint `ck`.
    pub fn set_order_attempt(&mut self, key: &QueueKey, ck: CkId, attempt: &str) {
        if let Some(q) = self.queues.get_mut(key) {
            q.order_attempt = (attempt.len() <= MAX_ATTEMPT_ID).then(|| (ck, attempt.to_owned()));
        }
    }

    /// The live orderly checkpoint made by the pop with `attempt`, if it is the only one.
    pub fn attempt_ck(&self, key: &QueueKey, attempt: &str) -> Option<CkId> {
        let q = self.queues.get(key)?;
        let (ck, id) = q.order_attempt.as_ref()?;
        let mut live = q.cks.iter().filter(|(_, c)| c.order && !c.reviving);
        match (live.next(), live.next()) {
            (Some((only, _)), None) if only == ck && id == attempt => Some(*ck),
            _ => None,
        }
    }

    /// Whether checkpoint `ck` is an orderly one.
    pub fn is_order_ck(&self, key: &QueueKey, ck: CkId) -> bool {
        self.queues.get(key).and_then(|q| q.cks.get(&ck)).is_some_and(|c| c.order)
    }

    /// Deliveries so far of `offset` before this one (0 on its first delivery).
    pub fn order_count(&self, key: &QueueKey, offset: i64) -> i32 {
        self.queues.get(key).and_then(|q| q.counts.get(&offset)).copied().unwrap_or(0)
    }

    /// Whether `offset` was acked past a rewind (then it is skipped, once).
    pub fn take_acked_ahead(&mut self, key: &QueueKey, offset: i64) -> bool {
        self.queues.get_mut(key).is_some_and(|q| q.acked_ahead.remove(&offset))
    }

    /// Rewinds the queue to the first unacked message of the expired orderly checkpoint `ck`
    /// and drops it; its acked messages are remembered to be skipped.
    pub fn rewind(&mut self, key: &QueueKey, ck: CkId) {
        self.rewind_counting(key, ck, true);
    }

    /// As [`Self::rewind`] for a pop retried with the same attempt id: the delivery counts stay.
    pub fn rewind_retried(&mut self, key: &QueueKey, ck: CkId) {
        self.rewind_counting(key, ck, false);
    }

    fn rewind_counting(&mut self, key: &QueueKey, ck: CkId, count: bool) {
        let Some(q) = self.queues.get_mut(key) else { return };
        let Some(c) = q.cks.get(&ck) else { return };
        let unacked: Vec<i64> = c.offsets.iter().filter(|(_, done)| !done).map(|(o, _)| *o).collect();
        let acked: Vec<i64> = c.offsets.iter().filter(|(_, done)| *done).map(|(o, _)| *o).collect();
        if let Some(&first) = unacked.first() {
            q.next = q.next.min(first);
            for o in unacked.iter().filter(|_| count) {
                *q.counts.entry(*o).or_default() += 1;
            }
            q.acked_ahead.extend(acked.into_iter().filter(|o| *o > first));
        }
        let floor = q.next;
        q.counts.retain(|o, _| *o >= floor);
        self.drop_ck(key, ck);
    }
}

impl Core {
    /// A pop retried with `attempt`: each queue whose lock that attempt holds is rewound
    /// (logged before the pop's own checkpoints), so the pop reads the same messages again.
    pub(super) async fn pop_retried(&self, group: &str, queues: &[(String, i32)], attempt: &str) {
        let mut recs = Vec::new();
        {
            let mut table = self.pop.table();
            for (topic, queue_id) in queues {
                let key = QueueKey { group: group.to_owned(), topic: topic.clone(), queue_id: *queue_id };
                if let Some(ck) = table.attempt_ck(&key, attempt) {
                    table.rewind_retried(&key, ck);
                    recs.push(Rec::RetryRewound { key, start: ck.0, pop_time: ck.1 });
                }
            }
        }
        if !recs.is_empty() {
            self.pop_log(&recs).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::NewCk;
    use super::*;

    #[test]
    fn an_orderly_queue_is_locked_until_acked_or_expired_then_rewound() {
        let key = QueueKey { group: "g".into(), topic: "T".into(), queue_id: 0 };
        let mut t = PopTable::default();
        let ck = NewCk { start: 0, pop_time: 0, invisible: 100, offsets: &[0, 1, 2], next: 3, rec: 0, order: true };
        let id = t.record(&key, ck, false);
        assert!(t.order_blocked(&key) && t.is_order_ck(&key, id));
        t.ack(&key, id, 0);
        t.ack(&key, id, 2);
        let e = t.take_expired(100, 10);
        assert!(e[0].order && !t.order_blocked(&key));
        t.rewind(&key, id);
        assert_eq!(t.next_offset(&key).0, Some(1), "rewound to the first unacked message");
        assert_eq!((t.order_count(&key, 1), t.order_count(&key, 2)), (1, 0));
        assert!(t.take_acked_ahead(&key, 2) && !t.take_acked_ahead(&key, 2), "skipped once");
        assert_eq!(t.committed(&key), Some(1));
    }

    #[test]
    fn only_the_attempt_holding_the_only_orderly_lock_passes_it() {
        let key = QueueKey { group: "g".into(), topic: "T".into(), queue_id: 0 };
        let mut t = PopTable::default();
        let ck = NewCk { start: 0, pop_time: 0, invisible: 100, offsets: &[0, 1], next: 2, rec: 0, order: true };
        let id = t.record(&key, ck, false);
        t.set_order_attempt(&key, id, "a1");
        assert_eq!(t.attempt_ck(&key, "a1"), Some(id));
        assert!(!t.order_blocked_for(&key, Some("a1")) && t.order_blocked_for(&key, Some("a2")));
        assert!(t.order_blocked_for(&key, None));
        // A second orderly checkpoint (a changed invisible time) locks the queue for every attempt.
        let other = NewCk { start: 1, pop_time: 5, invisible: 100, offsets: &[1], next: 2, rec: 0, order: true };
        t.record(&key, other, false);
        assert_eq!(t.attempt_ck(&key, "a1"), None);
        // An attempt id longer than MAX_ATTEMPT_ID is not remembered.
        t.set_order_attempt(&key, id, &"x".repeat(MAX_ATTEMPT_ID + 1));
        assert!(t.queues[&key].order_attempt.is_none());
        t.rewind_retried(&key, id);
        assert_eq!((t.next_offset(&key).0, t.order_count(&key, 0)), (Some(0), 0), "rewound, not counted");
    }
}
