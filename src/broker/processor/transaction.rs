//! END_TRANSACTION (37) (`EndTransactionProcessor`): a producer's commit or rollback of a half
//! message, first-hand or answering a check. Java clients send it oneway; the response is
//! built anyway for those that wait. The request is checked here; the commit or rollback itself
//! (and its SYNC_MASTER rules) is `transaction/end.rs`'s, shared with the gRPC door.
//!
//! May import: `model`, `protocol`, `store` and modules of `broker/`; the area's rule is its line
//! in docs/architecture.md.

use std::sync::Arc;

use tracing::info;

use super::{fail, ok, BrokerError, Handled};
use crate::broker::transaction::end::{finish_half, past_immunity};
use crate::broker::transaction::HALF_TOPIC;
use crate::broker::BrokerInner;
use crate::model::message::{self, property, sys_flag};
use crate::protocol::header::broker::EndTransactionRequestHeader;
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

pub async fn end_transaction(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    if b.config.is_slave() {
        return Ok(Some(RemotingCommand::response_to(req, ResponseCode::SLAVE_NOT_AVAILABLE)));
    }
    let h = EndTransactionRequestHeader::decode(&req.ext_fields)?;
    let commit = match h.commit_or_rollback {
        sys_flag::TRANSACTION_NOT_TYPE => {
            // Java answers nothing: the half message stays for the check service.
            info!(
                group = h.producer_group,
                msg_id = h.msg_id,
                from_check = h.from_transaction_check.unwrap_or(false),
                remark = req.remark.as_deref().unwrap_or(""),
                "the producer does not know the transaction's outcome yet; it will be checked"
            );
            return Ok(None);
        }
        sys_flag::TRANSACTION_COMMIT => true,
        sys_flag::TRANSACTION_ROLLBACK => false,
        other => {
            return Err(BrokerError::InvalidParameter(format!("commitOrRollback {other} is not 0, 8 or 12")));
        }
    };
    let half = match b.store.named_message(h.commit_log_offset) {
        Some(m) if m.topic == HALF_TOPIC => m,
        _ => return fail(ResponseCode::SYSTEM_ERROR, "Find prepared transaction message failed"),
    };
    if !h.from_transaction_check.unwrap_or(false) && past_immunity(b, &half) {
        // Too late for the producer's own answer: the check service decides now.
        return Ok(Some(RemotingCommand::response_to(req, ResponseCode::ILLEGAL_OPERATION)));
    }
    if message::property_value(&half.properties, property::PGROUP) != Some(h.producer_group.as_str()) {
        return fail(ResponseCode::SYSTEM_ERROR, "The producer group wrong");
    }
    if half.queue_offset != h.tran_state_table_offset {
        return fail(ResponseCode::SYSTEM_ERROR, "The transaction state table offset wrong");
    }
    if half.commit_log_offset != h.commit_log_offset {
        return fail(ResponseCode::SYSTEM_ERROR, "The commit log offset wrong");
    }
    if let Err(r) = finish_half(b, &half, commit).await {
        return fail(ResponseCode(r.code), r.remark);
    }
    Ok(Some(ok(req)))
}
