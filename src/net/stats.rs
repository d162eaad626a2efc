//! Per-listener connection counts, kept in atomics on the accept path and published at scrape
//! time as `ferrocket_connections{listener}`, `ferrocket_connections_accepted_total{listener}`,
//! `ferrocket_connections_refused_total{listener,reason}` and
//! `ferrocket_connections_limit_reached_total{listener}` (names in `telemetry::names`; label values
//! from the closed sets below, never from a peer).
//!
//! May import: `telemetry`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use metrics::Label;

use crate::telemetry::{self, names, Node};

/// Which listener: the `listener` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenerKind {
    /// The RocketMQ client port (`listenPort`), and the NameServer's.
    Remoting,
    /// The RocketMQ VIP port (`listenPort - 2`).
    Vip,
    Kafka,
    Ha,
    /// The gRPC port (`grpcListenPort`).
    Grpc,
}

impl ListenerKind {
    pub fn label(self) -> &'static str {
        match self {
            ListenerKind::Remoting => "remoting",
            ListenerKind::Vip => "vip",
            ListenerKind::Kafka => "kafka",
            ListenerKind::Ha => "ha",
            ListenerKind::Grpc => "grpc",
        }
    }
}

/// Why a listener closed a connection before handing it to its protocol: the `reason` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefuseReason {
    /// Silent past the listener's idle time before its first byte (permissive TLS sniff).
    Idle,
    /// The TLS handshake failed or did not finish in time (a plaintext peer on an enforcing
    /// port fails here).
    Handshake,
}

impl RefuseReason {
    pub fn label(self) -> &'static str {
        match self {
            RefuseReason::Idle => "idle",
            RefuseReason::Handshake => "handshake",
        }
    }
}

/// One listener's counts.
#[derive(Debug, Default)]
pub struct ListenerStats {
    open: AtomicUsize,
    accepted: AtomicU64,
    refused_idle: AtomicU64,
    refused_handshake: AtomicU64,
    limit_reached: AtomicU64,
}

impl ListenerStats {
    /// Connections open right now (holding one of the `maxConnections` permits).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    pub fn refused(&self, why: RefuseReason) -> u64 {
        self.refused_counter(why).load(Ordering::Relaxed)
    }

    pub fn limit_reached(&self) -> u64 {
        self.limit_reached.load(Ordering::Relaxed)
    }

    fn refused_counter(&self, why: RefuseReason) -> &AtomicU64 {
        match why {
            RefuseReason::Idle => &self.refused_idle,
            RefuseReason::Handshake => &self.refused_handshake,
        }
    }

    pub(super) fn opened(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn closed(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn refuse(&self, why: RefuseReason) {
        self.refused_counter(why).fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn at_limit(&self) {
        self.limit_reached.fetch_add(1, Ordering::Relaxed);
    }
}

/// Publishes `stats` under `node`'s labels at every scrape, for as long as the returned handle
/// is kept.
pub(super) fn publish(node: Arc<Node>, kind: ListenerKind, stats: Arc<ListenerStats>) -> Arc<dyn Fn() + Send + Sync> {
    telemetry::on_scrape(move || {
        let listener = || Label::new(names::LABEL_LISTENER, kind.label());
        metrics::gauge!(names::CONNECTIONS, node.labels([listener()])).set(stats.open() as f64);
        metrics::counter!(names::CONNECTIONS_ACCEPTED, node.labels([listener()])).absolute(stats.accepted());
        metrics::counter!(names::CONNECTIONS_LIMIT_REACHED, node.labels([listener()])).absolute(stats.limit_reached());
        for why in [RefuseReason::Idle, RefuseReason::Handshake] {
            let labels = node.labels([listener(), Label::new(names::LABEL_REASON, why.label())]);
            metrics::counter!(names::CONNECTIONS_REFUSED, labels).absolute(stats.refused(why));
        }
    })
}
