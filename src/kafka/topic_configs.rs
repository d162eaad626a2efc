//! Kafka topic configs: which keys this broker accepts, how each is checked, how it is kept in
//! the topic's `attributes` (`topics.json`, so it survives restarts and RocketMQ's `topicList`
//! readers see it) and what it reads back as. A leaf for `configs.rs` (the APIs), `metadata.rs`
//! (CreateTopics) and `log_retention.rs` (the sweep).
//!
//! ```text
//! key                     accepted values             kept as            honoured by
//! retention.ms            -1 or >= 0                  as given           log_retention.rs (capped by fileReservedTime)
//! retention.bytes         -1 or >= 0                  as given           log_retention.rs
//! cleanup.policy          delete                      DELETE (RocketMQ)  log_retention.rs
//!                         compact                     COMPACTION (RocketMQ) store/compaction (retention.* ignored, as Kafka)
//!                         compact,delete              compact,delete     both
//! delete.retention.ms     >= 0                        as given           store/compaction (tombstones)
//! min.cleanable.dirty.ratio 0..=1                     as given           store/compaction
//! segment.bytes           >= 1048576                  as given           stored only (CommitLog segments are broker-wide)
//! segment.ms              >= 1                        as given           stored only
//! message.timestamp.type  CreateTime                  as given           fetch answers the producer's time
//! min.insync.replicas     1                           as given           one replica
//! max.message.bytes       >= 0                        as given           stored only (maxMessageSize is the limit)
//! ```
//! The other keys Kafka describes (`topic_configs_fixed.rs`) are described with this broker's one
//! behaviour and accepted only at that value. Any other key is refused with INVALID_CONFIG, as
//! Kafka refuses unknown keys: a setting this broker would silently ignore is worse than a
//! refusal.
//!
//! May import: `super::api`, `crate::meta` (the broker config).

use std::collections::BTreeMap;

use super::api::{error, Refusal};
use super::topic_configs_fixed as fixed;
use crate::meta::config::BrokerConfig;

/// Kafka's `ConfigResource.Type` numbers.
pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;

/// Kafka's `ConfigSource`.
pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub const DEFAULT_CONFIG: i8 = 5;

/// Kafka's `ConfigType` (DescribeConfigs v3+).
const STRING: i8 = 2;
const INT: i8 = 3;
const LONG: i8 = 5;
const DOUBLE: i8 = 6;
const LIST: i8 = 7;

/// RocketMQ 5's `cleanup.policy` attribute values (`TopicAttributes.CLEANUP_POLICY_ATTRIBUTE`).
const ROCKETMQ_DELETE: &str = "DELETE";
const ROCKETMQ_COMPACTION: &str = "COMPACTION";

/// One accepted key: its name, its broker-level synonym (shown in DescribeConfigs synonyms),
/// its type, and its default from the broker config.
struct Key {
    name: &'static str,
    broker_name: &'static str,
    kind: i8,
    default: fn(&BrokerConfig) -> String,
}

const KEYS: &[Key] = &[
    Key { name: "cleanup.policy", broker_name: "log.cleanup.policy", kind: LIST, default: |_| "delete".into() },
    Key {
        name: "retention.ms",
        broker_name: "log.retention.ms",
        kind: LONG,
        default: |c| (c.file_reserved_time.saturating_mul(3_600_000)).to_string(),
    },
    Key { name: "retention.bytes", broker_name: "log.retention.bytes", kind: LONG, default: |_| "-1".into() },
    Key {
        name: "max.message.bytes",
        broker_name: "message.max.bytes",
        kind: INT,
        default: |c| c.max_message_size.to_string(),
    },
    Key {
        name: "segment.bytes",
        broker_name: "log.segment.bytes",
        kind: INT,
        default: |c| c.mapped_file_size_commit_log.to_string(),
    },
    Key { name: "segment.ms", broker_name: "log.roll.ms", kind: LONG, default: |_| "604800000".into() },
    Key {
        name: "message.timestamp.type",
        broker_name: "log.message.timestamp.type",
        kind: STRING,
        default: |_| "CreateTime".into(),
    },
    Key { name: "min.insync.replicas", broker_name: "min.insync.replicas", kind: INT, default: |_| "1".into() },
    Key {
        name: "delete.retention.ms",
        broker_name: "log.cleaner.delete.retention.ms",
        kind: LONG,
        default: |_| "86400000".into(),
    },
    Key {
        name: "min.cleanable.dirty.ratio",
        broker_name: "log.cleaner.min.cleanable.ratio",
        kind: DOUBLE,
        default: |_| "0.5".into(),
    },
];

/// Whether `name` is a topic config this broker keeps.
pub fn is_known(name: &str) -> bool {
    KEYS.iter().any(|k| k.name == name) || fixed::find(name).is_some()
}

fn invalid(why: String) -> Refusal {
    (error::INVALID_CONFIG, why)
}

fn number(name: &str, value: &str, min: i64, max: i64) -> Result<i64, Refusal> {
    match value.trim().parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(format!(
            "Invalid value {value} for configuration {name}: must be a number from {min} to {max}"
        ))),
    }
}

/// Checks one config as CreateTopics, AlterConfigs or IncrementalAlterConfigs SET gives it;
/// returns the value to keep in the topic's attributes.
pub fn check(name: &str, value: Option<&str>) -> Result<String, Refusal> {
    let Some(value) = value else {
        return Err(invalid(format!("Null value not supported for topic configs: {name}")));
    };
    let int = i64::from(i32::MAX);
    match name {
        "retention.ms" | "retention.bytes" => number(name, value, -1, i64::MAX).map(|n| n.to_string()),
        "segment.ms" => number(name, value, 1, i64::MAX).map(|n| n.to_string()),
        "delete.retention.ms" => number(name, value, 0, i64::MAX).map(|n| n.to_string()),
        "min.cleanable.dirty.ratio" => match value.trim().parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(value.trim().to_owned()),
            _ => Err(invalid(format!(
                "Invalid value {value} for configuration min.cleanable.dirty.ratio: must be a number from 0 to 1"
            ))),
        },
        "segment.bytes" => number(name, value, 1_048_576, int).map(|n| n.to_string()),
        "max.message.bytes" => number(name, value, 0, int).map(|n| n.to_string()),
        "min.insync.replicas" => match number(name, value, 1, int)? {
            1 => Ok("1".into()),
            n => Err(invalid(format!("min.insync.replicas={n} is not supported: this broker keeps one replica of each partition"))),
        },
        "message.timestamp.type" => match value {
            "CreateTime" => Ok(value.into()),
            "LogAppendTime" => Err(invalid(
                "message.timestamp.type=LogAppendTime is not supported: records keep the producer's timestamp".into(),
            )),
            _ => Err(invalid(format!("Invalid value {value} for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"))),
        },
        "cleanup.policy" => cleanup_policy(value),
        _ if fixed::find(name).is_some() => fixed::check(name, value).unwrap_or_else(|| Ok(value.to_owned())),
        _ => Err(invalid(format!(
            "Unknown topic config name: {name} (this broker keeps only {})",
            KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn cleanup_policy(value: &str) -> Result<String, Refusal> {
    let parts: Vec<&str> = value.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if let Some(bad) = parts.iter().find(|p| !matches!(**p, "delete" | "compact")) {
        return Err(invalid(format!(
            "Invalid value {bad} for configuration cleanup.policy: String must be one of: compact, delete"
        )));
    }
    let (compact, delete) = (parts.contains(&"compact"), parts.contains(&"delete"));
    Ok(match (compact, delete) {
        // RocketMQ 5's value, so `mqadmin` and a Java broker read the same policy.
        (true, false) => ROCKETMQ_COMPACTION.into(),
        (true, true) => "compact,delete".into(),
        (false, true) => ROCKETMQ_DELETE.into(),
        (false, false) => return Err(invalid("cleanup.policy must name a policy: compact, delete or both".into())),
    })
}

/// Whether `attributes` name a compacted topic that retention leaves alone (`compact` without
/// `delete`: Kafka applies retention.ms/bytes only with the delete policy).
fn compact_only(attributes: &BTreeMap<String, String>) -> bool {
    let policy = attributes.get("cleanup.policy").map_or("delete", String::as_str);
    let parts: Vec<&str> = policy.split(',').map(str::trim).collect();
    parts.iter().any(|p| p.eq_ignore_ascii_case("compact") || p.eq_ignore_ascii_case(ROCKETMQ_COMPACTION))
        && !parts.iter().any(|p| p.eq_ignore_ascii_case("delete"))
}

/// The Kafka value of a kept attribute.
fn kafka_value(name: &str, kept: &str) -> String {
    match (name, kept) {
        ("cleanup.policy", ROCKETMQ_DELETE) => "delete".into(),
        ("cleanup.policy", ROCKETMQ_COMPACTION) => "compact".into(),
        _ => kept.to_owned(),
    }
}

/// One described config: name, value, source, broker-level synonym with its default ("" when
/// Kafka has none), type.
pub struct Described {
    pub name: &'static str,
    pub value: String,
    pub source: i8,
    pub synonym: (&'static str, String),
    pub kind: i8,
}

/// Every topic config of a topic with `attributes`: set ones as DYNAMIC_TOPIC_CONFIG, the rest
/// as DEFAULT_CONFIG with the broker's value.
/// The broker synonyms Kafka names are the first of its list that has a value: for
/// retention.ms and segment.ms that is the hours one (log.retention.hours=168 by default; here
/// `fileReservedTime`).
pub fn describe(c: &BrokerConfig, attributes: &BTreeMap<String, String>) -> Vec<Described> {
    let honoured = KEYS.iter().map(|k| {
        let default = (k.default)(c);
        let (value, source) = match attributes.get(k.name) {
            Some(kept) => (kafka_value(k.name, kept), DYNAMIC_TOPIC_CONFIG),
            None => (default.clone(), DEFAULT_CONFIG),
        };
        let synonym = match k.name {
            "retention.ms" => ("log.retention.hours", c.file_reserved_time.to_string()),
            "segment.ms" => ("log.roll.hours", "168".to_owned()),
            _ => (k.broker_name, default),
        };
        Described { name: k.name, value, source, synonym, kind: k.kind }
    });
    let fixed = fixed::FIXED.iter().map(|&(name, broker_name, kind, value)| {
        let source = if attributes.contains_key(name) { DYNAMIC_TOPIC_CONFIG } else { DEFAULT_CONFIG };
        Described { name, value: value.to_owned(), source, synonym: (broker_name, value.to_owned()), kind }
    });
    let mut all: Vec<Described> = honoured.chain(fixed).collect();
    all.sort_by_key(|d| d.name);
    all
}

/// A topic's `retention.ms` and `retention.bytes` (-1: unlimited, also when unset).
pub fn retention(attributes: &BTreeMap<String, String>) -> (i64, i64) {
    if compact_only(attributes) {
        return (-1, -1);
    }
    let get = |k: &str| attributes.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(-1);
    (get("retention.ms"), get("retention.bytes"))
}

/// Applies Kafka's IncrementalAlterConfigs operation `op` (0 SET, 1 DELETE, 2 APPEND,
/// 3 SUBTRACT) to `attributes`.
pub fn apply(
    attributes: &mut BTreeMap<String, String>,
    name: &str,
    op: i8,
    value: Option<&str>,
) -> Result<(), Refusal> {
    if !is_known(name) {
        return check(name, value).map(|_| ());
    }
    match op {
        0 => {
            attributes.insert(name.to_owned(), check(name, value)?);
        }
        1 => {
            attributes.remove(name);
        }
        2 | 3 if name == "cleanup.policy" => {
            let current = attributes.get(name).map_or("delete".to_owned(), |v| kafka_value(name, v));
            let mut list: Vec<String> = current.split(',').map(|p| p.trim().to_owned()).collect();
            let given: Vec<String> = value.unwrap_or("").split(',').map(|p| p.trim().to_owned()).collect();
            if op == 2 {
                list.extend(given.into_iter().filter(|g| !g.is_empty()));
            } else {
                list.retain(|p| !given.contains(p));
            }
            list.dedup();
            attributes.insert(name.to_owned(), check(name, Some(&list.join(",")))?);
        }
        2 | 3 => {
            return Err(invalid(format!(
                "Config value append/subtract is not allowed for config key {name}: it is not a list"
            )))
        }
        other => return Err((error::INVALID_REQUEST, format!("unknown config operation {other}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_refused_and_unknown_keys() {
        assert_eq!(check("retention.ms", Some("1000")).unwrap(), "1000");
        assert_eq!(check("retention.ms", Some("-1")).unwrap(), "-1");
        assert_eq!(check("cleanup.policy", Some("delete")).unwrap(), "DELETE");
        assert_eq!(check("segment.bytes", Some("52428800")).unwrap(), "52428800");
        assert_eq!(check("message.timestamp.type", Some("CreateTime")).unwrap(), "CreateTime");
        for (k, v) in [
            ("retention.ms", "-2"),
            ("retention.bytes", "x"),
            ("delete.retention.ms", "-1"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("cleanup.policy", "bogus"),
            ("min.insync.replicas", "2"),
            ("message.timestamp.type", "LogAppendTime"),
            ("compression.type", "lz4"),
            ("no.such.key", "1"),
        ] {
            assert_eq!(check(k, Some(v)).unwrap_err().0, error::INVALID_CONFIG, "{k}={v}");
        }
        assert_eq!(check("cleanup.policy", Some("compact")).unwrap(), "COMPACTION");
        assert_eq!(check("cleanup.policy", Some("delete,compact")).unwrap(), "compact,delete");
        assert_eq!(check("delete.retention.ms", Some("0")).unwrap(), "0");
        assert_eq!(check("min.cleanable.dirty.ratio", Some("0.01")).unwrap(), "0.01");
        assert_eq!(check("retention.ms", None).unwrap_err().0, error::INVALID_CONFIG);
    }

    #[test]
    fn set_delete_append_subtract_as_kafka() {
        let mut a = BTreeMap::new();
        apply(&mut a, "retention.ms", 0, Some("5000")).unwrap();
        apply(&mut a, "cleanup.policy", 2, Some("delete")).unwrap();
        assert_eq!(a.get("cleanup.policy").map(String::as_str), Some("DELETE"));
        apply(&mut a, "cleanup.policy", 2, Some("compact")).unwrap();
        assert_eq!(a.get("cleanup.policy").map(String::as_str), Some("compact,delete"));
        assert_eq!(retention(&a), (5000, -1), "compact,delete keeps retention");
        apply(&mut a, "cleanup.policy", 3, Some("delete")).unwrap();
        assert_eq!(a.get("cleanup.policy").map(String::as_str), Some("COMPACTION"));
        assert_eq!(retention(&a), (-1, -1), "a compacted topic's live set is never deleted by retention");
        assert!(crate::store::compaction::CompactionPolicy::of(&a).is_some(), "the store compacts what the door keeps");
        apply(&mut a, "cleanup.policy", 0, Some("delete")).unwrap();
        assert_eq!(apply(&mut a, "retention.ms", 2, Some("1")).unwrap_err().0, error::INVALID_CONFIG);
        apply(&mut a, "retention.ms", 1, None).unwrap();
        assert_eq!(retention(&a), (-1, -1));
        let c = BrokerConfig::default();
        let d = describe(&c, &a);
        let policy = d.iter().find(|d| d.name == "cleanup.policy").unwrap();
        assert_eq!((policy.value.as_str(), policy.source), ("delete", DYNAMIC_TOPIC_CONFIG));
        let ms = d.iter().find(|d| d.name == "retention.ms").unwrap();
        assert_eq!((ms.value.clone(), ms.source), ((c.file_reserved_time * 3_600_000).to_string(), DEFAULT_CONFIG));
    }
}
