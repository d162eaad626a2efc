//! Route tables (`RouteInfoManager.java`). Pure: every method takes the current time, so
//! expiry is tested without waiting. The processor keeps one instance behind one lock.
//!
//! ```text
//! topic_queue   topic -> brokerName -> QueueData
//! broker_addr   brokerName -> BrokerData { cluster, brokerAddrs: brokerId -> "ip:port" }
//! cluster_addr  cluster -> {brokerName}
//! broker_live   (cluster, brokerAddr) -> BrokerLive { last update, timeout, DataVersion, ... }
//! ```
//!
//! May import: `model`, `protocol` and modules of `namesrv/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::model::{perm, DataVersion, TopicConfig};
use crate::protocol::body::route::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
use crate::protocol::body::TopicList;

/// `MixAll.MASTER_ID`.
pub const MASTER_ID: i64 = 0;

/// One registering broker, as its REGISTER_BROKER header describes it.
#[derive(Clone, Debug, Default)]
pub struct BrokerIdentity {
    pub cluster: String,
    pub name: String,
    pub addr: String,
    pub id: i64,
}

/// What a registration carries besides the identity.
#[derive(Clone, Debug, Default)]
pub struct Registration {
    pub broker: BrokerIdentity,
    pub ha_server_addr: String,
    pub timeout_ms: u64,
    /// `None` for brokers older than 5.0, which do not send the member.
    pub enable_acting_master: Option<bool>,
    pub zone_name: Option<String>,
    pub data_version: DataVersion,
    pub topics: Option<BTreeMap<String, TopicConfig>>,
    /// The connection it came over; closing it unregisters the broker.
    pub conn_id: Option<u64>,
}

/// The answer to a registration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegisterResult {
    pub master_addr: Option<String>,
    pub ha_server_addr: Option<String>,
}

/// A registration the tables refuse.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("register broker failed: a single-topic registration from {0} arrived before its full registration")]
    SingleTopicBeforeFull(String),
}

#[derive(Clone, Debug)]
struct BrokerLive {
    last_update_ms: u64,
    timeout_ms: u64,
    data_version: DataVersion,
    conn_id: Option<u64>,
    ha_server_addr: String,
}

type LiveKey = (String, String);

/// The NameServer's view of brokers and topics.
#[derive(Debug, Default)]
pub struct RouteInfoManager {
    topic_queue: BTreeMap<String, BTreeMap<String, QueueData>>,
    broker_addr: BTreeMap<String, BrokerData>,
    cluster_addr: BTreeMap<String, BTreeSet<String>>,
    broker_live: HashMap<LiveKey, BrokerLive>,
}

impl RouteInfoManager {
    pub fn new() -> Self {
        Self::default()
    }

    /// Live brokers and topics with routes (metrics).
    pub fn counts(&self) -> (usize, usize) {
        (self.broker_live.len(), self.topic_queue.len())
    }

    /// REGISTER_BROKER. `delete_missing_topics` is `deleteTopicWithBrokerRegistration`.
    pub fn register_broker(
        &mut self,
        reg: Registration,
        now_ms: u64,
        delete_missing_topics: bool,
    ) -> Result<RegisterResult, RouteError> {
        let b = &reg.broker;
        let known_id = self.broker_addr.get(&b.name).is_some_and(|d| d.broker_addrs.contains_key(&b.id));
        if !known_id && reg.topics.as_ref().is_some_and(|t| t.len() == 1) {
            return Err(RouteError::SingleTopicBeforeFull(b.addr.clone()));
        }
        // A stale registration (older state version) for an id another address now holds.
        let old_addr = self.broker_addr.get(&b.name).and_then(|d| d.broker_addrs.get(&b.id)).cloned();
        if let Some(old) = old_addr.as_ref().filter(|a| **a != b.addr) {
            let old_state =
                self.broker_live.get(&(b.cluster.clone(), old.clone())).map(|l| l.data_version.state_version);
            if old_state.is_some_and(|s| s > reg.data_version.state_version) {
                self.broker_live.remove(&(b.cluster.clone(), b.addr.clone()));
                return Ok(RegisterResult::default());
            }
        }

        self.cluster_addr.entry(b.cluster.clone()).or_default().insert(b.name.clone());
        let data = self.broker_addr.entry(b.name.clone()).or_insert_with(|| BrokerData {
            cluster: b.cluster.clone(),
            broker_name: b.name.clone(),
            ..Default::default()
        });
        let old_version_broker = reg.enable_acting_master.is_none();
        data.enable_acting_master = reg.enable_acting_master.unwrap_or(false);
        data.zone_name = reg.zone_name.clone();
        // The same address holds one id only (a slave promoted to master re-registers as 0).
        data.broker_addrs.retain(|id, addr| *addr != b.addr || *id == b.id);
        let first = data.broker_addrs.insert(b.id, b.addr.clone()).is_none();
        let is_master = b.id == MASTER_ID;
        let is_prime_slave = !old_version_broker && !is_master && data.broker_addrs.keys().next() == Some(&b.id);
        let acting = data.enable_acting_master;

        if let (Some(topics), true) = (&reg.topics, is_master || is_prime_slave) {
            if delete_missing_topics {
                self.remove_topics_of_broker_except(&b.name, topics);
            }
            let changed = first || self.version_changed(&b.cluster, &b.addr, &reg.data_version);
            for tc in topics.values() {
                let has_queue = self.topic_queue.get(&tc.topic_name).is_some_and(|m| m.contains_key(&b.name));
                if changed || !has_queue {
                    let mut perm = tc.perm;
                    if is_prime_slave && acting {
                        perm &= !perm::WRITE;
                    }
                    self.topic_queue.entry(tc.topic_name.clone()).or_default().insert(
                        b.name.clone(),
                        QueueData {
                            broker_name: b.name.clone(),
                            read_queue_nums: tc.read_queue_nums,
                            write_queue_nums: tc.write_queue_nums,
                            perm,
                            topic_sys_flag: tc.topic_sys_flag,
                        },
                    );
                }
            }
        }

        self.broker_live.insert(
            (b.cluster.clone(), b.addr.clone()),
            BrokerLive {
                last_update_ms: now_ms,
                timeout_ms: reg.timeout_ms,
                data_version: reg.data_version.clone(),
                conn_id: reg.conn_id,
                ha_server_addr: reg.ha_server_addr.clone(),
            },
        );

        let mut result = RegisterResult::default();
        if !is_master {
            let master = self.broker_addr.get(&b.name).and_then(|d| d.master_addr()).map(str::to_owned);
            if let Some(master) = master {
                if let Some(live) = self.broker_live.get(&(b.cluster.clone(), master.clone())) {
                    result.ha_server_addr = Some(live.ha_server_addr.clone());
                    result.master_addr = Some(master);
                }
            }
        }
        Ok(result)
    }

    fn version_changed(&self, cluster: &str, addr: &str, version: &DataVersion) -> bool {
        self.broker_live.get(&(cluster.to_owned(), addr.to_owned())).is_none_or(|l| l.data_version != *version)
    }

    fn remove_topics_of_broker_except(&mut self, broker_name: &str, keep: &BTreeMap<String, TopicConfig>) {
        self.topic_queue.retain(|topic, queues| {
            if !keep.contains_key(topic) {
                queues.remove(broker_name);
            }
            !queues.is_empty()
        });
    }

    /// UNREGISTER_BROKER (and removal on expiry or connection close).
    pub fn unregister_broker(&mut self, cluster: &str, addr: &str, name: &str) {
        self.broker_live.remove(&(cluster.to_owned(), addr.to_owned()));
        let Some(data) = self.broker_addr.get_mut(name) else { return };
        data.broker_addrs.retain(|_, a| a != addr);
        if !data.broker_addrs.is_empty() {
            return;
        }
        self.broker_addr.remove(name);
        if let Some(names) = self.cluster_addr.get_mut(cluster) {
            names.remove(name);
            if names.is_empty() {
                self.cluster_addr.remove(cluster);
            }
        }
        self.topic_queue.retain(|_, queues| {
            queues.remove(name);
            !queues.is_empty()
        });
    }

    /// The broker (cluster, address) entries that came over connection `conn_id`.
    pub fn brokers_on_connection(&self, conn_id: u64) -> Vec<(String, String)> {
        self.broker_live.iter().filter(|(_, l)| l.conn_id == Some(conn_id)).map(|(k, _)| k.clone()).collect()
    }

    /// Unregisters the broker at (cluster, addr), finding its name (`onChannelDestroy`).
    pub fn remove_broker_addr(&mut self, cluster: &str, addr: &str) {
        let name = self
            .cluster_addr
            .get(cluster)
            .into_iter()
            .flatten()
            .find(|n| self.broker_addr.get(*n).is_some_and(|d| d.broker_addrs.values().any(|a| a == addr)))
            .cloned();
        match name {
            Some(name) => self.unregister_broker(cluster, addr, &name),
            None => {
                self.broker_live.remove(&(cluster.to_owned(), addr.to_owned()));
            }
        }
    }

    /// Removes every broker whose last registration is older than its timeout; returns what was
    /// removed as (cluster, addr, connection id).
    pub fn scan_not_active(&mut self, now_ms: u64) -> Vec<(String, String, Option<u64>)> {
        let expired: Vec<_> = self
            .broker_live
            .iter()
            .filter(|(_, l)| l.last_update_ms.saturating_add(l.timeout_ms) < now_ms)
            .map(|((c, a), l)| (c.clone(), a.clone(), l.conn_id))
            .collect();
        for (cluster, addr, _) in &expired {
            self.remove_broker_addr(cluster, addr);
        }
        expired
    }

    /// Refreshes liveness (QUERY_DATA_VERSION, BROKER_HEARTBEAT). False if the broker is unknown.
    pub fn touch(&mut self, cluster: &str, addr: &str, now_ms: u64) -> bool {
        match self.broker_live.get_mut(&(cluster.to_owned(), addr.to_owned())) {
            Some(l) => {
                l.last_update_ms = now_ms;
                true
            }
            None => false,
        }
    }

    /// QUERY_DATA_VERSION: (changed, the version stored for that broker).
    pub fn query_data_version(
        &mut self,
        cluster: &str,
        addr: &str,
        version: &DataVersion,
        now_ms: u64,
    ) -> (bool, Option<DataVersion>) {
        let changed = self.version_changed(cluster, addr, version);
        self.touch(cluster, addr, now_ms);
        let stored = self.broker_live.get(&(cluster.to_owned(), addr.to_owned())).map(|l| l.data_version.clone());
        (changed, stored)
    }

    /// GET_ROUTEINFO_BY_TOPIC: `None` unless the topic has queues on a known broker.
    pub fn route(&self, topic: &str) -> Option<TopicRouteData> {
        let queues = self.topic_queue.get(topic)?;
        let broker_datas: Vec<BrokerData> = queues.keys().filter_map(|n| self.broker_addr.get(n).cloned()).collect();
        if queues.is_empty() || broker_datas.is_empty() {
            return None;
        }
        Some(TopicRouteData {
            order_topic_conf: None,
            queue_datas: queues.values().cloned().collect(),
            broker_datas,
            filter_server_table: BTreeMap::new(),
        })
    }

    /// REGISTER_TOPIC_IN_NAMESRV: queue data for brokers already known.
    pub fn register_topic(&mut self, topic: &str, queue_datas: &[QueueData]) {
        for qd in queue_datas.iter().filter(|q| self.broker_addr.contains_key(&q.broker_name)) {
            self.topic_queue.entry(topic.to_owned()).or_default().insert(qd.broker_name.clone(), qd.clone());
        }
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo { broker_addr_table: self.broker_addr.clone(), cluster_addr_table: self.cluster_addr.clone() }
    }

    pub fn all_topics(&self) -> TopicList {
        TopicList { broker_addr: None, topic_list: self.topic_queue.keys().cloned().collect() }
    }

    pub fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        let names = self.cluster_addr.get(cluster);
        let topic_list = self
            .topic_queue
            .iter()
            .filter(|(_, q)| names.is_some_and(|ns| q.keys().any(|n| ns.contains(n))))
            .map(|(t, _)| t.clone())
            .collect();
        TopicList { broker_addr: None, topic_list }
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and broker names, plus one broker address.
    pub fn system_topics(&self) -> TopicList {
        let mut topic_list = Vec::new();
        for (cluster, names) in &self.cluster_addr {
            topic_list.push(cluster.clone());
            topic_list.extend(names.iter().cloned());
        }
        let broker_addr = self.broker_addr.values().find_map(|d| d.broker_addrs.values().next().cloned());
        TopicList { broker_addr, topic_list }
    }

    /// Topics whose queue data matches `pred` on the topic system flag (unit topic lists).
    pub fn topics_with_sys_flag(&self, pred: impl Fn(i32) -> bool) -> TopicList {
        let topic_list = self
            .topic_queue
            .iter()
            .filter(|(_, q)| q.values().next().is_some_and(|qd| pred(qd.topic_sys_flag)))
            .map(|(t, _)| t.clone())
            .collect();
        TopicList { broker_addr: None, topic_list }
    }

    /// DELETE_TOPIC_IN_NAMESRV: the whole topic, or only its queues on `cluster`'s brokers.
    pub fn delete_topic(&mut self, topic: &str, cluster: Option<&str>) {
        let Some(cluster) = cluster else {
            self.topic_queue.remove(topic);
            return;
        };
        let (Some(names), Some(queues)) = (self.cluster_addr.get(cluster), self.topic_queue.get_mut(topic)) else {
            return;
        };
        queues.retain(|n, _| !names.contains(n));
        if queues.is_empty() {
            self.topic_queue.remove(topic);
        }
    }

    /// WIPE_WRITE_PERM_OF_BROKER (`add == false`) / ADD_WRITE_PERM_OF_BROKER (`add == true`):
    /// returns the number of topics touched.
    pub fn set_write_perm_of_broker(&mut self, broker_name: &str, add: bool) -> i32 {
        let mut count = 0;
        for qd in self.topic_queue.values_mut().filter_map(|q| q.get_mut(broker_name)) {
            qd.perm = if add { perm::READ | perm::WRITE } else { qd.perm & !perm::WRITE };
            count += 1;
        }
        count
    }
}

#[cfg(test)]
mod tests;
