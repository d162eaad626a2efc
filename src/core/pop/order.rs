//! Orderly (FIFO) pops (`ConsumerOrderInfoManager`): a queue popped in order stays locked for
//! its group while the pop's checkpoint lives (until every message of it is acked, or its
//! invisible time passes). An expired orderly checkpoint is not re-put to the retry topic: the
//! queue is rewound to its first unacked message, which is delivered again from the queue with
//! its delivery count (`orderCountInfo`, the client's reconsumeTimes) raised; messages acked
//! past that point are skipped when read again.
//!
//! Unlike Java (`consumerOrderInfo.json`), the order state lives in the POP state log like every
//! checkpoint (`persist.rs`: `ock` and `rw` records); delivery counts older than the replay
//! point restart at 0.
//!
//! May import: nothing outside `core::pop`.

use super::state::{CkId, PopTable, QueueKey};

impl PopTable {
    /// Whether a live orderly checkpoint locks the queue.
    pub fn order_blocked(&self, key: &QueueKey) -> bool {
        self.queues.get(key).is_some_and(|q| q.cks.values().any(|c| c.order && !c.reviving))
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
        let Some(q) = self.queues.get_mut(key) else { return };
        let Some(c) = q.cks.get(&ck) else { return };
        let unacked: Vec<i64> = c.offsets.iter().filter(|(_, done)| !done).map(|(o, _)| *o).collect();
        let acked: Vec<i64> = c.offsets.iter().filter(|(_, done)| *done).map(|(o, _)| *o).collect();
        if let Some(&first) = unacked.first() {
            q.next = q.next.min(first);
            for o in &unacked {
                *q.counts.entry(*o).or_default() += 1;
            }
            q.acked_ahead.extend(acked.into_iter().filter(|o| *o > first));
        }
        let floor = q.next;
        q.counts.retain(|o, _| *o >= floor);
        self.drop_ck(key, ck);
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
}
