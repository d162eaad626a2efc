//! The in-memory POP table: per (group, stored topic, queue) the next offset to pop and the
//! checkpoints of messages popped and not yet acked or revived, plus the revive timer (a
//! `BTreeMap` by deadline). Pure: every method takes `now` in milliseconds; no I/O.
//!
//! ```text
//!   QueueKey(group, topic, queue) -> QueueState { next, cks: (start, popTime) -> Ck }
//!   timers: (deadline, seq) -> (QueueKey, start, popTime)
//!   committed offset = lowest offset not yet acked or revived, else next
//! ```
//!
//! Bounds (state a client creates): at most [`MAX_INFLIGHT_PER_QUEUE`] unacked messages per
//! queue (further pops of it find nothing, like Java's popInflightMessageThreshold) and
//! [`MAX_CHECKPOINTS`] checkpoints in all; every checkpoint expires at its deadline. A queue
//! without checkpoints is dropped (its `next` is then the committed consumer offset).
//!
//! May import: nothing outside `core::pop`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Unacked messages one queue may have before pops of it stop (Java's
/// `popInflightMessageThreshold` default).
pub const MAX_INFLIGHT_PER_QUEUE: usize = 10_000;
/// Checkpoints kept in all (Java's `popCkMaxBufferSize` default).
pub const MAX_CHECKPOINTS: usize = 200_000;

/// A checkpoint to record.
#[derive(Debug, Clone, Copy)]
pub struct NewCk<'a> {
    pub start: i64,
    pub pop_time: i64,
    pub invisible: i64,
    pub offsets: &'a [i64],
    pub next: i64,
    /// At or below the state-log offset its record will get.
    pub rec: i64,
    /// An orderly (FIFO) pop.
    pub order: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueKey {
    pub group: String,
    /// The stored topic (the retry topic for redelivered messages).
    pub topic: String,
    pub queue_id: i32,
}

/// Identifies a checkpoint within its queue: its start offset and pop time.
pub type CkId = (i64, i64);

#[derive(Debug)]
pub(super) struct Ck {
    pub(super) deadline: i64,
    pub(super) seq: u64,
    /// Offsets popped, ascending, with whether each is done (acked or revived).
    pub(super) offsets: Vec<(i64, bool)>,
    /// Taken by the revive timer; removed once re-put.
    pub(super) reviving: bool,
    /// At or below the state-log offset of this checkpoint's record (`persist.rs`).
    rec: i64,
    /// An orderly pop: the queue stays locked while it lives (`order.rs`).
    pub(super) order: bool,
}

#[derive(Debug, Default)]
pub(super) struct QueueState {
    pub(super) next: i64,
    pub(super) cks: BTreeMap<CkId, Ck>,
    inflight: usize,
    /// Orderly pops: deliveries so far of offsets redelivered from the queue.
    pub(super) counts: BTreeMap<i64, i32>,
    /// Orderly pops: offsets acked past a rewind, skipped when read again.
    pub(super) acked_ahead: BTreeSet<i64>,
    /// Orderly pops: the latest one's checkpoint and attempt id (`order.rs`).
    pub(super) order_attempt: Option<(CkId, String)>,
}

/// Messages of a checkpoint whose invisible time passed unacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    pub key: QueueKey,
    pub ck: CkId,
    pub offsets: Vec<i64>,
    /// An orderly pop's checkpoint: rewound in place instead of re-put.
    pub order: bool,
}

/// What an ack found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    Acked,
    /// No such checkpoint or message: already acked, revived, or never popped.
    Stale,
}

#[derive(Debug, Default)]
pub struct PopTable {
    pub(super) queues: HashMap<QueueKey, QueueState>,
    timers: BTreeMap<(i64, u64), (QueueKey, CkId)>,
    seq: u64,
    checkpoints: usize,
}

impl PopTable {
    /// The offset the next pop of `key` reads from, or `None` when the queue has no state (the
    /// caller then starts from the committed offset), and whether the queue may be popped.
    pub fn next_offset(&self, key: &QueueKey) -> (Option<i64>, bool) {
        match self.queues.get(key) {
            Some(q) => (Some(q.next), q.inflight < MAX_INFLIGHT_PER_QUEUE && self.checkpoints < MAX_CHECKPOINTS),
            None => (None, self.checkpoints < MAX_CHECKPOINTS),
        }
    }

    /// Records a pop of `ck.offsets` (ascending) read from `ck.start`; the queue continues at
    /// `ck.next`. Returns the checkpoint's id: its pop time moves on by a millisecond while the
    /// id is taken (`exact`: kept as given, for a replay; an existing id is left alone). An
    /// empty `offsets` only moves `next` (filtered messages).
    pub fn record(&mut self, key: &QueueKey, ck: NewCk<'_>, exact: bool) -> CkId {
        let q = self.queues.entry(key.clone()).or_default();
        q.next = q.next.max(ck.next);
        let mut pop_time = ck.pop_time;
        while !exact && q.cks.contains_key(&(ck.start, pop_time)) {
            pop_time += 1;
        }
        let id = (ck.start, pop_time);
        if ck.offsets.is_empty() || q.cks.contains_key(&id) {
            return id;
        }
        self.seq += 1;
        let deadline = pop_time.saturating_add(ck.invisible);
        let offsets = ck.offsets.iter().map(|o| (*o, false)).collect();
        q.cks.insert(id, Ck { deadline, seq: self.seq, offsets, reviving: false, rec: ck.rec, order: ck.order });
        q.inflight += ck.offsets.len();
        self.checkpoints += 1;
        self.timers.insert((deadline, self.seq), (key.clone(), id));
        id
    }

    /// Drops a checkpoint outright (a replayed revive).
    pub fn drop_ck(&mut self, key: &QueueKey, id: CkId) {
        let Some(q) = self.queues.get_mut(key) else { return };
        if let Some(c) = q.cks.remove(&id) {
            q.inflight -= c.offsets.iter().filter(|(_, done)| !done).count();
            self.timers.remove(&(c.deadline, c.seq));
            self.checkpoints -= 1;
        }
    }

    /// The lowest state-log offset a live checkpoint's record may sit at.
    pub fn min_rec(&self) -> Option<i64> {
        self.queues.values().flat_map(|q| q.cks.values()).map(|c| c.rec).min()
    }

    /// Every queue with state.
    pub fn keys(&self) -> Vec<QueueKey> {
        self.queues.keys().cloned().collect()
    }

    /// Marks `offset` of checkpoint `ck` done.
    pub fn ack(&mut self, key: &QueueKey, ck: CkId, offset: i64) -> AckOutcome {
        let Some(q) = self.queues.get_mut(key) else { return AckOutcome::Stale };
        let Some(c) = q.cks.get_mut(&ck) else { return AckOutcome::Stale };
        if c.reviving {
            return AckOutcome::Stale;
        }
        let Ok(i) = c.offsets.binary_search_by_key(&offset, |(o, _)| *o) else { return AckOutcome::Stale };
        if c.offsets[i].1 {
            return AckOutcome::Stale;
        }
        c.offsets[i].1 = true;
        q.inflight -= 1;
        if c.offsets.iter().all(|(_, done)| *done) {
            let (deadline, seq) = (c.deadline, c.seq);
            q.cks.remove(&ck);
            self.timers.remove(&(deadline, seq));
            self.checkpoints -= 1;
        }
        AckOutcome::Acked
    }

    /// Whether `offset` of checkpoint `ck` is popped and neither acked nor being revived.
    pub fn is_pending(&self, key: &QueueKey, ck: CkId, offset: i64) -> bool {
        let Some(c) = self.queues.get(key).and_then(|q| q.cks.get(&ck)) else { return false };
        !c.reviving && c.offsets.binary_search(&(offset, false)).is_ok()
    }

    /// The offset the group has consumed up to in `key`: its lowest message neither acked nor
    /// revived, else the next offset to pop. `None` when the queue has no state.
    pub fn committed(&self, key: &QueueKey) -> Option<i64> {
        let q = self.queues.get(key)?;
        let lowest = q.cks.values().flat_map(|c| c.offsets.iter()).filter(|(_, done)| !done).map(|(o, _)| *o).min();
        Some(lowest.map_or(q.next, |l| l.min(q.next)))
    }

    /// Drops the state of a queue with no checkpoints left (its offset is committed by then).
    pub fn forget_if_idle(&mut self, key: &QueueKey) {
        if self.queues.get(key).is_some_and(|q| q.cks.is_empty()) {
            self.queues.remove(key);
        }
    }

    /// The earliest revive deadline.
    pub fn next_deadline(&self) -> Option<i64> {
        self.timers.keys().next().map(|(d, _)| *d)
    }

    /// Takes the checkpoints whose deadline is at or before `now`, marking them reviving (acks
    /// of them are stale from here on). Call [`revived`](Self::revived) once re-put.
    pub fn take_expired(&mut self, now: i64, max: usize) -> Vec<Expired> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(entry) = self.timers.first_entry() else { break };
            if entry.key().0 > now {
                break;
            }
            let (key, ck) = entry.remove();
            let Some(c) = self.queues.get_mut(&key).and_then(|q| q.cks.get_mut(&ck)) else { continue };
            c.reviving = true;
            let offsets = c.offsets.iter().filter(|(_, done)| !done).map(|(o, _)| *o).collect();
            out.push(Expired { key, ck, offsets, order: c.order });
        }
        out
    }

    /// A revived checkpoint's messages are re-put: drops it.
    pub fn revived(&mut self, e: &Expired) {
        self.drop_ck(&e.key, e.ck);
    }

    /// A re-put failed: the checkpoint is retried at `retry_at`.
    pub fn revive_later(&mut self, e: &Expired, retry_at: i64) {
        let Some(c) = self.queues.get_mut(&e.key).and_then(|q| q.cks.get_mut(&e.ck)) else { return };
        c.reviving = false;
        c.deadline = retry_at;
        self.timers.insert((retry_at, c.seq), (e.key.clone(), e.ck));
    }

    /// Checkpoints held in all.
    pub fn checkpoints(&self) -> usize {
        self.checkpoints
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_ck(start: i64, pop_time: i64, invisible: i64, offsets: &[i64], next: i64) -> NewCk<'_> {
        NewCk { start, pop_time, invisible, offsets, next, rec: 0, order: false }
    }

    fn key() -> QueueKey {
        QueueKey { group: "g".into(), topic: "T".into(), queue_id: 0 }
    }

    #[test]
    fn the_offset_moves_over_the_acked_prefix_only() {
        let mut t = PopTable::default();
        let ck = t.record(&key(), new_ck(0, 1000, 60_000, &[0, 1, 2], 3), false);
        assert_eq!(t.committed(&key()), Some(0));
        assert_eq!(t.ack(&key(), ck, 1), AckOutcome::Acked);
        assert_eq!(t.committed(&key()), Some(0), "a gap at 0 holds the offset");
        assert_eq!(t.ack(&key(), ck, 0), AckOutcome::Acked);
        assert_eq!(t.committed(&key()), Some(2));
        assert_eq!(t.ack(&key(), ck, 0), AckOutcome::Stale, "acked twice");
        assert_eq!(t.ack(&key(), ck, 2), AckOutcome::Acked);
        assert_eq!(t.committed(&key()), Some(3));
        assert_eq!(t.checkpoints(), 0);
        assert_eq!(t.next_deadline(), None);
        t.forget_if_idle(&key());
        assert_eq!(t.next_offset(&key()).0, None);
    }

    #[test]
    fn an_expired_checkpoint_is_revived_and_its_handle_turns_stale() {
        let mut t = PopTable::default();
        let ck = t.record(&key(), new_ck(5, 1000, 10_000, &[5, 6], 7), false);
        t.ack(&key(), ck, 6);
        assert_eq!(t.next_deadline(), Some(11_000));
        assert!(t.take_expired(10_999, 10).is_empty());
        let e = t.take_expired(11_000, 10);
        assert_eq!(e, vec![Expired { key: key(), ck, offsets: vec![5], order: false }]);
        assert_eq!(t.ack(&key(), ck, 5), AckOutcome::Stale, "being revived");
        t.revived(&e[0]);
        assert_eq!(t.ack(&key(), ck, 5), AckOutcome::Stale, "revived");
        assert_eq!(t.committed(&key()), Some(7));
        assert_eq!(t.checkpoints(), 0);
    }

    #[test]
    fn a_failed_revive_is_retried_and_unknown_checkpoints_are_stale() {
        let mut t = PopTable::default();
        let ck = t.record(&key(), new_ck(0, 0, 100, &[0], 1), false);
        assert_eq!(t.ack(&key(), (0, 1), 0), AckOutcome::Stale, "other pop time");
        let e = t.take_expired(100, 10);
        t.revive_later(&e[0], 1100);
        assert_eq!(t.next_deadline(), Some(1100));
        assert_eq!(t.ack(&key(), ck, 0), AckOutcome::Acked, "back in the table until re-put");
    }

    #[test]
    fn two_pops_in_one_millisecond_get_distinct_checkpoints() {
        let mut t = PopTable::default();
        let a = t.record(&key(), new_ck(0, 7, 100, &[0], 1), false);
        let b = t.record(&key(), new_ck(0, 7, 100, &[0], 1), false);
        assert_ne!(a, b);
        assert_eq!(t.checkpoints(), 2);
    }

    #[test]
    fn pops_of_a_full_queue_stop() {
        let mut t = PopTable::default();
        let offsets: Vec<i64> = (0..MAX_INFLIGHT_PER_QUEUE as i64).collect();
        t.record(&key(), new_ck(0, 0, 100, &offsets, offsets.len() as i64), false);
        assert!(!t.next_offset(&key()).1);
    }
}
