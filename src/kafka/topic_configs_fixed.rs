//! The rest of the topic configs Kafka 4.x describes (`LogConfig`), which this broker has one
//! fixed behaviour for: DescribeConfigs lists them with that behaviour as the value (so
//! `kafka-configs --describe --all` and `Admin.describeConfigs` read the same key set as from
//! Kafka), and a topic may set them only to that value (what tools that copy a topic's configs
//! send); any other value is INVALID_CONFIG saying why. The keys this broker honours are in
//! `topic_configs.rs`.
//!
//! ```text
//! compression.type=producer            a fetch answers with the producer's codec (fetch/batches.rs)
//! compression.*.level                  Kafka's defaults (recompression uses them)
//! flush.messages, flush.ms             never forced per topic (flushDiskType is broker-wide)
//! local.retention.*, remote.*          no tiered storage
//! *.replication.throttled.replicas     one replica, nothing to throttle
//! unclean.leader.election.enable=false one replica, no election
//! index/segment index/preallocate      Kafka's defaults (the CommitLog is broker-wide)
//! min/max.compaction.lag.ms            compaction runs on the store's schedule
//! message.timestamp.before/after.max.ms  no timestamp bounds enforced
//! ```
//!
//! May import: `super::api`.

use super::api::{error, Refusal};

/// Kafka's `ConfigType` (DescribeConfigs v3+).
const BOOLEAN: i8 = 1;
const STRING: i8 = 2;
const INT: i8 = 3;
const LONG: i8 = 5;
const LIST: i8 = 7;

const NEVER: &str = "9223372036854775807";

/// (name, broker synonym or "" when Kafka has none, type, the one value).
pub const FIXED: &[(&str, &str, i8, &str)] = &[
    ("compression.type", "compression.type", STRING, "producer"),
    ("compression.gzip.level", "compression.gzip.level", INT, "-1"),
    ("compression.lz4.level", "compression.lz4.level", INT, "9"),
    ("compression.zstd.level", "compression.zstd.level", INT, "3"),
    ("file.delete.delay.ms", "log.segment.delete.delay.ms", LONG, "60000"),
    ("flush.messages", "log.flush.interval.messages", LONG, NEVER),
    ("flush.ms", "log.flush.scheduler.interval.ms", LONG, NEVER),
    ("follower.replication.throttled.replicas", "", LIST, ""),
    ("index.interval.bytes", "log.index.interval.bytes", INT, "4096"),
    ("leader.replication.throttled.replicas", "", LIST, ""),
    ("local.retention.bytes", "log.local.retention.bytes", LONG, "-2"),
    ("local.retention.ms", "log.local.retention.ms", LONG, "-2"),
    ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", LONG, NEVER),
    ("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", LONG, NEVER),
    ("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", LONG, NEVER),
    ("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", LONG, "0"),
    ("preallocate", "log.preallocate", BOOLEAN, "false"),
    ("remote.log.copy.disable", "", BOOLEAN, "false"),
    ("remote.log.delete.on.disable", "", BOOLEAN, "false"),
    ("remote.storage.enable", "", BOOLEAN, "false"),
    ("segment.index.bytes", "log.index.size.max.bytes", INT, "10485760"),
    ("segment.jitter.ms", "log.roll.jitter.hours", LONG, "0"),
    ("unclean.leader.election.enable", "unclean.leader.election.enable", BOOLEAN, "false"),
];

pub fn find(name: &str) -> Option<&'static (&'static str, &'static str, i8, &'static str)> {
    FIXED.iter().find(|f| f.0 == name)
}

/// The value to keep for `name` = `value`: accepted only when it is the fixed one.
pub fn check(name: &str, value: &str) -> Option<Result<String, Refusal>> {
    let (_, _, kind, fixed) = find(name)?;
    let v = value.trim();
    let same = match *kind {
        BOOLEAN => v.eq_ignore_ascii_case(fixed),
        INT | LONG => v.parse::<i64>().ok() == fixed.parse::<i64>().ok(),
        LIST => v.split(',').all(|p| p.trim().is_empty()) && fixed.is_empty(),
        _ => v == *fixed,
    };
    Some(if same {
        Ok((*fixed).to_owned())
    } else {
        Err((
            error::INVALID_CONFIG,
            format!("{name}={value} is not supported: this broker only has {name}={fixed} (docs/kafka.md)"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fixed_value_is_accepted() {
        assert_eq!(check("compression.type", "producer").unwrap().unwrap(), "producer");
        assert_eq!(check("preallocate", "FALSE").unwrap().unwrap(), "false");
        assert_eq!(check("flush.ms", " 9223372036854775807").unwrap().unwrap(), NEVER);
        assert_eq!(check("compression.type", "lz4").unwrap().unwrap_err().0, error::INVALID_CONFIG);
        assert_eq!(check("unclean.leader.election.enable", "true").unwrap().unwrap_err().0, error::INVALID_CONFIG);
        assert!(check("retention.ms", "1").is_none(), "honoured keys are topic_configs.rs'");
    }
}
