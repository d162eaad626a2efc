//! GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305, `mqadmin exportMetadata`, `exportMetrics`): the
//! broker's system topics, as Java's `TopicValidator.getSystemTopicSet()` holds them once the
//! broker's `TopicConfigManager` has added its own.
//!
//! ```text
//! TopicValidator's:      TBW102 SCHEDULE_TOPIC_XXXX BenchmarkTest RMQ_SYS_TRANS_HALF_TOPIC
//!                        RMQ_SYS_TRACE_TOPIC RMQ_SYS_TRANS_OP_HALF_TOPIC TRANS_CHECK_MAX_TIME_TOPIC
//!                        SELF_TEST_TOPIC OFFSET_MOVED_EVENT CHECKPOINT_TOPIC
//! the broker's:          <cluster> <brokerName> <cluster>_REPLY_TOPIC rmq_sys_REVIVE_LOG_<cluster>
//!                        rmq_sys_SYNC_BROKER_MEMBER_<brokerName>
//!                        msgTraceTopicName (traceTopicEnable), rmq_sys_wheel_timer (timerWheelEnable)
//! body:                  TopicList {"topicList":[...]}
//! ```
//!
//! May import: `config`, `model`, `protocol` and modules of `broker/`.

use std::collections::BTreeSet;

use super::{ok, Handled};
use crate::broker::{BrokerConfig, BrokerInner};
use crate::protocol::RemotingCommand;

/// `TopicValidator`'s own set (its static initializer).
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

/// The system topic set of a broker running with `config`.
pub fn system_topics(config: &BrokerConfig) -> BTreeSet<String> {
    let cluster = &config.broker_cluster_name;
    let mut set: BTreeSet<String> = VALIDATOR_TOPICS.iter().map(|t| (*t).to_owned()).collect();
    set.extend([
        cluster.clone(),
        config.broker_name.clone(),
        format!("{cluster}_REPLY_TOPIC"),
        format!("rmq_sys_REVIVE_LOG_{cluster}"),
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

/// `TopicValidator.isSystemTopic` on this broker: in the set, or `rmq_sys_*`.
pub fn is_system_topic(config: &BrokerConfig, topic: &str) -> bool {
    topic.starts_with("rmq_sys_") || system_topics(config).contains(topic)
}

pub fn get_system_topic_list_from_broker(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let body = serde_json::json!({ "topicList": system_topics(&b.config) });
    Ok(Some(ok(req).with_body(serde_json::to_vec(&body).unwrap_or_default())))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(is_system_topic(&c, "rmq_sys_anything"));
        assert!(!is_system_topic(&c, "orders"));
    }
}
