//! Store housekeeping on request (`mqadmin cleanExpiredCQ`, `deleteExpiredCommitLog`,
//! `cleanUnusedTopic`): CLEAN_EXPIRED_CONSUMEQUEUE (306), DELETE_EXPIRED_COMMITLOG (329),
//! CLEAN_UNUSED_TOPIC (316). Each answers SUCCESS once done, as Java does. And the CommitLog's
//! read-ahead (`setCommitLogReadAheadMode`, SET_COMMITLOG_READ_MODE 2004).
//!
//! ```text
//! 329  one retention pass now, whatever deleteWhen says: CommitLog segments older than
//!      fileReservedTime go, then the ConsumeQueue and index files behind the new minimum
//!      (Java: executeDeleteFilesManually, the next passes of CleanCommitLogService)
//! 316  the ConsumeQueues of every topic the topic table no longer has, system topics and
//!      LMQ topics kept (DefaultMessageStore.cleanUnusedTopic)
//! 306  the ConsumeQueues whose every record is gone from the CommitLog (their last record
//!      ends below its minimum), system topics kept (ConsumeQueueStore.cleanExpired) — of
//!      topics the topic table no longer has only: Java destroys those of live topics too, and
//!      their queue offsets start again at 0, under the committed offsets of their consumers
//! ```
//! Under ACL 1.0 all three need an admin account (`acl::perm::ADMIN_CODES`; Java's plain ACL
//! lets any account delete data this way).
//!
//! May import: `store`, `protocol` and modules of `broker/`.

use std::sync::Arc;
use std::time::SystemTime;

use tracing::info;

use super::{ok, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::protocol::{RemotingCommand, ResponseCode};

/// A topic whose queues the cleaning requests never remove.
fn kept(b: &BrokerInner, topic: &str) -> bool {
    b.topics.contains(topic) || b.is_system_topic(topic) || topic.starts_with("%LMQ%")
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, BrokerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, e.to_string()))?
        .map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, e.to_string()))
}

/// Removes the ConsumeQueues of `topics`.
async fn delete_queues(b: &BrokerInner, topics: Vec<String>) -> Result<usize, BrokerError> {
    if topics.is_empty() {
        return Ok(0);
    }
    let store = b.store.clone();
    let n = topics.len();
    blocking(move || store.delete_topics(&topics)).await?;
    Ok(n)
}

pub async fn delete_expired_commit_log(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let store = b.store.clone();
    let deleted = blocking(move || store.clean_expired_files(SystemTime::now())).await?;
    info!(segments = deleted, "deleteExpiredCommitLog: expired CommitLog segments deleted");
    Ok(Some(ok(req)))
}

pub async fn clean_unused_topic(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let unused: Vec<String> = b.store.queue_topics().into_iter().map(|(t, _)| t).filter(|t| !kept(b, t)).collect();
    let n = delete_queues(b, unused).await?;
    info!(topics = n, "cleanUnusedTopic: consume queues of deleted topics removed");
    Ok(Some(ok(req)))
}

pub async fn clean_expired_consume_queue(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let min = i64::try_from(b.store.commit_log_min_offset()).unwrap_or(i64::MAX);
    let expired: Vec<String> = b
        .store
        .queue_topics()
        .into_iter()
        .filter(|(t, end)| *end != -1 && *end < min && !kept(b, t))
        .map(|(t, _)| t)
        .collect();
    let n = delete_queues(b, expired).await?;
    info!(topics = n, min_offset = min, "cleanExpiredCQ: expired consume queues removed");
    Ok(Some(ok(req)))
}

/// SET_COMMITLOG_READ_MODE (2004, `mqadmin setCommitLogReadAheadMode`): `READ_AHEAD_MODE` 1
/// (MADV_RANDOM) turns the kernel's read-ahead off on every CommitLog segment and the ones to
/// come, 0 (MADV_NORMAL) back on; `dataReadAheadEnable` reads the new value back (kept until a
/// restart, as Java). Java's remarks for a missing or unknown mode.
pub fn set_commit_log_read_mode(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let Some(mode) = req.ext_fields.get("READ_AHEAD_MODE") else {
        return Err(BrokerError::Code(ResponseCode::SYSTEM_ERROR, "set commitlog readahead mode failed".into()));
    };
    let mode = match mode.trim().parse::<i32>() {
        Ok(m @ (0 | 1)) => m,
        Ok(_) => {
            let why = "set commitlog readahead mode param value error";
            return Err(BrokerError::Code(ResponseCode::INVALID_PARAMETER, why.into()));
        }
        Err(_) => {
            return Err(BrokerError::Code(ResponseCode::SYSTEM_ERROR, "set commitlog readahead mode failed".into()))
        }
    };
    let next = b.live.update(|c| {
        c.data_read_ahead_enable = mode == 0;
        Ok::<(), std::convert::Infallible>(())
    });
    let Ok(next) = next;
    b.store.update_live_config(&next.store_config());
    tracing::info!(mode, "CommitLog read-ahead mode set");
    let mut resp = ok(req);
    resp.remark = Some(format!("set commitlog readahead mode success, mode: {mode}"));
    Ok(Some(resp))
}
