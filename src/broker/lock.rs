//! Queue locks for orderly consumers (`RebalanceLockManager`): one owner client per
//! (group, queue), refreshed by re-locking, expiring 60 s after the last refresh.
//!
//! May import: `protocol` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::protocol::body::client::MessageQueue;

/// `rocketmq.broker.rebalance.lockMaxLiveTime`.
pub const LOCK_MAX_LIVE: Duration = Duration::from_secs(60);

#[derive(Default)]
pub struct RebalanceLockManager {
    locks: Mutex<HashMap<(String, MessageQueue), (String, Instant)>>,
}

impl RebalanceLockManager {
    /// Locks what it can for `client`; returns the queues now held by it.
    pub fn try_lock_batch(&self, group: &str, mqs: &[MessageQueue], client: &str) -> Vec<MessageQueue> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let mut ok = Vec::new();
        for mq in mqs {
            let key = (group.to_owned(), mq.clone());
            let free = match locks.get(&key) {
                None => true,
                Some((owner, at)) => owner == client || now.duration_since(*at) > LOCK_MAX_LIVE,
            };
            if free {
                locks.insert(key, (client.to_owned(), now));
                ok.push(mq.clone());
            }
        }
        ok
    }

    /// Releases the queues `client` holds.
    pub fn unlock_batch(&self, group: &str, mqs: &[MessageQueue], client: &str) {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        for mq in mqs {
            let key = (group.to_owned(), mq.clone());
            if locks.get(&key).is_some_and(|(owner, _)| owner == client) {
                locks.remove(&key);
            }
        }
    }

    /// `isLockAllExpired`: true when no queue of `group` has a live lock. While an orderly
    /// consumer holds locks, a message it sends back past its retries goes to the DLQ at once.
    pub fn is_lock_all_expired(&self, group: &str) -> bool {
        let locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        !locks.iter().any(|((g, _), (_, at))| g == group && at.elapsed() <= LOCK_MAX_LIVE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(q: i32) -> MessageQueue {
        MessageQueue { broker_name: "b".into(), queue_id: q, topic: "T".into() }
    }

    #[test]
    fn one_owner_per_queue_until_unlocked() {
        let m = RebalanceLockManager::default();
        assert_eq!(m.try_lock_batch("G", &[mq(0), mq(1)], "c1").len(), 2);
        assert_eq!(m.try_lock_batch("G", &[mq(0), mq(2)], "c2"), vec![mq(2)]);
        assert_eq!(m.try_lock_batch("G", &[mq(0)], "c1"), vec![mq(0)], "owner re-locks");
        assert_eq!(m.try_lock_batch("other", &[mq(0)], "c2"), vec![mq(0)], "per group");
        m.unlock_batch("G", &[mq(0)], "c2");
        assert_eq!(m.try_lock_batch("G", &[mq(0)], "c2"), vec![], "only the owner unlocks");
        m.unlock_batch("G", &[mq(0)], "c1");
        assert_eq!(m.try_lock_batch("G", &[mq(0)], "c2"), vec![mq(0)]);
    }

    #[test]
    fn lock_all_expired_per_group() {
        let m = RebalanceLockManager::default();
        assert!(m.is_lock_all_expired("G"));
        m.try_lock_batch("G", &[mq(0)], "c1");
        assert!(!m.is_lock_all_expired("G"));
        assert!(m.is_lock_all_expired("other"));
        m.unlock_batch("G", &[mq(0)], "c1");
        assert!(m.is_lock_all_expired("G"));
    }
}
