//! UPDATE_BROKER_CONFIG's changes written back to the broker's config file (Java's
//! `Configuration.persist` to `brokerConfigPath`, which `-c` sets), so that a restart keeps
//! them. Unlike Java, which rewrites the file with every key it knows, the file keeps its
//! comments and layout: changed keys are replaced in place or appended
//! (`properties::merge_properties`), atomically, with the previous file kept as `.bak`.
//!
//! May import: `crate::properties`, `crate::persist`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::persist::ConfigFile;

/// The broker's config file and the keys changed since start-up.
pub struct BrokerConfigFile {
    file: Option<Arc<ConfigFile>>,
    changed: Arc<Mutex<BTreeMap<String, String>>>,
}

impl BrokerConfigFile {
    /// `path`: where changes go; `None` when the broker started without a file.
    pub fn new(path: Option<PathBuf>) -> Self {
        let changed: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
        let file = path.map(|path| {
            let (keys, at) = (changed.clone(), path.clone());
            // This writer is the file's only writer: what it reads is what it last wrote (or
            // what the operator left there).
            let snapshot = move || {
                let text = std::fs::read(&at).unwrap_or_default();
                let updates: Vec<(String, String)> = keys
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                crate::properties::merge_properties(&text, &updates)
            };
            ConfigFile::new(path, Box::new(snapshot))
        });
        Self { file, changed }
    }

    /// Whether there is a file to write changes to.
    pub fn exists(&self) -> bool {
        self.file.is_some()
    }

    /// Records `pairs` and returns once the file holds them (and every earlier change).
    pub async fn record(&self, pairs: &[(String, String)]) -> std::io::Result<()> {
        let Some(file) = &self.file else { return Ok(()) };
        self.changed.lock().unwrap_or_else(|e| e.into_inner()).extend(pairs.iter().cloned());
        file.persist().await
    }

    pub fn path(&self) -> Option<&std::path::Path> {
        self.file.as_deref().map(ConfigFile::path)
    }
}
