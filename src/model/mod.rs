//! Domain types shared by every area: topic configuration, data versions, permissions.
//! No I/O and no wire framing here.
//!
//! May import: nothing from this crate.
//!
//! ```text
//! TopicConfig  {"attributes":{},"order":false,"perm":6,"readQueueNums":4,
//!               "topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}
//! DataVersion  {"counter":12,"stateVersion":0,"timestamp":1700000000000}
//! ```
//! (the JSON shapes of `config/topics.json` and of the broker's registration body)

pub mod group;
pub mod json;
pub mod message;
pub mod name;
pub mod perm;
mod topic;

pub use topic::{DataVersion, TopicConfig, TopicFilterType, DEFAULT_TOPIC, TIMER_TOPIC};

/// Members of a Java JSON object that ferrocket does not model (a newer release's, or ones it
/// has no use for, such as a 5.x group's `groupRetryPolicy`): kept as read and written back, so
/// a config file makes the round trip Java → ferrocket → Java without loss.
pub type Extra = std::collections::BTreeMap<String, serde_json::Value>;
