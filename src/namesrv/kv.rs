//! KV config (`KVConfigManager.java`): namespace -> key -> value, persisted after every change.
//!
//! ```text
//! kvConfig.json  {"configTable":{"<namespace>":{"<key>":"<value>"}}}
//! ```
//! Written to a temporary file, fsync'd, then renamed over the old one; the previous content
//! is kept as `kvConfig.json.bak`, as Java does.
//!
//! May import: `persist`, `protocol` and modules of `namesrv/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

type Table = BTreeMap<String, BTreeMap<String, String>>;

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct KvFile {
    config_table: Table,
}

/// A KV file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KvError {
    #[error("cannot read KV config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("KV config {path} is not valid JSON: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot write KV config {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

pub struct KvConfigManager {
    path: PathBuf,
    table: Mutex<Table>,
    /// Serializes writers so files are replaced in order.
    write_lock: Mutex<()>,
}

impl KvConfigManager {
    /// Loads `path` if it exists.
    pub fn load(path: &Path) -> Result<Self, KvError> {
        let table = match std::fs::read(path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Table::new(),
            Ok(bytes) => {
                let file: KvFile = crate::protocol::body::json::from_slice(&bytes)
                    .map_err(|source| KvError::Parse { path: path.to_owned(), source })?;
                file.config_table
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Table::new(),
            Err(source) => return Err(KvError::Read { path: path.to_owned(), source }),
        };
        Ok(Self { path: path.to_owned(), table: Mutex::new(table), write_lock: Mutex::new(()) })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.table().get(namespace)?.get(key).cloned()
    }

    pub fn namespace(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.table().get(namespace).cloned()
    }

    /// Sets a value and persists. Blocking: call from a blocking context.
    pub fn put(&self, namespace: &str, key: &str, value: &str) -> Result<(), KvError> {
        self.table().entry(namespace.to_owned()).or_default().insert(key.to_owned(), value.to_owned());
        self.persist()
    }

    /// Deletes a value and persists. Blocking: call from a blocking context.
    pub fn delete(&self, namespace: &str, key: &str) -> Result<(), KvError> {
        {
            let mut table = self.table();
            let Some(ns) = table.get_mut(namespace) else { return Ok(()) };
            if ns.remove(key).is_none() {
                return Ok(());
            }
            if ns.is_empty() {
                table.remove(namespace);
            }
        }
        self.persist()
    }

    fn persist(&self) -> Result<(), KvError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let json = serde_json::to_vec_pretty(&KvFile { config_table: self.table().clone() }).unwrap_or_default();
        crate::persist::write_atomically(&self.path, &json)
            .map_err(|source| KvError::Write { path: self.path.clone(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_persist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("kvConfig.json");
        let kv = KvConfigManager::load(&path).unwrap();
        kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4").unwrap();
        kv.put("ns", "k", "v").unwrap();
        assert_eq!(kv.get("ns", "k").as_deref(), Some("v"));
        kv.delete("ns", "k").unwrap();
        assert_eq!(kv.get("ns", "k"), None);

        let again = KvConfigManager::load(&path).unwrap();
        assert_eq!(again.get("ORDER_TOPIC_CONFIG", "T").as_deref(), Some("broker-a:4"));
        assert_eq!(again.namespace("ns"), None);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"configTable\""));
        assert!(path.with_file_name("kvConfig.json.bak").exists());
    }

    #[test]
    fn corrupt_file_is_reported_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        std::fs::write(&path, "{not json").unwrap();
        let err = KvConfigManager::load(&path).err().unwrap().to_string();
        assert!(err.contains("kvConfig.json"), "{err}");
    }
}
