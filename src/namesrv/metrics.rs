//! The NameServer's metrics: `rocketmq_rpc_latency` of its requests (recorded by the remoting
//! layer) and, at every scrape, the brokers and topics it routes. Java's NameServer has none;
//! the keys are the broker's (`metricsExporterType`, `metricsPromExporterHost`,
//! `metricsPromExporterPort`), and a standalone process serves both from one endpoint.
//!
//! May import: `crate::telemetry`, `super` (the NameServer's state). The labels themselves are
//! `NamesrvConfig::metrics_node`'s, so the processor that holds them never imports this file.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::processor::NamesrvProcessor;
use crate::telemetry::{self, names};

/// Serves `/metrics` with this NameServer's gauges until `shutdown`.
pub async fn start(processor: &Arc<NamesrvProcessor>, shutdown: CancellationToken) {
    let Some(node) = processor.metrics_labels() else { return };
    let weak = Arc::downgrade(processor);
    let collector = telemetry::on_scrape(move || {
        if let Some(p) = weak.upgrade() {
            let (brokers, topics) = p.route_counts();
            metrics::gauge!(names::NAMESRV_BROKERS, node.labels([])).set(brokers as f64);
            metrics::gauge!(names::NAMESRV_TOPICS, node.labels([])).set(topics as f64);
        }
    });
    let config = processor.config();
    telemetry::http::serve(&config.metrics_prom_exporter_host, config.metrics_prom_exporter_port, shutdown.clone())
        .await;
    tokio::spawn(async move {
        shutdown.cancelled().await;
        drop(collector);
    });
}
