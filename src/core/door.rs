//! Clients of a door other than remoting (the gRPC door's 5.x SDKs) as the broker's client
//! tables hold them: the door describes a session and what it heartbeats as, and gives the
//! broker a [`DoorClient`] to reach it (`broker/door.rs` registers them).
//!
//! May import: nothing of ferrocket's.

use std::net::SocketAddr;
use std::sync::Arc;

/// A client of another door (the gRPC door's 5.x SDKs), as the broker reaches it.
pub trait DoorClient: Send + Sync {
    /// Asks the client about the half message `sent` (the message as its producer sent it, in
    /// the record layout) stored at `commit_log_offset` / `queue_offset` of the half queue.
    /// False if it cannot take the question now.
    fn check_transaction(&self, sent: &[u8], commit_log_offset: i64, queue_offset: i64) -> bool;
}

/// One session of a door's client (a gRPC client's Telemetry stream).
pub struct DoorSession {
    /// Unique per session of this door (the broker marks it as a door's link id).
    pub session: u64,
    pub client_id: String,
    pub peer: SocketAddr,
    /// The SDK's language (`x-mq-language`: JAVA, GOLANG, PYTHON, ...).
    pub language: String,
    pub client: Arc<dyn DoorClient>,
}

/// What a door's client heartbeats as.
pub enum DoorRole {
    Producer {
        topics: Vec<String>,
    },
    Consumer {
        group: String,
        push: bool,
        /// (topic, expression, expression type: TAG or SQL92).
        subscriptions: Vec<(String, String, String)>,
    },
}
