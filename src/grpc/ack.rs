//! AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue by receipt handle
//! (Java's `AckMessageActivity`, `ChangeInvisibleDurationActivity`, `ForwardMessageToDLQActivity`): each handle is opened (`receipt.rs`; forged, altered or
//! another group's: INVALID_RECEIPT_HANDLE) and handed to the core with the stored topic its
//! mark names. A handle whose checkpoint is gone (acked before, changed since, or redelivered
//! after its invisible time) changes nothing and is answered INVALID_RECEIPT_HANDLE, as Java
//! answers an expired handle. AckMessage answers per entry; its Status is the entries' one
//! code, or MULTIPLE_RESULTS.
//!
//! May import: `core`, `grpc`.

use super::pb::{
    AckMessageRequest, AckMessageResponse, AckMessageResultEntry, ChangeInvisibleDurationRequest,
    ChangeInvisibleDurationResponse, Code, ForwardMessageToDeadLetterQueueRequest, Status,
};
use super::status::{self, Refused};
use super::{consume, convert, validate, Grpc};
use crate::core::pop::{marked_topic, AckOutcome, Handle};

/// Most entries in one AckMessage (a receive returns at most 32 messages).
pub const MAX_ACK_ENTRIES: usize = 1024;

fn stale() -> Refused {
    Refused::new(Code::InvalidReceiptHandle, "receipt handle is expired or was used already")
}

pub async fn ack(g: &Grpc, req: &AckMessageRequest) -> AckMessageResponse {
    match try_ack(g, req).await {
        Ok(entries) => {
            let mut codes: Vec<i32> = entries.iter().filter_map(|e| e.status.as_ref().map(|s| s.code)).collect();
            codes.sort_unstable();
            codes.dedup();
            let st = match codes.as_slice() {
                [] => Refused::new(Code::InternalServerError, "ack message result is empty").status(),
                [one] => status::status(Code::try_from(*one).unwrap_or(Code::InternalServerError)),
                _ => status::status(Code::MultipleResults),
            };
            AckMessageResponse { status: Some(st), entries }
        }
        Err(r) => AckMessageResponse { status: Some(r.status()), entries: Vec::new() },
    }
}

async fn try_ack(g: &Grpc, req: &AckMessageRequest) -> Result<Vec<AckMessageResultEntry>, Refused> {
    let topic = validate::topic(&g.core.config, req.topic.as_ref())?;
    let group = validate::group(req.group.as_ref())?;
    if req.entries.len() > MAX_ACK_ENTRIES {
        return Err(Refused::new(Code::BadRequest, format!("more than {MAX_ACK_ENTRIES} entries in one ack")));
    }
    let mut out = Vec::with_capacity(req.entries.len());
    for e in &req.entries {
        let st = match ack_one(g, group, topic, &e.receipt_handle).await {
            Ok(()) => status::ok(),
            Err(r) => r.status(),
        };
        out.push(AckMessageResultEntry {
            message_id: e.message_id.clone(),
            receipt_handle: e.receipt_handle.clone(),
            status: Some(st),
        });
    }
    Ok(out)
}

/// The handle opened (its renewed form when the broker renews it, which stops then), with the
/// stored topic and the message's offset.
async fn open(g: &Grpc, group: &str, topic: &str, receipt: &str) -> Result<(Handle, String, i64), Refused> {
    let h = g.receipts.open(group, receipt)?;
    let h = g.renewals.take(group, receipt).await.unwrap_or(h);
    let offset = h.queue_offset.ok_or_else(stale)?;
    let stored = marked_topic(h.mark, topic, group);
    Ok((h, stored, offset))
}

async fn ack_one(g: &Grpc, group: &str, topic: &str, receipt: &str) -> Result<(), Refused> {
    let (h, stored, offset) = open(g, group, topic, receipt).await?;
    match g.core.pop_ack(group, &stored, h.queue_id, &h, offset).await {
        AckOutcome::Acked => Ok(()),
        AckOutcome::Stale => Err(stale()),
    }
}

pub async fn change_invisible(g: &Grpc, req: &ChangeInvisibleDurationRequest) -> ChangeInvisibleDurationResponse {
    match try_change(g, req).await {
        Ok(receipt) => ChangeInvisibleDurationResponse { status: Some(status::ok()), receipt_handle: receipt },
        Err(r) => ChangeInvisibleDurationResponse { status: Some(r.status()), receipt_handle: String::new() },
    }
}

async fn try_change(g: &Grpc, req: &ChangeInvisibleDurationRequest) -> Result<String, Refused> {
    let topic = validate::topic(&g.core.config, req.topic.as_ref())?;
    let group = validate::group(req.group.as_ref())?;
    let ms = req.invisible_duration.as_ref().map_or(0, convert::duration_ms);
    // Java's `validateInvisibleTime(long)`: no floor (0 redelivers at once), 12 h at most.
    let ms = consume::invisible_time(ms, 0)?;
    let (h, stored, offset) = open(g, group, topic, &req.receipt_handle).await?;
    let changed = g.core.pop_change_invisible(group, &stored, h.queue_id, &h, offset, ms).await.ok_or_else(stale)?;
    let new = Handle {
        ck_offset: changed.start_offset,
        pop_time: changed.pop_time,
        invisible_time: changed.invisible_time,
        ..h
    };
    Ok(g.receipts.seal(group, &new))
}

/// ForwardMessageToDeadLetterQueue (Java's `ForwardMessageToDLQActivity`): the message goes to
/// `%DLQ%{group}` and is acked.
pub async fn forward_to_dlq(g: &Grpc, req: &ForwardMessageToDeadLetterQueueRequest) -> Status {
    match try_forward(g, req).await {
        Ok(()) => status::ok(),
        Err(r) => r.status(),
    }
}

async fn try_forward(g: &Grpc, req: &ForwardMessageToDeadLetterQueueRequest) -> Result<(), Refused> {
    let topic = validate::topic(&g.core.config, req.topic.as_ref())?;
    let group = validate::group(req.group.as_ref())?;
    let (h, stored, offset) = open(g, group, topic, &req.receipt_handle).await?;
    match g.core.pop_forward_to_dlq(group, topic, (&stored, h.queue_id), &h, offset).await {
        Ok(AckOutcome::Acked) => Ok(()),
        Ok(AckOutcome::Stale) => Err(stale()),
        Err(why) => {
            Err(Refused::new(Code::InternalServerError, format!("forward to the dead letter queue failed: {why}")))
        }
    }
}
