//! The RocketMQ server: a `net::Listener` (accept loop, `maxConnections`, TLS, connection
//! metrics) whose connections are served by [`Connection`] tasks.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use super::connection::{Connection, ConnectionOptions, RequestHandler};
use crate::net::tls::TlsServer;
use crate::net::{Listener, ListenerConfig, ListenerKind, ListenerStats, Stream};

/// Transport settings of a server.
#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    pub connection: ConnectionOptions,
    /// Connections served at once; further connections wait in the listen backlog.
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            connection: ConnectionOptions {
                idle_timeout: Some(std::time::Duration::from_secs(120)),
                ..Default::default()
            },
            max_connections: 10_000,
        }
    }
}

/// A bound listener, ready to serve.
pub struct RemotingServer {
    listener: Listener,
    connection: ConnectionOptions,
}

impl RemotingServer {
    pub async fn bind(addr: impl ToSocketAddrs, config: ServerConfig) -> std::io::Result<Self> {
        Ok(Self::from_listener(TcpListener::bind(addr).await?, config))
    }

    /// Serves a socket bound elsewhere (the composition root, a test harness).
    pub fn from_listener(socket: TcpListener, config: ServerConfig) -> Self {
        let mut net = ListenerConfig::new(ListenerKind::Remoting);
        net.max_connections = config.max_connections;
        // A silent peer is closed after the idle time, before its first byte as after.
        net.first_byte_timeout = config.connection.idle_timeout;
        Self { listener: Listener::new(socket, net), connection: config.connection }
    }

    /// The connection counts (for metrics).
    pub fn stats(&self) -> Arc<ListenerStats> {
        self.listener.stats()
    }

    /// Serves TLS as `tls` says (`tls.server.mode`); `None` is plaintext only.
    pub fn with_tls(mut self, tls: Option<Arc<TlsServer>>) -> Self {
        self.listener.config_mut().tls = tls;
        self
    }

    /// Which listener this is (`listener` label) and the labels of its connection metrics.
    pub fn with_metrics(mut self, kind: ListenerKind, node: Option<Arc<crate::telemetry::Node>>) -> Self {
        let config = self.listener.config_mut();
        config.kind = kind;
        config.metrics = node;
        self
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` is cancelled. Connection tasks run on `tracker`.
    pub async fn serve<H: RequestHandler>(self, handler: Arc<H>, shutdown: CancellationToken, tracker: TaskTracker) {
        let (options, t, stop) = (self.connection, tracker.clone(), shutdown.clone());
        let serve = move |stream: Stream, peer: SocketAddr| {
            let conn = match stream {
                // The plain socket splits into owned halves (no lock between reader and writer).
                Stream::Plain(tcp) => Connection::spawn(tcp, handler.clone(), options, &t, &stop),
                tls => Ok(Connection::spawn_stream(tls, peer, handler.clone(), options, &t, &stop)),
            };
            async move {
                match conn {
                    Ok(conn) => {
                        debug!(id = conn.id(), %peer, "accepted connection");
                        conn.closed_signal().await;
                    }
                    Err(e) => warn!(%peer, error = %e, "dropping connection that closed during accept"),
                }
            }
        };
        self.listener.serve(serve, shutdown, tracker).await;
    }
}
