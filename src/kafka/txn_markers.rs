//! Completing a transaction (Kafka's `TransactionMarkerChannelManager`, on one node): after
//! the Prepare state is on disk, a control record (COMMIT or ABORT marker: one stored message,
//! empty body, `KAFKA_PID`/`KAFKA_EPOCH`/`KAFKA_CONTROL`/`KAFKA_COORD_EPOCH`) is appended
//! through `core::append` to every partition of the transaction, then `core.txn.end` closes it
//! there; a commit writes its pending offsets as OffsetCommit does (`offsets.rs`) and flushes
//! them; then CompleteCommit / CompleteAbort is persisted. Every step is safe to repeat, so a
//! completion cut by a crash is simply run again (a second marker of the same transaction ends
//! nothing in `core.txn`).
//!
//! The sweeper ([`run`], every `kafkaTransactionAbortTimedOutTransactionCleanupIntervalMs`)
//! fences and aborts transactions past their timeout, completes Prepare states left by a
//! crash or a failed marker, and expires idle transactional ids. [`recover`] (at start-up)
//! re-opens the transactions the log says are ongoing in `core.txn`.
//!
//! May import: `crate::core`, `crate::model`, `super::txn_coordinator`, `super::offsets`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::txn_coordinator::{Completion, TxnPartition, TxnState};
use super::{offsets, Kafka};
use crate::core::properties::{new_uniq_id, stored_properties};
use crate::core::txn::{KAFKA_CONTROL, KAFKA_COORD_EPOCH, KAFKA_EPOCH, KAFKA_PID};
use crate::core::{Durability, Protocol, Replicas, Traffic};
use crate::model::message::{properties_to_string, MessageToStore};
use crate::telemetry::MessageType;

/// This node's coordinator epoch (one node, one coordinator: it never changes hands).
pub const COORDINATOR_EPOCH: i32 = 0;

/// Writes the markers of `c` and completes it. Returns whether it completed (else the sweeper
/// tries again).
pub async fn complete(k: &Arc<Kafka>, c: Completion) -> bool {
    // Appends that passed their check before the Prepare state land before the markers.
    loop {
        let appended = k.txns.appended.notified();
        if !k.txns.lock().inflight(&c.transactional_id) {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), appended).await;
    }
    for p in &c.partitions {
        if let Err(why) = write_marker(k, &c, p).await {
            warn!(transactional_id = %c.transactional_id.escape_debug(), topic = %p.topic.escape_debug(),
                partition = p.partition, why, "cannot write a transaction marker yet; retrying later");
            k.txns.lock().completion_failed(&c);
            return false;
        }
    }
    if c.commit && !c.offsets.is_empty() {
        offsets::commit_txn_offsets(k, &c.offsets).await;
        let shared = k.shared.clone();
        let flushed = tokio::task::spawn_blocking(move || shared.offsets.persist(false)).await;
        if !matches!(flushed, Ok(Ok(()))) {
            warn!(transactional_id = %c.transactional_id.escape_debug(), "cannot flush committed offsets yet; retrying later");
            k.txns.lock().completion_failed(&c);
            return false;
        }
    }
    k.txns.lock().complete(&c, crate::store::now_ms());
    if k.txns.persist().await.is_err() {
        // In memory complete; the next persist of any change writes it.
        return false;
    }
    debug!(transactional_id = %c.transactional_id.escape_debug(), commit = c.commit,
        partitions = c.partitions.len(), "transaction completed");
    true
}

/// One control record in `p`'s queue, then `core.txn.end` there. A partition whose topic or
/// queue is gone is skipped.
async fn write_marker(k: &Arc<Kafka>, c: &Completion, p: &TxnPartition) -> Result<(), String> {
    let s = &k.shared;
    let exists = s
        .topics
        .view(&p.topic)
        .is_some_and(|v| p.partition >= 0 && p.partition < v.write_queue_nums.max(v.read_queue_nums));
    if !exists {
        debug!(topic = %p.topic.escape_debug(), partition = p.partition, "no marker: the partition is gone");
        return Ok(());
    }
    let (pid, epoch, coord) = (c.producer_id.to_string(), c.producer_epoch.to_string(), COORDINATOR_EPOCH.to_string());
    let control = if c.commit { "COMMIT" } else { "ABORT" };
    let props = properties_to_string([
        (KAFKA_PID, pid.as_str()),
        (KAFKA_EPOCH, epoch.as_str()),
        (KAFKA_CONTROL, control),
        (KAFKA_COORD_EPOCH, coord.as_str()),
    ]);
    let msg = MessageToStore {
        topic: p.topic.clone(),
        queue_id: p.partition,
        flag: 0,
        body: Bytes::new(),
        properties: stored_properties(&props, s.broker_properties(), || new_uniq_id(s.store_host)),
        tags_code: 0,
        born_timestamp: crate::store::now_ms(),
        born_host: s.store_host,
        store_host: s.store_host,
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    let how = Durability {
        wait_flush: true,
        replicas: Replicas::After,
        replica_timeout: Duration::from_millis(s.live.config().slave_timeout),
        deferred: false,
    };
    let traffic = Traffic { protocol: Protocol::Kafka, topic: &p.topic, kind: MessageType::Transaction };
    let _permit = s.admit(Protocol::Kafka).await.map_err(|r| r.why)?;
    // A slave that falls behind does not undo a stored marker: its shortfall is ignored.
    let appended = s.append(std::slice::from_ref(&msg), how, traffic).await.map_err(|r| r.why)?;
    s.txn.end(&p.topic, p.partition, c.producer_id, appended.result.queue_offset, c.commit).await;
    Ok(())
}

/// At start-up: every transaction the log says is ongoing is open again in `core.txn`, from the
/// queue end offsets noted when its partitions were added (lower bounds of its first offsets).
pub async fn recover(k: &Kafka) {
    let open: Vec<(i64, Vec<TxnPartition>)> = {
        let t = k.txns.lock();
        t.ids.values().filter(|m| m.state == TxnState::Ongoing).map(|m| (m.producer_id, m.partitions.clone())).collect()
    };
    for (pid, parts) in &open {
        for p in parts {
            k.shared.txn.begin(&p.topic, p.partition, *pid, p.start_offset).await;
        }
    }
    if !open.is_empty() {
        info!(transactions = open.len(), "Kafka transactions open at the last stop: aborted when their timeout passes");
    }
}

/// One sweep: timed-out transactions fenced and aborted, unfinished completions run again,
/// idle transactional ids expired.
pub async fn sweep(k: &Arc<Kafka>) {
    let now = crate::store::now_ms();
    let (due, expired) = {
        let mut t = k.txns.lock();
        (t.due(now), t.expire(&k.txns.limits, now))
    };
    if due.is_empty() && !expired {
        return;
    }
    if k.txns.persist().await.is_err() {
        let mut t = k.txns.lock();
        due.iter().for_each(|c| t.completion_failed(c));
        return;
    }
    for c in due {
        info!(transactional_id = %c.transactional_id.escape_debug(), producer_id = c.producer_id,
            epoch = c.producer_epoch, commit = c.commit, "completing a Kafka transaction (timed out, or left by a restart)");
        complete(k, c).await;
    }
}

/// Sweeps until `shutdown`, the first time at once (completions a crash left).
pub async fn run(k: Arc<Kafka>, shutdown: CancellationToken) {
    let every = Duration::from_millis(k.shared.config.kafka_transaction_cleanup_interval_ms.max(1));
    loop {
        sweep(&k).await;
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
