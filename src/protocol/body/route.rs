//! Route bodies: `TopicRouteData` (GET_ROUTEINFO_BY_TOPIC) and `ClusterInfo`
//! (GET_BROKER_CLUSTER_INFO).
//!
//! ```text
//! {"brokerDatas":[{"brokerAddrs":{0:"10.0.0.7:10911"},"brokerName":"broker-a",
//!                  "cluster":"DefaultCluster","enableActingMaster":false}],
//!  "filterServerTable":{},
//!  "queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,
//!                 "writeQueueNums":4}]}
//! ```
//!
//! `brokerAddrs` keys are bare numbers in the legacy form (clients older than V4_9_4, all Go
//! clients, and always in ClusterInfo) and quoted in the standard form. Go's client splits the
//! map text by hand, so the output is compact with no blanks.
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::json::JsonOut;

/// `QueueData.java`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    pub broker_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_sys_flag: i32,
}

/// `BrokerData.java`: one broker group (master id 0 plus slaves).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    pub cluster: String,
    pub broker_name: String,
    pub broker_addrs: BTreeMap<i64, String>,
    pub enable_acting_master: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

/// `TopicRouteData.java`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    pub order_topic_conf: Option<String>,
    pub queue_datas: Vec<QueueData>,
    pub broker_datas: Vec<BrokerData>,
    pub filter_server_table: BTreeMap<String, Vec<String>>,
}

/// `ClusterInfo.java`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// Which JSON form to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteJson {
    /// Plain fastjson: bare numeric map keys.
    Legacy,
    /// fastjson with BrowserCompatible + QuoteFieldNames + MapSortField.
    Standard,
}

impl RouteJson {
    /// The form a requester of `version` with `accept_standard_json_only` parses.
    pub fn for_request(version: i32, accept_standard_json_only: bool) -> Self {
        if version >= crate::protocol::version::V4_9_4 || accept_standard_json_only {
            Self::Standard
        } else {
            Self::Legacy
        }
    }
}

impl BrokerData {
    /// The master's address (broker id 0), if registered.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&0).map(String::as_str)
    }

    fn write(&self, w: &mut JsonOut, form: RouteJson) {
        w.begin_object();
        w.key("brokerAddrs");
        w.begin_object();
        for (id, addr) in &self.broker_addrs {
            w.num_key(*id, form == RouteJson::Standard);
            w.string(addr);
        }
        w.end_object();
        w.key("brokerName");
        w.string(&self.broker_name);
        w.key("cluster");
        w.string(&self.cluster);
        w.key("enableActingMaster");
        w.bool(self.enable_acting_master);
        if let Some(zone) = &self.zone_name {
            w.key("zoneName");
            w.string(zone);
        }
        w.end_object();
    }
}

impl QueueData {
    fn write(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("brokerName");
        w.string(&self.broker_name);
        w.key("perm");
        w.int(self.perm.into());
        w.key("readQueueNums");
        w.int(self.read_queue_nums.into());
        w.key("topicSysFlag");
        w.int(self.topic_sys_flag.into());
        w.key("writeQueueNums");
        w.int(self.write_queue_nums.into());
        w.end_object();
    }
}

impl TopicRouteData {
    /// The body of a GET_ROUTEINFO_BY_TOPIC answer.
    pub fn to_json(&self, form: RouteJson) -> String {
        let mut w = JsonOut::new(form == RouteJson::Standard);
        w.begin_object();
        w.key("brokerDatas");
        w.begin_array();
        for b in &self.broker_datas {
            b.write(&mut w, form);
        }
        w.end_array();
        w.key("filterServerTable");
        w.begin_object();
        for (addr, servers) in &self.filter_server_table {
            w.key(addr);
            w.begin_array();
            for s in servers {
                w.string(s);
            }
            w.end_array();
        }
        w.end_object();
        if let Some(conf) = self.order_topic_conf.as_deref().filter(|c| !c.is_empty()) {
            w.key("orderTopicConf");
            w.string(conf);
        }
        w.key("queueDatas");
        w.begin_array();
        for q in &self.queue_datas {
            q.write(&mut w);
        }
        w.end_array();
        w.end_object();
        w.finish()
    }
}

impl ClusterInfo {
    /// The body of a GET_BROKER_CLUSTER_INFO answer; Java always writes the legacy form here.
    pub fn to_json(&self) -> String {
        let mut w = JsonOut::new(false);
        w.begin_object();
        w.key("brokerAddrTable");
        w.begin_object();
        for (name, data) in &self.broker_addr_table {
            w.key(name);
            data.write(&mut w, RouteJson::Legacy);
        }
        w.end_object();
        w.key("clusterAddrTable");
        w.begin_object();
        for (cluster, names) in &self.cluster_addr_table {
            w.key(cluster);
            w.begin_array();
            for n in names {
                w.string(n);
            }
            w.end_array();
        }
        w.end_object();
        w.end_object();
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::json;

    fn sample() -> TopicRouteData {
        TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "DefaultCluster".into(),
                broker_name: "broker-a".into(),
                broker_addrs: [(0, "10.0.0.7:10911".to_string()), (1, "10.0.0.8:10911".to_string())].into(),
                enable_acting_master: false,
                zone_name: None,
            }],
            filter_server_table: BTreeMap::new(),
        }
    }

    #[test]
    fn legacy_form_matches_fastjson() {
        assert_eq!(
            sample().to_json(RouteJson::Legacy),
            r#"{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.7:10911",1:"10.0.0.8:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
    }

    #[test]
    fn both_forms_parse_back() {
        for form in [RouteJson::Legacy, RouteJson::Standard] {
            let text = sample().to_json(form);
            let back: TopicRouteData = json::from_slice(text.as_bytes()).unwrap();
            assert_eq!(back, sample());
        }
        assert!(sample().to_json(RouteJson::Standard).contains(r#"{"0":"10.0.0.7:10911""#));
    }

    #[test]
    fn version_selects_form() {
        assert_eq!(RouteJson::for_request(317, false), RouteJson::Legacy);
        assert_eq!(RouteJson::for_request(401, false), RouteJson::Standard);
        assert_eq!(RouteJson::for_request(0, true), RouteJson::Standard);
    }
}
