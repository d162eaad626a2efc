//! Transport shared by the NameServer and the broker: the accept loop, per-connection reader and
//! writer tasks, responses matched by opaque, and the outbound client.
//!
//! May import: `crate::protocol`, `crate::model`, `crate::shutdown`, `crate::telemetry`, `crate::net`
//! (accept loop, TLS).
//!
//! ```text
//! socket --FramedRead--> reader task --request--> handler task (one per request) --+
//!                              |                                                   |
//!                              +--response--> pending[opaque] (our own requests)   v
//! socket <--FramedWrite-- writer task <------------- bounded mpsc <----------------+
//! ```
//!
//! Connections are symmetric, as in RocketMQ: either side may send requests (the broker calls
//! back into clients on the socket they opened).

mod client;
mod connection;
mod frame_writer;
mod server;

pub use client::RemotingClient;
pub use connection::{park_current_request, Connection, ConnectionOptions, RequestHandler};
pub use server::{RemotingServer, ServerConfig};

use crate::protocol::{ProtocolError, RemotingCommand};

/// A handler that answers nothing: for outbound clients whose peers never call back (a broker's
/// NameServer connections, the admin tool, the load generator).
pub struct NoCallbacks;

impl RequestHandler for NoCallbacks {
    async fn handle(&self, _conn: &std::sync::Arc<Connection>, _req: RemotingCommand) -> Option<RemotingCommand> {
        None
    }
}

/// A failed outbound call.
#[derive(Debug, thiserror::Error)]
pub enum RemotingError {
    #[error("connect to {addr} failed: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("connection to {0} is closed")]
    Closed(String),
    #[error("request to {addr} timed out after {millis} ms")]
    Timeout { addr: String, millis: u128 },
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
}
