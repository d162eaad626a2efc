//! Topic and group names both doors check where they enter, in one place: RocketMQ's rule
//! (`model::name`, Java's `TopicValidator`), Kafka's rule (`Topic.validate`), and which names
//! belong to the broker itself. The front ends map a refusal to their own codes.
//!
//! ```text
//! RocketMQ topic  [%|a-zA-Z0-9_-]{1,127} (retry/DLQ 255)   model::name::check_topic
//! Kafka topic     [a-zA-Z0-9._-]{1,249}, not "." or ".."   valid_kafka_topic
//! Kafka group     printable ASCII without '@' '/' '\'      valid_kafka_group
//! system topic    rmq_sys_*, RMQ_SYS_*, TBW102, SCHEDULE_TOPIC_XXXX, ..., the cluster's and
//!                 the broker's own names (one rule for all)  is_system_topic, system_topics
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

/// `TopicValidator`'s own system topics (its static initializer).
const VALIDATOR_TOPICS: [&str; 10] = [
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
];

/// `TopicValidator.isSystemTopic` on a broker running with `config`: TopicValidator's set, the
/// topics the broker adds to it for itself (`TopicConfigManager`: the cluster's and the broker's
/// names, `<cluster>_REPLY_TOPIC`, the trace topic under `traceTopicEnable`) and `rmq_sys_*`
/// (revive log, broker member sync, timer wheel). Kept out of users' hands here too: `RMQ_SYS_*`
/// and 4.x's `TRANS_CHECK_MAXTIME_TOPIC`. One rule for both doors, the statistics and the
/// admin requests.
pub fn is_system_topic(config: &BrokerConfig, topic: &str) -> bool {
    topic.starts_with("rmq_sys_")
        || topic.starts_with("RMQ_SYS_")
        || VALIDATOR_TOPICS.contains(&topic)
        || topic == "TRANS_CHECK_MAXTIME_TOPIC"
        || topic == config.broker_cluster_name
        || topic == config.broker_name
        || topic.strip_suffix("_REPLY_TOPIC") == Some(config.broker_cluster_name.as_str())
        || (config.trace_topic_enable && topic == config.msg_trace_topic_name)
}

/// ferrocket's POP state log, `rmq_sys_POP_STATE_<cluster>` (`core::pop::persist`).
pub const POP_STATE_TOPIC_PREFIX: &str = "rmq_sys_POP_STATE_";

/// The set `TopicValidator.getSystemTopicSet()` holds on a broker running with `config`
/// (GET_SYSTEM_TOPIC_LIST_FROM_BROKER): every name [`is_system_topic`] knows by name, and the
/// `rmq_sys_*` topics the broker makes (the timer's under `timerWheelEnable`).
pub fn system_topics(config: &BrokerConfig) -> std::collections::BTreeSet<String> {
    let cluster = &config.broker_cluster_name;
    let mut set: std::collections::BTreeSet<String> = VALIDATOR_TOPICS.iter().map(|t| (*t).to_owned()).collect();
    set.extend([
        cluster.clone(),
        config.broker_name.clone(),
        format!("{cluster}_REPLY_TOPIC"),
        format!("rmq_sys_REVIVE_LOG_{cluster}"),
        format!("{POP_STATE_TOPIC_PREFIX}{cluster}"),
        format!("rmq_sys_SYNC_BROKER_MEMBER_{}", config.broker_name),
    ]);
    if config.trace_topic_enable && !config.msg_trace_topic_name.is_empty() {
        set.insert(config.msg_trace_topic_name.clone());
    }
    if config.timer_wheel_enable {
        set.insert(crate::model::TIMER_TOPIC.to_owned());
    }
    set
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

    #[test]
    fn the_set_holds_the_validator_topics_and_the_broker_s_own() {
        let c = BrokerConfig { broker_cluster_name: "C".into(), broker_name: "B".into(), ..BrokerConfig::default() };
        let set = system_topics(&c);
        for t in [
            "TBW102",
            "CHECKPOINT_TOPIC",
            "C",
            "B",
            "C_REPLY_TOPIC",
            "rmq_sys_REVIVE_LOG_C",
            "rmq_sys_SYNC_BROKER_MEMBER_B",
        ] {
            assert!(set.contains(t), "{t}: {set:?}");
        }
        for t in &set {
            assert!(is_system_topic(&c, t), "{t} is listed, so it is a system topic");
        }
        assert!(is_system_topic(&c, "rmq_sys_anything"));
        assert!(!is_system_topic(&c, "orders") && !is_system_topic(&c, "TRACES"));
        let traced = BrokerConfig { trace_topic_enable: true, msg_trace_topic_name: "TRACES".into(), ..c };
        assert!(is_system_topic(&traced, "TRACES") && system_topics(&traced).contains("TRACES"));
    }
}
