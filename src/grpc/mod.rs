//! The gRPC front end: `apache.rocketmq.v2.MessagingService`, the protocol of the 5.x SDKs
//! (rocketmq-clients), served by the broker itself on `grpcListenPort` as Java's proxy does in
//! local mode. A third door over the same core as the RocketMQ remoting handlers and Kafka:
//! the same append, flow control, statistics and metrics (`core::append`).
//!
//! ```text
//! client --TCP--> net::Listener (maxConnections; tls.server.mode: 0x16 -> TLS with ALPN h2,
//!                 else plaintext HTTP/2) -> listener.rs hands the stream to tonic
//!   service.rs  the ACL (auth.rs: signed headers, then the request's topics and group),
//!               x-mq-client-id required, one function per RPC:
//!     telemetry.rs  Settings answered at once, merged (settings.rs: the client table)
//!     route.rs      QueryRoute: queues, permissions, endpoints, accepted message types
//!     send.rs       SendMessage: validate.rs checks, FIFO queue by hash.rs (Guava's
//!                   consistentHash), delay and half messages through [`BrokerSide`], core append
//!     txn.rs        EndTransaction: the id SendMessage gave back -> [`BrokerSide::end_transaction`]
//!     recover.rs    a client's Telemetry stream as the broker's client tables hold it:
//!                   RecoverOrphanedTransactionCommand when the check service asks, thread
//!                   stacks and VerifyMessage for mqadmin (answers: pending.rs)
//!     assign.rs     QueryAssignment: queue -1 (every queue for an orderly group)
//!     consume.rs    ReceiveMessage: the core's POP, long polling, filters; convert.rs builds
//!                   each v2 Message, receipt.rs seals its handle (HMAC, opaque to clients)
//!     ack.rs        AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue
//!     renew.rs      auto_renew: handles kept invisible until acked or the client goes
//!     status.rs     the answer's Status; core refusals -> v2 codes
//! pb.rs: the messages and service generated from proto/ (build.rs)
//! ```
//! What only the broker owns (the timer and delay-level diversion, half messages, ending a transaction) comes in
//! through [`BrokerSide`], which the composition root (`node.rs`) implements over the broker.
//!
//! With `aclEnable=true` every RPC is authenticated and authorized against ACL 1.0's accounts
//! (`plain_acl.yml`, `crate::acl`) as Java's proxy 5.2 did: auth.rs.
//!
//! May import: `core`, `meta`, `model`, `store`, `net`, `telemetry`, `acl`. Never the broker, Kafka or
//! the remoting codec and transport (tests/it/layering.rs checks it).

mod ack;
mod assign;
mod auth;
mod consume;
mod convert;
mod hash;
mod listener;
pub mod pb;
mod pending;
mod receipt;
mod recover;
mod renew;
mod route;
mod send;
pub mod service;
mod settings;
mod status;
mod telemetry;
mod txn;
mod validate;

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use crate::core::door::{DoorRole, DoorSession};
use crate::core::Core;
use crate::model::message::MessageToStore;
use crate::net::Listener;

pub use hash::{consistent_hash, queue_of_group};
pub use route::MESSAGE_TYPE_ATTRIBUTE;

/// What the broker does to a message before it is stored, which this door cannot do itself.
pub trait BrokerSide: Send + Sync + 'static {
    /// A message with timer properties (`TIMER_DELIVER_MS`) or a delay level goes to the timer
    /// or schedule topic (Java's timer and schedule hooks); `Err`: refused, with why.
    fn divert_delayed(&self, msg: &mut MessageToStore) -> Result<(), String>;
    /// A transactional message becomes a half message, kept until the transaction ends.
    fn to_half(&self, msg: &mut MessageToStore);
    /// Ends the transaction of the half message `end` names: commit puts it on its topic.
    fn end_transaction(&self, end: EndTxn) -> BoxFuture<'_, Result<(), EndTxnError>>;
    /// A client's heartbeat: it joins (or stays in) the broker's producer or consumer groups.
    fn client_seen(&self, session: DoorSession, role: DoorRole) -> BoxFuture<'_, ()>;
    /// A client's session (Telemetry stream) ended: it leaves every group.
    fn client_gone(&self, session: u64) -> BoxFuture<'_, ()>;
}

/// A future a [`BrokerSide`] returns.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Which transaction EndTransaction ends (from the transaction id SendMessage gave).
#[derive(Debug, Clone)]
pub struct EndTxn {
    pub commit_log_offset: i64,
    pub queue_offset: i64,
    /// A gRPC producer's group: its topic.
    pub producer_group: String,
    pub message_id: String,
    pub commit: bool,
    /// The producer answers a check (source SERVER_CHECK): the half message's check immunity
    /// does not refuse it (Java's `fromTransactionCheck`).
    pub from_check: bool,
}

/// Why a transaction was not ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndTxnError {
    /// No such prepared message (or not this producer's): INVALID_TRANSACTION_ID.
    Unknown(String),
    /// The store or the slaves refused: INTERNAL_SERVER_ERROR; the check service asks again.
    Failed(String),
}

/// The gRPC door's state: the broker's core, its hooks, the client table.
pub struct Grpc {
    core: Arc<Core>,
    broker: Arc<dyn BrokerSide>,
    /// `host:port` clients are told to connect to (QueryRoute's endpoints).
    advertised: (String, u16),
    clients: settings::Clients,
    /// Seals the receipt handles this door hands out (a key per process).
    receipts: receipt::Receipts,
    /// Handles of `auto_renew` receives the broker keeps invisible for their clients.
    renewals: renew::Renewals,
    /// Round robin over write queues for messages without a message group.
    round_robin: AtomicUsize,
    /// Telemetry streams opened so far (each stream's id).
    streams: AtomicU64,
    /// Server commands waiting for their client's answer.
    pending: Arc<pending::Pending>,
    /// Cancelled when the broker shuts down: Telemetry streams end, so tonic can drain.
    shutdown: CancellationToken,
}

impl Grpc {
    pub fn new(core: Arc<Core>, broker: Arc<dyn BrokerSide>, advertised: (String, u16)) -> Arc<Self> {
        Arc::new(Self {
            core,
            broker,
            advertised,
            clients: settings::Clients::default(),
            receipts: receipt::Receipts::default(),
            renewals: renew::Renewals::default(),
            round_robin: AtomicUsize::new(0),
            streams: AtomicU64::new(0),
            pending: Arc::default(),
            shutdown: CancellationToken::new(),
        })
    }

    fn endpoints(&self) -> pb::Endpoints {
        route::endpoints(&self.advertised.0, self.advertised.1)
    }

    /// Serves gRPC on `listener` until `shutdown`.
    pub async fn serve(self: Arc<Self>, listener: Listener, shutdown: CancellationToken, tracker: TaskTracker) {
        tracker.spawn(renew::run(self.clone()));
        listener::serve(self, listener, shutdown, tracker).await;
    }
}
