//! The state the store's threads share (`DefaultMessageStore`'s fields): the CommitLog, the
//! ConsumeQueues, the index, the checkpoint, the group-commit queue, positions and signals.
//! The services (dispatch, flush, housekeeping, recovery, retention) and the `MessageStore`
//! facade all work on [`Inner`]; this module imports none of them, so the arrows run one way:
//!
//! ```text
//! message_store (facade, threads) --> dispatch, flush, housekeeping, recovery, retention --> state
//! state --> commit_log, consume_queue, index, checkpoint, group_commit, config, compaction::table
//! ```

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing::error;

use super::checkpoint::Checkpoint;
use super::commit_log::CommitLog;
use super::compaction::table::CompactionTable;
use super::consume_queue::ConsumeQueueTable;
use super::group_commit::GroupCommit;
use super::index::IndexService;
use super::{FlushDiskType, StoreConfig};

/// Called by the dispatcher with each topic and queue id that got messages, once per dispatch
/// round.
pub type ArrivalListener = Arc<dyn Fn(&str, i32) + Send + Sync>;

/// A disk fault to simulate on the next CommitLog flush (tests).
#[derive(Clone, Copy, Debug)]
pub enum FlushFault {
    Fail,
    Stall(Duration),
}

/// State shared by the store's threads.
pub struct Inner {
    /// The boot config: what the store's files and threads were made with.
    pub(super) config: StoreConfig,
    /// The config now (boot values plus UPDATE_BROKER_CONFIG's changes to the keys
    /// [`StoreConfig::with_live`] takes): what the services read per use.
    pub(super) live: RwLock<Arc<StoreConfig>>,
    pub(super) commit_log: CommitLog,
    pub(super) queues: ConsumeQueueTable,
    pub(super) index: IndexService,
    /// Compacted queues and which topics are compacted.
    pub(super) compaction: CompactionTable,
    pub(super) checkpoint: Checkpoint,
    pub(super) group_commit: GroupCommit,
    pub(super) reput_from: AtomicU64,
    /// Records the dispatcher left out of the consume queues (`dispatch::skip`).
    pub(super) skipped_records: AtomicU64,
    pub(super) last_dispatched_timestamp: AtomicI64,
    pub(super) disk_full: AtomicBool,
    pub(super) running: AtomicBool,
    pub(super) poison: Mutex<Option<String>>,
    pub(super) flush_fault: Mutex<Option<FlushFault>>,
    /// Disk usage percent forced by tests; `u32::MAX` = measure.
    pub(super) disk_usage_override: std::sync::atomic::AtomicU32,
    pub(super) dispatch_wake: (Mutex<bool>, Condvar),
    /// The dispatcher is (about to be) asleep: only then do appends pay for a wake-up.
    pub(super) dispatcher_idle: AtomicBool,
    pub(super) stop_wake: (Mutex<()>, Condvar),
    pub(super) arrival: RwLock<Option<ArrivalListener>>,
    pub(super) total_memory: u64,
    /// Notified after every append (replication to slaves follows it).
    pub(super) appended: Arc<tokio::sync::Notify>,
    /// Notified after every dispatch round (readers waiting for acknowledged messages).
    pub(super) dispatched: tokio::sync::Notify,
}

impl Inner {
    /// The config now; read it per use (see `live`).
    pub fn live(&self) -> Arc<StoreConfig> {
        self.live.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn set_live(&self, next: &StoreConfig) {
        let mut live = self.live.write().unwrap_or_else(|e| e.into_inner());
        *live = Arc::new(live.with_live(next));
        self.commit_log.files().set_random_reads(!live.data_read_ahead_enable);
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Sleeps up to `d`, waking early when the store stops; false once stopped.
    pub fn sleep_while_running(&self, d: Duration) -> bool {
        let (lock, cv) = &self.stop_wake;
        let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = cv.wait_timeout_while(guard, d, |_| self.is_running()).unwrap_or_else(|e| e.into_inner());
        self.is_running()
    }

    pub fn poisoned(&self) -> Option<String> {
        self.poison.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Poisons the store with `why` unless it already is; `true` if this call did.
    pub fn poison(&self, why: String) -> bool {
        let mut poison = self.poison.lock().unwrap_or_else(|e| e.into_inner());
        let first = poison.is_none();
        poison.get_or_insert(why);
        first
    }

    /// Writes the CommitLog's deferred records, then tells the dispatcher and replication about
    /// them. A failed write poisons the store; `Err` says so, now and on every later call (the
    /// CommitLog keeps answering that the records are lost).
    pub fn commit(&self) -> Result<(), String> {
        match self.commit_log.commit() {
            Ok(false) => Ok(()),
            Ok(true) => {
                self.appended.notify_waiters();
                self.wake_dispatcher();
                Ok(())
            }
            Err(e) => {
                if self.poison(format!("writing deferred CommitLog records failed: {e}")) {
                    error!(error = %e, "writing deferred CommitLog records failed; the store refuses writes from now on");
                }
                Err(self.poisoned().unwrap_or_else(|| e.to_string()))
            }
        }
    }

    pub(super) fn disk_usage_override(&self) -> Option<u32> {
        Some(self.disk_usage_override.load(Ordering::Acquire)).filter(|p| *p != u32::MAX)
    }

    pub(super) fn set_disk_usage_override(&self, percent: Option<u32>) {
        self.disk_usage_override.store(percent.unwrap_or(u32::MAX), Ordering::Release);
    }

    pub(super) fn take_flush_fault(&self) -> Option<FlushFault> {
        self.flush_fault.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// How far the dispatcher may go: flushed data under SYNC_FLUSH, written data otherwise.
    pub fn confirm_offset(&self) -> u64 {
        match self.config.flush_disk_type {
            FlushDiskType::SyncFlush => self.commit_log.files().flushed_where(),
            FlushDiskType::AsyncFlush => self.commit_log.max_offset(),
        }
    }

    /// Called after new data became dispatchable. Costs a lock and a futex wake only when the
    /// dispatcher sleeps (a busy dispatcher finds the data on its next round); the fence pairs
    /// with the one in [`Self::wait_for_dispatch_work`], so one of the two always sees the other.
    pub fn wake_dispatcher(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if !self.dispatcher_idle.load(Ordering::SeqCst) {
            return;
        }
        let (lock, cv) = &self.dispatch_wake;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_one();
    }

    /// Sleeps up to `max` unless `has_work` says there is something to dispatch, or until woken.
    pub fn wait_for_dispatch_work(&self, max: Duration, has_work: impl Fn() -> bool) {
        let (lock, cv) = &self.dispatch_wake;
        let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        self.dispatcher_idle.store(true, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        if has_work() {
            self.dispatcher_idle.store(false, Ordering::SeqCst);
            return;
        }
        let (mut woken, _) = cv.wait_timeout_while(guard, max, |w| !*w).unwrap_or_else(|e| e.into_inner());
        *woken = false;
        self.dispatcher_idle.store(false, Ordering::SeqCst);
    }

    pub fn notify_arrival(&self, topic: &str, queue_id: i32) {
        let listener = self.arrival.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(l) = listener {
            l(topic, queue_id);
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Physical memory, for the "in memory" read heuristics (`accessMessageInMemoryMaxRatio`).
pub(super) fn total_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(8 << 30, |kb| kb * 1024)
}
