//! What compaction reads of a topic and of a record: the topic's policy (its `cleanup.policy`,
//! `delete.retention.ms` and `min.cleanable.dirty.ratio` attributes) and a record's key and
//! tombstone flag, both doors' way.
//!
//! ```text
//! cleanup.policy       COMPACTION (RocketMQ 5, TopicAttributes.CLEANUP_POLICY_ATTRIBUTE)
//!                      compact | compact,delete | delete,compact (Kafka, stored as Kafka says it)
//! record key           KAFKA_KEY (base64 of a Kafka key that is not plain text) if present,
//!                      else KEYS (the whole property, as Java's CompactionLog uses getKeys())
//! tombstone            KAFKA_NULL_VALUE present (a Kafka record with a null value)
//! no key               dropped by compaction (Kafka's cleaner and Java's CompactionLog drop it)
//! ```
//! A RocketMQ body cannot be empty (the official clients refuse to send one), so Java's "empty
//! body = delete" has no sender; the Kafka null value is the one tombstone.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use crate::model::message::{self, property};

/// The topic attribute naming the policy (Kafka's config and RocketMQ 5's attribute share it).
pub const CLEANUP_POLICY: &str = "cleanup.policy";
/// Kafka's `delete.retention.ms`: how long a tombstone outlives the pass that first kept it.
pub const DELETE_RETENTION_MS: &str = "delete.retention.ms";
/// Kafka's `min.cleanable.dirty.ratio`.
pub const MIN_CLEANABLE_DIRTY_RATIO: &str = "min.cleanable.dirty.ratio";
/// The property the Kafka door stores for a null value (`kafka/mapping.rs` `KAFKA_NULL_VALUE`).
pub const NULL_VALUE_PROPERTY: &str = "KAFKA_NULL_VALUE";
/// The property the Kafka door stores for a key that is not plain text (`kafka/mapping.rs`).
pub const KAFKA_KEY_PROPERTY: &str = "KAFKA_KEY";

/// Kafka's `log.cleaner.delete.retention.ms` default: one day.
pub const DEFAULT_DELETE_RETENTION_MS: i64 = 86_400_000;
/// Kafka's `log.cleaner.min.cleanable.ratio` default.
pub const DEFAULT_MIN_CLEANABLE_DIRTY_RATIO: f64 = 0.5;

/// A compacted topic's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompactionPolicy {
    pub delete_retention_ms: i64,
    pub min_cleanable_dirty_ratio: f64,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        Self {
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
            min_cleanable_dirty_ratio: DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
        }
    }
}

impl CompactionPolicy {
    /// The policy a topic's attributes ask for; `None` when the topic is not compacted.
    /// Attribute keys are read with or without RocketMQ's `+` prefix.
    pub fn of(attributes: &BTreeMap<String, String>) -> Option<Self> {
        let get = |k: &str| attributes.get(k).or_else(|| attributes.get(&format!("+{k}")));
        let policy = get(CLEANUP_POLICY)?;
        let compacted = policy
            .split(',')
            .map(str::trim)
            .any(|p| p.eq_ignore_ascii_case("compact") || p.eq_ignore_ascii_case("COMPACTION"));
        if !compacted {
            return None;
        }
        let mut p = Self::default();
        if let Some(ms) = get(DELETE_RETENTION_MS).and_then(|v| v.trim().parse::<i64>().ok()).filter(|v| *v >= 0) {
            p.delete_retention_ms = ms;
        }
        if let Some(r) = get(MIN_CLEANABLE_DIRTY_RATIO)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|r| (0.0..=1.0).contains(r))
        {
            p.min_cleanable_dirty_ratio = r;
        }
        Some(p)
    }
}

/// The compaction key of a record's properties: the Kafka key if the Kafka door had to keep it
/// apart, else KEYS; `None` for a record without a key (or an empty one).
pub fn key_of(properties: &str) -> Option<&str> {
    message::property_value(properties, KAFKA_KEY_PROPERTY)
        .or_else(|| message::property_value(properties, property::KEYS))
        .filter(|k| !k.is_empty())
}

/// Whether a record is a tombstone (a Kafka null value).
pub fn is_tombstone(properties: &str) -> bool {
    message::property_value(properties, NULL_VALUE_PROPERTY).is_some()
}

/// A 128-bit digest of a key (two SipHash runs with different prefixes): what the offset map
/// keeps instead of the key, as Kafka's `SkimpyOffsetMap` keeps an MD5. A collision would make
/// one key's record look superseded by another's; at 128 bits that is out of reach.
pub fn key_hash(key: &str) -> u128 {
    let run = |salt: u8| {
        let mut h = std::hash::DefaultHasher::new();
        salt.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    };
    (u128::from(run(0x5a)) << 64) | u128::from(run(0xa5))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn both_doors_spellings_turn_compaction_on() {
        for v in ["COMPACTION", "compact", "compact,delete", "delete, compact"] {
            assert!(CompactionPolicy::of(&attrs(&[("cleanup.policy", v)])).is_some(), "{v}");
            assert!(CompactionPolicy::of(&attrs(&[("+cleanup.policy", v)])).is_some(), "+{v}");
        }
        for v in ["DELETE", "delete", ""] {
            assert!(CompactionPolicy::of(&attrs(&[("cleanup.policy", v)])).is_none(), "{v}");
        }
        assert!(CompactionPolicy::of(&attrs(&[])).is_none());
        let p = CompactionPolicy::of(&attrs(&[
            ("cleanup.policy", "compact"),
            ("delete.retention.ms", "10"),
            ("min.cleanable.dirty.ratio", "0.1"),
        ]))
        .unwrap();
        assert_eq!((p.delete_retention_ms, p.min_cleanable_dirty_ratio), (10, 0.1));
        let p = CompactionPolicy::of(&attrs(&[("cleanup.policy", "compact"), ("delete.retention.ms", "-1")])).unwrap();
        assert_eq!(p.delete_retention_ms, DEFAULT_DELETE_RETENTION_MS, "nonsense keeps the default");
    }

    #[test]
    fn the_kafka_key_wins_over_keys_and_keyless_records_have_none() {
        let props = message::properties_to_string([("KEYS", "a b"), ("KAFKA_KEY", "AAE=")]);
        assert_eq!(key_of(&props), Some("AAE="));
        let props = message::properties_to_string([("KEYS", "user-1")]);
        assert_eq!(key_of(&props), Some("user-1"));
        assert!(!is_tombstone(&props));
        let props = message::properties_to_string([("TAGS", "x"), ("KAFKA_NULL_VALUE", "true")]);
        assert_eq!(key_of(&props), None);
        assert!(is_tombstone(&props));
        assert_ne!(key_hash("a"), key_hash("b"));
        assert_eq!(key_hash("a"), key_hash("a"));
    }
}
