//! Clients of a door other than remoting (the gRPC door's 5.x SDKs) as the broker's client
//! tables hold them: the door describes a session and what it heartbeats as, and gives the
//! broker a [`DoorClient`] to reach it (`broker/door.rs` registers them).
//!
//! May import: nothing of ferrocket's.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A future a [`DoorClient`] returns.
pub type DoorFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a client answered when asked to consume one message (VerifyMessageCommand), as Java's
/// proxy maps its status to `ConsumeMessageDirectlyResult.consumeResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// OK: CR_SUCCESS.
    Consumed,
    /// FAILED_TO_CONSUME_MESSAGE: CR_LATER.
    Later,
    /// MESSAGE_CORRUPTED: CR_RETURN_NULL.
    Corrupted,
    /// Anything else (Java's proxy leaves the result unset).
    Other,
}

/// A client of another door (the gRPC door's 5.x SDKs), as the broker reaches it.
pub trait DoorClient: Send + Sync {
    /// Asks the client about the half message `sent` (the message as its producer sent it, in
    /// the record layout) stored at `commit_log_offset` / `queue_offset` of the half queue.
    /// False if it cannot take the question now.
    fn check_transaction(&self, sent: &[u8], commit_log_offset: i64, queue_offset: i64) -> bool;
    /// The client's thread stacks (PrintThreadStackTraceCommand); `None` without an answer
    /// within `timeout`.
    fn thread_stack_trace(&self, timeout: Duration) -> DoorFuture<'_, Option<String>>;
    /// Asks the client to consume the stored record `record` once (VerifyMessageCommand);
    /// `None` without an answer within `timeout`.
    fn verify_message(&self, record: Vec<u8>, timeout: Duration) -> DoorFuture<'_, Option<Verified>>;
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
