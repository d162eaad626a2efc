//! Connected clients (`ConsumerManager`, `ProducerManager`): who is in which group over which
//! connection, their subscriptions, and liveness (heartbeats every 30 s, expiry after 120 s).
//!
//! May import: `protocol`, `remoting` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::protocol::body::client::{ConsumerData, SubscriptionData};
use crate::protocol::LanguageCode;
use crate::remoting::Connection;

pub use crate::core::door::DoorClient;

/// How the broker reaches a client: its remoting connection, or another door's session.
#[derive(Clone)]
pub enum Link {
    Remoting(Arc<Connection>),
    /// `id` is unique among links (see [`DOOR_LINK_IDS`]).
    Door {
        id: u64,
        peer: std::net::SocketAddr,
        client: Arc<dyn DoorClient>,
    },
}

/// Ids of door links have this bit set; remoting connection ids never do.
pub const DOOR_LINK_IDS: u64 = 1 << 63;

impl Link {
    pub fn id(&self) -> u64 {
        match self {
            Self::Remoting(c) => c.id(),
            Self::Door { id, .. } => *id,
        }
    }

    pub fn peer(&self) -> std::net::SocketAddr {
        match self {
            Self::Remoting(c) => c.peer(),
            Self::Door { peer, .. } => *peer,
        }
    }

    /// The remoting connection, for requests only remoting clients answer.
    pub fn remoting(&self) -> Option<&Arc<Connection>> {
        match self {
            Self::Remoting(c) => Some(c),
            Self::Door { .. } => None,
        }
    }
}

/// One client connection in a group.
#[derive(Clone)]
pub struct ClientChannel {
    pub link: Link,
    pub client_id: String,
    pub language: LanguageCode,
    pub version: i32,
    pub last_update: Instant,
}

/// A consumer group as its members describe it (`ConsumerGroupInfo`).
#[derive(Clone)]
pub struct ConsumerGroupInfo {
    pub channels: HashMap<u64, ClientChannel>,
    pub subscriptions: BTreeMap<String, SubscriptionData>,
    pub consume_type: String,
    pub message_model: String,
    pub consume_from_where: String,
    /// `heartbeatFingerprint` of the last full heartbeat (5.x heartbeat v2).
    pub fingerprint: i64,
}

impl ConsumerGroupInfo {
    /// Client ids of live members, sorted.
    pub fn client_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.channels.values().map(|c| c.client_id.clone()).collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

#[derive(Default)]
pub struct ConsumerManager {
    groups: Mutex<HashMap<String, ConsumerGroupInfo>>,
    /// Per connection: held while its client is asked for its subscriptions, so the pulls of
    /// many queues that find the same stale subscription ask once.
    refresh_gates: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<()>>>>,
}

impl ConsumerManager {
    /// Consumer connections, over all groups.
    pub fn connection_count(&self) -> usize {
        self.groups.lock().unwrap_or_else(|e| e.into_inner()).values().map(|g| g.channels.len()).sum()
    }

    fn groups(&self) -> std::sync::MutexGuard<'_, HashMap<String, ConsumerGroupInfo>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pull path's view of a group: its subscription of `topic` (if the group is known:
    /// `Some(None)` when it does not subscribe to it) and whether it consumes by broadcasting.
    /// Copies one subscription, not the whole group.
    pub fn pull_view(&self, group: &str, topic: &str) -> Option<(Option<SubscriptionData>, bool)> {
        let groups = self.groups();
        let info = groups.get(group)?;
        Some((info.subscriptions.get(topic).cloned(), info.message_model == "BROADCASTING"))
    }

    /// Heartbeat v2 without subscriptions: refreshes the channel if the group is known with the
    /// same fingerprint and this channel already registered. `Some(changed)` on success, `None`
    /// when the client must send its full heartbeat (`IS_SUB_CHANGE=true`).
    pub fn refresh(&self, group: &str, fingerprint: i64, channel: ClientChannel) -> Option<bool> {
        let mut groups = self.groups();
        let info = groups.get_mut(group).filter(|i| i.fingerprint == fingerprint)?;
        let known = info.channels.contains_key(&channel.link.id());
        info.channels.insert(channel.link.id(), channel);
        known.then_some(false)
    }

    /// Records a full heartbeat; true when the group's membership changed. A stored
    /// subscription is replaced only by one with a newer `subVersion`.
    pub fn register(&self, data: &ConsumerData, channel: ClientChannel, fingerprint: i64) -> bool {
        let mut groups = self.groups();
        let info = groups.entry(data.group_name.clone()).or_insert_with(|| ConsumerGroupInfo {
            channels: HashMap::new(),
            subscriptions: BTreeMap::new(),
            consume_type: data.consume_type.clone(),
            message_model: data.message_model.clone(),
            consume_from_where: data.consume_from_where.clone(),
            fingerprint: 0,
        });
        info.consume_type = data.consume_type.clone();
        info.message_model = data.message_model.clone();
        info.consume_from_where = data.consume_from_where.clone();
        info.fingerprint = fingerprint;
        let changed = info.channels.insert(channel.link.id(), channel).is_none();
        for sub in &data.subscription_data_set {
            match info.subscriptions.get(&sub.topic) {
                Some(old) if old.sub_version >= sub.sub_version => {}
                _ => {
                    info.subscriptions.insert(sub.topic.clone(), sub.clone());
                }
            }
        }
        // Topics no longer subscribed go (`updateSubscription`).
        info.subscriptions.retain(|t, _| data.subscription_data_set.iter().any(|s| &s.topic == t));
        changed
    }

    /// Takes a subscription a member reported other than by heartbeat (its running info), under
    /// the heartbeat's rule: only a newer `subVersion` replaces the stored one, and only in a
    /// group the member `conn_id` belongs to. Returns the subscription now stored for the topic.
    pub fn update_subscription(&self, group: &str, conn_id: u64, sub: SubscriptionData) -> Option<SubscriptionData> {
        let mut groups = self.groups();
        let info = groups.get_mut(group).filter(|i| i.channels.contains_key(&conn_id))?;
        match info.subscriptions.get(&sub.topic) {
            Some(old) if old.sub_version >= sub.sub_version => Some(old.clone()),
            _ => {
                info.subscriptions.insert(sub.topic.clone(), sub.clone());
                Some(sub)
            }
        }
    }

    /// The gate of connection `conn_id` for asking its client for its subscriptions.
    pub fn refresh_gate(&self, conn_id: u64) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = self.refresh_gates.lock().unwrap_or_else(|e| e.into_inner());
        gates.entry(conn_id).or_default().clone()
    }

    /// The member of `group` on connection `conn_id`.
    pub fn member(&self, group: &str, conn_id: u64) -> Option<ClientChannel> {
        self.groups().get(group)?.channels.get(&conn_id).cloned()
    }

    /// Removes a connection from a group; true if it was a member.
    pub fn unregister(&self, group: &str, conn_id: u64) -> bool {
        let mut groups = self.groups();
        let Some(info) = groups.get_mut(group) else { return false };
        let removed = info.channels.remove(&conn_id).is_some();
        if info.channels.is_empty() {
            groups.remove(group);
        }
        removed
    }

    /// Removes a closed connection everywhere; returns the groups that changed.
    pub fn connection_closed(&self, conn_id: u64) -> Vec<String> {
        self.refresh_gates.lock().unwrap_or_else(|e| e.into_inner()).remove(&conn_id);
        let mut groups = self.groups();
        let mut changed = Vec::new();
        for (name, info) in groups.iter_mut() {
            if info.channels.remove(&conn_id).is_some() {
                changed.push(name.clone());
            }
        }
        groups.retain(|_, i| !i.channels.is_empty());
        changed
    }

    /// Drops members silent for longer than `timeout`; returns (group, link) removed.
    pub fn scan_expired(&self, timeout: Duration) -> Vec<(String, Link)> {
        let mut groups = self.groups();
        let mut expired = Vec::new();
        for (name, info) in groups.iter_mut() {
            info.channels.retain(|_, c| {
                let alive = c.last_update.elapsed() <= timeout;
                if !alive {
                    expired.push((name.clone(), c.link.clone()));
                }
                alive
            });
        }
        groups.retain(|_, i| !i.channels.is_empty());
        expired
    }

    pub fn group(&self, group: &str) -> Option<ConsumerGroupInfo> {
        self.groups().get(group).cloned()
    }

    pub fn subscription(&self, group: &str, topic: &str) -> Option<SubscriptionData> {
        self.groups().get(group)?.subscriptions.get(topic).cloned()
    }

    /// Groups with a live member subscribed to `topic`.
    pub fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        self.groups().iter().filter(|(_, i)| i.subscriptions.contains_key(topic)).map(|(g, _)| g.clone()).collect()
    }
}

/// Producer groups and their connections (for transaction checks and admin listings).
#[derive(Default)]
pub struct ProducerManager {
    groups: Mutex<HashMap<String, HashMap<u64, ClientChannel>>>,
}

impl ProducerManager {
    /// Producer connections, over all groups.
    pub fn connection_count(&self) -> usize {
        self.groups().values().map(HashMap::len).sum()
    }

    fn groups(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<u64, ClientChannel>>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&self, group: &str, channel: ClientChannel) {
        self.groups().entry(group.to_owned()).or_default().insert(channel.link.id(), channel);
    }

    pub fn unregister(&self, group: &str, conn_id: u64) {
        let mut groups = self.groups();
        if let Some(g) = groups.get_mut(group) {
            g.remove(&conn_id);
            if g.is_empty() {
                groups.remove(group);
            }
        }
    }

    pub fn connection_closed(&self, conn_id: u64) {
        let mut groups = self.groups();
        for g in groups.values_mut() {
            g.remove(&conn_id);
        }
        groups.retain(|_, g| !g.is_empty());
    }

    pub fn scan_expired(&self, timeout: Duration) -> usize {
        let mut groups = self.groups();
        let mut n = 0;
        for g in groups.values_mut() {
            let before = g.len();
            g.retain(|_, c| c.last_update.elapsed() <= timeout);
            n += before - g.len();
        }
        groups.retain(|_, g| !g.is_empty());
        n
    }

    pub fn channels(&self, group: &str) -> Vec<ClientChannel> {
        self.groups().get(group).map(|g| g.values().cloned().collect()).unwrap_or_default()
    }

    /// Every group with its connections (GET_ALL_PRODUCER_INFO).
    pub fn table(&self) -> Vec<(String, Vec<ClientChannel>)> {
        self.groups().iter().map(|(g, c)| (g.clone(), c.values().cloned().collect())).collect()
    }
}
