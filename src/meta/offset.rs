//! Committed consumer offsets (`ConsumerOffsetManager.java`): `config/consumerOffset.json`,
//! the next offset to consume per (topic, group, queue).
//!
//! ```text
//! {"offsetTable":{"<topic>@<group>":{0:250,1:250}}, "dataVersion":{…}}   (Java writes bare keys)
//! ```
//!
//! May import: `model`, `persist`, `store` and modules of `meta/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::config::BrokerConfig;
use crate::model::DataVersion;
use crate::persist::ConfigFile;

type Table = BTreeMap<String, BTreeMap<i32, i64>>;

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct OffsetsFile {
    offset_table: Table,
    data_version: DataVersion,
    /// Members ferrocket does not model, written back as read.
    #[serde(flatten)]
    extra: crate::model::Extra,
}

/// topic -> group -> queue -> offset, looked up by `&str` (no allocation once known).
type Pulled = HashMap<String, HashMap<String, HashMap<i32, i64>>>;

pub struct ConsumerOffsetManager {
    table: Arc<Mutex<Table>>,
    /// Where each consumer's last pull of a queue ended (Java's pull offset table; for the
    /// in-flight metric, not persisted).
    pulled: Mutex<Pulled>,
    dirty: AtomicBool,
    file: Arc<ConfigFile>,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetManager {
    pub fn load(config: &BrokerConfig) -> Result<Self, String> {
        let path = config.config_dir().join("consumerOffset.json");
        let parse = |b: &[u8]| crate::model::json::from_slice::<OffsetsFile>(b).map_err(|e| e.to_string());
        let file = crate::persist::load(&path, parse)?.unwrap_or_default();
        let table = Arc::new(Mutex::new(file.offset_table));
        let source = table.clone();
        // Java 5.x also writes resetOffsetTable and pullOffsetTable: kept as read.
        let (loaded_version, extra) = (file.data_version, file.extra);
        let snapshot = move || {
            let file = OffsetsFile {
                offset_table: source.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                data_version: DataVersion { timestamp: crate::store::now_ms(), ..loaded_version.clone() },
                extra: extra.clone(),
            };
            serde_json::to_vec_pretty(&file).unwrap_or_default()
        };
        Ok(Self {
            table,
            pulled: Mutex::default(),
            dirty: AtomicBool::new(false),
            file: ConfigFile::new(path, Box::new(snapshot)),
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.table().entry(key(topic, group)).or_default().insert(queue_id, offset);
        self.dirty.store(true, Ordering::Release);
    }

    /// The committed offset, or -1.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> i64 {
        self.table().get(&key(topic, group)).and_then(|q| q.get(&queue_id)).copied().unwrap_or(-1)
    }

    /// Offsets of one (group, topic).
    pub fn queue_offsets(&self, group: &str, topic: &str) -> BTreeMap<i32, i64> {
        self.table().get(&key(topic, group)).cloned().unwrap_or_default()
    }

    /// A pull of `group` returned messages up to `next` (Java's `commitPullOffset`).
    pub fn record_pull(&self, group: &str, topic: &str, queue_id: i32, next: i64) {
        let mut pulled = self.pulled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queues) = pulled.get_mut(topic).and_then(|g| g.get_mut(group)) {
            queues.insert(queue_id, next);
            return;
        }
        pulled.entry(topic.to_owned()).or_default().entry(group.to_owned()).or_default().insert(queue_id, next);
    }

    /// Every pull offset: (topic, group) with its queues' offsets.
    pub fn pulled(&self) -> Vec<(String, String, BTreeMap<i32, i64>)> {
        let pulled = self.pulled.lock().unwrap_or_else(|e| e.into_inner());
        pulled
            .iter()
            .flat_map(|(t, groups)| {
                groups.iter().map(move |(g, q)| (t.clone(), g.clone(), q.iter().map(|(k, v)| (*k, *v)).collect()))
            })
            .collect()
    }

    /// Every committed offset: (topic, group) with its queues' offsets (metrics, at scrape time).
    pub fn all(&self) -> Vec<(String, String, BTreeMap<i32, i64>)> {
        self.table()
            .iter()
            .filter_map(|(k, q)| k.split_once('@').map(|(t, g)| (t.to_owned(), g.to_owned(), q.clone())))
            .collect()
    }

    /// Groups with offsets on `topic`.
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        let prefix = format!("{topic}@");
        self.table().keys().filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned)).collect()
    }

    pub fn remove_topic(&self, topic: &str) {
        self.pulled.lock().unwrap_or_else(|e| e.into_inner()).remove(topic);
        let prefix = format!("{topic}@");
        self.table().retain(|k, _| !k.starts_with(&prefix));
        self.dirty.store(true, Ordering::Release);
    }

    /// Forgets every offset `group` committed (Kafka's DeleteGroups); whether it had any.
    pub fn remove_group(&self, group: &str) -> bool {
        let mut t = self.table();
        let before = t.len();
        t.retain(|k, _| k.rsplit_once('@').is_none_or(|(_, g)| g != group));
        let removed = t.len() != before;
        drop(t);
        for groups in self.pulled.lock().unwrap_or_else(|e| e.into_inner()).values_mut() {
            groups.remove(group);
        }
        if removed {
            self.dirty.store(true, Ordering::Release);
        }
        removed
    }

    /// Forgets `group`'s offsets of `queues` of `topic` (Kafka's OffsetDelete); which of them it
    /// had.
    pub fn remove_queues(&self, group: &str, topic: &str, queues: &[i32]) -> Vec<i32> {
        let mut t = self.table();
        let k = key(topic, group);
        let Some(offsets) = t.get_mut(&k) else { return Vec::new() };
        let removed: Vec<i32> = queues.iter().copied().filter(|q| offsets.remove(q).is_some()).collect();
        if offsets.is_empty() {
            t.remove(&k);
        }
        drop(t);
        if !removed.is_empty() {
            self.dirty.store(true, Ordering::Release);
        }
        removed
    }

    /// Writes the file if anything changed since the last write (or `force`). Blocking.
    pub fn persist(&self, force: bool) -> std::io::Result<()> {
        if !self.dirty.swap(false, Ordering::AcqRel) && !force {
            return Ok(());
        }
        let written = self.file.persist_blocking();
        if written.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        written
    }
}

impl ConsumerOffsetManager {
    /// The whole table as `consumerOffset.json` text (GET_ALL_CONSUMER_OFFSET).
    pub fn to_json(&self) -> Vec<u8> {
        let file = OffsetsFile {
            offset_table: self.table().clone(),
            data_version: DataVersion::default(),
            extra: crate::model::Extra::new(),
        };
        serde_json::to_vec(&file).unwrap_or_default()
    }

    /// Slave: merges the master's offsets over its own.
    pub fn merge_json(&self, body: &[u8]) -> Result<(), String> {
        let file: OffsetsFile = crate::model::json::from_slice(body).map_err(|e| format!("consumer offsets: {e}"))?;
        let mut table = self.table();
        for (k, queues) in file.offset_table {
            table.entry(k).or_default().extend(queues);
        }
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// Topics `group` has offsets on (`whichTopicByConsumer`).
    pub fn topics_of_group(&self, group: &str) -> Vec<String> {
        let suffix = format!("@{group}");
        self.table().keys().filter_map(|k| k.strip_suffix(&suffix).map(str::to_owned)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_java_bare_keys_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig { store_path_root_dir: dir.path().to_owned(), ..BrokerConfig::default() };
        std::fs::create_dir_all(config.config_dir()).unwrap();
        std::fs::write(
            config.config_dir().join("consumerOffset.json"),
            r#"{"offsetTable":{"T@G":{0:250,1:7}},"dataVersion":{"counter":1,"timestamp":2}}"#,
        )
        .unwrap();
        let m = ConsumerOffsetManager::load(&config).unwrap();
        assert_eq!(m.query("G", "T", 0), 250);
        assert_eq!(m.query("G", "T", 2), -1);
        m.commit("G", "T", 2, 9);
        m.persist(false).unwrap();
        let again = ConsumerOffsetManager::load(&config).unwrap();
        assert_eq!(again.query("G", "T", 2), 9);
        assert_eq!(again.groups_of_topic("T"), vec!["G"]);
    }
}
