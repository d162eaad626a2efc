//! `TopicConfig` and `DataVersion`, in the JSON shape Java writes them (fastjson, camelCase).
//!
//! May import: nothing outside `model/` (the area's rule: docs/architecture.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The topic a producer names as `defaultTopic` to have a topic auto-created (`TopicValidator`).
pub const DEFAULT_TOPIC: &str = "TBW102";

/// `TimerMessageStore.TIMER_TOPIC`: where timer messages wait for their time.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopicFilterType {
    #[default]
    #[serde(rename = "SINGLE_TAG")]
    SingleTag,
    #[serde(rename = "MULTI_TAG")]
    MultiTag,
}

impl TopicFilterType {
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleTag => "SINGLE_TAG",
            Self::MultiTag => "MULTI_TAG",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "SINGLE_TAG" => Some(Self::SingleTag),
            "MULTI_TAG" => Some(Self::MultiTag),
            _ => None,
        }
    }
}

/// `TopicConfig.java`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    pub topic_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_filter_type: TopicFilterType,
    pub topic_sys_flag: i32,
    pub order: bool,
    pub attributes: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: super::Extra,
}

impl Default for TopicConfig {
    fn default() -> Self {
        Self {
            topic_name: String::new(),
            read_queue_nums: 16,
            write_queue_nums: 16,
            perm: super::perm::READ | super::perm::WRITE,
            topic_filter_type: TopicFilterType::SingleTag,
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
            extra: super::Extra::new(),
        }
    }
}

/// `DataVersion.java`: bumped whenever a broker's topic table changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    pub counter: i64,
    pub state_version: i64,
    pub timestamp: i64,
}
