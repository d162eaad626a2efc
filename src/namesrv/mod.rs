//! The NameServer: a route registry brokers register with and clients ask where topics live.
//!
//! May import: `crate::protocol`, `crate::remoting`, `crate::model`, `crate::persist`,
//! `crate::telemetry`, `crate::net`, `crate::properties`, `crate::config` (typed config keys, a leaf).
//! Rules: docs/architecture.md.
//!
//! ```text
//! broker --REGISTER_BROKER every 30 s--> RouteInfoManager <--GET_ROUTEINFO_BY_TOPIC-- client
//!                                             |
//!                      scan every scanNotActiveBrokerInterval: expire silent brokers;
//!                      connection close: remove the brokers registered over it
//! kvConfig.json  {"configTable":{"<namespace>":{"<key>":"<value>"}}}   (the only file)
//! ```

pub mod config;
pub mod kv;
pub mod metrics;
pub mod processor;
pub mod route;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::info;

pub use config::NamesrvConfig;
use kv::{KvConfigManager, KvError};
pub use processor::NamesrvProcessor;

use crate::protocol::FrameLimits;
use crate::remoting::{ConnectionOptions, RemotingServer, ServerConfig};

/// A NameServer that failed to start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error(transparent)]
    Kv(#[from] KvError),
    #[error("TLS settings: {0}")]
    Tls(String),
}

/// A bound NameServer, not yet serving.
pub struct NameServer {
    server: RemotingServer,
    processor: Arc<NamesrvProcessor>,
}

impl NameServer {
    /// Loads the KV config and binds the listen port.
    pub async fn bind(config: NamesrvConfig) -> Result<Self, StartError> {
        let kv = KvConfigManager::load(&config.kv_config_path)?;
        let addr = format!("{}:{}", config.bind_address, config.listen_port);
        let server_config = ServerConfig {
            connection: ConnectionOptions {
                limits: FrameLimits { max_frame: config.frame_max_length },
                idle_timeout: match config.server_channel_max_idle_time_seconds {
                    0 => None,
                    secs => Some(std::time::Duration::from_secs(secs)),
                },
            },
            max_connections: config.max_connections,
        };
        let tls = crate::net::tls::tls_settings(&config.entries()).map_err(|e| StartError::Tls(e.to_string()))?;
        let tls = crate::net::tls::TlsServer::new(&tls).map_err(|e| StartError::Tls(e.to_string()))?;
        let server = RemotingServer::bind(&addr, server_config)
            .await
            .map_err(|source| StartError::Bind { addr: addr.clone(), source })?
            .with_tls(tls);
        Ok(Self { server, processor: Arc::new(NamesrvProcessor::new(config, kv)) })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.server.local_addr()
    }

    pub fn processor(&self) -> Arc<NamesrvProcessor> {
        self.processor.clone()
    }

    /// Serves until `shutdown` is cancelled, then waits for connection tasks to end.
    pub async fn run(self, shutdown: CancellationToken) {
        let tracker = TaskTracker::new();
        let addr = self.server.local_addr().map(|a| a.to_string()).unwrap_or_default();
        info!(addr, version = env!("CARGO_PKG_VERSION"), "ferrocket namesrv started");
        metrics::start(&self.processor, shutdown.clone()).await;
        let housekeeping = self.processor.clone();
        let stop = shutdown.clone();
        tracker.spawn(async move {
            loop {
                let interval = housekeeping.config().scan_interval();
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(interval) => housekeeping.scan_not_active_brokers(),
                }
            }
        });
        self.server.serve(self.processor.clone(), shutdown, tracker.clone()).await;
        tracker.close();
        tracker.wait().await;
        info!(addr, "ferrocket namesrv stopped");
    }
}
