//! ACK_MESSAGE (200051) and CHANGE_MESSAGE_INVISIBLETIME (200053) by receipt handle
//! (`extraInfo`, the `POP_CK` the client got), as Java's `AckMessageProcessor` and
//! `ChangeInvisibleTimeProcessor` check them. The header's topic is the stored one (the client
//! turns a retry mark into the POP retry topic).
//!
//! Unlike Java, which answers SUCCESS to an ack of anything, a handle that names no pending
//! message (acked before, revived since, forged) gets NO_MESSAGE (the client's NO_EXIST), and
//! changes nothing; a handle that does not parse gets INVALID_PARAMETER.
//!
//! BATCH_ACK_MESSAGE (200151), Java's `AckMessageProcessor` batch path: a JSON body
//! (`protocol::body::pop`, bounded there) of entries, each a checkpoint (retry mark, queue,
//! start offset, pop time) and a bitSet of offsets `startOffset+i` to ack; offsets outside the
//! queue are skipped. Every entry's names are checked before anything is acked. As Java: no
//! body or no entries is NO_MESSAGE, a body acking anything is SUCCESS (the remark counts the
//! stale offsets). Unlike Java: a body that does not parse or breaks a bound is
//! INVALID_PARAMETER naming why, and a body of which nothing was pending is NO_MESSAGE.
//!
//! May import: `model`, `protocol`, `core` and modules of `broker/`.

use std::sync::Arc;

use super::{fail, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::core::pop::{self, AckOutcome, Handle, TopicMark};
use crate::protocol::body::pop::{BatchAck, BatchAckMessageRequestBody};
use crate::protocol::header::pop::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

pub async fn ack_message(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = AckMessageRequestHeader::decode(&req.ext_fields)?;
    let handle = check(b, (&h.consumer_group, &h.topic, h.queue_id), &h.extra_info, h.offset)?;
    match b.pop_ack(&h.consumer_group, &h.topic, h.queue_id, &handle, h.offset).await {
        AckOutcome::Acked => Ok(Some(super::ok(req))),
        AckOutcome::Stale => fail(ResponseCode::NO_MESSAGE, "no pending message matches the receipt handle"),
    }
}

pub async fn batch_ack_message(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let body = BatchAckMessageRequestBody::parse(&req.body).map_err(BrokerError::InvalidParameter)?;
    if body.acks.is_empty() {
        return fail(ResponseCode::NO_MESSAGE, "the batch ack names no message");
    }
    for a in &body.acks {
        super::check_group(&a.consumer_group)?;
        super::check_topic(&a.topic)?;
    }
    let (mut acked, mut stale) = (0usize, 0usize);
    for a in &body.acks {
        let offsets = batch_offsets(b, a);
        let done = match &offsets {
            Some((topic, offsets)) => {
                b.pop_ack_offsets(&a.consumer_group, topic, a.queue_id, (a.start_offset, a.pop_time), offsets).await
            }
            None => 0,
        };
        acked += done;
        stale += a.bits.len() - done;
    }
    if acked == 0 {
        return fail(ResponseCode::NO_MESSAGE, "no pending message matches the batch ack");
    }
    Ok(Some(super::ok(req).with_remark(format!("acked {acked}, stale {stale}"))))
}

/// The stored topic and the offsets of an entry inside its queue; `None` when the topic or the
/// queue does not exist (Java: "Illegal topic or queue found when batch ack", skipped).
fn batch_offsets(b: &BrokerInner, a: &BatchAck) -> Option<(String, Vec<i64>)> {
    let mark = match a.retry.as_str() {
        "1" => TopicMark::RetryV1,
        "2" => TopicMark::RetryV2,
        _ => TopicMark::Normal,
    };
    let topic = pop::marked_topic(mark, &a.topic, &a.consumer_group);
    let tc = b.topics.view(&topic)?;
    if a.queue_id < 0 || a.queue_id >= tc.read_queue_nums {
        return None;
    }
    let (min, max) = (b.store.min_offset_in_queue(&topic, a.queue_id), b.store.max_offset_in_queue(&topic, a.queue_id));
    let offsets = a
        .bits
        .iter()
        .filter_map(|i| a.start_offset.checked_add(i64::from(*i)))
        .filter(|o| (min..=max).contains(o))
        .collect();
    Some((topic, offsets))
}

pub async fn change_invisible_time(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = ChangeInvisibleTimeRequestHeader::decode(&req.ext_fields)?;
    if !(pop::MIN_INVISIBLE_MS..=pop::MAX_INVISIBLE_MS).contains(&h.invisible_time) {
        return Err(BrokerError::InvalidParameter(format!("invisibleTime {} is out of range", h.invisible_time)));
    }
    let handle = check(b, (&h.consumer_group, &h.topic, h.queue_id), &h.extra_info, h.offset)?;
    let Some(changed) =
        b.pop_change_invisible(&h.consumer_group, &h.topic, h.queue_id, &handle, h.offset, h.invisible_time).await
    else {
        return fail(ResponseCode::NO_MESSAGE, "no pending message matches the receipt handle");
    };
    let mut resp = super::ok(req);
    ChangeInvisibleTimeResponseHeader {
        pop_time: changed.pop_time,
        invisible_time: changed.invisible_time,
        revive_qid: handle.revive_qid,
    }
    .encode(&mut resp.ext_fields);
    Ok(Some(resp))
}

/// Names, the queue, the offset's range and the handle, in Java's order.
fn check(
    b: &BrokerInner,
    (group, topic, queue_id): (&str, &str, i32),
    extra: &str,
    offset: i64,
) -> Result<Handle, BrokerError> {
    super::check_group(group)?;
    super::check_topic(topic)?;
    let Some(tc) = b.topics.view(topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic[{topic}] not exist, apply first please!"));
    };
    if queue_id < 0 || queue_id >= tc.read_queue_nums {
        return fail(
            ResponseCode::MESSAGE_ILLEGAL,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}]",
                tc.read_queue_nums
            ),
        );
    }
    let (min, max) = (b.store.min_offset_in_queue(topic, queue_id), b.store.max_offset_in_queue(topic, queue_id));
    if offset < min || offset > max {
        return fail(
            ResponseCode::NO_MESSAGE,
            format!("offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{min}~{max}"),
        );
    }
    let handle = Handle::parse(extra).map_err(|e| BrokerError::InvalidParameter(e.to_string()))?;
    if handle.queue_id != queue_id || handle.queue_offset.is_some_and(|o| o != offset) {
        return fail(ResponseCode::NO_MESSAGE, "the receipt handle names another message");
    }
    Ok(handle)
}
