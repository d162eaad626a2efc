//! Topic configs (`TopicConfigManager.java`): `config/topics.json`, the system topics a broker
//! creates, and auto-creation through the default topic (TBW102).
//!
//! ```text
//! topics.json  {"dataVersion":{"counter":3,"stateVersion":0,"timestamp":…},
//!               "topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,…}}}
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use tracing::info;

use super::config::BrokerConfig;
use crate::model::{perm, DataVersion, TopicConfig, DEFAULT_TOPIC};

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct TopicsFile {
    data_version: DataVersion,
    topic_config_table: BTreeMap<String, TopicConfig>,
}

pub struct TopicConfigManager {
    path: PathBuf,
    state: RwLock<TopicsFile>,
}

/// Topics clients may not send to (`TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`).
pub const NOT_ALLOWED_SEND_TOPICS: &[&str] = &[
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
];

fn topic(name: &str, queues: i32, perm: i32) -> TopicConfig {
    TopicConfig {
        topic_name: name.to_owned(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm,
        ..TopicConfig::default()
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    crate::store::now_ms()
}

fn next_version(v: &mut DataVersion) {
    v.counter += 1;
    v.timestamp = now_ms();
}

impl TopicConfigManager {
    /// Loads `config/topics.json` and adds the system topics (`TopicConfigManager` constructor).
    pub fn load(config: &BrokerConfig) -> Result<Self, String> {
        let path = config.config_dir().join("topics.json");
        let parse = |b: &[u8]| crate::protocol::body::json::from_slice::<TopicsFile>(b).map_err(|e| e.to_string());
        let mut file = crate::persist::load(&path, parse)?.unwrap_or_default();
        let rw = perm::READ | perm::WRITE;
        let inherit_rw = perm::INHERIT | rw;
        let cluster = &config.broker_cluster_name;
        let mut system = vec![
            topic("SELF_TEST_TOPIC", 1, rw),
            topic("BenchmarkTest", 1024, rw),
            topic(cluster, 16, if config.cluster_topic_enable { inherit_rw } else { perm::INHERIT }),
            topic(&config.broker_name, 1, if config.broker_topic_enable { inherit_rw } else { perm::INHERIT }),
            topic("OFFSET_MOVED_EVENT", 1, rw),
            topic("SCHEDULE_TOPIC_XXXX", 18, rw),
            topic(&format!("{cluster}_REPLY_TOPIC"), 1, rw),
            topic(&format!("rmq_sys_REVIVE_LOG_{cluster}"), 8, rw),
            topic(&format!("rmq_sys_SYNC_BROKER_MEMBER_{}", config.broker_name), 1, perm::INHERIT),
            topic("RMQ_SYS_TRANS_HALF_TOPIC", 1, rw),
            topic("RMQ_SYS_TRANS_OP_HALF_TOPIC", 1, rw),
        ];
        if config.auto_create_topic_enable {
            system.push(topic(DEFAULT_TOPIC, config.default_topic_queue_nums, inherit_rw));
        }
        for t in system {
            file.topic_config_table.entry(t.topic_name.clone()).or_insert(t);
        }
        if file.data_version.timestamp == 0 {
            next_version(&mut file.data_version);
        }
        Ok(Self { path, state: RwLock::new(file) })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, TopicsFile> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, TopicsFile> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.read().topic_config_table.get(topic).cloned()
    }

    pub fn contains(&self, topic: &str) -> bool {
        self.read().topic_config_table.contains_key(topic)
    }

    /// The table and its version, for REGISTER_BROKER and GET_ALL_TOPIC_CONFIG.
    pub fn snapshot(&self) -> (DataVersion, BTreeMap<String, TopicConfig>) {
        let s = self.read();
        (s.data_version.clone(), s.topic_config_table.clone())
    }

    pub fn data_version(&self) -> DataVersion {
        self.read().data_version.clone()
    }

    /// Creates or replaces a topic; returns true if anything changed.
    pub fn update(&self, tc: TopicConfig) -> bool {
        let mut s = self.write();
        if s.topic_config_table.get(&tc.topic_name) == Some(&tc) {
            return false;
        }
        info!(
            topic = tc.topic_name,
            read = tc.read_queue_nums,
            write = tc.write_queue_nums,
            perm = tc.perm,
            "topic created or updated"
        );
        s.topic_config_table.insert(tc.topic_name.clone(), tc);
        next_version(&mut s.data_version);
        true
    }

    pub fn delete(&self, topic: &str) -> bool {
        let mut s = self.write();
        let removed = s.topic_config_table.remove(topic).is_some();
        if removed {
            info!(topic, "topic deleted");
            next_version(&mut s.data_version);
        }
        removed
    }

    /// `createTopicInSendMessageMethod`: an unknown topic is created from `default_topic` when
    /// that topic exists with the inherit bit. Returns the new config.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        client_queue_nums: i32,
        sys_flag: i32,
    ) -> Option<TopicConfig> {
        if let Some(t) = self.get(topic) {
            return Some(t);
        }
        let template = self.get(default_topic)?;
        if default_topic == DEFAULT_TOPIC && template.perm & perm::INHERIT == 0 {
            return None;
        }
        let queues = client_queue_nums.clamp(1, template.write_queue_nums.max(1));
        let tc = TopicConfig {
            topic_name: topic.to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: template.perm & !perm::INHERIT,
            topic_filter_type: template.topic_filter_type,
            topic_sys_flag: sys_flag,
            ..TopicConfig::default()
        };
        self.update(tc.clone());
        Some(tc)
    }

    /// `createTopicInSendMessageBackMethod`: retry/DLQ topics, created if absent.
    pub fn create_if_absent(&self, topic: &str, queues: i32, perm: i32) -> (TopicConfig, bool) {
        if let Some(t) = self.get(topic) {
            return (t, false);
        }
        let tc = TopicConfig {
            topic_name: topic.to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm,
            ..TopicConfig::default()
        };
        let created = self.update(tc.clone());
        (tc, created)
    }

    /// Slave: takes the master's table when its version differs; true if replaced.
    pub fn replace_all(&self, version: DataVersion, table: BTreeMap<String, TopicConfig>) -> bool {
        let mut s = self.write();
        if s.data_version == version {
            return false;
        }
        s.data_version = version;
        s.topic_config_table = table;
        true
    }

    /// A new data version without a table change (broker permission changed: the NameServer
    /// rebuilds routes only when the version moves).
    pub fn bump_version(&self) {
        next_version(&mut self.write().data_version);
    }

    /// Writes `topics.json`. Blocking.
    pub fn persist(&self) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(&*self.read()).unwrap_or_default();
        crate::persist::write_atomically(&self.path, &json)
    }
}
