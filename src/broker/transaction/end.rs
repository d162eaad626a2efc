//! Ending a transaction, for both doors: END_TRANSACTION (`processor/transaction.rs`, remoting
//! producers) and `EndTransaction` of the 5.x SDKs ([`end`], the gRPC door). Commit puts the
//! message on its real topic (through the timer and delay hooks, as a send), then the op record
//! marks the half finished. On a SYNC_MASTER a commit counts only once its message is on the
//! slaves; until then no op record is written and the check service keeps asking, and a repeated
//! commit waits for the message already stored instead of storing it again. A transaction
//! ended here is not ended twice (`finished.rs`).
//!
//! May import: `broker` (managers, config), `model`, `protocol` (response codes), `store`, `core`.

use std::sync::Arc;
use std::time::Duration;

use super::{committed, op_record, transaction_key, TransactionKey, HALF_TOPIC};
use crate::broker::BrokerInner;
use crate::core::{Durability, Replicas};
use crate::model::message::{self, property, StoredMessage};
use crate::protocol::ResponseCode;
use crate::store::PutStatus;

/// Why the gRPC door's end was not done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndTxnError {
    /// No such prepared message (or not this producer's): nothing done.
    Unknown(String),
    /// The store or the slaves refused; the check service will ask again.
    Failed(String),
}

/// A refusal of [`finish_half`]: the remoting response code Java answers, and its remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i32,
    pub remark: String,
}

/// Commits (`commit`) or rolls back the half message at `commit_log_offset` / `queue_offset`
/// of `producer_group` whose UNIQ_KEY is `message_id` (the gRPC door's EndTransaction; a gRPC
/// producer's group is its topic); `from_check` when it answers the check service.
pub async fn end(
    b: &Arc<BrokerInner>,
    commit_log_offset: i64,
    queue_offset: i64,
    producer_group: &str,
    message_id: &str,
    commit: bool,
    from_check: bool,
) -> Result<(), EndTxnError> {
    if b.config.is_slave() {
        return Err(EndTxnError::Failed("a slave does not end transactions".into()));
    }
    let half = match b.store.named_message(commit_log_offset) {
        Some(m)
            if m.topic == HALF_TOPIC
                && m.queue_offset == queue_offset
                && message::property_value(&m.properties, property::PGROUP) == Some(producer_group)
                && message::property_value(&m.properties, property::UNIQ_KEY) == Some(message_id) =>
        {
            m
        }
        _ => return Err(EndTxnError::Unknown("Find prepared transaction message failed".into())),
    };
    // `rejectCommitOrRollback`: the producer's own end only within the check immunity; an
    // answer to a check (source SERVER_CHECK) at any time.
    if !from_check && past_immunity(b, &half) {
        return Err(EndTxnError::Failed("the transaction's check immunity is over: the check service decides".into()));
    }
    finish_half(b, &half, commit).await.map_err(|r| EndTxnError::Failed(r.remark))
}

/// Commits or rolls back `half`, a half message already matched to the request; on a
/// SYNC_MASTER the op record waits for the committed message to be on the slaves. The ends of
/// one transaction take turns, and one already ended here is not ended again
/// ([`super::finished`]): the op record marks this copy of the half finished, and the same
/// decision is answered SUCCESS, the other refused.
pub async fn finish_half(b: &BrokerInner, half: &StoredMessage, commit: bool) -> Result<(), Refusal> {
    let Some(key) = transaction_key(half) else { return finish(b, half, commit, None).await };
    let slot = b.finished_transactions.slot(&key);
    let mut decided = slot.lock().await;
    if let Some(was_commit) = *decided {
        // Ended already (through another copy of the half): this copy is finished too, so the
        // check service does not ask about it again, and nothing else is stored.
        let put = b.store.put_messages(&[op_record(&[half.queue_offset], b.store_host)], true).await;
        stored(&put.status, "storing the transaction's op record failed")?;
        if was_commit != commit {
            let was = if was_commit { "committed" } else { "rolled back" };
            return Err(refused(ResponseCode::SYSTEM_ERROR.0, format!("the transaction was already {was}")));
        }
        return Ok(());
    }
    let r = finish(b, half, commit, Some(key.clone())).await;
    if r.is_ok() {
        *decided = Some(commit);
    } else {
        drop(decided);
        b.finished_transactions.forget_undecided(&key, &slot);
    }
    r
}

async fn finish(
    b: &BrokerInner,
    half: &StoredMessage,
    commit: bool,
    key: Option<TransactionKey>,
) -> Result<(), Refusal> {
    if let Some(end) = key.as_ref().filter(|_| commit).and_then(|k| b.unreplicated_commits.get(k)) {
        // Committed before but not on the slaves then: wait for that message, do not store
        // it again.
        wait_for_slaves(b, end).await?;
    } else if commit {
        let Some(mut msg) = committed(half) else {
            return Err(refused(ResponseCode::SYSTEM_ERROR.0, "the half message has no REAL_TOPIC or REAL_QID"));
        };
        // Counted under its real topic (Java's EndTransactionProcessor: incTopicPutNums).
        let (put_topic, put_queue) = (msg.topic.clone(), msg.queue_id);
        // The store's put hook in Java: a committed timer or delayed message waits its time.
        if let Err((code, remark)) = b.timer.divert(&mut msg) {
            return Err(refused(code.0, remark));
        }
        b.schedule.divert(&mut msg);
        let put = b.store.put_messages(&[msg], true).await;
        stored(&put.status, "storing the committed message failed")?;
        if let Some(append) = &put.append {
            let system = b.is_system_topic(&put_topic);
            b.stats.put(&put_topic, put_queue, 1, append.wrote_bytes as u64, 0, system);
            // SYNC_MASTER: the committed message is on a slave before the op record says done.
            // If the slaves did not get it, the producer is told, and the half message stays
            // for the check service: after a failover the new master asks the producer again,
            // where a finished transaction would be lost (Java answers SUCCESS and writes the
            // op record).
            if let Err(r) = wait_for_slaves(b, append.end_offset).await {
                if let Some(key) = key {
                    b.unreplicated_commits.insert(key, append.end_offset);
                }
                tracing::debug!(
                    remark = r.remark,
                    "a committed transaction is not on the slaves; it stays open for the check service"
                );
                return Err(r);
            }
        }
    }
    let put = b.store.put_messages(&[op_record(&[half.queue_offset], b.store_host)], true).await;
    stored(&put.status, "storing the transaction's op record failed")?;
    if let Some(key) = key {
        b.unreplicated_commits.remove(&key);
    }
    Ok(())
}

/// `rejectCommitOrRollback`: a half message with `CHECK_IMMUNITY_TIME_IN_SECONDS` accepts its
/// producer's own answer only within that time (at least `transactionTimeOut`).
pub fn past_immunity(b: &BrokerInner, half: &StoredMessage) -> bool {
    let Some(v) = message::property_value(&half.properties, property::CHECK_IMMUNITY_TIME_IN_SECONDS) else {
        return false;
    };
    let timeout = b.live.config().transaction_time_out;
    let immunity = v.trim().parse::<i64>().map_or(timeout, |s| s.saturating_mul(1000).max(timeout));
    crate::store::now_ms() - half.born_timestamp > immunity
}

/// Waits for the slaves (SYNC_MASTER) to have `end_offset`; the send path's answer if not.
async fn wait_for_slaves(b: &BrokerInner, end_offset: u64) -> Result<(), Refusal> {
    let how = Durability {
        wait_flush: false,
        replicas: Replicas::After,
        replica_timeout: Duration::from_millis(b.live.config().slave_timeout),
        deferred: false,
    };
    match b.wait_durable(end_offset, how).await {
        None => Ok(()),
        Some(r) => Err(refused(r.outcome.codes().remoting, r.why)),
    }
}

fn stored(status: &PutStatus, what: &str) -> Result<(), Refusal> {
    match status {
        PutStatus::PutOk | PutStatus::FlushDiskTimeout => Ok(()),
        status => {
            let (code, remark) = crate::broker::convert::put_status_code(status);
            Err(refused(code.0, remark.unwrap_or_else(|| what.to_owned())))
        }
    }
}

fn refused(code: i32, remark: impl Into<String>) -> Refusal {
    Refusal { code, remark: remark.into() }
}
