//! `SubscriptionGroupConfig`: a consumer group's settings, as `subscriptionGroup.json` and
//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP carry them.
//!
//! May import: nothing outside `model/` (the area's rule: docs/architecture.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    pub group_name: String,
    pub consume_enable: bool,
    pub consume_from_min_enable: bool,
    pub consume_broadcast_enable: bool,
    pub consume_message_orderly: bool,
    pub retry_queue_nums: i32,
    pub retry_max_times: i32,
    pub broker_id: i64,
    pub which_broker_when_consume_slowly: i64,
    pub notify_consumer_ids_changed_enable: bool,
    pub group_sys_flag: i32,
    pub consume_timeout_minute: i32,
    pub attributes: BTreeMap<String, String>,
    /// 5.x's `groupRetryPolicy` and `subscriptionDataSet`, and whatever a newer release adds.
    #[serde(flatten)]
    pub extra: super::Extra,
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        Self {
            group_name: String::new(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            consume_message_orderly: false,
            retry_queue_nums: 1,
            retry_max_times: 16,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            group_sys_flag: 0,
            consume_timeout_minute: 15,
            attributes: BTreeMap::new(),
            extra: super::Extra::new(),
        }
    }
}

impl SubscriptionGroupConfig {
    pub fn named(group: &str) -> Self {
        Self { group_name: group.to_owned(), ..Self::default() }
    }
}

/// A consumer group's retry or dead-letter topic (`BrokerMetricsManager.isRetryOrDlqTopic`).
pub fn is_retry_or_dlq_topic(topic: &str) -> bool {
    topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
}

/// `MixAll.RETRY_GROUP_TOPIC_PREFIX`.
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
/// `MixAll.DLQ_GROUP_TOPIC_PREFIX`.
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";

pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
}

pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_GROUP_TOPIC_PREFIX}{group}")
}
