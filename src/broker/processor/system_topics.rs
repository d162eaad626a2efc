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
//! May import: `meta` (the set: `meta::names`), `protocol` and modules of `broker/`.

use super::{ok, Handled};
use crate::broker::BrokerInner;
use crate::meta::names::system_topics;
use crate::protocol::RemotingCommand;

pub fn get_system_topic_list_from_broker(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let body = serde_json::json!({ "topicList": system_topics(&b.config) });
    Ok(Some(ok(req).with_body(serde_json::to_vec(&body).unwrap_or_default())))
}
