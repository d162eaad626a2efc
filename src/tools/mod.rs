//! Operator commands behind `ferrocket store ...`: dump a store directory as JSON lines, or load
//! messages into one. Used by the Java interoperability tests, and to inspect a broker's data.
//!
//! May import: `crate::store`, `crate::model`.

pub mod admin;
pub mod admin_cmd;
pub mod store;
