//! Bodies of the statistics requests, in the shapes fastjson writes them:
//!
//! ```text
//! BrokerStatsData    {"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{…},"statsMinute":{…}}
//! ConsumeStatsList   {"brokerAddr":"ip:port","consumeStatsList":[{"<group>":[<ConsumeStats>,…]},…],
//!                     "totalDiff":0,"totalInflightDiff":0}
//! ProducerTableInfo  {"data":{"<group>":[{"clientId":…,"language":"JAVA","lastUpdateTimestamp":…,
//!                     "remoteIP":"/ip:port","version":…}]}}
//! ```
//! (`ConsumeStats` is keyed by `MessageQueue` objects: `admin::mq_keyed`.)
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `BrokerStatsItem`: one window of a statistic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BrokerStatsItem {
    pub avgpt: f64,
    pub sum: u64,
    pub tps: f64,
}

/// `BrokerStatsData` (VIEW_BROKER_STATS_DATA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsData {
    pub stats_day: BrokerStatsItem,
    pub stats_hour: BrokerStatsItem,
    pub stats_minute: BrokerStatsItem,
}

/// `ConsumeStatsList` (GET_BROKER_CONSUME_STATS): `groups` pairs a group with its
/// `ConsumeStats` bodies, already JSON.
pub fn consume_stats_list(
    broker_addr: &str,
    groups: &[(String, Vec<String>)],
    total_diff: i64,
    inflight: i64,
) -> String {
    let list: Vec<String> = groups
        .iter()
        .map(|(group, stats)| format!("{{{}:[{}]}}", serde_json::Value::String(group.clone()), stats.join(",")))
        .collect();
    format!(
        "{{\"brokerAddr\":{},\"consumeStatsList\":[{}],\"totalDiff\":{total_diff},\"totalInflightDiff\":{inflight}}}",
        serde_json::Value::String(broker_addr.to_owned()),
        list.join(",")
    )
}

/// `ProducerInfo`: one producer connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerInfo {
    pub client_id: String,
    pub language: String,
    pub last_update_timestamp: i64,
    #[serde(rename = "remoteIP")]
    pub remote_ip: String,
    pub version: i32,
}

/// `ProducerTableInfo` (GET_ALL_PRODUCER_INFO).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProducerTableInfo {
    pub data: BTreeMap<String, Vec<ProducerInfo>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_stats_data_has_java_names() {
        let d =
            BrokerStatsData { stats_minute: BrokerStatsItem { avgpt: 2.0, sum: 120, tps: 2.0 }, ..Default::default() };
        let v: serde_json::Value = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(v["statsMinute"]["sum"], 120);
        assert_eq!(v["statsMinute"]["tps"], 2.0);
        assert_eq!(v["statsHour"]["avgpt"], 0.0);
        assert!(v["statsDay"].is_object());
    }

    #[test]
    fn consume_stats_list_nests_groups_in_a_list() {
        let body = consume_stats_list("1.2.3.4:10911", &[("G".into(), vec!["{\"consumeTps\":1.5}".into()])], 7, 0);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["brokerAddr"], "1.2.3.4:10911");
        assert_eq!(v["consumeStatsList"][0]["G"][0]["consumeTps"], 1.5);
        assert_eq!(v["totalDiff"], 7);
        let empty = consume_stats_list("a", &[("G".into(), vec![])], 0, 0);
        assert!(empty.contains("{\"G\":[]}"), "{empty}");
    }

    #[test]
    fn producer_table_has_java_names() {
        let mut t = ProducerTableInfo::default();
        let p = ProducerInfo {
            client_id: "c".into(),
            language: "JAVA".into(),
            last_update_timestamp: 5,
            remote_ip: "/127.0.0.1:5".into(),
            version: 1,
        };
        t.data.insert("PG".into(), vec![p]);
        let v: serde_json::Value = serde_json::to_value(&t).unwrap();
        assert_eq!(v["data"]["PG"][0]["remoteIP"], "/127.0.0.1:5");
        assert_eq!(v["data"]["PG"][0]["lastUpdateTimestamp"], 5);
    }
}
