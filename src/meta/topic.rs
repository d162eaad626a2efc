//! Topic configs (`TopicConfigManager.java`): `config/topics.json`, the system topics a broker
//! creates, and auto-creation through the default topic (TBW102).
//!
//! ```text
//! topics.json  {"dataVersion":{"counter":3,"stateVersion":0,"timestamp":…},
//!               "topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,…}}}
//! ```
//!
//! May import: `model`, `persist`, `store` and modules of `meta/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tracing::info;

use super::config::BrokerConfig;
use crate::model::{perm, DataVersion, TopicConfig, DEFAULT_TOPIC};
use crate::persist::ConfigFile;

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct TopicsFile {
    data_version: DataVersion,
    topic_config_table: BTreeMap<String, TopicConfig>,
    /// Members ferrocket does not model, written back as read.
    #[serde(flatten)]
    extra: crate::model::Extra,
}

pub struct TopicConfigManager {
    state: Arc<RwLock<TopicsFile>>,
    file: Arc<ConfigFile>,
    /// Slave: topics learned from replicated records, and when, until the master's table has
    /// them (or shows they were deleted).
    learned: Mutex<HashMap<String, Instant>>,
}

/// What the hot paths read of a topic's config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicView {
    pub perm: i32,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub topic_filter_type: crate::model::TopicFilterType,
}

impl TopicView {
    pub fn of(tc: &TopicConfig) -> Self {
        Self {
            perm: tc.perm,
            read_queue_nums: tc.read_queue_nums,
            write_queue_nums: tc.write_queue_nums,
            topic_filter_type: tc.topic_filter_type,
        }
    }
}

/// Topics clients may not send to (`TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`).
pub const NOT_ALLOWED_SEND_TOPICS: &[&str] = &[
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    // Not in Java's list: a client sending here names the REAL_TOPIC the wheel delivers to.
    crate::model::TIMER_TOPIC,
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

/// Puts a topic into the table under its write lock and moves the data version.
fn insert(s: &mut TopicsFile, tc: TopicConfig) {
    info!(
        topic = tc.topic_name,
        read = tc.read_queue_nums,
        write = tc.write_queue_nums,
        perm = tc.perm,
        "topic created or updated"
    );
    s.topic_config_table.insert(tc.topic_name.clone(), tc);
    next_version(&mut s.data_version);
}

impl TopicConfigManager {
    /// Loads `config/topics.json` and adds the system topics (`TopicConfigManager` constructor).
    pub fn load(config: &BrokerConfig) -> Result<Self, String> {
        let path = config.config_dir().join("topics.json");
        let parse = |b: &[u8]| crate::model::json::from_slice::<TopicsFile>(b).map_err(|e| e.to_string());
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
        if config.trace_topic_enable && !config.msg_trace_topic_name.is_empty() {
            system.push(topic(&config.msg_trace_topic_name, 1, rw));
        }
        if config.timer_wheel_enable {
            system.push(topic(crate::model::TIMER_TOPIC, 1, rw));
        }
        if config.auto_create_topic_enable {
            system.push(topic(DEFAULT_TOPIC, config.default_topic_queue_nums, inherit_rw));
        }
        for t in system {
            file.topic_config_table.entry(t.topic_name.clone()).or_insert(t);
        }
        if file.data_version.timestamp == 0 {
            next_version(&mut file.data_version);
        }
        let state = Arc::new(RwLock::new(file));
        let source = state.clone();
        let snapshot = move || {
            let s = source.read().unwrap_or_else(|e| e.into_inner());
            serde_json::to_vec_pretty(&*s).unwrap_or_default()
        };
        Ok(Self { state, file: ConfigFile::new(path, Box::new(snapshot)), learned: Mutex::default() })
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

    /// The few numbers the send and pull paths need, without cloning the config.
    pub fn view(&self, topic: &str) -> Option<TopicView> {
        self.read().topic_config_table.get(topic).map(TopicView::of)
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
        insert(&mut s, tc);
        true
    }

    /// Changes a topic's `attributes` under the write lock (Kafka topic configs live there); the
    /// data version moves if they changed. `None`: no such topic.
    pub fn modify_attributes<R>(&self, topic: &str, f: impl FnOnce(&mut BTreeMap<String, String>) -> R) -> Option<R> {
        let mut s = self.write();
        let tc = s.topic_config_table.get_mut(topic)?;
        let before = tc.attributes.clone();
        let out = f(&mut tc.attributes);
        if tc.attributes != before {
            info!(topic, attributes = ?tc.attributes, "topic attributes changed");
            next_version(&mut s.data_version);
        }
        Some(out)
    }

    /// Changes a topic's config under the write lock (the check and the change are one step, so
    /// two requests growing the same topic cannot both pass); the data version moves if it
    /// changed. `None`: no such topic.
    pub fn modify<R>(&self, topic: &str, f: impl FnOnce(&mut TopicConfig) -> R) -> Option<R> {
        let mut s = self.write();
        let tc = s.topic_config_table.get_mut(topic)?;
        let before = tc.clone();
        let out = f(tc);
        if *tc != before {
            info!(topic, read_queue_nums = tc.read_queue_nums, write_queue_nums = tc.write_queue_nums, "topic changed");
            next_version(&mut s.data_version);
        }
        Some(out)
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
    /// that topic exists with the inherit bit (TBW102 never has it while auto-creation is off).
    /// Returns the topic's config.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        client_queue_nums: i32,
        sys_flag: i32,
        auto_create_enabled: bool,
    ) -> Option<TopicConfig> {
        if let Some(t) = self.get(topic) {
            return Some(t);
        }
        let template = self.get(default_topic)?;
        let inherits = template.perm & perm::INHERIT != 0 && (default_topic != DEFAULT_TOPIC || auto_create_enabled);
        if !inherits {
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
        Some(self.insert_if_absent(tc).0)
    }

    /// `createTopicInSendMessageBackMethod`: retry/DLQ topics, created if absent.
    pub fn create_if_absent(&self, topic: &str, queues: i32, perm: i32, sys_flag: i32) -> (TopicConfig, bool) {
        if let Some(t) = self.get(topic) {
            return (t, false);
        }
        let tc = TopicConfig {
            topic_name: topic.to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm,
            topic_sys_flag: sys_flag,
            ..TopicConfig::default()
        };
        self.insert_if_absent(tc)
    }

    /// Adds `tc` unless its topic exists (checked again under the write lock: two requests may
    /// race to create the same topic). Returns the topic's config and whether it was added.
    fn insert_if_absent(&self, tc: TopicConfig) -> (TopicConfig, bool) {
        let mut s = self.write();
        if let Some(existing) = s.topic_config_table.get(&tc.topic_name) {
            return (existing.clone(), false);
        }
        insert(&mut s, tc.clone());
        (tc, true)
    }

    /// Slave: makes sure a topic whose message it just dispatched exists with at least
    /// `queue_id + 1` queues, created as the master's defaults create it (read-write,
    /// `default_queues` queues), so consumers can read it before (or without) the next metadata
    /// sync. True if the table changed; the caller persists and registers.
    pub fn learn(&self, topic: &str, queue_id: i32, default_queues: i32) -> bool {
        let covers = |tc: &TopicConfig| queue_id < tc.read_queue_nums.max(tc.write_queue_nums);
        if self.read().topic_config_table.get(topic).is_some_and(covers) {
            return false;
        }
        let mut s = self.write();
        let queues = match s.topic_config_table.get(topic) {
            Some(tc) if covers(tc) => return false,
            Some(tc) => tc.read_queue_nums.max(tc.write_queue_nums).max(queue_id + 1),
            None => default_queues.max(queue_id + 1),
        };
        let tc = s.topic_config_table.entry(topic.to_owned()).or_insert_with(|| TopicConfig {
            topic_name: topic.to_owned(),
            perm: perm::READ | perm::WRITE,
            ..TopicConfig::default()
        });
        tc.read_queue_nums = queues;
        tc.write_queue_nums = queues;
        next_version(&mut s.data_version);
        drop(s);
        info!(topic, queues, "topic learned from replicated messages");
        self.learned.lock().unwrap_or_else(|e| e.into_inner()).insert(topic.to_owned(), Instant::now());
        true
    }

    /// Slave: takes the master's table when its version differs; true if replaced. A learned
    /// topic missing from it stays when the table was fetched before the topic was learned (the
    /// master creates a topic before storing its first message, so a later table has it unless
    /// the topic was deleted).
    pub fn replace_all(
        &self,
        version: DataVersion,
        mut table: BTreeMap<String, TopicConfig>,
        fetched: Instant,
    ) -> bool {
        let mut s = self.write();
        if s.data_version == version {
            return false;
        }
        let mut learned = self.learned.lock().unwrap_or_else(|e| e.into_inner());
        learned.retain(|topic, at| {
            if table.contains_key(topic) || *at <= fetched {
                return false;
            }
            if let Some(tc) = s.topic_config_table.get(topic) {
                table.insert(topic.clone(), tc.clone());
            }
            true
        });
        s.data_version = version;
        s.topic_config_table = table;
        true
    }

    /// A new data version without a table change (broker permission changed: the NameServer
    /// rebuilds routes only when the version moves).
    pub fn bump_version(&self) {
        next_version(&mut self.write().data_version);
    }

    /// Returns once `topics.json` holds every change made so far (one writer, bursts coalesced).
    pub async fn persist(&self) -> std::io::Result<()> {
        self.file.persist().await
    }

    /// [`Self::persist`] for shutdown and blocking threads.
    pub fn persist_blocking(&self) -> std::io::Result<()> {
        self.file.persist_blocking()
    }
}
