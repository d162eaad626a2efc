//! The puts waiting for their bytes to be on disk under SYNC_FLUSH: the flush thread takes them
//! all at once and completes every one its single msync covers (group commit).
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// Puts waiting for their bytes to be on disk.
#[derive(Default)]
pub struct GroupCommit {
    pending: Mutex<Vec<(u64, oneshot::Sender<bool>)>>,
    wake: Condvar,
}

impl GroupCommit {
    /// Registers a put whose data ends at `end_offset`; the receiver gets `true` once flushed,
    /// `false` if flushing failed.
    pub fn request(&self, end_offset: u64) -> oneshot::Receiver<bool> {
        let (tx, rx) = oneshot::channel();
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let first = pending.is_empty();
        pending.push((end_offset, tx));
        drop(pending);
        // The flush thread waits only while nothing is pending (checked under the same lock), so
        // only the first request of a batch needs to wake it: a notify is a futex syscall even
        // when nobody waits, and under load every other put would pay one.
        if first {
            self.wake.notify_one();
        }
        rx
    }

    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits up to `max_wait` for requests and takes them all.
    pub(super) fn take(&self, max_wait: Duration) -> Vec<(u64, oneshot::Sender<bool>)> {
        let guard = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let (mut guard, _) =
            self.wake.wait_timeout_while(guard, max_wait, |p| p.is_empty()).unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *guard)
    }

    pub(super) fn fail_all(&self) {
        for (_, tx) in std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner())) {
            let _ = tx.send(false);
        }
    }
}
