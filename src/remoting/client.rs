//! Outbound connections, one per address, reused across calls (`NettyRemotingClient`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::connection::{Connection, ConnectionOptions, RequestHandler};
use super::RemotingError;
use crate::net::tls::TlsClient;
use crate::protocol::{FrameLimits, RemotingCommand};

/// Java's client connect timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A client keeping one connection per `host:port`; requests the peer sends back are served by
/// `handler`.
pub struct RemotingClient<H: RequestHandler> {
    handler: Arc<H>,
    limits: FrameLimits,
    connections: Mutex<HashMap<String, Arc<Connection>>>,
    tracker: TaskTracker,
    shutdown: CancellationToken,
    tls: Option<Arc<TlsClient>>,
}

impl<H: RequestHandler> RemotingClient<H> {
    pub fn new(handler: Arc<H>, limits: FrameLimits, tracker: TaskTracker, shutdown: CancellationToken) -> Self {
        Self { handler, limits, connections: Mutex::new(HashMap::new()), tracker, shutdown, tls: None }
    }

    /// Connects over TLS (`tls.enable`); `None` is plaintext.
    pub fn with_tls(mut self, tls: Option<Arc<TlsClient>>) -> Self {
        self.tls = tls;
        self
    }

    /// The open connection to `addr`, connecting if needed.
    pub async fn connection(&self, addr: &str) -> Result<Arc<Connection>, RemotingError> {
        if let Some(c) = self.table().get(addr).filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let connect_err = |source| RemotingError::Connect { addr: addr.to_owned(), source };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| connect_err(std::io::ErrorKind::TimedOut.into()))?
            .map_err(connect_err)?;
        let options = ConnectionOptions { limits: self.limits, idle_timeout: None };
        let conn = match &self.tls {
            None => Connection::spawn(stream, self.handler.clone(), options, &self.tracker, &self.shutdown)
                .map_err(connect_err)?,
            Some(tls) => {
                let peer = stream.peer_addr().map_err(connect_err)?;
                let _ = stream.set_nodelay(true);
                let stream = tokio::time::timeout(CONNECT_TIMEOUT, tls.connect(stream))
                    .await
                    .map_err(|_| connect_err(std::io::ErrorKind::TimedOut.into()))?
                    .map_err(connect_err)?;
                Connection::spawn_stream(stream, peer, self.handler.clone(), options, &self.tracker, &self.shutdown)
            }
        };
        let mut table = self.table();
        // Another task may have connected meanwhile; keep the first live one.
        if let Some(existing) = table.get(addr).filter(|c| !c.is_closed()) {
            conn.close();
            return Ok(existing.clone());
        }
        table.insert(addr.to_owned(), conn.clone());
        Ok(conn)
    }

    pub async fn invoke(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        self.connection(addr).await?.invoke(request, timeout).await
    }

    pub async fn invoke_oneway(&self, addr: &str, request: RemotingCommand) -> Result<(), RemotingError> {
        self.connection(addr).await?.invoke_oneway(request).await
    }

    /// Closes the connection to `addr`, if any.
    pub fn close(&self, addr: &str) {
        if let Some(c) = self.table().remove(addr) {
            c.close();
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Connection>>> {
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }
}
