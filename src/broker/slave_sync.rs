//! A slave copies its master's metadata every 10 s (`SlaveSynchronize`): topics, consumer
//! offsets, delay offsets and subscription groups.
//!
//! May import: `protocol` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::BrokerInner;
use crate::protocol::body::json;
use crate::protocol::body::register::TopicConfigSerializeWrapper;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};

pub async fn run(inner: Arc<BrokerInner>, shutdown: CancellationToken) {
    let mut wait = Duration::from_secs(3);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(wait) => {},
        }
        wait = Duration::from_secs(10);
        let master = inner.master_addr.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(master) = master else { continue };
        if let Err(e) = sync_all(&inner, &master).await {
            warn!(master, error = e, "metadata sync from master failed");
        }
    }
}

async fn fetch(inner: &BrokerInner, master: &str, code: RequestCode) -> Result<bytes::Bytes, String> {
    let resp = inner
        .outbound
        .invoke(master, RemotingCommand::request(code), Duration::from_secs(3))
        .await
        .map_err(|e| format!("{code}: {e}"))?;
    if resp.response_code() != ResponseCode::SUCCESS {
        return Err(format!("{code}: code {} {}", resp.code, resp.remark.unwrap_or_default()));
    }
    Ok(resp.body)
}

pub async fn sync_all(inner: &Arc<BrokerInner>, master: &str) -> Result<(), String> {
    let fetched = std::time::Instant::now();
    let topics: TopicConfigSerializeWrapper =
        json::from_slice(&fetch(inner, master, RequestCode::GET_ALL_TOPIC_CONFIG).await?).map_err(|e| e.to_string())?;
    if inner.topics.replace_all(topics.data_version, topics.topic_config_table, fetched) {
        inner.topics_changed().await;
    }
    let offsets = fetch(inner, master, RequestCode::GET_ALL_CONSUMER_OFFSET).await?;
    inner.offsets.merge_json(&offsets)?;
    let delay = fetch(inner, master, RequestCode::GET_ALL_DELAY_OFFSET).await?;
    inner.schedule.replace_json(&delay).await?;
    let groups: serde_json::Value =
        json::from_slice(&fetch(inner, master, RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG).await?)
            .map_err(|e| e.to_string())?;
    if let Some(table) = groups.get("subscriptionGroupTable") {
        let table = serde_json::from_value(table.clone()).map_err(|e| e.to_string())?;
        inner.groups.replace_all(table);
        inner.persist_groups().await;
    }
    debug!(master, "metadata synchronized from master");
    Ok(())
}

/// Persists and registers the topics the slave learned from replicated records: the dispatcher
/// learns them in memory and rings `topics_learned`.
pub async fn persist_learned_topics(inner: Arc<BrokerInner>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = inner.topics_learned.notified() => inner.topics_changed().await,
        }
    }
}
