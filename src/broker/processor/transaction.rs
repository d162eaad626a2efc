//! END_TRANSACTION (37) (`EndTransactionProcessor`): a producer's commit or rollback of a half
//! message, first-hand or answering a check. Java clients send it oneway; the response is
//! built anyway for those that wait. On a SYNC_MASTER a commit counts only once its message is
//! on the slaves; until then no op record is written and the check service keeps asking, and a
//! repeated commit waits for the message already stored instead of storing it again.
//!
//! May import: `model`, `protocol`, `store` and modules of `broker/`; the area's rule is its line
//! in docs/architecture.md.

use std::sync::Arc;

use tracing::info;

use super::{fail, ok, BrokerError, Handled};
use crate::broker::transaction::{committed, op_record, transaction_key, HALF_TOPIC};
use crate::broker::BrokerInner;
use crate::model::message::{self, property, sys_flag, StoredMessage};
use crate::protocol::header::broker::EndTransactionRequestHeader;
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};
use crate::store::PutStatus;

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
    let half = match b.store.lookup_message(h.commit_log_offset) {
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
    let key = transaction_key(&half);
    if let Some(end) = key.as_ref().filter(|_| commit).and_then(|k| b.unreplicated_commits.get(k)) {
        // Committed before but not on the slaves then: wait for that message, do not store
        // it again.
        if let Some((code, remark)) = super::send::wait_for_slaves(b, end).await {
            return fail(code, remark);
        }
    } else if commit {
        let Some(mut msg) = committed(&half) else {
            return fail(ResponseCode::SYSTEM_ERROR, "the half message has no REAL_TOPIC or REAL_QID");
        };
        // Counted under its real topic (Java's EndTransactionProcessor: incTopicPutNums).
        let (put_topic, put_queue) = (msg.topic.clone(), msg.queue_id);
        // The store's put hook in Java: a committed timer or delayed message waits its time.
        if let Err((code, remark)) = b.timer.divert(&mut msg) {
            return fail(code, remark);
        }
        b.schedule.divert(&mut msg);
        let put = b.store.put_messages(&[msg], true).await;
        match &put.status {
            PutStatus::PutOk | PutStatus::FlushDiskTimeout => {}
            _ => {
                let (code, remark) = super::super::convert::put_status_code(&put.status);
                return fail(code, remark.unwrap_or_default());
            }
        }
        if let Some(a) = &put.append {
            let system = b.is_system_topic(&put_topic);
            b.stats.put(&put_topic, put_queue, 1, a.wrote_bytes as u64, 0, system);
        }
        // SYNC_MASTER: the committed message is on a slave before the op record says done. If
        // the slaves did not get it, the producer is told, and the half message stays for the
        // check service: after a failover the new master asks the producer again, where a
        // finished transaction would be lost (Java answers SUCCESS and writes the op record).
        if let Some(append) = &put.append {
            if let Some((code, remark)) = super::send::wait_for_slaves(b, append.end_offset).await {
                if let Some(key) = key {
                    b.unreplicated_commits.insert(key, append.end_offset);
                }
                tracing::debug!(
                    group = h.producer_group,
                    msg_id = h.msg_id,
                    remark,
                    "a committed transaction is not on the slaves; it stays open for the check service"
                );
                return fail(code, remark);
            }
        }
    }
    finish(b, &half).await?;
    if let Some(key) = key {
        b.unreplicated_commits.remove(&key);
    }
    Ok(Some(ok(req)))
}

/// `rejectCommitOrRollback`: a half message with `CHECK_IMMUNITY_TIME_IN_SECONDS` accepts its
/// producer's own answer only within that time (at least `transactionTimeOut`).
fn past_immunity(b: &BrokerInner, half: &StoredMessage) -> bool {
    let Some(v) = message::property_value(&half.properties, property::CHECK_IMMUNITY_TIME_IN_SECONDS) else {
        return false;
    };
    let timeout = b.live.config().transaction_time_out;
    let immunity = v.trim().parse::<i64>().map_or(timeout, |s| s.saturating_mul(1000).max(timeout));
    crate::store::now_ms() - half.born_timestamp > immunity
}

/// Writes the op record that marks the half message finished, durably before answering.
async fn finish(b: &BrokerInner, half: &StoredMessage) -> Result<(), BrokerError> {
    let put = b.store.put_messages(&[op_record(&[half.queue_offset], b.store_host)], true).await;
    match put.status {
        PutStatus::PutOk | PutStatus::FlushDiskTimeout => Ok(()),
        status => {
            let (code, remark) = super::super::convert::put_status_code(&status);
            Err(BrokerError::Code(code, remark.unwrap_or_else(|| "storing the transaction's op record failed".into())))
        }
    }
}
