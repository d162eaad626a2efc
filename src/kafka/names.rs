//! Topic and group names as the Kafka door takes them in, checked by every API that names one
//! before anything is looked up, created or stored.
//!
//! ```text
//! topic  Kafka's rule [a-zA-Z0-9._-]{1,249}, not "." or ".."      else INVALID_TOPIC_EXCEPTION (17)
//!        not a RocketMQ system topic (rmq_sys_*, RMQ_SYS_*,       else TOPIC_AUTHORIZATION_FAILED (29)
//!        SCHEDULE_TOPIC_XXXX, TBW102, the cluster's and broker's
//!        names, <cluster>_REPLY_TOPIC, ...); %RETRY%/%DLQ% fail
//!        the rule above
//! group  printable ASCII without '@', '/', '\', 1..=249 bytes     else INVALID_GROUP_ID (24)
//!        not a RocketMQ system group (CID_RMQ_SYS_*)              else GROUP_AUTHORIZATION_FAILED (30)
//! ```
//! Groups are wider than RocketMQ's `[%|a-zA-Z0-9_-]` because Kafka groups commonly hold '.' or
//! ':'; '@' is refused because offsets are stored under `topic@group` keys (Java splits them on
//! '@'), and a group that also passes [`crate::model::name::check_group`] is the only kind that
//! becomes a RocketMQ subscription group with a `%RETRY%` topic.
//!
//! System names answer the authorization errors a Kafka broker gives a principal without ACLs on
//! a topic or group: Java clients fail fast on them with a clear exception, where the retriable
//! UNKNOWN_TOPIC_OR_PARTITION would leave a producer retrying until its delivery timeout and a
//! consumer polling for ever. Listings (Metadata for all topics) leave system topics out.

use super::api::error;
use super::api::Refusal;
use crate::meta::config::BrokerConfig;
use crate::model::name::shown;

pub const GROUP_AUTHORIZATION_FAILED: i16 = error::GROUP_AUTHORIZATION_FAILED;
pub const INVALID_GROUP_ID: i16 = error::INVALID_GROUP_ID;

pub use crate::meta::names::{is_system_group, is_system_topic, valid_kafka_topic as valid_topic_name};

/// A topic a Kafka request may name: valid for Kafka and not RocketMQ's own.
pub fn check_topic(config: &BrokerConfig, topic: &str) -> Result<(), Refusal> {
    if !valid_topic_name(topic) {
        return Err((
            error::INVALID_TOPIC_EXCEPTION,
            format!("'{}' is not a valid Kafka topic name ([a-zA-Z0-9._-], 1 to 249 characters)", shown(topic)),
        ));
    }
    if is_system_topic(config, topic) || is_reply_topic(config, topic) {
        return Err((error::TOPIC_AUTHORIZATION_FAILED, format!("topic '{topic}' is reserved by the broker")));
    }
    Ok(())
}

/// RocketMQ's request-reply topic, `<cluster>_REPLY_TOPIC`, which every broker creates at start
/// (Java adds it to `TopicValidator`'s system topics): the broker's own, not a Kafka topic.
pub fn is_reply_topic(config: &BrokerConfig, topic: &str) -> bool {
    topic.strip_suffix("_REPLY_TOPIC") == Some(config.broker_cluster_name.as_str())
}

/// A group a Kafka request may name.
pub fn check_group(group: &str) -> Result<(), Refusal> {
    if !crate::meta::names::valid_kafka_group(group) {
        return Err((
            INVALID_GROUP_ID,
            format!("group '{}': 1 to 249 printable ASCII characters, no '@', '/' or '\\'", shown(group)),
        ));
    }
    if is_system_group(group) {
        return Err((GROUP_AUTHORIZATION_FAILED, format!("group '{group}' is reserved by the broker")));
    }
    Ok(())
}

/// The error code of [`check_group`] (NONE when the group may be used).
pub fn group_code(group: &str) -> i16 {
    check_group(group).err().map_or(error::NONE, |(code, _)| code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_follow_kafka_and_hide_rocketmq() {
        let c = BrokerConfig::default();
        assert!(check_topic(&c, "orders.v1_x-2").is_ok());
        for bad in ["", ".", "..", "../x", "a/b", "a b", "%RETRY%g", "naïve", &"t".repeat(250)] {
            assert_eq!(check_topic(&c, bad).unwrap_err().0, error::INVALID_TOPIC_EXCEPTION, "{bad:?}");
        }
        let reply = format!("{}_REPLY_TOPIC", c.broker_cluster_name);
        for system in ["RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer", "SCHEDULE_TOPIC_XXXX", "TBW102", &reply] {
            assert_eq!(check_topic(&c, system).unwrap_err().0, error::TOPIC_AUTHORIZATION_FAILED, "{system}");
        }
        assert_eq!(check_topic(&c, &c.broker_cluster_name.clone()).unwrap_err().0, error::TOPIC_AUTHORIZATION_FAILED);
    }

    #[test]
    fn groups_cannot_split_offset_keys_or_name_paths() {
        for good in ["g", "app.consumer:1", "CID_x", "console-consumer-42", &"g".repeat(249)] {
            assert_eq!(group_code(good), error::NONE, "{good:?}");
        }
        for bad in ["", "a@b", "../x", "a\\b", "tab\tx", "sp ace", "naïve", &"g".repeat(250)] {
            assert_eq!(group_code(bad), INVALID_GROUP_ID, "{bad:?}");
        }
        assert_eq!(group_code("CID_RMQ_SYS_TRANS"), GROUP_AUTHORIZATION_FAILED);
    }
}
