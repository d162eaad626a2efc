//! The metadata strings Kafka consumers commit with their offsets. The offsets themselves are
//! RocketMQ's (`consumerOffset.json`); the strings, which RocketMQ has no place for, live in
//! `config/kafkaCommitMetadata.json` (written atomically when one changes; most clients commit
//! none, so the file stays small or absent).
//!
//! ```text
//! {"<group>":{"<topic>":{"0":"metadata of partition 0"}}}
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::persist::ConfigFile;

type Table = BTreeMap<String, BTreeMap<String, BTreeMap<i32, String>>>;

pub struct CommitMetadata {
    table: Arc<Mutex<Table>>,
    file: Arc<ConfigFile>,
}

impl CommitMetadata {
    pub fn open(path: &Path) -> Result<Self, String> {
        let parse = |b: &[u8]| serde_json::from_slice::<Table>(b).map_err(|e| e.to_string());
        let table = Arc::new(Mutex::new(crate::persist::load(path, parse)?.unwrap_or_default()));
        let shared = table.clone();
        let snapshot =
            move || serde_json::to_vec(&*shared.lock().unwrap_or_else(|e| e.into_inner())).unwrap_or_default();
        Ok(Self { table, file: ConfigFile::new(path.to_owned(), Box::new(snapshot)) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `metadata` ("" forgets it); returns once the file holds it, if anything changed.
    pub async fn set(&self, group: &str, topic: &str, partition: i32, metadata: &str) {
        let changed = {
            let mut t = self.lock();
            if metadata.is_empty() {
                let removed = t.get_mut(group).and_then(|g| g.get_mut(topic)).and_then(|p| p.remove(&partition));
                if let Some(g) = t.get_mut(group) {
                    g.retain(|_, parts| !parts.is_empty());
                }
                t.retain(|_, topics| !topics.is_empty());
                removed.is_some()
            } else {
                let slot = t.entry(group.to_owned()).or_default().entry(topic.to_owned()).or_default();
                slot.insert(partition, metadata.to_owned()).as_deref() != Some(metadata)
            }
        };
        if changed {
            // A failed write is logged by the writer; the offset commit itself stands.
            let _ = self.file.persist().await;
        }
    }

    /// Forgets all of `group`'s metadata (DeleteGroups).
    pub async fn remove_group(&self, group: &str) {
        let removed = self.lock().remove(group).is_some();
        if removed {
            let _ = self.file.persist().await;
        }
    }

    pub fn get(&self, group: &str, topic: &str, partition: i32) -> String {
        self.lock().get(group).and_then(|g| g.get(topic)).and_then(|p| p.get(&partition)).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn metadata_survives_a_reopen_and_empty_forgets_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kafkaCommitMetadata.json");
        let m = CommitMetadata::open(&path).unwrap();
        m.set("g", "t", 0, "checkpoint-7").await;
        m.set("g", "t", 1, "").await;
        assert_eq!(CommitMetadata::open(&path).unwrap().get("g", "t", 0), "checkpoint-7");
        m.set("g", "t", 0, "").await;
        let again = CommitMetadata::open(&path).unwrap();
        assert_eq!(again.get("g", "t", 0), "");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
    }
}
