//! ferrocket: an Apache RocketMQ compatible NameServer and Broker.
//!
//! ```text
//!            model  <-  protocol  <-  remoting  <-  namesrv, broker
//!            model  <-  store     <-  ha, broker
//!            filter (SQL92 selectors: std and nom only)  <-  store, broker
//! ```
//! Arrows point from a user to what it may import. `store` never sees wire types, so another
//! front end can share it.
#![deny(unsafe_code)]

pub mod broker;
pub mod config;
pub mod filter;
pub mod ha;
pub mod model;
pub mod namesrv;
pub mod persist;
pub mod protocol;
pub mod remoting;
pub mod shutdown;
pub mod store;
pub mod tools;
