//! Every compacted queue of the store (`CompactionStore`'s table), loaded from
//! `<root>/compacted/` at start, and the lookup that says which topics are compacted (set by
//! whoever owns the topic configs: the broker, from `topics.json` attributes).
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use super::super::StoreError;
use super::log::CompactedQueue;
use super::policy::CompactionPolicy;
use crate::model::name::{is_path_component, shown};

/// Which topics are compacted, and how: asked once per queue per compaction round and per
/// retention pass, never on a read.
pub type CompactionLookup = Arc<dyn Fn(&str) -> Option<CompactionPolicy> + Send + Sync>;

/// What compaction must know of Kafka transactions (the core's transaction state answers), as
/// Kafka's cleaner: it never passes the last stable offset, and records of aborted transactions
/// and control records are not kept (nor do they supersede a committed value).
pub trait CompactionTxn: Send + Sync {
    /// The first offset compaction must not reach: the first offset of the earliest open
    /// transaction of the queue, else `end`.
    fn clean_limit(&self, topic: &str, queue_id: i32, end: i64) -> i64;
    /// Whether a committed reader sees the record at `offset` (not aborted, not a control record).
    fn committed(&self, topic: &str, queue_id: i32, offset: i64, properties: &str) -> bool;
}

type Queues = HashMap<String, HashMap<i32, Arc<CompactedQueue>>>;

pub struct CompactionTable {
    root: PathBuf,
    queues: RwLock<Queues>,
    lookup: RwLock<Option<CompactionLookup>>,
    txn: RwLock<Option<Arc<dyn CompactionTxn>>>,
    /// Tests: the next pass stops where a crash before its commit would.
    pub(in crate::store) crash_next_pass: AtomicBool,
}

impl CompactionTable {
    /// Loads every `<root>/<topic>/<queueId>/` below `root` (the store's `compaction/`).
    pub fn load(root: &Path) -> Result<Self, StoreError> {
        let mut queues = Queues::new();
        if let Ok(topics) = std::fs::read_dir(root) {
            for t in topics.flatten() {
                let topic = t.file_name().to_string_lossy().into_owned();
                let Ok(entries) = std::fs::read_dir(t.path()) else { continue };
                for q in entries.flatten() {
                    if let Ok(queue_id) = q.file_name().to_string_lossy().parse::<i32>() {
                        let cq = CompactedQueue::load(&q.path())?;
                        queues.entry(topic.clone()).or_default().insert(queue_id, Arc::new(cq));
                    }
                }
            }
        }
        Ok(Self {
            root: root.to_owned(),
            queues: RwLock::new(queues),
            lookup: RwLock::new(None),
            txn: RwLock::new(None),
            crash_next_pass: AtomicBool::new(false),
        })
    }

    pub fn set_lookup(&self, lookup: CompactionLookup) {
        *self.lookup.write().unwrap_or_else(|e| e.into_inner()) = Some(lookup);
    }

    pub fn set_txn(&self, txn: Arc<dyn CompactionTxn>) {
        *self.txn.write().unwrap_or_else(|e| e.into_inner()) = Some(txn);
    }

    pub fn txn(&self) -> Option<Arc<dyn CompactionTxn>> {
        self.txn.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The policy of `topic`, if it is compacted.
    pub fn policy(&self, topic: &str) -> Option<CompactionPolicy> {
        let lookup = self.lookup.read().unwrap_or_else(|e| e.into_inner()).clone();
        lookup.and_then(|l| l(topic))
    }

    /// The compacted queue, if one was ever written (reads).
    pub fn get(&self, topic: &str, queue_id: i32) -> Option<Arc<CompactedQueue>> {
        self.queues.read().unwrap_or_else(|e| e.into_inner()).get(topic)?.get(&queue_id).cloned()
    }

    /// The compacted queue, made (empty, no file yet) if new (passes).
    pub fn get_or_create(&self, topic: &str, queue_id: i32) -> Result<Arc<CompactedQueue>, StoreError> {
        if let Some(q) = self.get(topic, queue_id) {
            return Ok(q);
        }
        if !is_path_component(topic) || queue_id < 0 {
            return Err(StoreError::IllegalTopic(format!("{}/{queue_id}", shown(topic))));
        }
        let mut map = self.queues.write().unwrap_or_else(|e| e.into_inner());
        let per_topic = map.entry(topic.to_owned()).or_default();
        if let Some(q) = per_topic.get(&queue_id) {
            return Ok(q.clone());
        }
        let q = Arc::new(CompactedQueue::load(&self.root.join(topic).join(queue_id.to_string()))?);
        per_topic.insert(queue_id, q.clone());
        Ok(q)
    }

    /// Forgets a deleted topic's compacted queues and deletes their files.
    pub fn remove_topic(&self, topic: &str) -> Result<(), StoreError> {
        if !is_path_component(topic) {
            return Err(StoreError::IllegalTopic(shown(topic)));
        }
        let removed = self.queues.write().unwrap_or_else(|e| e.into_inner()).remove(topic);
        // A pass running on one of them finishes on its own handles; its files go with the dir.
        for q in removed.into_iter().flat_map(|m| m.into_values()) {
            let _wait_for_pass = q.pass.lock().unwrap_or_else(|e| e.into_inner());
        }
        let dir = self.root.join(topic);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(StoreError::io(format!("delete {}", dir.display())))?;
        }
        Ok(())
    }

    pub(in crate::store) fn take_crash_fault(&self) -> bool {
        self.crash_next_pass.swap(false, Ordering::AcqRel)
    }
}
