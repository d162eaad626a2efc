//! The broker's periodic chores while it runs (consumer offsets persisted every
//! `flushConsumerOffsetInterval`; every 10 s the statistics sampled and expired client channels
//! closed; cold-read accumulators cleared every 5 s, 180 s while that feature is off) and the
//! metadata written at shutdown.
//!
//! May import: what `broker` may (its module doc).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::BrokerInner;

/// At shutdown, after every request task ended. Failed writes are logged by the writers.
pub(super) fn persist_all(inner: &BrokerInner) {
    let _ = inner.offsets.persist(true);
    let _ = inner.topics.persist_blocking();
    let _ = inner.groups.persist_blocking();
}

/// Offsets every `flushConsumerOffsetInterval`; client channels expire after
/// `channelExpiredTimeout` (checked every 10 s).
pub(super) async fn run(inner: Arc<BrokerInner>, shutdown: CancellationToken) {
    let flush = Duration::from_millis(inner.config.flush_consumer_offset_interval.max(100));
    let mut last_scan = tokio::time::Instant::now();
    let mut last_cold_clear = last_scan;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(flush) => {},
        }
        let offsets = inner.clone();
        let _ = tokio::task::spawn_blocking(move || offsets.offsets.persist(false)).await;
        let cold_clear = match inner.live.cold_data_flow_control_enable() {
            true => super::coldctr::CLEAR_INTERVAL_ON,
            false => super::coldctr::CLEAR_INTERVAL_OFF,
        };
        if last_cold_clear.elapsed() >= cold_clear {
            last_cold_clear = tokio::time::Instant::now();
            inner.cold_ctr.clear_data_acc(crate::store::now_ms());
        }
        if last_scan.elapsed() >= Duration::from_secs(10) {
            last_scan = tokio::time::Instant::now();
            inner.stats.sample();
            let timeout = Duration::from_millis(inner.config.channel_expired_timeout);
            let expired = inner.consumers.scan_expired(timeout);
            inner.producers.scan_expired(timeout);
            for (group, link) in expired {
                warn!(group, peer = %link.peer(), "consumer channel expired: no heartbeat");
                if let Some(conn) = link.remoting() {
                    conn.close();
                }
                inner.notify_consumer_ids_changed(&group).await;
            }
        }
    }
}
