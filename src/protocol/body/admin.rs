//! Admin bodies keyed by `MessageQueue` objects, which fastjson writes with the object literal
//! as the map key (spec §4.16):
//!
//! ```text
//! TopicStatsTable  {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":…,"maxOffset":…,"minOffset":…}}}
//! ConsumeStats     {"consumeTps":0.0,"offsetTable":{{MQ}:{"brokerOffset":…,"consumerOffset":…,"lastTimestamp":…,"pullOffset":…}}}
//! ResetOffsetBody  {"offsetTable":{{MQ}:123}}
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

use super::client::{MessageQueue, SubscriptionData};

/// Writes `{"<name>":{<mq>:<value>,…}}` with fastjson's object keys; `extra` members (already
/// JSON) are added before it in key order.
pub fn mq_keyed(name: &str, entries: &BTreeMap<MessageQueue, String>, extra: &[(&str, String)]) -> String {
    let mut members: Vec<(String, String)> = extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
    let table: Vec<String> =
        entries.iter().map(|(mq, v)| format!("{}:{v}", serde_json::to_string(mq).unwrap_or_default())).collect();
    members.push((name.to_owned(), format!("{{{}}}", table.join(","))));
    members.sort();
    let body: Vec<String> =
        members.iter().map(|(k, v)| format!("{}:{v}", serde_json::Value::String(k.clone()))).collect();
    format!("{{{}}}", body.join(","))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    pub last_update_timestamp: i64,
    pub max_offset: i64,
    pub min_offset: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    pub broker_offset: i64,
    pub consumer_offset: i64,
    pub last_timestamp: i64,
    pub pull_offset: i64,
}

/// One client connection (`Connection`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionInfo {
    pub client_addr: String,
    pub client_id: String,
    pub language: String,
    pub version: i32,
}

/// GET_CONSUMER_CONNECTION_LIST body (`ConsumerConnection`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    pub connection_set: Vec<ConnectionInfo>,
    pub consume_from_where: String,
    pub consume_type: String,
    pub message_model: String,
    pub subscription_table: BTreeMap<String, SubscriptionData>,
}

/// GET_PRODUCER_CONNECTION_LIST body (`ProducerConnection`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerConnection {
    pub connection_set: Vec<ConnectionInfo>,
}

/// `GroupList`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupList {
    pub group_list: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_like_fastjson_and_parse_back() {
        let mq = MessageQueue { broker_name: "b".into(), queue_id: 0, topic: "T".into() };
        let mut m = BTreeMap::new();
        m.insert(mq, "11110".to_owned());
        let s = mq_keyed("offsetTable", &m, &[("consumeTps", "0.0".into())]);
        assert_eq!(s, r#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:11110}}"#);
        let v: serde_json::Value = serde_json::from_str(&super::super::json::normalize(&s)).unwrap();
        assert_eq!(v["offsetTable"][r#"{"brokerName":"b","queueId":0,"topic":"T"}"#], 11110);
    }
}
