//! QUERY_CONSUME_QUEUE (321, `mqadmin queryCq`): a ConsumeQueue's raw units
//! (`AdminBrokerProcessor.queryConsumeQueue`).
//!
//! ```text
//! header  topic queueId index count [consumerGroup]
//! no such queue            SYSTEM_ERROR "<queueId>@<topic> is not exist!"
//! index outside [min,max)  SUCCESS, no body, remark "Index <i> of <q>@<topic> is not exist!"
//! body    QueryConsumeQueueResponseBody {subscriptionData?, filterData?, maxQueueIndex,
//!         minQueueIndex, queueData:[{physicOffset, physicSize, tagsCode, eval}]}
//! ```
//! Units come from the file holding `index` only, as Java's `iterateFrom`; at most `MAX_UNITS`
//! of them (Java takes any count).
//!
//! May import: `store`, `protocol` and modules of `broker/`.

use serde::Serialize;

use super::{ok, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::protocol::body::client::SubscriptionData;
use crate::protocol::header::{command_header, CommandHeader};
use crate::protocol::{RemotingCommand, ResponseCode};

/// Units one request may read.
pub const MAX_UNITS: usize = 1000;

command_header! {
    /// QUERY_CONSUME_QUEUE (321): `QueryConsumeQueueRequestHeader`.
    pub struct QueryConsumeQueueRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        index: i64 = "index",
        count: i32 = "count",
        consumer_group: Option<String> = "consumerGroup",
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumeQueueData {
    physic_offset: i64,
    physic_size: i32,
    tags_code: i64,
    eval: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryConsumeQueueResponseBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    subscription_data: Option<SubscriptionData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter_data: Option<String>,
    queue_data: Vec<ConsumeQueueData>,
    max_queue_index: i64,
    min_queue_index: i64,
}

/// What an online group subscribes to on `topic`, and its filter as Java shows it
/// (`ConsumerFilterData` exists for SQL92 subscriptions only: "null" for tags).
fn subscription(b: &BrokerInner, group: &str, topic: &str) -> (Option<SubscriptionData>, String) {
    let Some(sub) = b.consumers.group(group).and_then(|g| g.subscriptions.get(topic).cloned()) else {
        return (None, format!("{group}@{topic} is not online!"));
    };
    let filter = if sub.expression_type == "SQL92" {
        let data = serde_json::json!({
            "consumerGroup": group,
            "topic": topic,
            "expression": sub.sub_string,
            "expressionType": sub.expression_type,
            "clientVersion": sub.sub_version,
        });
        serde_json::to_string_pretty(&data).unwrap_or_default()
    } else {
        "null".to_owned()
    };
    (Some(sub), filter)
}

pub fn query_consume_queue(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = QueryConsumeQueueRequestHeader::decode(&req.ext_fields)?;
    super::check_topic(&h.topic)?;
    if h.queue_id < 0 {
        return Err(BrokerError::InvalidParameter(format!("queueId {} is negative", h.queue_id)));
    }
    if let Some(g) = &h.consumer_group {
        super::check_group(g)?;
    }
    let count = usize::try_from(h.count).unwrap_or(0).min(MAX_UNITS);
    let Some(found) = b.store.consume_queue_units(&h.topic, h.queue_id, h.index, count) else {
        return super::fail(ResponseCode::SYSTEM_ERROR, format!("{}@{} is not exist!", h.queue_id, h.topic));
    };
    let Some(units) = found.units else {
        let mut resp = ok(req);
        resp.remark = Some(format!("Index {} of {}@{} is not exist!", h.index, h.queue_id, h.topic));
        return Ok(Some(resp));
    };
    let (subscription_data, filter_data) = match &h.consumer_group {
        Some(g) => {
            let (s, f) = subscription(b, g, &h.topic);
            (s, Some(f))
        }
        None => (None, None),
    };
    let body = QueryConsumeQueueResponseBody {
        subscription_data,
        filter_data,
        queue_data: units
            .into_iter()
            .map(|u| ConsumeQueueData {
                physic_offset: u.commit_log_offset,
                physic_size: u.size,
                tags_code: u.tags_code,
                eval: false,
            })
            .collect(),
        max_queue_index: found.max,
        min_queue_index: found.min,
    };
    Ok(Some(ok(req).with_body(serde_json::to_vec(&body).unwrap_or_default())))
}
