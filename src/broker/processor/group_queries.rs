//! What the admin API (`DefaultMQAdminExt`, the dashboard) and the Java proxy (cluster mode) ask
//! about one consumer group (`AdminBrokerProcessor`): QUERY_TOPICS_BY_CONSUMER (343),
//! QUERY_SUBSCRIPTION_BY_CONSUMER (345), QUERY_CONSUME_TIME_SPAN (303) and
//! GET_SUBSCRIPTIONGROUP_CONFIG (352). Read-only: unlike Java's `findSubscriptionGroupConfig`,
//! asking for a group that does not exist never creates it.
//!
//! May import: `protocol` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use serde::Serialize;

use super::{check_group, fail, ok, Handled};
use crate::broker::BrokerInner;
use crate::protocol::body::client::{MessageQueue, SubscriptionData};
use crate::protocol::body::TopicList;
use crate::protocol::header::stats::{GroupHeader, GroupTopicHeader};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

/// `QuerySubscriptionResponseBody`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QuerySubscriptionResponseBody {
    group: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    subscription_data: Option<SubscriptionData>,
    topic: String,
}

/// `QueueTimeSpan`, with the `*Str` getters fastjson writes too.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueueTimeSpan {
    consume_time_stamp: i64,
    consume_time_stamp_str: String,
    delay_time: i64,
    max_time_stamp: i64,
    max_time_stamp_str: String,
    message_queue: MessageQueue,
    min_time_stamp: i64,
    min_time_stamp_str: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryConsumeTimeSpanBody {
    consume_time_span_set: Vec<QueueTimeSpan>,
}

/// `UtilAll.formatDate(date, "yyyy-MM-dd#HH:mm:ss:SSS")`, local time.
fn java_date(ms: i64) -> String {
    use chrono::TimeZone;
    chrono::Local
        .timestamp_millis_opt(ms)
        .single()
        .map(|d| d.format("%Y-%m-%d#%H:%M:%S:%3f").to_string())
        .unwrap_or_default()
}

fn body<T: Serialize>(req: &RemotingCommand, v: &T) -> Handled {
    Ok(Some(ok(req).with_body(serde_json::to_vec(v).unwrap_or_default())))
}

/// QUERY_TOPICS_BY_CONSUMER: the topics the group has offsets on (`whichTopicByConsumer`).
pub fn query_topics_by_consumer(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GroupHeader::decode(&req.ext_fields)?;
    check_group(&h.group)?;
    let mut topics = b.offsets.topics_of_group(&h.group);
    topics.sort();
    body(req, &TopicList { broker_addr: Some(b.config.broker_addr()), topic_list: topics })
}

/// QUERY_SUBSCRIPTION_BY_CONSUMER: an online member's subscription to the topic, if any.
pub fn query_subscription_by_consumer(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GroupTopicHeader::decode(&req.ext_fields)?;
    check_group(&h.group)?;
    let subscription_data = b.consumers.subscription(&h.group, &h.topic);
    body(req, &QuerySubscriptionResponseBody { group: h.group, subscription_data, topic: h.topic })
}

/// QUERY_CONSUME_TIME_SPAN: per write queue, the store times of the first and last message,
/// of the last one the group consumed (the first message's when it consumed none) and how long
/// the next one has waited (0 when caught up). -1 where the store has no such message, as Java.
pub fn query_consume_time_span(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GroupTopicHeader::decode(&req.ext_fields)?;
    check_group(&h.group)?;
    let Some(tc) = b.topics.get(&h.topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic[{}] not exist", h.topic));
    };
    let time_at = |q: i32, offset: i64| b.store.message_store_timestamp(&h.topic, q, offset).unwrap_or(-1);
    let now = crate::store::now_ms();
    let spans = (0..tc.write_queue_nums)
        .map(|q| {
            let min = b.store.earliest_message_time(&h.topic, q).unwrap_or(-1);
            let max_offset = b.store.max_offset_in_queue(&h.topic, q);
            let max = time_at(q, max_offset - 1);
            let consumed = b.offsets.query(&h.group, &h.topic, q);
            let consume = if consumed > 0 { time_at(q, consumed - 1) } else { min };
            let delay = if consumed < max_offset { now - time_at(q, consumed) } else { 0 };
            QueueTimeSpan {
                consume_time_stamp: consume,
                consume_time_stamp_str: java_date(consume),
                delay_time: delay,
                max_time_stamp: max,
                max_time_stamp_str: java_date(max),
                message_queue: MessageQueue {
                    broker_name: b.config.broker_name.clone(),
                    queue_id: q,
                    topic: h.topic.clone(),
                },
                min_time_stamp: min,
                min_time_stamp_str: java_date(min),
            }
        })
        .collect();
    body(req, &QueryConsumeTimeSpanBody { consume_time_span_set: spans })
}

/// GET_SUBSCRIPTIONGROUP_CONFIG (the Java proxy's `ClusterMetadataService`): the group's config as
/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG lists it; SUBSCRIPTION_GROUP_NOT_EXIST when there is none.
pub fn get_subscription_group_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GroupHeader::decode(&req.ext_fields)?;
    check_group(&h.group)?;
    match b.groups.get(&h.group) {
        Some(config) => body(req, &config),
        None => fail(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker"),
    }
}
