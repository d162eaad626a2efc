//! Bodies of client registration: HEART_BEAT's `HeartbeatData`, GET_CONSUMER_LIST_BY_GROUP's
//! `ConsumerListBody`, and the subscription model they carry.
//!
//! ```text
//! {"clientID":"10.0.0.5@12345#987","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
//!   "consumeType":"CONSUME_PASSIVELY","groupName":"CG","messageModel":"CLUSTERING",
//!   "subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG",
//!   "subString":"TagA","subVersion":1700000000123,"tagsSet":["TagA"],"topic":"T"}],"unitMode":false}],
//!  "heartbeatFingerprint":0,"producerDataSet":[{"groupName":"PG"}],"withoutSub":false}
//! ```
//! Parsed by hand from a JSON value to be as lenient as fastjson (spec §9): enums as names or
//! ordinals, numbers as strings, missing members take Java's defaults, a missing `codeSet` is
//! recomputed from `subString`.
//!
//! May import: `model` and modules of `protocol/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::model::message::java_hash;

/// `SubscriptionData.SUB_ALL`.
pub const SUB_ALL: &str = "*";

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    pub class_filter_mode: bool,
    pub code_set: BTreeSet<i32>,
    pub expression_type: String,
    pub sub_string: String,
    pub sub_version: i64,
    pub tags_set: BTreeSet<String>,
    pub topic: String,
}

impl SubscriptionData {
    /// `FilterAPI.buildSubscriptionData` for TAG expressions: `*` (or empty) subscribes to all,
    /// else tags separated by `||`.
    pub fn build(topic: &str, expression: &str, expression_type: Option<&str>) -> Self {
        let expression_type = expression_type.filter(|t| !t.is_empty()).unwrap_or("TAG").to_owned();
        let mut s = Self {
            class_filter_mode: false,
            code_set: BTreeSet::new(),
            expression_type,
            sub_string: expression.trim().to_owned(),
            sub_version: 0,
            tags_set: BTreeSet::new(),
            topic: topic.to_owned(),
        };
        if s.sub_string.is_empty() || s.sub_string == SUB_ALL {
            s.sub_string = SUB_ALL.to_owned();
        } else if s.is_tag_type() {
            for tag in s.sub_string.split("||").map(str::trim).filter(|t| !t.is_empty()) {
                s.tags_set.insert(tag.to_owned());
                s.code_set.insert(java_hash(tag));
            }
        }
        s
    }

    pub fn is_tag_type(&self) -> bool {
        self.expression_type.eq_ignore_ascii_case("TAG")
    }

    /// Whether a ConsumeQueue tag code passes this subscription (`ExpressionMessageFilter`).
    pub fn matches_tags_code(&self, tags_code: i64) -> bool {
        if !self.is_tag_type() || self.sub_string == SUB_ALL {
            return true;
        }
        self.code_set.contains(&(tags_code as i32))
    }

    fn from_value(v: &Value) -> Option<Self> {
        let topic = str_of(v.get("topic")?)?;
        let sub_string = v.get("subString").and_then(str_of).unwrap_or_else(|| SUB_ALL.to_owned());
        let expression_type = v.get("expressionType").and_then(str_of);
        let mut s = Self::build(&topic, &sub_string, expression_type.as_deref());
        s.sub_version = v.get("subVersion").and_then(i64_of).unwrap_or(0);
        s.class_filter_mode = v.get("classFilterMode").and_then(bool_of).unwrap_or(false);
        if let Some(Value::Array(tags)) = v.get("tagsSet") {
            let tags: BTreeSet<String> = tags.iter().filter_map(str_of).collect();
            if !tags.is_empty() {
                s.tags_set = tags;
            }
        }
        if let Some(Value::Array(codes)) = v.get("codeSet") {
            let codes: BTreeSet<i32> = codes.iter().filter_map(i64_of).map(|c| c as i32).collect();
            if !codes.is_empty() {
                s.code_set = codes;
            }
        }
        Some(s)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerData {
    pub group_name: String,
    pub consume_type: String,
    pub message_model: String,
    pub consume_from_where: String,
    pub subscription_data_set: Vec<SubscriptionData>,
    pub unit_mode: bool,
}

impl ConsumerData {
    pub fn is_broadcasting(&self) -> bool {
        self.message_model == "BROADCASTING"
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeartbeatData {
    pub client_id: String,
    pub producer_groups: Vec<String>,
    pub consumer_data_set: Vec<ConsumerData>,
    pub heartbeat_fingerprint: i64,
    pub without_sub: bool,
}

const CONSUME_TYPES: &[&str] = &["CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP"];
const MESSAGE_MODELS: &[&str] = &["BROADCASTING", "CLUSTERING"];
const CONSUME_FROM: &[&str] = &[
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
];

pub(super) fn str_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn i64_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn bool_of(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => Some(s.eq_ignore_ascii_case("true")),
        Value::Number(n) => Some(n.as_i64() == Some(1)),
        _ => None,
    }
}

/// An enum written by name or by ordinal.
fn enum_of(v: Option<&Value>, names: &[&str], default: &str) -> String {
    match v {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => {
            n.as_u64().and_then(|i| names.get(i as usize)).map_or_else(|| default.to_owned(), |s| (*s).to_owned())
        }
        _ => default.to_owned(),
    }
}

impl HeartbeatData {
    /// Parses a HEART_BEAT body.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        let v: Value = super::json::from_slice(body).map_err(|e| format!("HeartbeatData is not JSON: {e}"))?;
        let client_id = v.get("clientID").and_then(str_of).ok_or("HeartbeatData has no clientID")?;
        let producer_groups =
            array(&v, "producerDataSet").filter_map(|p| p.get("groupName").and_then(str_of)).collect();
        let consumer_data_set = array(&v, "consumerDataSet")
            .filter_map(|c| {
                Some(ConsumerData {
                    group_name: c.get("groupName").and_then(str_of)?,
                    consume_type: enum_of(c.get("consumeType"), CONSUME_TYPES, "CONSUME_PASSIVELY"),
                    message_model: enum_of(c.get("messageModel"), MESSAGE_MODELS, "CLUSTERING"),
                    consume_from_where: enum_of(c.get("consumeFromWhere"), CONSUME_FROM, "CONSUME_FROM_LAST_OFFSET"),
                    subscription_data_set: array(c, "subscriptionDataSet")
                        .filter_map(SubscriptionData::from_value)
                        .collect(),
                    unit_mode: c.get("unitMode").and_then(bool_of).unwrap_or(false),
                })
            })
            .collect();
        Ok(Self {
            client_id,
            producer_groups,
            consumer_data_set,
            heartbeat_fingerprint: v.get("heartbeatFingerprint").and_then(i64_of).unwrap_or(0),
            without_sub: v.get("withoutSub").and_then(bool_of).unwrap_or(false),
        })
    }
}

/// CHECK_CLIENT_CONFIG's `CheckClientRequestBody` (`clientId`, `group`, `subscriptionData`,
/// `namespace`): the group and the subscription to check, if the body has one.
pub fn check_client_subscription(body: &[u8]) -> Result<(Option<String>, Option<SubscriptionData>), String> {
    if body.is_empty() {
        return Ok((None, None));
    }
    let v: Value = super::json::from_slice(body).map_err(|e| format!("CheckClientRequestBody is not JSON: {e}"))?;
    let group = v.get("group").and_then(str_of);
    Ok((group, v.get("subscriptionData").and_then(SubscriptionData::from_value)))
}

/// The subscriptions in a client's `ConsumerRunningInfo` (its answer to GET_CONSUMER_RUNNING_INFO,
/// 307): the `subscriptionSet`, the same data its heartbeat carries. The rest of the body (a map
/// keyed by `MessageQueue` objects, properties, statistics) is not read.
pub fn running_info_subscriptions(body: &[u8]) -> Result<Vec<SubscriptionData>, String> {
    let v: Value = super::json::from_slice(body).map_err(|e| format!("ConsumerRunningInfo is not JSON: {e}"))?;
    if !v.is_object() {
        return Err("ConsumerRunningInfo is not a JSON object".to_owned());
    }
    Ok(array(&v, "subscriptionSet").filter_map(SubscriptionData::from_value).collect())
}

fn array<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// `ConsumerListBody`.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerListBody {
    pub consumer_id_list: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_check_client_body() {
        let body = br#"{"clientId":"10.0.0.5@1","group":"CG","subscriptionData":{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":"a > 1","subVersion":17,"tagsSet":[],"topic":"T"}}"#;
        let (group, sub) = check_client_subscription(body).unwrap();
        assert_eq!(group.as_deref(), Some("CG"));
        let sub = sub.unwrap();
        assert_eq!(
            (sub.expression_type.as_str(), sub.sub_string.as_str(), sub.topic.as_str()),
            ("SQL92", "a > 1", "T")
        );
        assert_eq!(check_client_subscription(b"").unwrap(), (None, None));
        assert_eq!(check_client_subscription(br#"{"clientId":"x"}"#).unwrap(), (None, None));
        assert!(check_client_subscription(b"{").is_err());
    }

    #[test]
    fn parses_the_java_heartbeat() {
        let body = br#"{"clientID":"10.0.0.5@12345#9876543210","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"CG","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB","subVersion":1700000000123,"tagsSet":["TagA","TagB"],"topic":"TopicTest"},{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000124,"tagsSet":[],"topic":"%RETRY%CG"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"},{"groupName":"PG"}],"withoutSub":false}"#;
        let h = HeartbeatData::parse(body).unwrap();
        assert_eq!(h.client_id, "10.0.0.5@12345#9876543210");
        assert_eq!(h.producer_groups, vec!["CLIENT_INNER_PRODUCER", "PG"]);
        let c = &h.consumer_data_set[0];
        assert_eq!(c.subscription_data_set[0].sub_version, 1700000000123);
        assert!(c.subscription_data_set[0].matches_tags_code(2598920));
        assert!(!c.subscription_data_set[0].matches_tags_code(7));
        assert!(c.subscription_data_set[1].matches_tags_code(7));
    }

    #[test]
    fn reads_the_subscriptions_of_a_running_info() {
        // As the 5.x client writes it: fastjson's MessageQueue object keys in mqTable.
        let body = br#"{"jstack":null,"mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"commitOffset":0}},"properties":{"consumeType":"CONSUME_PASSIVELY"},"statusTable":{"T":{"pullRT":0.0}},"subscriptionSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000999,"tagsSet":["TagA"],"topic":"T"}],"userConsumerInfo":{}}"#;
        let subs = running_info_subscriptions(body).unwrap();
        assert_eq!(subs.len(), 1);
        assert_eq!((subs[0].topic.as_str(), subs[0].sub_version), ("T", 1700000000999));
        assert!(subs[0].matches_tags_code(2598919));
        assert!(running_info_subscriptions(b"[1]").is_err());
        assert!(running_info_subscriptions(b"{").is_err());
    }

    #[test]
    fn lenient_like_fastjson() {
        let body = br#"{"clientID":"c1","consumerDataSet":[{"groupName":"G","consumeType":1,"messageModel":0,"consumeFromWhere":4,"subscriptionDataSet":[{"topic":"T","subString":"TagA","subVersion":"17","codeSet":["2598919"]}]}]}"#;
        let h = HeartbeatData::parse(body).unwrap();
        let c = &h.consumer_data_set[0];
        assert_eq!(c.consume_type, "CONSUME_PASSIVELY");
        assert!(c.is_broadcasting());
        assert_eq!(c.consume_from_where, "CONSUME_FROM_FIRST_OFFSET");
        let s = &c.subscription_data_set[0];
        assert_eq!((s.sub_version, s.expression_type.as_str()), (17, "TAG"));
        assert!(s.code_set.contains(&2598919));
        let missing_codes = br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T","subString":"A || B"}]}]}"#;
        let h = HeartbeatData::parse(missing_codes).unwrap();
        assert_eq!(h.consumer_data_set[0].subscription_data_set[0].code_set.len(), 2, "codeSet recomputed");
        assert!(HeartbeatData::parse(b"{}").is_err());
    }
}

/// `MessageQueue`: `{"brokerName":"b","queueId":0,"topic":"T"}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    pub broker_name: String,
    pub queue_id: i32,
    pub topic: String,
}

/// LOCK_BATCH_MQ / UNLOCK_BATCH_MQ request body (`LockBatchRequestBody`, `UnlockBatchRequestBody`).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LockBatchRequestBody {
    pub consumer_group: String,
    pub client_id: String,
    pub only_this_broker: bool,
    pub mq_set: Vec<MessageQueue>,
}

/// LOCK_BATCH_MQ response body (`LockBatchResponseBody`).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchResponseBody {
    #[serde(rename = "lockOKMQSet")]
    pub lock_ok_mq_set: Vec<MessageQueue>,
}
