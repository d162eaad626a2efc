//! `NamesrvConfig` + the server keys Java's `namesrv.conf` takes (`NamesrvConfig.java`,
//! `NettyServerConfig.java`), with the same names and defaults.
//!
//! May import: `config`, `protocol`, `telemetry` and modules of `namesrv/`; the area's rule is its
//! line in docs/architecture.md.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tracing::{info, warn};

use crate::config::{config_struct, home_dir, read_properties, ConfigError};

config_struct! {
    /// NameServer configuration.
    pub struct NamesrvConfig {
        listen_port: u16 = 9876 => "listenPort",
        bind_address: String = "0.0.0.0".into() => "bindAddress",
        rocketmq_home: String = std::env::var("ROCKETMQ_HOME").unwrap_or_default() => "rocketmqHome",
        kv_config_path: PathBuf = home_dir().join("namesrv").join("kvConfig.json") => "kvConfigPath",
        config_store_path: PathBuf = home_dir().join("namesrv").join("namesrv.properties") => "configStorePath",
        product_env_name: String = "center".into() => "productEnvName",
        cluster_test: bool = false => "clusterTest",
        order_message_enable: bool = false => "orderMessageEnable",
        /// ferrocket: the broker's metrics keys (`PROM` by default, DISABLE for none).
        metrics_exporter_type: String = "PROM".into() => "metricsExporterType",
        metrics_prom_exporter_host: String = String::new() => "metricsPromExporterHost",
        metrics_prom_exporter_port: u16 = 5557 => "metricsPromExporterPort",
        return_order_topic_config_to_broker: bool = true => "returnOrderTopicConfigToBroker",
        client_request_thread_pool_nums: u32 = 8 => "clientRequestThreadPoolNums",
        default_thread_pool_nums: u32 = 16 => "defaultThreadPoolNums",
        client_request_thread_pool_queue_capacity: u32 = 50_000 => "clientRequestThreadPoolQueueCapacity",
        default_thread_pool_queue_capacity: u32 = 10_000 => "defaultThreadPoolQueueCapacity",
        /// How often brokers are checked for expiry, ms.
        scan_not_active_broker_interval: u64 = 5_000 => "scanNotActiveBrokerInterval",
        /// ferrocket: a broker that registered without `heartbeatTimeoutMillis` expires this many
        /// ms after its last registration (Java's fixed `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`).
        broker_channel_expired_time: u64 = 120_000 => "brokerChannelExpiredTime",
        un_register_broker_queue_capacity: u32 = 3_000 => "unRegisterBrokerQueueCapacity",
        support_acting_master: bool = false => "supportActingMaster",
        enable_all_topic_list: bool = true => "enableAllTopicList",
        enable_topic_list: bool = true => "enableTopicList",
        notify_min_broker_id_changed: bool = false => "notifyMinBrokerIdChanged",
        enable_controller_in_namesrv: bool = false => "enableControllerInNamesrv",
        need_wait_for_service: bool = false => "needWaitForService",
        wait_seconds_for_service: u64 = 45 => "waitSecondsForService",
        delete_topic_with_broker_registration: bool = false => "deleteTopicWithBrokerRegistration",
        config_black_list: String = "configBlackList;configStorePath;kvConfigPath".into() => "configBlackList",
        server_worker_threads: u32 = 8 => "serverWorkerThreads",
        server_selector_threads: u32 = 3 => "serverSelectorThreads",
        server_channel_max_idle_time_seconds: u64 = 120 => "serverChannelMaxIdleTimeSeconds",
        /// ferrocket: largest accepted frame, bytes (Java: `com.rocketmq.remoting.frameMaxLength`).
        frame_max_length: usize = crate::protocol::frame::DEFAULT_MAX_FRAME => "frameMaxLength",
        /// ferrocket: connections served at once.
        max_connections: usize = 10_000 => "maxConnections",
        // Java's `tls.*` keys (`TlsSystemConfig`), the same in broker.conf and namesrv.conf.
        @nested tls: crate::config::TlsKeys,
    }
}

/// Keys that only size Java thread pools; an async runtime has no use for them.
const NO_EFFECT: &[&str] = &[
    "clientRequestThreadPoolNums",
    "defaultThreadPoolNums",
    "clientRequestThreadPoolQueueCapacity",
    "defaultThreadPoolQueueCapacity",
    "unRegisterBrokerQueueCapacity",
    "serverWorkerThreads",
    "serverSelectorThreads",
];

impl NamesrvConfig {
    /// Defaults, then `file` if given. Unknown keys are warned about once; bad values refuse.
    /// As in Java (`NamesrvStartup`), the file becomes `configStorePath`: UPDATE_NAMESRV_CONFIG
    /// writes its changes back into it, so a restart keeps them.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        if let Some(path) = file {
            for (key, value) in read_properties(path)? {
                config.apply(&key, &value)?;
            }
            config.config_store_path = path.to_owned();
        }
        config.validate()?;
        Ok(config)
    }

    /// Applies one key from a file; unknown keys are logged, not fatal (as in Java).
    pub fn apply(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        if !self.set(key, value)? {
            warn!(key, "unknown namesrv config key ignored");
        } else if NO_EFFECT.contains(&key) {
            info!(key, "config key accepted; it sizes Java thread pools and has no effect here");
        }
        Ok(())
    }

    /// Refuses settings that would silently change behaviour ferrocket does not implement.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let refuse = |key: &str, reason: &str| Err(ConfigError::Refused { key: key.into(), reason: reason.into() });
        if let Err(why) = crate::telemetry::exporter_enabled(&self.metrics_exporter_type) {
            return refuse("metricsExporterType", why);
        }
        if self.support_acting_master {
            return refuse(
                "supportActingMaster",
                "acting-master routes are not implemented yet; remove the key or set it to false",
            );
        }
        if self.notify_min_broker_id_changed {
            return refuse("notifyMinBrokerIdChanged", "not implemented yet; remove the key or set it to false");
        }
        if self.enable_controller_in_namesrv {
            return refuse(
                "enableControllerInNamesrv",
                "the embedded controller (5.x controller mode) is not implemented",
            );
        }
        if self.scan_not_active_broker_interval == 0 {
            return refuse("scanNotActiveBrokerInterval", "must be greater than 0");
        }
        if self.frame_max_length < 1024 {
            return refuse("frameMaxLength", "must be at least 1024 bytes");
        }
        if self.max_connections == 0 {
            return refuse("maxConnections", "must be greater than 0");
        }
        Ok(())
    }

    pub fn scan_interval(&self) -> Duration {
        Duration::from_millis(self.scan_not_active_broker_interval)
    }

    /// Keys that UPDATE_NAMESRV_CONFIG may not change.
    pub fn is_black_listed(&self, key: &str) -> bool {
        self.config_black_list.split(';').any(|k| k.trim() == key)
    }

    /// The labels of this NameServer's metrics, or `None` with `metricsExporterType=DISABLE`.
    pub fn metrics_node(&self) -> Option<std::sync::Arc<crate::telemetry::Node>> {
        use crate::telemetry::{names, Node};
        crate::telemetry::exporter_enabled(&self.metrics_exporter_type).unwrap_or(false).then(|| {
            Node::new(names::NODE_TYPE_NAMESERVER, "", &format!("{}:{}", self.bind_address, self.listen_port), "")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_overrides_defaults_and_bad_values_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv.conf");
        std::fs::write(&path, "listenPort=19876\norderMessageEnable=true\nnoSuchKey=1\n").unwrap();
        let c = NamesrvConfig::load(Some(&path)).unwrap();
        assert_eq!(c.listen_port, 19876);
        assert!(c.order_message_enable);
        assert_eq!(c.config_store_path, path, "the -c file is where config changes are written back (Java)");
        assert_ne!(NamesrvConfig::load(None).unwrap().config_store_path, path);

        std::fs::write(&path, "listenPort=9876 \n").unwrap();
        let err = NamesrvConfig::load(Some(&path)).unwrap_err().to_string();
        assert!(err.contains("listenPort"), "{err}");

        std::fs::write(&path, "supportActingMaster=true\n").unwrap();
        let err = NamesrvConfig::load(Some(&path)).unwrap_err().to_string();
        assert!(err.contains("supportActingMaster"), "{err}");
    }

    #[test]
    fn black_list() {
        let c = NamesrvConfig::default();
        assert!(c.is_black_listed("kvConfigPath"));
        assert!(!c.is_black_listed("orderMessageEnable"));
    }
}
