//! Compacted topics (Kafka `cleanup.policy=compact`, RocketMQ 5 `+cleanup.policy=COMPACTION`):
//! the latest record per key survives at its original queue offset (gaps allowed), tombstones go
//! `delete.retention.ms` after the pass that first kept them, and retention never deletes a
//! record a compacted queue still needs. One mechanism for both doors: both read through
//! `MessageStore::get_message`, which serves offsets below a queue's compacted end from here.
//!
//! ```text
//! queue offsets   [base ............ end)[end ............ max)
//!                  compacted log (log.rs)  ConsumeQueue -> CommitLog, as for any topic
//! <root>/compacted/<topic>/<queueId>/   state, <gen>.log, <gen>.idx   (log.rs)
//! ```
//! Unlike Java's `CompactionStore`, which copies every record of a compacted topic into its own
//! log as it is dispatched and compacts that copy, only the survivors of a pass are written here:
//! each record is written once more at most, and a queue with few keys costs little disk. The
//! records keep the CommitLog's format, so pulls and fetches hand them out unchanged.
//!
//! Files: `policy.rs` (a topic's policy, a record's key and tombstone flag), `log.rs` (a
//! generation on disk and its atomic swap), `pass.rs` (one pass, bounded map), `table.rs` (the
//! queues and the policy lookup), `service.rs` (the background round, retention's floor, reads).
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

pub mod log;
pub mod pass;
pub mod policy;
pub mod service;
pub mod table;

pub use pass::CompactionStats;
pub use policy::CompactionPolicy;
pub use table::{CompactionLookup, CompactionTable, CompactionTxn};

#[cfg(test)]
mod tests;
