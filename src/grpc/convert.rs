//! A popped record as the v2 `Message` a 5.x SDK receives (Java's `GrpcConverter.buildMessage`):
//! user properties are those the broker does not own; the system properties carry the tag,
//! keys, message id, a body digest the SDK verifies (MD5 in upper-case hex, as the Java proxy
//! sends), the type, born/store time and host, delivery time, message group, the
//! receipt handle, queue id and offset, the invisible duration and the delivery attempt
//! (reconsumeTimes + 1).
//!
//! May import: `model`, `store` (the record codec), `grpc`.

use prost_types::{Duration, Timestamp};

use super::pb::{self, DeadLetterQueue, Digest, DigestType, Encoding, MessageType, Resource, SystemProperties};
use crate::model::message::{parse_properties, sys_flag};
use crate::store::commit_log::record;

/// Properties the broker or the proxy writes that are not user properties beyond
/// `validate::SYSTEM_PROPERTY_KEYS`.
const ALSO_SYSTEM: &[&str] = &["__SHARDINGKEY", "TRACE_CONTEXT", "TIMER_DELAY_SEC", "TRAN_PREPARED"];

pub fn millis(ms: i64) -> Timestamp {
    Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

pub fn duration(ms: i64) -> Duration {
    Duration { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

/// Milliseconds of a protobuf duration, saturating (a client's value may be anything).
pub fn duration_ms(d: &Duration) -> i64 {
    d.seconds.saturating_mul(1000).saturating_add(i64::from(d.nanos) / 1_000_000)
}

/// The v2 message of a stored record under `topic` (the asked one); `None` if the record
/// cannot be read.
pub fn message(stored: &[u8], topic: &str, receipt: String, invisible_ms: i64) -> Option<pb::Message> {
    let m = record::decode(stored, false)?;
    let mut props = parse_properties(&m.properties);
    let take = |props: &mut std::collections::BTreeMap<String, String>, k: &str| props.get(k).cloned();
    let tag = take(&mut props, "TAGS");
    let keys: Vec<String> = take(&mut props, "KEYS")
        .map(|k| k.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default();
    let message_id = take(&mut props, "UNIQ_KEY").unwrap_or_else(|| format!("{:016X}", m.commit_log_offset));
    let group = take(&mut props, "__SHARDINGKEY");
    let message_type = if props.get("TRAN_MSG").is_some_and(|v| v == "true") {
        MessageType::Transaction
    } else if ["DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC"].iter().any(|k| props.contains_key(*k)) {
        MessageType::Delay
    } else if group.is_some() {
        MessageType::Fifo
    } else {
        MessageType::Normal
    };
    let born_host = take(&mut props, "__BORNHOST").filter(|h| !h.trim().is_empty()).unwrap_or(m.born_host.to_string());
    let delivery_timestamp = props.get("TIMER_DELIVER_MS").and_then(|v| v.parse::<i64>().ok()).map(millis);
    let dead_letter_queue = match (props.get("DLQ_ORIGIN_TOPIC"), props.get("DLQ_ORIGIN_MESSAGE_ID")) {
        (Some(t), Some(id)) => Some(DeadLetterQueue { topic: t.clone(), message_id: id.clone() }),
        _ => None,
    };
    let trace_context = take(&mut props, "TRACE_CONTEXT");
    let encoding = if m.sys_flag & sys_flag::COMPRESSED != 0 { Encoding::Gzip } else { Encoding::Identity };
    let sys = SystemProperties {
        tag,
        keys,
        message_id,
        body_digest: Some(body_digest(&m.body)),
        body_encoding: encoding as i32,
        message_type: message_type as i32,
        born_timestamp: Some(millis(m.born_timestamp)),
        born_host,
        store_timestamp: Some(millis(m.store_timestamp)),
        store_host: m.store_host.to_string(),
        delivery_timestamp,
        receipt_handle: Some(receipt),
        queue_id: m.queue_id,
        queue_offset: Some(m.queue_offset),
        invisible_duration: Some(duration(invisible_ms)),
        delivery_attempt: Some(m.reconsume_times.saturating_add(1)),
        message_group: group,
        trace_context,
        dead_letter_queue,
        ..SystemProperties::default()
    };
    let user_properties = props
        .into_iter()
        .filter(|(k, _)| {
            !super::validate::SYSTEM_PROPERTY_KEYS.contains(&k.as_str()) && !ALSO_SYSTEM.contains(&k.as_str())
        })
        .collect();
    Some(pb::Message {
        topic: Some(Resource { resource_namespace: String::new(), name: topic.to_owned() }),
        user_properties,
        system_properties: Some(sys),
        body: m.body,
    })
}

/// The body's MD5 in upper-case hex, as the Java proxy sends it (`BinaryUtil.generateMd5`), which
/// every SDK checks alike. A CRC32 is not: the Python SDK 5.1.2 compares against 8 zero-padded
/// hex digits and discards a message whose checksum differs as corrupted (one in 16 of them,
/// with an unpadded checksum).
fn body_digest(body: &[u8]) -> Digest {
    use md5::Digest as _;
    let sum = md5::Md5::digest(body);
    let checksum = sum.iter().map(|b| format!("{b:02X}")).collect();
    Digest { r#type: DigestType::Md5 as i32, checksum }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_digests() {
        assert_eq!(millis(1_500), Timestamp { seconds: 1, nanos: 500_000_000 });
        assert_eq!(duration_ms(&duration(12_345)), 12_345);
        assert_eq!(duration_ms(&Duration { seconds: i64::MAX, nanos: 0 }), i64::MAX);
        // Java's BinaryUtil.generateMd5("123456789".getBytes()).
        assert_eq!(body_digest(b"123456789").checksum, "25F9E794323B453885F5181F1B624D0B");
        assert_eq!(body_digest(b"123456789").r#type, DigestType::Md5 as i32);
        // The empty body (CRC32 0): 32 hex digits all the same.
        assert_eq!(body_digest(b"").checksum, "D41D8CD98F00B204E9800998ECF8427E");
    }
}
