//! The accept loop every listener runs.
//!
//! ```text
//! loop: permit (maxConnections; at the limit further peers wait in the backlog)
//!       accept (an error such as EMFILE: WARN, back off 100 ms doubling to 1 s)
//!       spawn the connection's task:
//!         tls None / disabled  -> serve(Plain)
//!         permissive           -> wait for the first byte (first_byte_timeout, else refused
//!                                 "idle"); 0x16 -> handshake, else serve(Plain)
//!         enforcing            -> handshake
//!         handshake            -> within handshake_timeout, else refused "handshake"
//!       the permit is released when serve's future ends
//! ```
//! Accept errors are WARN, not ERROR: they come from the environment (file descriptors, a peer
//! resetting before accept), the loop recovers on its own, and a broker in normal operation logs
//! no ERROR line.
//!
//! May import: `telemetry` (through `stats`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use super::stats::{publish, ListenerKind, ListenerStats, RefuseReason};
use super::tls::TlsServer;
use super::Stream;
use crate::telemetry::Node;

/// How a listener accepts.
#[derive(Clone)]
pub struct ListenerConfig {
    pub kind: ListenerKind,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// How long a peer may stay silent before its first byte when the listener must look at it
    /// (permissive TLS); `None`: for ever. Past it the connection is closed (refused "idle").
    pub first_byte_timeout: Option<Duration>,
    /// How long a TLS handshake may take (refused "handshake" past it).
    pub handshake_timeout: Duration,
    /// `tls.server.mode` permissive or enforcing; `None`: plaintext only.
    pub tls: Option<Arc<TlsServer>>,
    /// The labels of the connection metrics; `None`: not published (counted all the same).
    pub metrics: Option<Arc<Node>>,
}

impl ListenerConfig {
    /// Plaintext, 10 000 connections, no first-byte limit, a 10 s handshake, no metrics.
    pub fn new(kind: ListenerKind) -> Self {
        Self {
            kind,
            max_connections: 10_000,
            first_byte_timeout: None,
            handshake_timeout: Duration::from_secs(10),
            tls: None,
            metrics: None,
        }
    }
}

/// A bound listening socket and how it accepts.
pub struct Listener {
    socket: TcpListener,
    config: ListenerConfig,
    stats: Arc<ListenerStats>,
}

impl Listener {
    /// Takes a socket bound elsewhere (the composition root, a test harness binding port 0).
    pub fn new(socket: TcpListener, config: ListenerConfig) -> Self {
        Self { socket, config, stats: Arc::default() }
    }

    pub async fn bind(addr: impl ToSocketAddrs, config: ListenerConfig) -> std::io::Result<Self> {
        Ok(Self::new(TcpListener::bind(addr).await?, config))
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn kind(&self) -> ListenerKind {
        self.config.kind
    }

    /// Changes how it accepts, before `serve`.
    pub fn config_mut(&mut self) -> &mut ListenerConfig {
        &mut self.config
    }

    /// This listener's connection counts (live, also before and after `serve`).
    pub fn stats(&self) -> Arc<ListenerStats> {
        self.stats.clone()
    }

    /// Accepts until `shutdown`; each connection runs on `tracker`, in a task of its own, as
    /// `serve(stream, peer)`: the connection counts as open (and holds its permit) until that
    /// future ends.
    pub async fn serve<F, Fut>(self, serve: F, shutdown: CancellationToken, tracker: TaskTracker)
    where
        F: Fn(Stream, SocketAddr) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let Self { socket, config, stats } = self;
        let kind = config.kind.label();
        let _published = config.metrics.clone().map(|node| publish(node, config.kind, stats.clone()));
        let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
        let (serve, config) = (Arc::new(serve), Arc::new(config));
        let mut backoff = ACCEPT_BACKOFF_MIN;
        loop {
            let permit = match permits.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => {
                    stats.at_limit();
                    debug!(listener = kind, "maxConnections reached; new connections wait in the backlog");
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        p = permits.clone().acquire_owned() => match p {
                            Ok(p) => p,
                            Err(_) => break,
                        },
                    }
                }
            };
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break,
                a = socket.accept() => a,
            };
            let (tcp, peer) = match accepted {
                Ok(accepted) => {
                    backoff = ACCEPT_BACKOFF_MIN;
                    accepted
                }
                Err(e) => {
                    warn!(listener = kind, error = %e, backoff_ms = backoff.as_millis() as u64, "accept failed; backing off");
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = tokio::time::sleep(backoff) => {},
                    }
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            stats.opened();
            let (serve, config, stats) = (serve.clone(), config.clone(), stats.clone());
            tracker.spawn(async move {
                match open(tcp, peer, &config).await {
                    Ok(stream) => serve(stream, peer).await,
                    Err(Some(why)) => stats.refuse(why),
                    Err(None) => {}
                }
                stats.closed();
                drop(permit);
            });
        }
    }
}

const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(100);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Plaintext or TLS, as the listener's mode and the peer's first byte say; `Err` when the
/// connection is closed before being served (logged here), with why it was refused (`None`: the
/// peer went away).
async fn open(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    config: &ListenerConfig,
) -> Result<Stream, Option<RefuseReason>> {
    let kind = config.kind.label();
    let Some(tls) = &config.tls else { return Ok(Stream::Plain(tcp)) };
    let first = tls.starts_tls(&tcp);
    let is_tls = match config.first_byte_timeout {
        Some(idle) => tokio::time::timeout(idle, first).await,
        None => Ok(first.await),
    };
    match is_tls {
        Err(_) => {
            info!(listener = kind, %peer, "closing idle connection before its first byte");
            Err(Some(RefuseReason::Idle))
        }
        Ok(Err(e)) => {
            // Reset before sending anything: nothing to serve, nothing refused.
            debug!(listener = kind, %peer, error = %e, "connection closed before its first byte");
            Err(None)
        }
        Ok(Ok(false)) => Ok(Stream::Plain(tcp)),
        Ok(Ok(true)) => match tokio::time::timeout(config.handshake_timeout, tls.handshake(tcp)).await {
            Ok(Ok(s)) => {
                debug!(listener = kind, %peer, "TLS handshake done");
                Ok(Stream::Tls(Box::new(s)))
            }
            Ok(Err(e)) => {
                warn!(listener = kind, %peer, error = %e, "closing connection: TLS handshake failed (tls.server.mode)");
                Err(Some(RefuseReason::Handshake))
            }
            Err(_) => {
                warn!(listener = kind, %peer, secs = config.handshake_timeout.as_secs(), "closing connection: no TLS handshake in time");
                Err(Some(RefuseReason::Handshake))
            }
        },
    }
}
