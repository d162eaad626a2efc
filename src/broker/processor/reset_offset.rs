//! INVOKE_BROKER_TO_RESET_OFFSET (222, `mqadmin resetOffsetByTime`, `skipAccumulatedMessage`):
//! a group with online consumers is reset as `stats::invoke_broker_to_reset_offset` does (the
//! consumers are told, RESET_CONSUMER_CLIENT_OFFSET); an offline group's stored offsets are reset
//! here by the broker itself, as Java 5.x's server-side reset (`resetOffsetInner`,
//! `useServerSideResetOffset=true`) does, so mqadmin does not fall back to its client-side path.
//!
//! ```text
//! slave                          SYSTEM_ERROR "Can not reset offset in slave broker"
//! topic unknown                  TOPIC_NOT_EXIST "Topic <t> does not exist"
//! group unknown                  SUBSCRIPTION_GROUP_NOT_EXIST "Group <g> does not exist"
//! queueId >= readQueueNums       INVALID_PARAMETER (Java resets a queue that does not exist)
//! queueId >= 0, offset != -1     that offset, within [min, max] ("Target offset ... not in
//!                                consume queue range [min-max]")
//! queueId >= 0, else             the first offset stored at/after timestamp (< 0: the end)
//! queueId < 0                    every read queue, by timestamp
//! body                           ResetOffsetBody {"offsetTable":{mq: offset}}
//! ```
//!
//! May import: `protocol` and modules of `broker/`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{fail, ok, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::protocol::body::admin::mq_keyed;
use crate::protocol::body::client::MessageQueue;
use crate::protocol::header::broker::ResetOffsetRequestHeader;
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

pub async fn invoke_broker_to_reset_offset(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = ResetOffsetRequestHeader::decode(&req.ext_fields)?;
    if b.consumers.group(&h.group).is_some_and(|g| !g.channels.is_empty()) {
        return super::stats::invoke_broker_to_reset_offset(b, req).await;
    }
    reset_offline(b, req, &h)
}

fn by_time(b: &BrokerInner, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
    if timestamp < 0 {
        b.store.max_offset_in_queue(topic, queue_id)
    } else {
        b.store.offset_in_queue_by_time(topic, queue_id, timestamp)
    }
}

fn reset_offline(b: &BrokerInner, req: &RemotingCommand, h: &ResetOffsetRequestHeader) -> Handled {
    if b.config.is_slave() {
        return fail(ResponseCode::SYSTEM_ERROR, "Can not reset offset in slave broker");
    }
    let Some(tc) = b.topics.get(&h.topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("Topic {} does not exist", h.topic));
    };
    super::check_group(&h.group)?;
    // Java asks the subscription group table; a group here may also be known by its offsets only
    // (a consumer that committed while autoCreateSubscriptionGroup was off).
    if !b.groups.contains(&h.group) && b.offsets.topics_of_group(&h.group).is_empty() {
        return fail(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST, format!("Group {} does not exist", h.group));
    }
    let mut targets: BTreeMap<i32, i64> = BTreeMap::new();
    match h.queue_id.filter(|q| *q >= 0) {
        Some(q) if q >= tc.read_queue_nums => {
            return Err(BrokerError::InvalidParameter(format!(
                "queueId {q} out of range: topic {} has {} read queues",
                h.topic, tc.read_queue_nums
            )));
        }
        Some(q) => {
            let target = match h.offset.filter(|o| *o != -1) {
                Some(o) => {
                    let (min, max) =
                        (b.store.min_offset_in_queue(&h.topic, q), b.store.max_offset_in_queue(&h.topic, q));
                    if o < min || o > max {
                        return fail(
                            ResponseCode::SYSTEM_ERROR,
                            format!("Target offset {o} not in consume queue range [{min}-{max}]"),
                        );
                    }
                    o
                }
                None => by_time(b, &h.topic, q, h.timestamp),
            };
            targets.insert(q, target);
        }
        None => {
            for q in 0..tc.read_queue_nums {
                targets.insert(q, by_time(b, &h.topic, q, h.timestamp));
            }
        }
    }
    if targets.is_empty() {
        return fail(ResponseCode::SYSTEM_ERROR, "No queues to reset.");
    }
    let mut table = BTreeMap::new();
    for (q, offset) in targets {
        b.offsets.commit(&h.group, &h.topic, q, offset);
        let mq = MessageQueue { broker_name: b.config.broker_name.clone(), queue_id: q, topic: h.topic.clone() };
        table.insert(mq, offset.to_string());
    }
    tracing::info!(topic = h.topic, group = h.group, queues = table.len(), "offsets of an offline group reset");
    Ok(Some(ok(req).with_body(mq_keyed("offsetTable", &table, &[]))))
}
