//! Transactions ended here recently, so that a second end of the same transaction stores nothing
//! twice. A producer answers every check it is sent; when a check interval is shorter than its
//! answer (or a check reaches two producers of the group), two commits of one open transaction
//! arrive, each naming its own copy of the half message (the check service re-puts the half before
//! asking), and each stored the message on its real topic: Java's `EndTransactionProcessor` does
//! the same. Here the ends of one transaction ([`TransactionKey`]: group, id, born host and time,
//! the same on every copy) take turns, and an end of one already finished is answered without
//! storing anything: SUCCESS when it decides the same, refused when it contradicts.
//!
//! Bounded and in memory: the last [`MAX_FINISHED`] transactions are remembered; after a restart,
//! or past that many, a late second commit stores the message again (a duplicate, never a loss),
//! as before.
//!
//! May import: `broker` (transaction keys).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::TransactionKey;

/// How many ended transactions are remembered.
pub const MAX_FINISHED: usize = 8192;

/// One transaction's turn: `None` until it is ended, then whether it was committed.
pub type Slot = Arc<tokio::sync::Mutex<Option<bool>>>;

#[derive(Default)]
pub struct FinishedTransactions(Mutex<(HashMap<TransactionKey, Slot>, VecDeque<TransactionKey>)>);

impl FinishedTransactions {
    /// The turn of the transaction `key`; lock it for as long as its end is being written.
    pub fn slot(&self, key: &TransactionKey) -> Slot {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (map, order) = &mut *g;
        if let Some(s) = map.get(key) {
            return s.clone();
        }
        let s = Slot::default();
        map.insert(key.clone(), s.clone());
        order.push_back(key.clone());
        // The oldest go first; one still being ended keeps its slot through its holders.
        while map.len() > MAX_FINISHED {
            let Some(oldest) = order.pop_front() else { break };
            map.remove(&oldest);
        }
        s
    }

    /// Forgets `key` when its end failed and nothing was decided, so the table holds decided
    /// transactions (and those being ended) only.
    pub fn forget_undecided(&self, key: &TransactionKey, slot: &Slot) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (map, order) = &mut *g;
        let undecided = slot.try_lock().is_ok_and(|s| s.is_none());
        if undecided && map.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) && Arc::strong_count(slot) <= 2 {
            map.remove(key);
            order.retain(|k| k != key);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap().0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: usize) -> TransactionKey {
        TransactionKey {
            group: "PG".into(),
            id: format!("id-{id}"),
            born_host: "127.0.0.1:1".parse().unwrap(),
            born_timestamp: 1,
        }
    }

    #[tokio::test]
    async fn one_transaction_one_slot_and_the_table_is_bounded() {
        let t = FinishedTransactions::default();
        let (a, b) = (t.slot(&key(0)), t.slot(&key(0)));
        assert!(Arc::ptr_eq(&a, &b), "two ends of one transaction share a slot");
        *a.lock().await = Some(true);
        assert_eq!(*t.slot(&key(0)).lock().await, Some(true));
        for i in 1..=MAX_FINISHED + 10 {
            t.slot(&key(i));
        }
        assert_eq!(t.len(), MAX_FINISHED);
        assert_eq!(*t.slot(&key(0)).lock().await, None, "the oldest was forgotten");
    }

    #[tokio::test]
    async fn a_failed_end_is_forgotten_unless_another_waits() {
        let t = FinishedTransactions::default();
        let s = t.slot(&key(1));
        let waiting = t.slot(&key(1));
        t.forget_undecided(&key(1), &s);
        assert_eq!(t.len(), 1, "another end of it holds the slot");
        drop(waiting);
        t.forget_undecided(&key(1), &s);
        assert_eq!(t.len(), 0);
        let decided = t.slot(&key(2));
        *decided.lock().await = Some(false);
        t.forget_undecided(&key(2), &decided);
        assert_eq!(t.len(), 1, "a decided transaction is kept");
    }
}
