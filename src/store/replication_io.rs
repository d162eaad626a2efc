//! What replication reads from and writes to the store: the master's CommitLog data and its
//! append signal (`ha::master`), the slave's append of the bytes the master shipped
//! (`ha::slave`).
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::sync::Arc;

use super::config::FlushDiskType;
use super::message_store::MessageStore;
use super::{now_ms, StoreError};

impl MessageStore {
    /// Slave side of replication: appends bytes the master stored at `offset` and lets the
    /// dispatcher build queues and index from them.
    pub fn append_replicated(&self, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        if !self.inner.is_running() {
            return Err(StoreError::ShutDown);
        }
        self.inner.commit_log.append_replicated(offset, data, now_ms())?;
        if self.inner.config.flush_disk_type == FlushDiskType::SyncFlush {
            self.inner.group_commit.wake();
        } else {
            self.inner.wake_dispatcher();
        }
        Ok(())
    }

    /// Notified after every append.
    pub fn append_signal(&self) -> Arc<tokio::sync::Notify> {
        self.inner.appended.clone()
    }

    /// Written bytes from `offset` to the end of its segment (master side of replication).
    pub fn commit_log_data(&self, offset: u64) -> Option<super::mapped_file::MappedSlice> {
        self.inner.commit_log.data_from(offset)
    }
}
