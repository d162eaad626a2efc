//! Topic and group names both doors check where they enter, in one place: RocketMQ's rule
//! (`model::name`, Java's `TopicValidator`), Kafka's rule (`Topic.validate`), and which names
//! belong to the broker itself. The front ends map a refusal to their own codes.
//!
//! ```text
//! RocketMQ topic  [%|a-zA-Z0-9_-]{1,127} (retry/DLQ 255)   model::name::check_topic
//! Kafka topic     [a-zA-Z0-9._-]{1,249}, not "." or ".."   valid_kafka_topic
//! Kafka group     printable ASCII without '@' '/' '\'      valid_kafka_group
//! system topic    rmq_sys_*, RMQ_SYS_*, TBW102, SCHEDULE_TOPIC_XXXX, ..., the cluster's and
//!                 the broker's own names                   is_system_topic
//! system group    CID_RMQ_SYS_*                            is_system_group
//! ```
//! Every name either rule accepts is a single path component (no '/', '\\', "." or ".."), which
//! the store checks again where it touches the disk.
//!
//! May import: `model`, `meta::config`.

use super::config::BrokerConfig;

/// Kafka's `Topic.MAX_NAME_LENGTH`; Kafka groups take the same bound here.
pub const KAFKA_MAX_NAME_LENGTH: usize = 249;

/// Kafka's `Topic.validate`: `[a-zA-Z0-9._-]{1,249}`, not "." or "..".
pub fn valid_kafka_topic(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= KAFKA_MAX_NAME_LENGTH
        && topic != "."
        && topic != ".."
        && topic.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// A Kafka group: printable ASCII without '@' (offsets are kept under `topic@group` keys, which
/// Java splits on '@'), '/' or '\\', 1 to 249 bytes.
pub fn valid_kafka_group(group: &str) -> bool {
    !group.is_empty()
        && group.len() <= KAFKA_MAX_NAME_LENGTH
        && group.bytes().all(|b| (0x21..=0x7e).contains(&b) && !matches!(b, b'@' | b'/' | b'\\'))
}

/// `TopicValidator.isSystemTopic` and the names a broker registers for itself.
pub fn is_system_topic(config: &BrokerConfig, topic: &str) -> bool {
    topic.starts_with("rmq_sys_")
        || topic.starts_with("RMQ_SYS_")
        || [
            "TBW102",
            "SCHEDULE_TOPIC_XXXX",
            "BenchmarkTest",
            "OFFSET_MOVED_EVENT",
            "SELF_TEST_TOPIC",
            "TRANS_CHECK_MAX_TIME_TOPIC",
            "TRANS_CHECK_MAXTIME_TOPIC",
        ]
        .contains(&topic)
        || topic == config.broker_cluster_name
        || topic == config.broker_name
}

/// `MixAll.isSysConsumerGroup`-like: the groups RocketMQ's own services consume with.
pub fn is_system_group(group: &str) -> bool {
    group.starts_with("CID_RMQ_SYS_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_names_are_path_components() {
        for good in ["orders.v1_x-2", "a", &"t".repeat(249)] {
            assert!(valid_kafka_topic(good), "{good:?}");
            assert!(crate::model::name::is_path_component(good), "{good:?}");
        }
        for bad in ["", ".", "..", "../x", "a/b", "a b", "%RETRY%g", "naïve", &"t".repeat(250)] {
            assert!(!valid_kafka_topic(bad), "{bad:?}");
        }
        assert!(valid_kafka_group("app.consumer:1"));
        for bad in ["", "a@b", "../x", "a\\b", "tab\tx", "sp ace", &"g".repeat(250)] {
            assert!(!valid_kafka_group(bad), "{bad:?}");
        }
    }

    #[test]
    fn system_names() {
        let c = BrokerConfig::default();
        for t in ["RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer", "SCHEDULE_TOPIC_XXXX", "TBW102"] {
            assert!(is_system_topic(&c, t), "{t}");
        }
        assert!(is_system_topic(&c, &c.broker_cluster_name) && is_system_topic(&c, &c.broker_name));
        assert!(!is_system_topic(&c, "orders"));
        assert!(is_system_group("CID_RMQ_SYS_TRANS") && !is_system_group("CID_app"));
    }
}
