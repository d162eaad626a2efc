//! Admin bodies keyed by `MessageQueue` objects, which fastjson writes with the object literal
//! as the map key (spec §4.16):
//!
//! ```text
//! TopicStatsTable  {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":…,"maxOffset":…,"minOffset":…}}}
//! ConsumeStats     {"consumeTps":0.0,"offsetTable":{{MQ}:{"brokerOffset":…,"consumerOffset":…,"lastTimestamp":…,"pullOffset":…}}}
//! ResetOffsetBody  {"offsetTable":{{MQ}:123}}
//! ```
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

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

/// Reads a fastjson map keyed by `MessageQueue` objects (`{"<member>":{{MQ}:v,…}}`).
pub fn parse_mq_keyed(body: &[u8], member: &str) -> Result<Vec<(MessageQueue, serde_json::Value)>, String> {
    let v: BTreeMap<String, serde_json::Value> = super::json::from_slice(body).map_err(|e| e.to_string())?;
    let Some(serde_json::Value::Object(table)) = v.get(member) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (k, v) in table {
        let mq: MessageQueue = serde_json::from_str(k).map_err(|e| format!("bad queue key {k}: {e}"))?;
        out.push((mq, v.clone()));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// `GetConsumerStatusBody` as the broker answers INVOKE_BROKER_TO_GET_CONSUMER_STATUS:
/// `{"consumerTable":{"<clientId>":{{MQ}:offset,…}},"messageQueueTable":{}}`.
pub fn consumer_status_table(tables: &BTreeMap<String, BTreeMap<MessageQueue, String>>) -> String {
    let clients: Vec<String> = tables
        .iter()
        .map(|(client, t)| {
            let inner: Vec<String> =
                t.iter().map(|(mq, v)| format!("{}:{v}", serde_json::to_string(mq).unwrap_or_default())).collect();
            format!("{}:{{{}}}", serde_json::Value::String(client.clone()), inner.join(","))
        })
        .collect();
    format!("{{\"consumerTable\":{{{}}},\"messageQueueTable\":{{}}}}", clients.join(","))
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
    fn consumer_status_round_trip() {
        let mq = MessageQueue { broker_name: "b".into(), queue_id: 1, topic: "T".into() };
        let client_body =
            br#"{"consumerTable":{},"messageQueueTable":{{"brokerName":"b","queueId":1,"topic":"T"}:42}}"#;
        let parsed = parse_mq_keyed(client_body, "messageQueueTable").unwrap();
        assert_eq!(parsed, vec![(mq.clone(), serde_json::json!(42))]);
        let mut tables = BTreeMap::new();
        tables.insert("c1".to_owned(), parsed.into_iter().map(|(m, v)| (m, v.to_string())).collect());
        assert_eq!(
            consumer_status_table(&tables),
            r#"{"consumerTable":{"c1":{{"brokerName":"b","queueId":1,"topic":"T"}:42}},"messageQueueTable":{}}"#
        );
    }

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
