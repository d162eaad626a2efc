//! Kafka's `offsets.retention.minutes` for the groups that commit through the Kafka listener
//! (`kafkaOffsetsRetentionMinutes`, 7 days): a group whose last commit (or last sweep that found
//! members in it) is older than that, and that has no member and no pending member id, loses its offsets (RocketMQ's consumer offsets
//! of that group), its commit metadata and its coordinator record. Idle coordinator records
//! (Empty, nobody joined) go at every sweep. Sweeps run every 10 minutes (Kafka's
//! `offsets.retention.check.interval.ms`). Groups RocketMQ consumers use are never touched:
//! only groups noted here, by a Kafka OffsetCommit, expire.
//!
//! ```text
//! config/kafkaGroupCommits.json   {"<group>": <last commit, ms since the epoch>}
//! ```
//! A commit time is written when the group is new or its written time is stale by an hour (or a
//! tenth of the retention, if shorter): a restart keeps the clock, that coarse, and a busy group
//! does not rewrite the file per commit.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{group, Kafka};
use crate::persist::ConfigFile;

/// Kafka's `offsets.retention.check.interval.ms`.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(600);
/// How stale a persisted commit time may get before it is written again.
const PERSIST_AFTER_MS: u64 = 3_600_000;

/// group -> (last commit, last commit written to the file), ms since the epoch.
type Table = BTreeMap<String, (u64, u64)>;

pub struct GroupRetention {
    retention_ms: u64,
    table: Arc<Mutex<Table>>,
    file: Arc<ConfigFile>,
}

impl GroupRetention {
    pub fn open(path: &Path, retention_minutes: u64) -> Result<Self, String> {
        let parse = |b: &[u8]| serde_json::from_slice::<BTreeMap<String, u64>>(b).map_err(|e| e.to_string());
        let loaded = crate::persist::load(path, parse)?.unwrap_or_default();
        let table = Arc::new(Mutex::new(loaded.into_iter().map(|(g, at)| (g, (at, at))).collect::<Table>()));
        let shared = table.clone();
        let snapshot = move || {
            let t = shared.lock().unwrap_or_else(|e| e.into_inner());
            let times: BTreeMap<&String, u64> = t.iter().map(|(g, (last, _))| (g, *last)).collect();
            serde_json::to_vec(&times).unwrap_or_default()
        };
        let file = ConfigFile::new(path.to_owned(), Box::new(snapshot));
        Ok(Self { retention_ms: retention_minutes.saturating_mul(60_000), table, file })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a commit by `group` at `now` (ms).
    pub async fn committed(&self, group: &str, now: u64) {
        let stale = {
            let mut t = self.lock();
            let new = !t.contains_key(group);
            let (last, written) = t.entry(group.to_owned()).or_insert((now, now));
            *last = now;
            let stale = new || now.saturating_sub(*written) >= PERSIST_AFTER_MS.min(self.retention_ms / 10);
            if stale {
                *written = now;
            }
            stale
        };
        if stale {
            // A failed write is logged by the writer; the commit itself stands.
            let _ = self.file.persist().await;
        }
    }

    /// Groups whose last commit is older than the retention at `now`.
    pub fn expired(&self, now: u64) -> Vec<String> {
        let t = self.lock();
        t.iter()
            .filter(|(_, (last, _))| now.saturating_sub(*last) > self.retention_ms)
            .map(|(g, _)| g.clone())
            .collect()
    }

    /// Groups with committed offsets, expired or not (ListGroups shows them).
    pub fn groups(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    pub async fn forget(&self, groups: &[String]) {
        let removed = {
            let mut t = self.lock();
            groups.iter().filter(|g| t.remove(g.as_str()).is_some()).count()
        };
        if removed > 0 {
            let _ = self.file.persist().await;
        }
    }
}

/// One sweep at `now` (ms): drops idle coordinator records, restarts the clock of every group
/// someone is in (Kafka's retention runs from the moment a group empties; here from the last
/// sweep that found it in use), then expires the groups past the retention that nobody is in.
/// Returns the groups whose offsets went.
pub async fn sweep(k: &Kafka, now: u64) -> Vec<String> {
    k.coordinator.sweep_idle();
    for g in k.retention.groups() {
        if k.coordinator.in_use(&g) {
            k.retention.committed(&g, now).await;
        }
    }
    let mut gone = Vec::new();
    for g in k.retention.expired(now) {
        if matches!(k.coordinator.delete_group(&g), group::errors::NONE | group::errors::GROUP_ID_NOT_FOUND) {
            k.shared.offsets.remove_group(&g);
            k.commit_metadata.remove_group(&g).await;
            gone.push(g);
        }
    }
    if !gone.is_empty() {
        info!(groups = gone.len(), "Kafka groups expired (kafkaOffsetsRetentionMinutes)");
        k.retention.forget(&gone).await;
    }
    gone
}

/// Sweeps every [`SWEEP_INTERVAL`] until `shutdown`.
pub async fn run(k: Arc<Kafka>, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(SWEEP_INTERVAL);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        sweep(&k, u64::try_from(crate::store::now_ms()).unwrap_or(0)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::config::BrokerConfig;

    const MINUTE: u64 = 60_000;

    /// The Kafka front end over a store in `dir`, with no listener.
    fn kafka(dir: &Path) -> Arc<Kafka> {
        use crate::meta::*;
        let config = BrokerConfig {
            store_path_root_dir: dir.to_owned(),
            kafka_offsets_retention_minutes: 10,
            ..BrokerConfig::default()
        };
        let shared = super::super::Shared {
            store: Arc::new(crate::store::MessageStore::open(config.store_config()).unwrap()),
            topics: Arc::new(topic::TopicConfigManager::load(&config).unwrap()),
            offsets: Arc::new(offset::ConsumerOffsetManager::load(&config).unwrap()),
            groups: Arc::new(subscription::SubscriptionGroupManager::load(&config).unwrap()),
            hold: Arc::new(hold::PullHold::default()),
            live: Arc::new(live::LiveConfig::new(&config)),
            ha: None,
            topics_changed: Arc::new(tokio::sync::Notify::new()),
            store_host: "127.0.0.1:10911".parse().unwrap(),
            closing: CancellationToken::new(),
            acl: None,
            config,
        };
        Kafka::new(shared).unwrap()
    }

    /// Before the fix: nothing ever removed a Kafka group's offsets. Now a group nobody is in
    /// expires a retention after its last commit, and one with a member keeps restarting its clock.
    #[tokio::test]
    async fn a_sweep_expires_groups_nobody_is_in_and_keeps_those_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let k = kafka(dir.path());
        let t0 = 1_000 * MINUTE;
        for g in ["gone", "in-use"] {
            k.shared.offsets.commit(g, "T", 0, 5);
            k.retention.committed(g, t0).await;
        }
        let join = group::JoinRequest {
            group_id: "in-use".into(),
            member_id: String::new(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 30_000,
            rebalance_timeout_ms: 30_000,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), bytes::Bytes::new())],
            version: 5,
            reason: None,
        };
        // A pending member id is enough to be "in use".
        assert_eq!(k.coordinator.join(join).await.error, group::errors::MEMBER_ID_REQUIRED);
        assert!(sweep(&k, t0 + 5 * MINUTE).await.is_empty(), "within the retention");
        assert_eq!(sweep(&k, t0 + 11 * MINUTE).await, vec!["gone".to_owned()]);
        assert_eq!(k.shared.offsets.query("gone", "T", 0), -1);
        assert_eq!(k.shared.offsets.query("in-use", "T", 0), 5, "someone is in it");
        assert_eq!(k.retention.expired(t0 + 11 * MINUTE), Vec::<String>::new(), "its clock restarted");
        assert_eq!(k.retention.groups(), vec!["in-use".to_owned()]);
    }

    #[tokio::test]
    async fn groups_expire_a_retention_after_their_last_commit_and_the_clock_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kafkaGroupCommits.json");
        let r = GroupRetention::open(&path, 10).unwrap();
        let t0 = 1_000 * MINUTE;
        r.committed("old", t0).await;
        r.committed("busy", t0).await;
        r.committed("busy", t0 + 9 * MINUTE).await;
        assert!(r.expired(t0 + 10 * MINUTE).is_empty(), "not before the retention");
        assert_eq!(r.expired(t0 + 10 * MINUTE + 1), vec!["old".to_owned()]);
        assert_eq!(r.expired(t0 + 19 * MINUTE + 1), vec!["busy".to_owned(), "old".to_owned()]);
        // Written again only once a tenth of the retention (1 minute here) stale.
        r.committed("busy", t0 + 9 * MINUTE + 30_000).await;
        let reopened = GroupRetention::open(&path, 10).unwrap();
        assert_eq!(reopened.expired(t0 + 19 * MINUTE), vec!["old".to_owned()], "busy's 9th minute was written");
        assert_eq!(reopened.expired(t0 + 19 * MINUTE + 1).len(), 2, "its last half minute not: a minute coarse");
        r.forget(&["old".to_owned()]).await;
        assert_eq!(GroupRetention::open(&path, 10).unwrap().groups(), vec!["busy".to_owned()]);
    }
}
