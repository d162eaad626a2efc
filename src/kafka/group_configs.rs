//! DescribeConfigs for the GROUP resource (KIP-848's group configs, Kafka 4.x `GroupConfig`):
//! `kafka-configs --describe --entity-type groups` reads Kafka's key set with Kafka's defaults.
//! They tune the new consumer and share group protocols, which this broker does not serve (its
//! groups are classic ones, tuned by the client's own session and heartbeat settings), so they
//! are described read-only and not altered.
//!
//! ```text
//! key                              default  broker synonym
//! consumer.heartbeat.interval.ms   5000     group.consumer.heartbeat.interval.ms
//! consumer.session.timeout.ms      45000    group.consumer.session.timeout.ms
//! share.heartbeat.interval.ms      5000     group.share.heartbeat.interval.ms
//! share.record.lock.duration.ms    30000    group.share.record.lock.duration.ms
//! share.session.timeout.ms         45000    group.share.session.timeout.ms
//! ```
//!
//! May import: `super::topic_configs` (the described shape).

use super::topic_configs::{Described, DEFAULT_CONFIG};

/// Kafka's `ConfigResource.Type.GROUP`.
pub const GROUP: i8 = 32;

/// Kafka's `ConfigType.INT`.
const INT: i8 = 3;

const KEYS: &[(&str, &str, &str)] = &[
    ("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "5000"),
    ("consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "45000"),
    ("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms", "5000"),
    ("share.record.lock.duration.ms", "group.share.record.lock.duration.ms", "30000"),
    ("share.session.timeout.ms", "group.share.session.timeout.ms", "45000"),
];

/// Every group config with its default.
pub fn describe() -> Vec<Described> {
    KEYS.iter()
        .map(|&(name, broker_name, value)| Described {
            name,
            value: value.to_owned(),
            source: DEFAULT_CONFIG,
            synonym: (broker_name, value.to_owned()),
            kind: INT,
        })
        .collect()
}
