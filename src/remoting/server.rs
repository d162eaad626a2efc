//! The accept loop: a bounded number of connections, each served by [`Connection`] tasks.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, info, warn};

use super::connection::{Connection, ConnectionOptions, RequestHandler};
use super::tls::TlsServer;

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
    listener: TcpListener,
    config: ServerConfig,
    tls: Option<Arc<TlsServer>>,
    /// Connections open right now.
    open: Arc<AtomicUsize>,
}

/// How long a peer has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl RemotingServer {
    pub async fn bind(addr: impl ToSocketAddrs, config: ServerConfig) -> std::io::Result<Self> {
        Ok(Self { listener: TcpListener::bind(addr).await?, config, tls: None, open: Arc::default() })
    }

    /// The number of connections open right now (for metrics), valid after `serve` starts.
    pub fn open_connections(&self) -> Arc<AtomicUsize> {
        self.open.clone()
    }

    /// Serves TLS as `tls` says (`tls.server.mode`); `None` is plaintext only.
    pub fn with_tls(mut self, tls: Option<Arc<TlsServer>>) -> Self {
        self.tls = tls;
        self
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` is cancelled. Connection tasks run on `tracker`.
    pub async fn serve<H: RequestHandler>(self, handler: Arc<H>, shutdown: CancellationToken, tracker: TaskTracker) {
        let permits = Arc::new(Semaphore::new(self.config.max_connections));
        loop {
            let permit = tokio::select! {
                _ = shutdown.cancelled() => break,
                p = permits.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break,
                a = self.listener.accept() => a,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and friends: back off briefly instead of spinning.
                    error!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            if let Some(tls) = self.tls.clone() {
                // The handshake (or the peek that tells plaintext from TLS) must not hold up the
                // accept loop: it runs in the connection's own task.
                let (handler, options, t, stop) =
                    (handler.clone(), self.config.connection, tracker.clone(), shutdown.clone());
                let open = self.open.clone();
                tracker.spawn(async move {
                    let _ = stream.set_nodelay(true);
                    // A silent peer is closed after the idle time, as a plaintext one would be.
                    let first = tls.starts_tls(&stream);
                    let is_tls = match options.idle_timeout {
                        Some(idle) => tokio::time::timeout(idle, first).await.map_err(|_| "idle"),
                        None => Ok(first.await),
                    };
                    let conn = match is_tls {
                        Err(_) => return info!(%peer, "closing idle connection before its first byte"),
                        Ok(Err(e)) => return debug!(%peer, error = %e, "connection closed before its first byte"),
                        Ok(Ok(false)) => Connection::spawn(stream, handler, options, &t, &stop),
                        Ok(Ok(true)) => match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.handshake(stream)).await {
                            Ok(Ok(s)) => {
                                debug!(%peer, "TLS handshake done");
                                Ok(Connection::spawn_stream(s, peer, handler, options, &t, &stop))
                            }
                            Ok(Err(e)) => Err(e),
                            Err(_) => {
                                Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no TLS handshake within 10 s"))
                            }
                        },
                    };
                    match conn {
                        Ok(conn) => {
                            debug!(id = conn.id(), %peer, "accepted connection");
                            open.fetch_add(1, Ordering::Relaxed);
                            conn.closed_signal().await;
                            open.fetch_sub(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            warn!(%peer, error = %e, "closing connection: TLS handshake failed (tls.server.mode)")
                        }
                    }
                    drop(permit);
                });
                continue;
            }
            match Connection::spawn(stream, handler.clone(), self.config.connection, &tracker, &shutdown) {
                Ok(conn) => {
                    debug!(id = conn.id(), peer = %conn.peer(), "accepted connection");
                    let (closed, open) = (conn.clone(), self.open.clone());
                    open.fetch_add(1, Ordering::Relaxed);
                    tracker.spawn(async move {
                        closed.closed_signal().await;
                        open.fetch_sub(1, Ordering::Relaxed);
                        drop(permit);
                    });
                }
                Err(e) => warn!(error = %e, "dropping connection that closed during accept"),
            }
        }
    }
}
