//! Keyed delayed operations of one group (Kafka's `timer.schedule(key, ...)` / `timer.cancel(key)`).
//!
//! Each scheduled operation is a spawned tokio task that sleeps until its deadline and then calls
//! back into the coordinator through a `Weak` (it never keeps the coordinator alive). Scheduling a
//! key again replaces (aborts) the previous operation of that key; a token, unique process-wide,
//! makes a task that already woke up but lost the race for the lock a no-op.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::Coordinator;

/// What to do when a timer fires (the lambdas GroupMetadataManager hands to its timer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TimerAction {
    /// Initial rebalance of a group that was Empty: complete, or extend while members keep arriving.
    InitialRebalance { delay_ms: i32, remaining_ms: i32 },
    /// The rebalance timeout of a join phase ran out.
    CompleteJoin,
    /// Not every member sent SyncGroup within the rebalance timeout of this generation.
    ExpireSync { generation: i32 },
    /// Session timeout of a member (or of a pending member id handed out with MEMBER_ID_REQUIRED).
    ExpireHeartbeat(String),
}

/// The timer key: one join, one sync and one heartbeat operation per member at most.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum TimerKey {
    Join,
    Sync,
    Heartbeat(String),
}

impl TimerAction {
    pub(super) fn key(&self) -> TimerKey {
        match self {
            TimerAction::InitialRebalance { .. } | TimerAction::CompleteJoin => TimerKey::Join,
            TimerAction::ExpireSync { .. } => TimerKey::Sync,
            TimerAction::ExpireHeartbeat(member) => TimerKey::Heartbeat(member.clone()),
        }
    }
}

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// The scheduled operations of one group. Dropping it (the group is deleted, the coordinator is
/// dropped) aborts them all.
pub(super) struct Timers {
    owner: Weak<Coordinator>,
    group_id: String,
    active: HashMap<TimerKey, (u64, AbortHandle)>,
}

impl Timers {
    pub(super) fn new(owner: Weak<Coordinator>, group_id: String) -> Timers {
        Timers { owner, group_id, active: HashMap::new() }
    }

    /// Schedules `action` after `delay_ms`, replacing any operation with the same key.
    /// Must be called within a tokio runtime.
    pub(super) fn schedule(&mut self, action: TimerAction, delay_ms: i64) {
        let key = action.key();
        self.cancel(&key);
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_millis(delay_ms.max(0) as u64);
        let owner = self.owner.clone();
        let group_id = self.group_id.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            if let Some(coordinator) = owner.upgrade() {
                coordinator.fire(&group_id, token, action);
            }
        });
        self.active.insert(key, (token, task.abort_handle()));
    }

    pub(super) fn cancel(&mut self, key: &TimerKey) {
        if let Some((_, task)) = self.active.remove(key) {
            task.abort();
        }
    }

    /// True (and forgets the entry) when `token` is still the live operation of `key`.
    pub(super) fn take_if_current(&mut self, key: &TimerKey, token: u64) -> bool {
        match self.active.get(key) {
            Some((live, _)) if *live == token => {
                self.active.remove(key);
                true
            }
            _ => false,
        }
    }
}

impl Drop for Timers {
    fn drop(&mut self) {
        for (_, (_, task)) in self.active.drain() {
            task.abort();
        }
    }
}
