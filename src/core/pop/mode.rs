//! How a group consumes a topic, PULL or POP (`MessageRequestModeManager`): set by
//! SET_MESSAGE_REQUEST_MODE (`mqadmin setConsumeMode`), read by QUERY_ASSIGNMENT, persisted in
//! `messageRequestMode.json` in Java's shape:
//!
//! ```text
//!   {"messageRequestModeMap":{"<topic>":{"<group>":
//!       {"topic":"<topic>","consumerGroup":"<group>","mode":"POP","popShareQueueNum":0}}}}
//! ```
//!
//! Entries are set only for existing topics and groups (the door checks), so the table is
//! bounded by them.
//!
//! May import: `model`, `persist`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use crate::persist::ConfigFile;

/// The file's name in the config directory.
pub const FILE: &str = "messageRequestMode.json";

/// `MessageRequestMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Mode {
    #[default]
    #[serde(rename = "PULL")]
    Pull,
    #[serde(rename = "POP")]
    Pop,
}

/// `SetMessageRequestModeRequestBody`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RequestMode {
    pub topic: String,
    pub consumer_group: String,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub pop_share_queue_num: i32,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModeFile {
    #[serde(default)]
    message_request_mode_map: BTreeMap<String, BTreeMap<String, RequestMode>>,
}

pub struct RequestModes {
    state: Arc<RwLock<ModeFile>>,
    file: Arc<ConfigFile>,
}

impl RequestModes {
    /// Loads `path` (or its `.bak`); an unreadable file is reported and the table starts empty.
    pub fn load(path: PathBuf) -> Self {
        let parse = |b: &[u8]| crate::model::json::from_slice::<ModeFile>(b).map_err(|e| e.to_string());
        let file = crate::persist::load(&path, parse).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "messageRequestMode.json unreadable; request modes start empty");
            None
        });
        let state = Arc::new(RwLock::new(file.unwrap_or_default()));
        let source = state.clone();
        let snapshot = move || {
            let s = source.read().unwrap_or_else(|e| e.into_inner());
            serde_json::to_vec_pretty(&*s).unwrap_or_default()
        };
        Self { state, file: ConfigFile::new(path, Box::new(snapshot)) }
    }

    pub fn get(&self, topic: &str, group: &str) -> Option<RequestMode> {
        let s = self.state.read().unwrap_or_else(|e| e.into_inner());
        s.message_request_mode_map.get(topic).and_then(|g| g.get(group)).cloned()
    }

    /// Sets a mode and returns once the file holds it.
    pub async fn set(&self, mode: RequestMode) -> std::io::Result<()> {
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            let groups = s.message_request_mode_map.entry(mode.topic.clone()).or_default();
            groups.insert(mode.consumer_group.clone(), mode);
        }
        self.file.persist().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn modes_survive_a_reload_in_javas_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let m = RequestModes::load(path.clone());
        let mode =
            RequestMode { topic: "T".into(), consumer_group: "g".into(), mode: Mode::Pop, pop_share_queue_num: 0 };
        m.set(mode.clone()).await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"messageRequestModeMap\"") && text.contains("\"POP\""), "{text}");
        assert_eq!(RequestModes::load(path).get("T", "g"), Some(mode));
    }
}
