//! ACK_MESSAGE (200051) and CHANGE_MESSAGE_INVISIBLETIME (200053) by receipt handle
//! (`extraInfo`, the `POP_CK` the client got), as Java's `AckMessageProcessor` and
//! `ChangeInvisibleTimeProcessor` check them. The header's topic is the stored one (the client
//! turns a retry mark into the POP retry topic).
//!
//! Unlike Java, which answers SUCCESS to an ack of anything, a handle that names no pending
//! message (acked before, revived since, forged) gets NO_MESSAGE (the client's NO_EXIST), and
//! changes nothing; a handle that does not parse gets INVALID_PARAMETER.
//!
//! May import: `model`, `protocol`, `core` and modules of `broker/`.

use std::sync::Arc;

use super::{fail, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::core::pop::{self, AckOutcome, Handle};
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
