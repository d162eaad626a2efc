//! Checks on what a gRPC client sends, with the codes Java's `GrpcValidator` and
//! `SendMessageActivity` answer (ILLEGAL_TOPIC, ILLEGAL_MESSAGE_TAG, ILLEGAL_MESSAGE_KEY,
//! ILLEGAL_MESSAGE_GROUP, ILLEGAL_MESSAGE_PROPERTY_KEY, MESSAGE_PROPERTIES_TOO_LARGE,
//! MESSAGE_BODY_EMPTY/TOO_LARGE, ILLEGAL_DELIVERY_TIME, ILLEGAL_CONSUMER_GROUP), and the caps
//! on everything a request carries (the proxy's defaults).
//!
//! May import: `model`, `meta` (system names), `core` (the Kafka-reserved property names).

use super::pb::{Code, Resource};
use super::status::Refused;
use crate::meta::config::BrokerConfig;

/// `userPropertyMaxNum`.
pub const MAX_USER_PROPERTIES: usize = 128;
/// `maxUserPropertySize`: user properties, tag and keys together, in bytes.
pub const MAX_USER_PROPERTY_SIZE: usize = 16 * 1024;
/// `maxMessageGroupSize` (a group must be shorter).
pub const MAX_MESSAGE_GROUP_SIZE: usize = 64;
/// `maxDelayTimeMills`: one day.
pub const MAX_DELAY_MS: i64 = 86_400_000;
/// `maxTransactionRecoverySecond`: one hour.
pub const MAX_TRANSACTION_RECOVERY_SECONDS: i64 = 3600;
/// Messages in one SendMessage (Java has no limit; the request size caps it there).
pub const MAX_MESSAGES_PER_SEND: usize = 1024;

/// `MessageConst.STRING_HASH_SET`: names the broker writes itself; a client may not set them.
pub(super) const SYSTEM_PROPERTY_KEYS: &[&str] = &[
    "TRACE_ON",
    "MSG_REGION",
    "KEYS",
    "TAGS",
    "WAIT",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "BUYER_ID",
    "ORIGIN_MESSAGE_ID",
    "TRANSFER_FLAG",
    "CORRECTION_FLAG",
    "RECONSUME_TIME",
    "UNIQ_KEY",
    "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME",
    "POP_CK",
    "POP_CK_OFFSET",
    "1ST_POP_TIME",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "DUP_INFO",
    "EXTEND_UNIQ_INFO",
    "INSTANCE_ID",
    "CORRELATION_ID",
    "REPLY_TO_CLIENT",
    "TTL",
    "ARRIVE_TIME",
    "PUSH_REPLY_TIME",
    "CLUSTER",
    "MSG_TYPE",
    "INNER_MULTI_QUEUE_OFFSET",
    "TIMER_DELAY_MS",
    "TIMER_DELAY_SEC",
    "TIMER_DELIVER_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES",
    "TIMER_OUT_MS",
    "TIMER_DEL_UNIQKEY",
    "TIMER_DELAY_LEVEL",
    "__BORNHOST",
    "BORN_TIMESTAMP",
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
];

fn refuse(code: Code, why: impl Into<String>) -> Refused {
    Refused::new(code, why)
}

/// Guava's `CharMatcher.javaIsoControl()` over UTF-16 units: U+0000..U+001F, U+007F..U+009F.
pub fn has_control(s: &str) -> bool {
    s.chars().any(|c| matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'))
}

/// Java's `StringUtils.isBlank` on a non-empty string: whitespace only.
fn blank(s: &str) -> bool {
    s.chars().all(char::is_whitespace)
}

/// `validateTopic`: RocketMQ's name rule, and never a system topic.
pub fn topic<'a>(config: &BrokerConfig, r: Option<&'a Resource>) -> Result<&'a str, Refused> {
    let name = r.map_or("", |r| r.name.as_str());
    crate::model::name::check_topic(name).map_err(|e| refuse(Code::IllegalTopic, e.to_string()))?;
    if crate::meta::names::is_system_topic(config, name) {
        return Err(refuse(Code::IllegalTopic, "cannot access system topic"));
    }
    Ok(name)
}

/// `validateConsumerGroup`: RocketMQ's name rule, and never a system group.
pub fn group(r: Option<&Resource>) -> Result<&str, Refused> {
    let name = r.map_or("", |r| r.name.as_str());
    crate::model::name::check_group(name).map_err(|e| refuse(Code::IllegalConsumerGroup, e.to_string()))?;
    if crate::meta::names::is_system_group(name) {
        return Err(refuse(Code::IllegalConsumerGroup, "cannot use system consumer group"));
    }
    Ok(name)
}

/// `validateTag`.
pub fn tag(tag: &str) -> Result<(), Refused> {
    if tag.is_empty() {
        return Ok(());
    }
    if blank(tag) {
        return Err(refuse(Code::IllegalMessageTag, "tag cannot be the char sequence of whitespace"));
    }
    if tag.contains('|') {
        return Err(refuse(Code::IllegalMessageTag, "tag cannot contain '|'"));
    }
    if has_control(tag) {
        return Err(refuse(Code::IllegalMessageTag, "tag cannot contain control character"));
    }
    Ok(())
}

/// `validateMessageKey`.
pub fn key(key: &str) -> Result<(), Refused> {
    if !key.is_empty() && blank(key) {
        return Err(refuse(Code::IllegalMessageKey, "key cannot be the char sequence of whitespace"));
    }
    if has_control(key) {
        return Err(refuse(Code::IllegalMessageKey, "key cannot contain control character"));
    }
    Ok(())
}

/// `validateMessageGroup`.
pub fn message_group(group: &str) -> Result<(), Refused> {
    if group.is_empty() {
        return Ok(());
    }
    if blank(group) {
        return Err(refuse(Code::IllegalMessageGroup, "message group cannot be the char sequence of whitespace"));
    }
    if group.len() >= MAX_MESSAGE_GROUP_SIZE {
        return Err(refuse(
            Code::IllegalMessageGroup,
            format!("message group exceed the max size {MAX_MESSAGE_GROUP_SIZE}"),
        ));
    }
    if has_control(group) {
        return Err(refuse(Code::IllegalMessageGroup, "message group cannot contain control character"));
    }
    Ok(())
}

/// One user property: not a name the broker writes (nor a Kafka-reserved one, nor one the
/// property encoding cannot carry), no control character.
pub fn property(k: &str, v: &str) -> Result<(), Refused> {
    if SYSTEM_PROPERTY_KEYS.contains(&k) || crate::core::txn::RESERVED.contains(&k) {
        return Err(refuse(Code::IllegalMessagePropertyKey, format!("property is used by system: {k}")));
    }
    if k.is_empty() {
        return Err(refuse(Code::IllegalMessagePropertyKey, "the key of property cannot be empty"));
    }
    if has_control(k) {
        return Err(refuse(Code::IllegalMessagePropertyKey, "the key of property cannot contain control character"));
    }
    if has_control(v) {
        return Err(refuse(Code::IllegalMessagePropertyKey, "the value of property cannot contain control character"));
    }
    Ok(())
}

/// `validateMessageBodySize`.
pub fn body(len: usize, max: usize) -> Result<(), Refused> {
    if len == 0 {
        return Err(refuse(Code::MessageBodyEmpty, "message body cannot be empty"));
    }
    if max > 0 && len > max {
        return Err(refuse(Code::MessageBodyTooLarge, format!("message body cannot exceed the max {max}")));
    }
    Ok(())
}

/// `validateDelayTime`: at most a day ahead.
pub fn delivery_time(at_ms: i64, now_ms: i64) -> Result<(), Refused> {
    if at_ms.saturating_sub(now_ms) > MAX_DELAY_MS {
        return Err(refuse(
            Code::IllegalDeliveryTime,
            format!("the max delay time of message is too large, max is {MAX_DELAY_MS}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_keys_groups_and_properties() {
        assert!(tag("").is_ok() && tag("TagA").is_ok());
        assert_eq!(tag(" ").unwrap_err().code, Code::IllegalMessageTag);
        assert_eq!(tag("a|b").unwrap_err().code, Code::IllegalMessageTag);
        assert_eq!(tag("a\u{1}").unwrap_err().code, Code::IllegalMessageTag);
        assert_eq!(key("\t").unwrap_err().code, Code::IllegalMessageKey);
        assert_eq!(message_group(&"g".repeat(64)).unwrap_err().code, Code::IllegalMessageGroup);
        assert!(message_group(&"g".repeat(63)).is_ok());
        assert_eq!(property("UNIQ_KEY", "x").unwrap_err().code, Code::IllegalMessagePropertyKey);
        assert_eq!(property("__kafka_pid", "x").is_err(), crate::core::txn::RESERVED.contains(&"__kafka_pid"));
        assert_eq!(property("k", "v\u{85}").unwrap_err().code, Code::IllegalMessagePropertyKey);
        assert!(property("k", "v").is_ok());
        assert_eq!(body(0, 10).unwrap_err().code, Code::MessageBodyEmpty);
        assert_eq!(body(11, 10).unwrap_err().code, Code::MessageBodyTooLarge);
        assert_eq!(delivery_time(MAX_DELAY_MS + 2, 1).unwrap_err().code, Code::IllegalDeliveryTime);
    }
}
