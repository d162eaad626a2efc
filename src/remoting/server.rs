//! The accept loop: a bounded number of connections, each served by [`Connection`] tasks.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, warn};

use super::connection::{Connection, ConnectionOptions, RequestHandler};

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
}

impl RemotingServer {
    pub async fn bind(addr: impl ToSocketAddrs, config: ServerConfig) -> std::io::Result<Self> {
        Ok(Self { listener: TcpListener::bind(addr).await?, config })
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
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and friends: back off briefly instead of spinning.
                    error!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            match Connection::spawn(stream, handler.clone(), self.config.connection, &tracker, &shutdown) {
                Ok(conn) => {
                    debug!(id = conn.id(), peer = %conn.peer(), "accepted connection");
                    let closed = conn.clone();
                    tracker.spawn(async move {
                        closed.closed_signal().await;
                        drop(permit);
                    });
                }
                Err(e) => warn!(error = %e, "dropping connection that closed during accept"),
            }
        }
    }
}
