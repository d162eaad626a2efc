//! The message store: one append-only CommitLog shared by every topic, a ConsumeQueue per
//! topic/queue pointing into it, IndexFiles for lookups by key, a checkpoint for bounded
//! recovery. Byte-compatible with the Java broker's store directory.
//!
//! May import: `crate::model`, and `crate::telemetry` (a leaf: `flush.rs` records the flush latency
//! and group-commit batch sizes where they happen). It never sees wire types, so other front ends
//! can share it. The rule is the `store` line of docs/architecture.md, checked by tests/it/layering.rs.
//!
//! Inside, `state.rs` holds what the threads share (`Inner`); the services (`dispatch`, `flush`, `prefault`,
//! `housekeeping`, `recovery`, `retention`, `compaction::service`) work on it, and `message_store.rs` (the facade: open,
//! put, shutdown) starts them. Services never import the facade (tests/it/layering.rs).
//!
//! ```text
//! <root>/commitlog/00000000000000000000     records, 1 GiB segments (commit_log/record.rs)
//! <root>/consumequeue/<topic>/<queueId>/…   20-byte units: offset:i64 size:i32 tagsCode:i64
//! <root>/index/yyyyMMddHHmmssSSS           40-byte header, hash slots, 20-byte entries
//! <root>/config/logStartOffset.json         log start offsets (DeleteRecords, topic retention)
//! <root>/checkpoint                         physicMsgTimestamp logicsMsgTimestamp indexMsgTimestamp …
//! <root>/compacted/<topic>/<queueId>/     compacted queues: state, <gen>.log, <gen>.idx (compaction/)
//! <root>/abort                              present while running: its presence means a crash
//! <root>/lock                               exclusive process lock
//! <root>/timerwheel, timerlog/, config/timercheck   timer messages (timer/)
//! ```

mod admin;
pub mod checkpoint;
pub mod commit_log;
pub mod compaction;
pub mod config;
pub mod consume_queue;
mod disk_usage;
mod dispatch;
mod flush;
pub mod get;
mod group_commit;
mod housekeeping;
pub mod index;
pub mod log_start;
pub mod mapped_file;
pub mod mapped_file_queue;
mod message_store;
mod named;
mod prefault;
mod queue_ops;
mod recovery;
mod replication_io;
mod retention;
mod state;
#[cfg(test)]
mod test_support;
pub mod timer;

pub use admin::QueueUnits;
pub use commit_log::record::properties as record_properties;
pub use dispatch::SCHEDULE_TOPIC;
pub use get::{AcceptAll, GetMessageResult, GetMessageStatus, MessageFilter, QueryMessageResult};
pub use message_store::{MessageStore, PutMessageResult, PutStatus, READ_AFTER_SEND_WAIT};
pub use state::{now_ms, ArrivalListener, FlushFault};

pub use config::{FlushDiskType, StoreConfig};

use std::path::PathBuf;

/// A store failure. Messages name the file or setting involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("store directory {0} is in use by another process (lock held)")]
    Locked(PathBuf),
    #[error("store refuses writes: {0}")]
    NotWritable(String),
    #[error("illegal message: {0}")]
    MessageIllegal(String),
    #[error("store is shut down")]
    ShutDown,
    /// A topic that is not one directory entry below the store's root (`model::name`).
    #[error("illegal topic name {0:?}: not a single path component")]
    IllegalTopic(String),
}

impl StoreError {
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> StoreError {
        let context = context.into();
        move |source| StoreError::Io { context, source }
    }
}
