//! ferrocket: an Apache RocketMQ compatible NameServer and Broker, with a Kafka front end over
//! the same store.
//!
//! ```text
//!            properties (.properties text), telemetry  <-  net (accept loop, limits, TLS)
//!            net  <-  remoting, kafka, ha
//!            model  <-  protocol  <-  remoting  <-  namesrv, broker
//!            model  <-  store     <-  ha, meta, broker, kafka
//!            model, store  <-  meta (broker.conf, topics, groups, offsets, arrivals, names)
//!            meta, store, ha, acl, telemetry  <-  core (append, waits, outcome codes)  <-  broker, kafka
//!            broker, kafka  <-  node (the composition root: binds the broker, starts every door)  <-  main
//!            filter (SQL92 selectors: std and nom only)  <-  store, broker
//!            model, persist  <-  acl (plain_acl.yml accounts, signatures, permissions)  <-  core, broker, kafka
//! ```
//! Arrows point from a user to what it may import; the rules the build checks are the `layers`
//! block of docs/architecture.md. `store` never sees wire types, so another front end can share
//! it; `broker` and `kafka` never import each other: both only translate requests and codes
//! around the shared `core`.
#![deny(unsafe_code)]

pub mod acl;
pub mod broker;
pub mod config;
pub mod core;
pub mod filter;
pub mod grpc;
pub mod ha;
pub mod kafka;
pub mod meta;
pub mod model;
pub mod namesrv;
pub mod net;
pub mod node;
pub mod persist;
pub mod properties;
pub mod protocol;
pub mod remoting;
pub mod shutdown;
pub mod store;
pub mod telemetry;
pub mod tools;
