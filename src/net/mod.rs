//! The transport every listener shares (RocketMQ client and VIP ports, Kafka, HA): the accept
//! loop, `maxConnections`, the wait for a peer's first byte, TLS (`tls.server.mode`, Java's
//! `tls.*` keys) with its handshake timeout, and per-listener connection metrics.
//!
//! ```text
//! TcpListener --accept (backs off on EMFILE, WARN)--> permit (maxConnections; others wait in
//!   the backlog) --> connection task: [permissive: peek the first byte, within the idle time]
//!                                     [TLS: handshake, within the handshake timeout]
//!                                     --> Stream (Plain | Tls) --> the listener's serve function
//! ```
//! The protocols stay above: a listener hands each stream to its protocol's serve function and
//! learns nothing of its frames.
//!
//! May import: `telemetry`, `properties` (the `tls.config.file` reader); std, tokio and rustls.
//! Never a protocol, a server or the store (tests/it/layering.rs checks it).

mod listener;
mod stats;
mod stream;
pub mod tls;

pub use listener::{Listener, ListenerConfig};
pub use stats::{ListenerKind, ListenerStats, RefuseReason};
pub use stream::Stream;
