//! The composition root of a broker process: binds the broker (RocketMQ client, VIP and HA
//! ports), builds the Kafka front end from the broker's shared state, and starts every door.
//! `broker`, `kafka` and `grpc` never import each other; this file is where they meet.
//!
//! ```text
//! BrokerNode::bind(config[, Sockets])
//!   Broker::bind_with      store, metadata, remoting + VIP + HA listeners (net), TLS
//!   kafka (masters, kafkaListenPort != 0): Kafka::new(the broker's core) + net::Listener
//!   grpc (masters, grpcListenPort != 0): Grpc::new(the broker's core, with its ACL, BrokerHooks) + net::Listener
//!     (TLS offering ALPN h2)
//! BrokerNode::run(shutdown)
//!   Kafka::serve and Grpc::serve on the broker's tracker, then Broker::run_on (which waits for it before the
//!   store shuts down)
//! ```
//!
//! May import: `crate::broker`, `crate::kafka`, `crate::grpc`, `crate::net`, `crate::model` (the
//! record the gRPC door hands the broker's hooks).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::info;

use crate::broker::{Broker, BrokerConfig, BrokerInner, StartError};
use crate::grpc::{BoxFuture, BrokerSide, EndTxn, EndTxnError, Grpc};
use crate::grpc::{DoorRole, DoorSession};
use crate::kafka::Kafka;
use crate::model::message::MessageToStore;
use crate::net::{Listener, ListenerConfig, ListenerKind};

/// Sockets bound by the caller, `None`: bound here from the config's ports.
#[derive(Default)]
pub struct Sockets {
    /// The broker's client, VIP and HA ports.
    pub broker: crate::broker::Sockets,
    /// `kafkaListenPort`: its port becomes the config's `kafkaListenPort` (and the advertised
    /// port, unless `kafkaAdvertisedAddress`). Ignored on a slave, as the setting is.
    pub kafka: Option<TcpListener>,
    /// `grpcListenPort`: as `kafka`, for the gRPC port.
    pub grpc: Option<TcpListener>,
}

/// A bound broker process, not yet serving.
pub struct BrokerNode {
    broker: Broker,
    /// `kafkaListenPort` on a master: the Kafka front end over the broker's store.
    kafka: Option<(Arc<Kafka>, Listener)>,
    /// `grpcListenPort` on a master: the gRPC front end over the broker's store.
    grpc: Option<(Arc<Grpc>, Listener)>,
}

impl BrokerNode {
    /// Binds every port the config names.
    pub async fn bind(config: BrokerConfig) -> Result<Self, StartError> {
        Self::bind_with(config, Sockets::default()).await
    }

    /// As [`Self::bind`], on sockets the caller bound.
    pub async fn bind_with(mut config: BrokerConfig, sockets: Sockets) -> Result<Self, StartError> {
        if let Some(l) = &sockets.kafka {
            config.kafka_listen_port = l
                .local_addr()
                .map_err(|source| StartError::Bind { addr: "the given Kafka socket".into(), source })?
                .port();
        }
        if let Some(l) = &sockets.grpc {
            config.grpc_listen_port = l
                .local_addr()
                .map_err(|source| StartError::Bind { addr: "the given gRPC socket".into(), source })?
                .port();
        }
        // aclEnable with a Kafka listener is refused by BrokerConfig::validate (the config loader).
        let broker = Broker::bind_with(config, sockets.broker).await?;
        let kafka = bind_kafka(&broker, sockets.kafka).await?;
        let grpc = bind_grpc(&broker, sockets.grpc).await?;
        Ok(Self { broker, kafka, grpc })
    }

    /// The RocketMQ client port.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.broker.local_addr()
    }

    /// The Kafka port, when this process serves Kafka.
    pub fn kafka_addr(&self) -> Option<SocketAddr> {
        self.kafka.as_ref().and_then(|(_, l)| l.local_addr().ok())
    }

    /// The gRPC port, when this process serves gRPC.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc.as_ref().and_then(|(_, l)| l.local_addr().ok())
    }

    pub fn inner(&self) -> Arc<BrokerInner> {
        self.broker.inner()
    }

    /// Serves every door until `shutdown`, then shuts the broker down cleanly.
    pub async fn run(self, shutdown: CancellationToken) {
        let tracker = TaskTracker::new();
        if let Some((kafka, listener)) = self.kafka {
            tracker.spawn(kafka.serve(listener, shutdown.clone(), tracker.clone()));
        }
        if let Some((grpc, listener)) = self.grpc {
            tracker.spawn(grpc.serve(listener, shutdown.clone(), tracker.clone()));
        }
        self.broker.run_on(shutdown, tracker).await;
    }
}

/// The Kafka listener (`kafkaListenPort`, masters only) and its handlers' state.
async fn bind_kafka(broker: &Broker, given: Option<TcpListener>) -> Result<Option<(Arc<Kafka>, Listener)>, StartError> {
    let inner = broker.inner();
    let c = &inner.config;
    if c.kafka_listen_port == 0 {
        return Ok(None);
    }
    if c.is_slave() {
        info!(port = c.kafka_listen_port, "kafkaListenPort ignored on a slave: Kafka clients use the master");
        return Ok(None);
    }
    // The Kafka door works on the broker's core: the same append, waits, managers and ACL.
    let shared = inner.core.clone();
    let kafka = Kafka::new(shared).map_err(|why| StartError::Config { what: "Kafka listener", why })?;
    let socket = match given {
        Some(l) => l,
        None => {
            let addr = format!("{}:{}", c.bind_address, c.kafka_listen_port);
            TcpListener::bind(&addr).await.map_err(|source| StartError::Bind { addr, source })?
        }
    };
    let mut config = ListenerConfig::new(ListenerKind::Kafka);
    config.max_connections = c.max_connections;
    config.tls = broker.tls_server();
    config.metrics = inner.metrics.clone();
    // Kafka's connections.max.idle.ms, before the first byte as after it.
    config.first_byte_timeout = match c.kafka_connections_max_idle_ms {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    };
    Ok(Some((kafka, Listener::new(socket, config))))
}

/// The gRPC listener (`grpcListenPort`, masters only) over the broker's core.
async fn bind_grpc(broker: &Broker, given: Option<TcpListener>) -> Result<Option<(Arc<Grpc>, Listener)>, StartError> {
    let inner = broker.inner();
    let c = &inner.config;
    if c.grpc_listen_port == 0 {
        return Ok(None);
    }
    if c.is_slave() {
        info!(port = c.grpc_listen_port, "grpcListenPort ignored on a slave: gRPC clients use the master");
        return Ok(None);
    }
    let socket = match given {
        Some(l) => l,
        None => {
            let addr = format!("{}:{}", c.bind_address, c.grpc_listen_port);
            TcpListener::bind(&addr).await.map_err(|source| StartError::Bind { addr, source })?
        }
    };
    let mut config = ListenerConfig::new(ListenerKind::Grpc);
    config.max_connections = c.max_connections;
    config.metrics = inner.metrics.clone();
    // gRPC over TLS needs ALPN h2 (grpc-java refuses a server without it).
    config.tls = match broker.tls_server() {
        Some(tls) => Some(
            tls.with_alpn(&[b"h2"]).map_err(|e| StartError::Config { what: "gRPC listener", why: e.to_string() })?,
        ),
        None => None,
    };
    let advertised = (c.broker_ip1.clone(), c.grpc_listen_port);
    let grpc = Grpc::new(inner.core.clone(), Arc::new(BrokerHooks(inner.clone())), advertised);
    Ok(Some((grpc, Listener::new(socket, config))))
}

/// The broker's side of a gRPC send: its timer, delay levels and half messages.
struct BrokerHooks(Arc<BrokerInner>);

impl BrokerSide for BrokerHooks {
    fn client_seen(&self, session: DoorSession, role: DoorRole) -> BoxFuture<'_, ()> {
        Box::pin(crate::broker::door::heartbeat(&self.0, session, role))
    }

    fn client_gone(&self, session: u64) -> BoxFuture<'_, ()> {
        Box::pin(crate::broker::door::gone(&self.0, session))
    }

    fn divert_delayed(&self, msg: &mut MessageToStore) -> Result<(), String> {
        self.0.timer.divert(msg).map_err(|(_, why)| why)?;
        self.0.schedule.divert(msg);
        Ok(())
    }

    fn to_half(&self, msg: &mut MessageToStore) {
        crate::broker::transaction::to_half(msg);
    }

    fn end_transaction(&self, e: EndTxn) -> BoxFuture<'_, Result<(), EndTxnError>> {
        use crate::broker::transaction::end::{end, EndTxnError as Refused};
        Box::pin(async move {
            let (group, id) = (&e.producer_group, &e.message_id);
            let done = end(&self.0, e.commit_log_offset, e.queue_offset, group, id, e.commit, e.from_check);
            done.await.map_err(|r| match r {
                Refused::Unknown(why) => EndTxnError::Unknown(why),
                Refused::Failed(why) => EndTxnError::Failed(why),
            })
        })
    }
}
