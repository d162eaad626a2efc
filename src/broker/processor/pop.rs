//! POP_MESSAGE (200050): the remoting door of the core's POP (`core::pop`), as Java's
//! `PopMessageProcessor` answers it. The client builds each message's handle from the response
//! header (`popTime invisibleTime reviveQid` and, per queue, `startOffsetInfo` /
//! `msgOffsetInfo`: `retry queueId offset[,offset...]` separated by `;`). Messages from the POP
//! retry topic come under the asked topic with their handle in `POP_CK` (`core::pop::present`).
//!
//! Every number of the header is bounded: maxMsgNums 1..=32, invisibleTime 1 s..12 h, pollTime
//! 0.. (held at most 60 s), queueId -1 or a readable queue. An orderly pop (`order=true`) locks
//! each queue it reads until its messages are acked or expire; its handles carry reviveQid 999
//! and redeliveries their count in `orderCountInfo` (`retry qo<queueId>%<offset> count`).
//!
//! May import: `model`, `protocol`, `store`, `core` and modules of `broker/`.

use std::sync::Arc;
use std::time::Duration;

use super::{fail, BrokerError, Handled};
use crate::broker::filter::PullFilter;
use crate::broker::BrokerInner;
use crate::core::pop::{self, Handle, PopError, PopRequest, Popped, TopicMark};
use crate::model::group::SubscriptionGroupConfig;
use crate::model::perm;
use crate::protocol::body::client::SubscriptionData;
use crate::protocol::header::pop::{PopMessageRequestHeader, PopMessageResponseHeader};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

/// The longest a pop is held (a client's pollTime above it is answered empty then).
const MAX_HOLD: Duration = Duration::from_secs(60);
/// `KeyBuilder.POP_ORDER_REVIVE_QUEUE`.
const ORDER_REVIVE_QID: i32 = 999;
/// `ConsumeInitMode.MIN`.
const INIT_MODE_MIN: i32 = 1;

pub async fn pop_message(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = PopMessageRequestHeader::decode(&req.ext_fields)?;
    let filter = check(b, &h).await?;
    let poll = Duration::from_millis(h.poll_time as u64).min(MAX_HOLD);
    if !poll.is_zero() {
        // A held pop must not hold up the connection's other requests.
        crate::remoting::park_current_request();
    }
    let request = PopRequest {
        group: &h.consumer_group,
        topic: &h.topic,
        queue_id: h.queue_id,
        max_nums: h.max_msg_nums as usize,
        invisible_ms: h.invisible_time,
        poll,
        init_from_min: h.init_mode == INIT_MODE_MIN,
        retry_v2: b.config.enable_retry_topic_v2,
        filter: &filter,
        order: h.order == Some(true),
        attempt: h.attempt_id.as_deref(),
    };
    b.store.await_dispatched(super::READ_AFTER_SEND_WAIT).await;
    match b.pop(&request).await {
        Ok(popped) => Ok(Some(response(b, req, &h, popped))),
        Err(PopError::PollingFull) => {
            let mut resp = RemotingCommand::response_to(req, ResponseCode::POLLING_FULL).with_remark("POLLING_FULL");
            empty_header(&mut resp);
            Ok(Some(resp))
        }
    }
}

fn empty_header(resp: &mut RemotingCommand) {
    PopMessageResponseHeader::default().encode(&mut resp.ext_fields);
}

fn response(b: &BrokerInner, req: &RemotingCommand, h: &PopMessageRequestHeader, p: Popped) -> RemotingCommand {
    if p.count() == 0 {
        let mut resp =
            RemotingCommand::response_to(req, ResponseCode::POLLING_TIMEOUT).with_remark("NO_MESSAGE_IN_QUEUE");
        PopMessageResponseHeader {
            pop_time: p.pop_time,
            invisible_time: p.invisible_time,
            rest_num: p.rest,
            ..Default::default()
        }
        .encode(&mut resp.ext_fields);
        return resp;
    }
    let mut resp = RemotingCommand::response_to(req, ResponseCode::SUCCESS).with_remark("FOUND");
    let (mut starts, mut offsets) = (Vec::new(), Vec::new());
    let mut count = 0u64;
    let mut bytes = 0u64;
    let (pop_time, invisible_time, rest) = (p.pop_time, p.invisible_time, p.rest);
    // `KeyBuilder.POP_ORDER_REVIVE_QUEUE` marks an orderly pop's handles.
    let revive_qid = if h.order == Some(true) { ORDER_REVIVE_QID } else { p.revive_qid };
    let mut counts = Vec::new();
    for q in p.queues {
        let mark = TopicMark::of(&q.topic);
        starts.push(format!("{} {} {}", mark.as_str(), q.queue_id, q.start_offset));
        let list: Vec<String> = q.messages.iter().map(|m| m.queue_offset.to_string()).collect();
        offsets.push(format!("{} {} {}", mark.as_str(), q.queue_id, list.join(",")));
        // A retry message, or one whose checkpoint's pop time is not the header's, carries its
        // own handle.
        let own_handle = mark != TopicMark::Normal || q.pop_time != pop_time;
        for m in q.messages {
            count += 1;
            if m.order_count > 0 {
                counts.push(format!("{} qo{}%{} {}", mark.as_str(), q.queue_id, m.queue_offset, m.order_count));
            }
            bytes += m.record.len() as u64;
            if !own_handle {
                resp.body_parts.push(m.record.into_bytes());
                continue;
            }
            let handle = Handle {
                ck_offset: q.start_offset,
                pop_time: q.pop_time,
                invisible_time,
                revive_qid,
                mark,
                broker_name: b.config.broker_name.clone(),
                queue_id: q.queue_id,
                queue_offset: Some(m.queue_offset),
            };
            if let Some(rec) = pop::present::renamed_with_handle(&m.record, &h.topic, &handle.to_string()) {
                resp.body_parts.push(rec.into());
            }
        }
    }
    PopMessageResponseHeader {
        pop_time,
        invisible_time,
        revive_qid,
        rest_num: rest,
        start_offset_info: Some(starts.join(";")),
        msg_offset_info: Some(offsets.join(";")),
        order_count_info: (!counts.is_empty()).then(|| counts.join(";")),
    }
    .encode(&mut resp.ext_fields);
    b.count_popped(crate::telemetry::Protocol::Remoting, &h.consumer_group, &h.topic, count, bytes);
    resp
}

/// The checks before popping, in Java's order; returns the filter of the subscription.
async fn check(b: &Arc<BrokerInner>, h: &PopMessageRequestHeader) -> Result<PullFilter, BrokerError> {
    if !perm::is_readable(b.live.broker_permission()) {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the broker[{}] peeking message is forbidden", b.config.broker_name),
        );
    }
    super::check_topic(&h.topic)?;
    super::check_group(&h.consumer_group)?;
    if !(1..=pop::MAX_POP_NUMS as i32).contains(&h.max_msg_nums) {
        return Err(BrokerError::InvalidParameter(format!("the max msg num {} is not in 1..=32", h.max_msg_nums)));
    }
    if !(pop::MIN_INVISIBLE_MS..=pop::MAX_INVISIBLE_MS).contains(&h.invisible_time) {
        return Err(BrokerError::InvalidParameter(format!("invisibleTime {} is out of range", h.invisible_time)));
    }
    if h.poll_time < 0 {
        return Err(BrokerError::InvalidParameter(format!("pollTime {} is negative", h.poll_time)));
    }
    let Some(tc) = b.topics.view(&h.topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic[{}] not exist, apply first please!", h.topic));
    };
    if !perm::is_readable(tc.perm) {
        return fail(ResponseCode::NO_PERMISSION, format!("the topic[{}] peeking message is forbidden", h.topic));
    }
    if h.queue_id < -1 || h.queue_id >= tc.read_queue_nums {
        return Err(BrokerError::InvalidParameter(format!(
            "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}]",
            h.queue_id, h.topic, tc.read_queue_nums
        )));
    }
    consuming_group(b, &h.consumer_group).await?;
    let exp = h.exp.as_deref().filter(|e| !e.is_empty()).unwrap_or("*");
    let sub = SubscriptionData::build(&h.topic, exp, h.exp_type.as_deref());
    if sub.is_tag_type() {
        return Ok(PullFilter { sub, sql: None });
    }
    if sub.expression_type != crate::filter::SQL92 || !b.live.config().enable_property_filter {
        return fail(ResponseCode::SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed");
    }
    match b.filters.get(&h.consumer_group, &h.topic, &sub.sub_string) {
        Ok(sql) => Ok(PullFilter { sub, sql: Some(sql) }),
        Err(e) => {
            fail(ResponseCode::SUBSCRIPTION_PARSE_FAILED, format!("parse the consumer's subscription failed: {e}"))
        }
    }
}

/// The group a pull or pop reads for, created if absent (autoCreateSubscriptionGroup) and
/// allowed to consume.
pub(super) async fn consuming_group(b: &BrokerInner, name: &str) -> Result<SubscriptionGroupConfig, BrokerError> {
    let Some((group, created)) = b.groups.find_or_create(name) else {
        return fail(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST, format!("subscription group [{name}] does not exist"));
    };
    if created {
        b.persist_groups().await;
    }
    if !group.consume_enable {
        return fail(ResponseCode::NO_PERMISSION, format!("subscription group no permission, {name}"));
    }
    Ok(group)
}
