//! Subscription groups (`SubscriptionGroupManager.java`): `config/subscriptionGroup.json`,
//! preset system groups, auto-creation on first use.
//!
//! ```text
//! {"dataVersion":{…},"forbiddenTable":{},"subscriptionGroupTable":{"G":{SubscriptionGroupConfig}}}
//! ```
//!
//! May import: `model`, `persist`, `store` and modules of `meta/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use tracing::info;

use super::config::BrokerConfig;
use crate::model::group::SubscriptionGroupConfig;
use crate::model::DataVersion;
use crate::persist::ConfigFile;

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct GroupsFile {
    data_version: DataVersion,
    forbidden_table: BTreeMap<String, BTreeMap<String, i32>>,
    subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    /// Members ferrocket does not model, written back as read.
    #[serde(flatten)]
    extra: crate::model::Extra,
}

pub struct SubscriptionGroupManager {
    auto_create: AtomicBool,
    state: Arc<RwLock<GroupsFile>>,
    file: Arc<ConfigFile>,
}

const PRESET_GROUPS: &[&str] = &[
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_RMQ_SYS_TRANS",
];

impl SubscriptionGroupManager {
    pub fn load(config: &BrokerConfig) -> Result<Self, String> {
        let path = config.config_dir().join("subscriptionGroup.json");
        let parse = |b: &[u8]| crate::model::json::from_slice::<GroupsFile>(b).map_err(|e| e.to_string());
        let mut file = crate::persist::load(&path, parse)?.unwrap_or_default();
        for g in PRESET_GROUPS {
            file.subscription_group_table.entry((*g).to_owned()).or_insert_with(|| SubscriptionGroupConfig::named(g));
        }
        let state = Arc::new(RwLock::new(file));
        let source = state.clone();
        let snapshot = move || {
            let s = source.read().unwrap_or_else(|e| e.into_inner());
            serde_json::to_vec_pretty(&*s).unwrap_or_default()
        };
        Ok(Self {
            auto_create: AtomicBool::new(config.auto_create_subscription_group),
            state,
            file: ConfigFile::new(path, Box::new(snapshot)),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, GroupsFile> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, GroupsFile> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.read().subscription_group_table.get(group).cloned()
    }

    pub fn contains(&self, group: &str) -> bool {
        self.read().subscription_group_table.contains_key(group)
    }

    /// `findSubscriptionGroupConfig`: the group, created with defaults when auto-creation is on.
    /// The flag says whether it was created now (so the caller persists).
    pub fn find_or_create(&self, group: &str) -> Option<(SubscriptionGroupConfig, bool)> {
        if let Some(g) = self.get(group) {
            return Some((g, false));
        }
        if !self.auto_create.load(Ordering::Acquire) {
            return None;
        }
        let g = SubscriptionGroupConfig::named(group);
        self.update(g.clone());
        info!(group, "subscription group auto-created");
        Some((g, true))
    }

    pub fn auto_create(&self) -> bool {
        self.auto_create.load(Ordering::Acquire)
    }

    /// `autoCreateSubscriptionGroup`, changeable at run time.
    pub fn set_auto_create(&self, on: bool) {
        self.auto_create.store(on, Ordering::Release);
    }

    pub fn update(&self, g: SubscriptionGroupConfig) {
        let mut s = self.write();
        s.subscription_group_table.insert(g.group_name.clone(), g);
        s.data_version.counter += 1;
        s.data_version.timestamp = crate::store::now_ms();
    }

    pub fn delete(&self, group: &str) -> bool {
        let mut s = self.write();
        let removed = s.subscription_group_table.remove(group).is_some();
        if removed {
            s.data_version.counter += 1;
            s.data_version.timestamp = crate::store::now_ms();
        }
        removed
    }

    /// Slave: takes the master's groups.
    pub fn replace_all(&self, table: BTreeMap<String, SubscriptionGroupConfig>) {
        self.write().subscription_group_table = table;
    }

    pub fn all(&self) -> BTreeMap<String, SubscriptionGroupConfig> {
        self.read().subscription_group_table.clone()
    }

    /// Returns once `subscriptionGroup.json` holds every change made so far.
    pub async fn persist(&self) -> std::io::Result<()> {
        self.file.persist().await
    }

    /// [`Self::persist`] for shutdown and blocking threads.
    pub fn persist_blocking(&self) -> std::io::Result<()> {
        self.file.persist_blocking()
    }
}
