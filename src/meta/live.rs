//! The broker config as it is now: the boot config plus every UPDATE_BROKER_CONFIG since, read
//! back by GET_BROKER_CONFIG and read per use by the code that honours a key live (as Java's
//! `Configuration.update` sets the fields of the config objects its readers hold). Which keys
//! take effect at once is [`LIVE_KEYS`]; the others are read back too (as in Java) but act only
//! after a restart, when the config file gives them to the boot config.
//!
//! May import: nothing outside `meta/` (the area's rule: docs/architecture.md).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::config::BrokerConfig;

/// Keys whose new value takes effect at once. Each is read per use from [`LiveConfig::config`]
/// (or from the store's live config, which the broker replaces with the same values): the Java
/// 5.3.3 broker reads all of these per use too, except `cleanResourceInterval` and
/// `compactionScheduleInternal`, which Java reads once when it schedules its tasks.
pub const LIVE_KEYS: &[&str] = &[
    // BrokerConfig
    "brokerPermission",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
    "longPollingEnable",
    "shortPollingTimeMills",
    "slaveReadEnable",
    "offsetCheckInSlave",
    "registerBrokerTimeoutMills",
    "rejectTransactionMessage",
    "transactionTimeOut",
    "transactionCheckMax",
    "transactionCheckInterval",
    "enablePropertyFilter",
    // MessageStoreConfig
    "fileReservedTime",
    "deleteWhen",
    "diskMaxUsedSpaceRatio",
    "diskSpaceWarningLevelRatio",
    "diskSpaceCleanForciblyRatio",
    "cleanFileForciblyEnable",
    "cleanResourceInterval",
    "deleteFileBatchMax",
    "maxMessageSize",
    "flushIntervalCommitLog",
    "flushCommitLogLeastPages",
    "flushCommitLogThoroughInterval",
    "flushIntervalConsumeQueue",
    "flushConsumeQueueLeastPages",
    "flushConsumeQueueThoroughInterval",
    "syncFlushTimeout",
    "slaveTimeout",
    "defaultQueryMaxNum",
    "maxTransferBytesOnMessageInMemory",
    "maxTransferCountOnMessageInMemory",
    "maxTransferBytesOnMessageInDisk",
    "maxTransferCountOnMessageInDisk",
    "accessMessageInMemoryMaxRatio",
    "maxFilterMessageSize",
    "enableCompaction",
    "compactionScheduleInternal",
    "maxOffsetMapSize",
    "dataReadAheadEnable",
    "coldDataFlowControlEnable",
    "accessMessageInMemoryHotRatio",
    "cgColdReadThreshold",
    "globalColdReadThreshold",
];

/// Whether a change of `key` takes effect at once.
pub fn is_live(key: &str) -> bool {
    LIVE_KEYS.contains(&key)
}

/// The broker config as it is now (see the module doc).
pub struct LiveConfig {
    /// Mirrors of the keys read on every send and pull (no lock on that path).
    broker_permission: AtomicI32,
    auto_create_topic_enable: AtomicBool,
    /// And the switch of cold-read flow control, read on every pull.
    cold_data_flow_control_enable: AtomicBool,
    current: RwLock<Arc<BrokerConfig>>,
    /// One update at a time: each reads the current config, changes a copy, replaces it.
    updating: Mutex<()>,
}

impl LiveConfig {
    pub fn new(c: &BrokerConfig) -> Self {
        Self {
            broker_permission: c.broker_permission.into(),
            auto_create_topic_enable: c.auto_create_topic_enable.into(),
            cold_data_flow_control_enable: c.cold_data_flow_control_enable.into(),
            current: RwLock::new(Arc::new(c.clone())),
            updating: Mutex::new(()),
        }
    }

    /// The config now: read it per use, not once, to follow updates.
    pub fn config(&self) -> Arc<BrokerConfig> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Applies `change` to a copy of the current config and, if it succeeds, makes the copy
    /// current: readers see the old config or the new one, never a mix. Returns the new config.
    pub fn update<E>(&self, change: impl FnOnce(&mut BrokerConfig) -> Result<(), E>) -> Result<Arc<BrokerConfig>, E> {
        let _one = self.updating.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = (*self.config()).clone();
        change(&mut next)?;
        let next = Arc::new(next);
        self.broker_permission.store(next.broker_permission, Ordering::Release);
        self.auto_create_topic_enable.store(next.auto_create_topic_enable, Ordering::Release);
        self.cold_data_flow_control_enable.store(next.cold_data_flow_control_enable, Ordering::Release);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = next.clone();
        Ok(next)
    }

    pub fn broker_permission(&self) -> i32 {
        self.broker_permission.load(Ordering::Acquire)
    }

    pub fn auto_create_topic_enable(&self) -> bool {
        self.auto_create_topic_enable.load(Ordering::Acquire)
    }

    pub fn cold_data_flow_control_enable(&self) -> bool {
        self.cold_data_flow_control_enable.load(Ordering::Acquire)
    }

    pub fn set_broker_permission(&self, v: i32) {
        let _ = self.update(|c| {
            c.broker_permission = v;
            Ok::<_, std::convert::Infallible>(())
        });
    }

    pub fn set_auto_create_topic_enable(&self, v: bool) {
        let _ = self.update(|c| {
            c.auto_create_topic_enable = v;
            Ok::<_, std::convert::Infallible>(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_is_read_back_whole_and_a_failed_one_leaves_nothing() {
        let live = LiveConfig::new(&BrokerConfig::default());
        let before = live.config();
        let next = live
            .update(|c| {
                c.set("fileReservedTime", "48")?;
                c.set("deleteWhen", "01;13").map(|_| ())
            })
            .unwrap();
        assert_eq!((next.file_reserved_time, next.delete_when.as_str()), (48, "01;13"));
        assert_eq!(live.config().file_reserved_time, 48);
        assert_eq!(before.file_reserved_time, 72, "a reader holding the old config keeps it whole");
        let failed = live.update(|c| {
            c.set("fileReservedTime", "24")?;
            c.set("maxMessageSize", "many").map(|_| ())
        });
        assert!(failed.is_err());
        assert_eq!(live.config().file_reserved_time, 48, "nothing of a failed update is applied");
        live.set_broker_permission(4);
        assert_eq!((live.broker_permission(), live.config().broker_permission), (4, 4));
    }

    #[test]
    fn every_live_key_is_a_broker_conf_key() {
        let known = BrokerConfig::default().entries();
        for key in LIVE_KEYS {
            assert!(known.iter().any(|(k, _)| k == key), "{key} is not a broker.conf key");
        }
    }
}
