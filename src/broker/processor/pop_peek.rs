//! PEEK_MESSAGE (200052), NOTIFICATION (200054) and POLLING_INFO (200055): the remoting door of
//! the core's read-only POP questions (`core::pop::peek`, `core::pop::notify`), checked in the
//! order of Java's `PeekMessageProcessor`, `NotificationProcessor` and `PollingInfoProcessor`:
//! broker readable, topic known and readable, queue, group known and allowed to consume.
//!
//! - PEEK: up to maxMsgNums (1..=32) messages a pop would read next, as stored, changing nothing;
//!   SUCCESS "FOUND" with a `PopMessageResponseHeader` of which only `restNum` counts, else
//!   PULL_NOT_FOUND "NO_MESSAGE_IN_QUEUE".
//! - NOTIFICATION: `hasMsg` once a queue (queueId -1: any) of the topic or of its POP retry topic
//!   has messages for the group; held up to pollTime (at most 60 s); past popPollingSize held
//!   notifications of (group, topic), answered at once with `pollingFull`.
//! - POLLING_INFO: `pollingNum`, the pops of (topic, group, queueId) held now.
//!
//! Unlike Java: names are checked (`model::name`), a queueId below -1 reads as -1 as in Java's
//! headers, but maxMsgNums outside 1..=32 and a negative pollTime are INVALID_PARAMETER, and
//! POLLING_INFO never creates the group it asks about.
//!
//! May import: `model`, `protocol`, `core` and modules of `broker/`.

use std::sync::Arc;
use std::time::Duration;

use super::{fail, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::core::pop::notify::NotifyRequest;
use crate::core::pop::{self, PopError};
use crate::model::perm;
use crate::protocol::header::pop::{
    NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader, PollingInfoRequestHeader,
    PollingInfoResponseHeader, PopMessageResponseHeader,
};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

/// The longest a notification is held (as a pop).
const MAX_HOLD: Duration = Duration::from_secs(60);

pub async fn peek_message(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = PeekMessageRequestHeader::decode(&req.ext_fields)?;
    let queue_id = check(b, &h.consumer_group, &h.topic, h.queue_id)?;
    if !(1..=pop::MAX_POP_NUMS as i32).contains(&h.max_msg_nums) {
        return Err(BrokerError::InvalidParameter(format!("the max msg num {} is not in 1..=32", h.max_msg_nums)));
    }
    super::pop::consuming_group(b, &h.consumer_group).await?;
    b.store.await_dispatched(super::READ_AFTER_SEND_WAIT).await;
    let peeked =
        b.pop_peek(&h.consumer_group, &h.topic, queue_id, h.max_msg_nums as usize, b.config.enable_retry_topic_v2);
    let mut resp = if peeked.records.is_empty() {
        RemotingCommand::response_to(req, ResponseCode::PULL_NOT_FOUND).with_remark("NO_MESSAGE_IN_QUEUE")
    } else {
        RemotingCommand::response_to(req, ResponseCode::SUCCESS).with_remark("FOUND")
    };
    PopMessageResponseHeader { rest_num: peeked.rest, ..Default::default() }.encode(&mut resp.ext_fields);
    resp.body_parts = peeked.records.into_iter().map(|r| r.into_bytes()).collect();
    Ok(Some(resp))
}

pub async fn notification(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = NotificationRequestHeader::decode(&req.ext_fields)?;
    let queue_id = check(b, &h.consumer_group, &h.topic, h.queue_id)?;
    if h.poll_time < 0 {
        return Err(BrokerError::InvalidParameter(format!("pollTime {} is negative", h.poll_time)));
    }
    super::pop::consuming_group(b, &h.consumer_group).await?;
    let poll = Duration::from_millis(h.poll_time as u64).min(MAX_HOLD);
    if !poll.is_zero() {
        // A held notification must not hold up the connection's other requests.
        crate::remoting::park_current_request();
    }
    let request = NotifyRequest {
        group: &h.consumer_group,
        topic: &h.topic,
        queue_id,
        poll,
        retry_v2: b.config.enable_retry_topic_v2,
        order: h.order == Some(true),
        attempt: h.attempt_id.as_deref(),
    };
    b.store.await_dispatched(super::READ_AFTER_SEND_WAIT).await;
    let header = match b.pop_notification(&request).await {
        Ok(has_msg) => NotificationResponseHeader { has_msg, polling_full: false },
        Err(PopError::PollingFull) => NotificationResponseHeader { has_msg: false, polling_full: true },
    };
    let mut resp = super::ok(req);
    header.encode(&mut resp.ext_fields);
    Ok(Some(resp))
}

pub fn polling_info(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = PollingInfoRequestHeader::decode(&req.ext_fields)?;
    let queue_id = check(b, &h.consumer_group, &h.topic, h.queue_id)?;
    let Some(group) = b.groups.get(&h.consumer_group) else {
        return fail(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group [{}] does not exist", h.consumer_group),
        );
    };
    if !group.consume_enable {
        return fail(ResponseCode::NO_PERMISSION, format!("subscription group no permission, {}", h.consumer_group));
    }
    let held = b.pop.held_pops(&h.consumer_group, &h.topic, queue_id);
    let mut resp = super::ok(req);
    PollingInfoResponseHeader { polling_num: i32::try_from(held).unwrap_or(i32::MAX) }.encode(&mut resp.ext_fields);
    Ok(Some(resp))
}

/// The checks the three share, in Java's order; returns the queue id (negative: -1).
fn check(b: &BrokerInner, group: &str, topic: &str, queue_id: i32) -> Result<i32, BrokerError> {
    if !perm::is_readable(b.live.broker_permission()) {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the broker[{}] peeking message is forbidden", b.config.broker_name),
        );
    }
    super::check_topic(topic)?;
    super::check_group(group)?;
    let Some(tc) = b.topics.view(topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic[{topic}] not exist, apply first please!"));
    };
    if !perm::is_readable(tc.perm) {
        return fail(ResponseCode::NO_PERMISSION, format!("the topic[{topic}] peeking message is forbidden"));
    }
    if queue_id >= tc.read_queue_nums {
        return Err(BrokerError::InvalidParameter(format!(
            "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}]",
            tc.read_queue_nums
        )));
    }
    Ok(queue_id.max(-1))
}
