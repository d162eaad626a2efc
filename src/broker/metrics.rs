//! The broker's metrics: its labels (`Node`), the scrape-time gauges (Java's observable gauges:
//! topics, groups, permission, client connections, consumer lag, storage, held pulls, HA lag) and the
//! endpoint. Hot-path counters (messages in/out, RPC latency) are recorded where they happen,
//! through `telemetry`'s cached handles.
//!
//! May import: `crate::telemetry`, `super` (the broker's state).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use metrics::Label;
use tokio_util::sync::CancellationToken;

use super::BrokerInner;
use crate::telemetry::{self, names, Node};

/// The labels of this broker's metrics, or `None` with `metricsExporterType=DISABLE`.
pub fn node(config: &super::BrokerConfig) -> Option<Arc<Node>> {
    if !telemetry::exporter_enabled(&config.metrics_exporter_type).unwrap_or(false) {
        return None;
    }
    let mut extra = config.metrics_label.clone();
    if config.metrics_in_delta {
        extra.push_str(",aggregation:delta");
    }
    Some(Node::new(names::NODE_TYPE_BROKER, &config.broker_cluster_name, &config.broker_name, &extra))
}

/// Serves `/metrics` and keeps this broker's gauges up to date at every scrape, until `shutdown`.
/// (Connection counts are published per listener by `net`, under the same labels.)
pub async fn start(inner: &Arc<BrokerInner>, shutdown: CancellationToken) {
    if inner.metrics.is_none() {
        return;
    }
    let weak = Arc::downgrade(inner);
    let collector = telemetry::on_scrape(move || collect(&weak));
    let c = &inner.config;
    telemetry::http::serve(&c.metrics_prom_exporter_host, c.metrics_prom_exporter_port, shutdown.clone()).await;
    tokio::spawn(async move {
        shutdown.cancelled().await;
        drop(collector);
    });
}

fn gauge(node: &Node, name: &'static str, more: Vec<Label>, value: f64) {
    metrics::gauge!(name, node.labels(more)).set(value);
}

fn group_labels(topic: &str, group: &str) -> Vec<Label> {
    let is_retry = topic.starts_with("%RETRY%");
    vec![
        Label::new(names::LABEL_TOPIC, topic.to_owned()),
        Label::new(names::LABEL_CONSUMER_GROUP, group.to_owned()),
        Label::new(names::LABEL_IS_RETRY, if is_retry { "true" } else { "false" }),
    ]
}

fn collect(weak: &Weak<BrokerInner>) {
    let Some(b) = weak.upgrade() else { return };
    let Some(node) = b.metrics.as_deref() else { return };
    gauge(node, names::TOPIC_NUMBER, vec![], b.topics.snapshot().1.len() as f64);
    gauge(node, names::CONSUMER_GROUP_NUMBER, vec![], b.groups.all().len() as f64);
    gauge(node, names::BROKER_PERMISSION, vec![], f64::from(b.live.broker_permission()));
    gauge(node, names::DISPATCH_SKIPPED, vec![], b.store.skipped_records() as f64);
    gauge(node, names::PRODUCER_CONNECTIONS, vec![], b.producers.connection_count() as f64);
    gauge(node, names::CONSUMER_CONNECTIONS, vec![], b.consumers.connection_count() as f64);

    // Consumer lag (Java's ConsumerLagCalculator): per (topic, group), the messages between the
    // committed offset and each queue's end.
    let committed: HashMap<(String, String), BTreeMap<i32, i64>> =
        b.offsets.all().into_iter().map(|(t, g, q)| ((t, g), q)).collect();
    for ((topic, group), queues) in &committed {
        let behind: i64 =
            queues.iter().map(|(q, c)| (b.store.max_offset_in_queue(topic, *q) - (*c).max(0)).max(0)).sum();
        gauge(node, names::CONSUMER_LAG_MESSAGES, group_labels(topic, group), behind as f64);
    }
    // In flight (`calculateInflight`): pulled but not yet committed.
    for (topic, group, pulled) in b.offsets.pulled() {
        let Some(done) = committed.get(&(topic.clone(), group.clone())) else { continue };
        let inflight: i64 = pulled.iter().map(|(q, p)| done.get(q).map_or(0, |c| (p - c).max(0))).sum();
        gauge(node, names::CONSUMER_INFLIGHT_MESSAGES, group_labels(&topic, &group), inflight as f64);
    }

    let (max, flushed, dispatched) =
        (b.store.commit_log_max_offset(), b.store.flushed_offset(), b.store.dispatched_offset());
    gauge(node, names::STORAGE_SIZE, vec![], max.saturating_sub(b.store.commit_log_min_offset()) as f64);
    gauge(node, names::STORAGE_FLUSH_BEHIND, vec![], max.saturating_sub(flushed) as f64);
    gauge(node, names::STORAGE_DISPATCH_BEHIND, vec![], max.saturating_sub(dispatched) as f64);
    gauge(node, names::HELD_PULLS, vec![], b.hold.held() as f64);
    if let Some(ha) = &b.ha_service {
        let acks = ha.slave_acks();
        gauge(node, names::HA_SLAVES, vec![], acks.len() as f64);
        let behind = acks.iter().map(|a| max.saturating_sub(*a)).max().unwrap_or(0);
        gauge(node, names::HA_LAG_BYTES, vec![], behind as f64);
    }
}
