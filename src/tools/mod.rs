//! Operator commands: `ferrocket store ...` (dump a store directory as JSON lines, or load
//! messages into one), `ferrocket admin ...` (mqadmin's everyday operations over the remoting
//! client) and `ferrocket bench ...` (the load generator).
//!
//! May import: `crate::store`, `crate::model` (store), `crate::protocol`, `crate::remoting`
//! (admin, bench). Never the servers (broker, NameServer, HA).

pub mod admin;
pub mod admin_cmd;
pub mod bench;
pub mod store;
