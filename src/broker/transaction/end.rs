//! Ending a transaction for the gRPC door (`EndTransaction` of the 5.x SDKs): the half message
//! named by its CommitLog and half-queue offsets, checked against the producer group (a gRPC
//! producer's group is its topic) and the message id the producer was given; commit puts the
//! message on its real topic (through the timer and delay hooks, as a send), then the op record
//! marks the half finished. As END_TRANSACTION (`processor/transaction.rs`) does for remoting
//! producers; a SYNC_MASTER commit the slaves did not get is left to the check service.
//!
//! May import: `broker` (managers, config), `model`, `store`, `core`.

use std::sync::Arc;
use std::time::Duration;

use super::{committed, op_record, HALF_TOPIC};
use crate::broker::BrokerInner;
use crate::core::{Durability, Replicas};
use crate::model::message::{self, property};
use crate::store::PutStatus;

/// Why it was not ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndTxnError {
    /// No such prepared message (or not this producer's): nothing done.
    Unknown(String),
    /// The store or the slaves refused; the check service will ask again.
    Failed(String),
}

/// Commits (`commit`) or rolls back the half message at `commit_log_offset` / `queue_offset`
/// of `producer_group` whose UNIQ_KEY is `message_id`.
pub async fn end(
    b: &Arc<BrokerInner>,
    commit_log_offset: i64,
    queue_offset: i64,
    producer_group: &str,
    message_id: &str,
    commit: bool,
) -> Result<(), EndTxnError> {
    if b.config.is_slave() {
        return Err(EndTxnError::Failed("a slave does not end transactions".into()));
    }
    let half = match b.store.lookup_message(commit_log_offset) {
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
    if commit {
        let mut msg = committed(&half)
            .ok_or_else(|| EndTxnError::Failed("the half message has no REAL_TOPIC or REAL_QID".into()))?;
        let (topic, queue) = (msg.topic.clone(), msg.queue_id);
        b.timer.divert(&mut msg).map_err(|(_, why)| EndTxnError::Failed(why))?;
        b.schedule.divert(&mut msg);
        let put = b.store.put_messages(&[msg], true).await;
        stored(&put.status)?;
        if let Some(a) = &put.append {
            b.stats.put(&topic, queue, 1, a.wrote_bytes as u64, 0, b.is_system_topic(&topic));
            let how = Durability {
                wait_flush: false,
                replicas: Replicas::After,
                replica_timeout: Duration::from_millis(b.live.config().slave_timeout),
                deferred: false,
            };
            if let Some(r) = b.wait_durable(a.end_offset, how).await {
                return Err(EndTxnError::Failed(r.why));
            }
        }
    }
    let put = b.store.put_messages(&[op_record(&[half.queue_offset], b.store_host)], true).await;
    stored(&put.status)
}

fn stored(status: &PutStatus) -> Result<(), EndTxnError> {
    match status {
        PutStatus::PutOk | PutStatus::FlushDiskTimeout => Ok(()),
        other => Err(EndTxnError::Failed(format!("storing failed: {other:?}"))),
    }
}
