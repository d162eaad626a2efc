//! JSON bodies, in the shapes fastjson 1.x writes and Java peers parse (spec §4.16).
//!
//! May import: `model` and modules of `protocol/`; the area's rule is its line in
//! docs/architecture.md.

pub mod admin;
pub mod client;
pub use crate::model::json;
pub mod message;
pub mod pop;
pub mod register;
pub mod route;
pub mod stats;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `TopicList`: `{"topicList":["T1","T2"],"brokerAddr":"..."}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
    pub topic_list: Vec<String>,
}

/// `KVTable`: `{"table":{"k":"v"}}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KvTable {
    pub table: BTreeMap<String, String>,
}

/// Serializes a body that has a plain serde shape.
pub fn to_vec<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these plain structs (strings, numbers, maps with string keys) cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}
