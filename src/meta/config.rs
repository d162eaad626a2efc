//! `broker.conf`: Java's keys (`BrokerConfig`, `MessageStoreConfig`, `NettyServerConfig`) with
//! their defaults. One key may set several Java objects (e.g. `listenPort`); here every key lives
//! once in [`BrokerConfig`], and [`BrokerConfig::store_config`] derives the store's settings.
//!
//! May import: `config`, `store`, `telemetry` and modules of `meta/`; the area's rule is its line
//! in docs/architecture.md.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tracing::{info, warn};

use crate::config::{config_struct, home_dir, read_properties, ConfigError};

/// The remoting frame limit Java uses by default (16 MiB; `protocol::frame::DEFAULT_MAX_FRAME`,
/// which a test in `broker` keeps equal).
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

config_struct! {
    /// Broker configuration.
    pub struct BrokerConfig {
        broker_cluster_name: String = "DefaultCluster".into() => "brokerClusterName",
        broker_name: String = default_broker_name() => "brokerName",
        broker_id: i64 = 0 => "brokerId",
        broker_role: String = "ASYNC_MASTER".into() => "brokerRole",
        flush_disk_type: String = "ASYNC_FLUSH".into() => "flushDiskType",
        namesrv_addr: String = std::env::var("NAMESRV_ADDR").unwrap_or_default() => "namesrvAddr",
        listen_port: u16 = 10911 => "listenPort",
        bind_address: String = "0.0.0.0".into() => "bindAddress",
        broker_ip1: String = default_ip() => "brokerIP1",
        broker_ip2: String = String::new() => "brokerIP2",
        ha_listen_port: u16 = 0 => "haListenPort",
        ha_master_address: String = String::new() => "haMasterAddress",
        slave_timeout: u64 = 3000 => "slaveTimeout",
        ha_max_gap_not_in_sync: u64 = 256 * 1024 * 1024 => "haMaxGapNotInSync",
        total_replicas: u32 = 1 => "totalReplicas",
        in_sync_replicas: u32 = 1 => "inSyncReplicas",
        min_in_sync_replicas: u32 = 1 => "minInSyncReplicas",
        rocketmq_home: String = std::env::var("ROCKETMQ_HOME").unwrap_or_default() => "rocketmqHome",
        region_id: String = "DefaultRegion".into() => "regionId",
        trace_on: bool = true => "traceOn",
        /// `PROM` (the default here; Java's is DISABLE) serves Prometheus metrics; `DISABLE` none.
        metrics_exporter_type: String = "PROM".into() => "metricsExporterType",
        metrics_prom_exporter_host: String = String::new() => "metricsPromExporterHost",
        metrics_prom_exporter_port: u16 = 5557 => "metricsPromExporterPort",
        /// Extra labels on every metric, `k:v,k:v`.
        metrics_label: String = String::new() => "metricsLabel",
        /// Adds `aggregation="delta"` to every metric's labels, as Java does (values stay cumulative).
        metrics_in_delta: bool = false => "metricsInDelta",
        /// Creates `msgTraceTopicName` at start-up (1 queue), for clients that cannot create it
        /// by sending (the Go client's trace dispatcher).
        trace_topic_enable: bool = false => "traceTopicEnable",
        msg_trace_topic_name: String = "RMQ_SYS_TRACE_TOPIC".into() => "msgTraceTopicName",
        auto_create_topic_enable: bool = true => "autoCreateTopicEnable",
        default_topic_queue_nums: i32 = 8 => "defaultTopicQueueNums",
        auto_create_subscription_group: bool = true => "autoCreateSubscriptionGroup",
        cluster_topic_enable: bool = true => "clusterTopicEnable",
        broker_topic_enable: bool = true => "brokerTopicEnable",
        broker_permission: i32 = 6 => "brokerPermission",
        flush_consumer_offset_interval: u64 = 5000 => "flushConsumerOffsetInterval",
        long_polling_enable: bool = true => "longPollingEnable",
        enable_retry_topic_v2: bool = false => "enableRetryTopicV2",
        pop_polling_size: usize = 1024 => "popPollingSize",
        short_polling_time_mills: u64 = 1000 => "shortPollingTimeMills",
        slave_read_enable: bool = false => "slaveReadEnable",
        offset_check_in_slave: bool = false => "offsetCheckInSlave",
        register_name_server_period: u64 = 30_000 => "registerNameServerPeriod",
        register_broker_timeout_mills: u64 = 24_000 => "registerBrokerTimeoutMills",
        force_register: bool = true => "forceRegister",
        channel_expired_timeout: u64 = 120_000 => "channelExpiredTimeout",
        server_channel_max_idle_time_seconds: u64 = 120 => "serverChannelMaxIdleTimeSeconds",
        reject_transaction_message: bool = false => "rejectTransactionMessage",
        /// ms a half message waits for its END_TRANSACTION before it is checked.
        transaction_time_out: i64 = 6_000 => "transactionTimeOut",
        /// Checks before a half message is given up (stored on TRANS_CHECK_MAX_TIME_TOPIC).
        transaction_check_max: i32 = 15 => "transactionCheckMax",
        /// ms between check rounds.
        transaction_check_interval: u64 = 30_000 => "transactionCheckInterval",
        enable_property_filter: bool = false => "enablePropertyFilter",
        /// Java's bloom-filter pre-check for SQL92; accepted, no effect (every candidate is read).
        enable_calc_filter_bit_map: bool = false => "enableCalcFilterBitMap",
        /// Where UPDATE_BROKER_CONFIG writes its changes; the `-c` file unless set.
        broker_config_path: String = String::new() => "brokerConfigPath",
        /// Keys UPDATE_BROKER_CONFIG refuses (`;`-separated).
        config_black_list: String = "configBlackList;brokerConfigPath".into() => "configBlackList",
        acl_enable: bool = false => "aclEnable",
        authentication_enabled: bool = false => "authenticationEnabled",
        authorization_enabled: bool = false => "authorizationEnabled",
        enable_dleger_commit_log: bool = false => "enableDLegerCommitLog",
        enable_controller_mode: bool = false => "enableControllerMode",
        enable_slave_acting_master: bool = false => "enableSlaveActingMaster",
        /// Cold-read flow control (`broker::coldctr`): a group's threshold unless configured,
        /// and the broker-wide one, in bytes read cold since the last clear (every 5 s).
        cg_cold_read_threshold: i64 = 3 * 1024 * 1024 => "cgColdReadThreshold",
        global_cold_read_threshold: i64 = 100 * 1024 * 1024 => "globalColdReadThreshold",
        /// Java's adaptive thresholds: not implemented (`true` is refused); PID is its flavour.
        cold_ctr_strategy_enable: bool = false => "coldCtrStrategyEnable",
        use_pid_cold_ctr_strategy: bool = true => "usePIDColdCtrStrategy",
        // MessageStoreConfig
        store_path_root_dir: PathBuf = home_dir().join("store") => "storePathRootDir",
        store_path_commit_log: String = String::new() => "storePathCommitLog",
        mapped_file_size_commit_log: usize = 1024 * 1024 * 1024 => "mappedFileSizeCommitLog",
        mapped_file_size_consume_queue: usize = 300_000 * 20 => "mappedFileSizeConsumeQueue",
        delete_when: String = "04".into() => "deleteWhen",
        file_reserved_time: u64 = 72 => "fileReservedTime",
        disk_max_used_space_ratio: u32 = 75 => "diskMaxUsedSpaceRatio",
        disk_space_warning_level_ratio: u32 = 90 => "diskSpaceWarningLevelRatio",
        disk_space_clean_forcibly_ratio: u32 = 85 => "diskSpaceCleanForciblyRatio",
        clean_file_forcibly_enable: bool = true => "cleanFileForciblyEnable",
        clean_resource_interval: u64 = 10_000 => "cleanResourceInterval",
        delete_file_batch_max: usize = 10 => "deleteFileBatchMax",
        /// Compacted topics (`cleanup.policy` COMPACTION / compact) are compacted.
        enable_compaction: bool = true => "enableCompaction",
        /// Ms between compaction rounds (Java's spelling; Kafka's `log.cleaner.backoff.ms`
        /// default, not Java's 15 minutes).
        compaction_schedule_internal: u64 = 15_000 => "compactionScheduleInternal",
        /// Bytes of one pass's offset map (Kafka's `log.cleaner.dedupe.buffer.size`).
        max_offset_map_size: usize = 100 * 1024 * 1024 => "maxOffsetMapSize",
        max_message_size: usize = 4 * 1024 * 1024 => "maxMessageSize",
        flush_interval_commit_log: u64 = 500 => "flushIntervalCommitLog",
        flush_commit_log_least_pages: usize = 4 => "flushCommitLogLeastPages",
        flush_commit_log_thorough_interval: u64 = 10_000 => "flushCommitLogThoroughInterval",
        flush_interval_consume_queue: u64 = 1000 => "flushIntervalConsumeQueue",
        flush_consume_queue_least_pages: usize = 2 => "flushConsumeQueueLeastPages",
        flush_consume_queue_thorough_interval: u64 = 60_000 => "flushConsumeQueueThoroughInterval",
        sync_flush_timeout: u64 = 5000 => "syncFlushTimeout",
        check_crc_on_recover: bool = true => "checkCRCOnRecover",
        message_index_enable: bool = true => "messageIndexEnable",
        max_hash_slot_num: usize = 5_000_000 => "maxHashSlotNum",
        max_index_num: usize = 20_000_000 => "maxIndexNum",
        default_query_max_num: usize = 32 => "defaultQueryMaxNum",
        max_transfer_bytes_on_message_in_memory: usize = 256 * 1024 => "maxTransferBytesOnMessageInMemory",
        max_transfer_count_on_message_in_memory: usize = 32 => "maxTransferCountOnMessageInMemory",
        max_transfer_bytes_on_message_in_disk: usize = 64 * 1024 => "maxTransferBytesOnMessageInDisk",
        max_transfer_count_on_message_in_disk: usize = 8 => "maxTransferCountOnMessageInDisk",
        access_message_in_memory_max_ratio: u32 = 40 => "accessMessageInMemoryMaxRatio",
        /// Cold-read flow control on; its cold area: further than `accessMessageInMemoryHotRatio`
        /// % of the memory behind the CommitLog's end (`coldDataScanEnable`, Java's page-cache
        /// sampling, is not implemented: `true` is refused).
        cold_data_flow_control_enable: bool = false => "coldDataFlowControlEnable",
        cold_data_scan_enable: bool = false => "coldDataScanEnable",
        access_message_in_memory_hot_ratio: u32 = 26 => "accessMessageInMemoryHotRatio",
        max_filter_message_size: usize = 16_000 => "maxFilterMessageSize",
        transient_store_pool_enable: bool = false => "transientStorePoolEnable",
        warm_maped_file_enable: bool = false => "warmMapedFileEnable",
        /// The kernel's read-ahead on CommitLog segments; off: MADV_RANDOM (SET_COMMITLOG_READ_MODE).
        data_read_ahead_enable: bool = true => "dataReadAheadEnable",
        /// Bytes of CommitLog given disk blocks ahead of the write end (ferrocket's key:
        /// `StoreConfig::commit_log_allocate_ahead_size`).
        commit_log_allocate_ahead_size: usize = 4 * 1024 * 1024 => "commitLogAllocateAheadSize",
        timer_wheel_enable: bool = true => "timerWheelEnable",
        timer_max_delay_sec: i64 = 259_200 => "timerMaxDelaySec",
        /// Snapped to 100, 200, 500 or 1000 as Java's setter does ([`Self::timer_precision`]).
        timer_precision_ms: i64 = 1000 => "timerPrecisionMs",
        timer_roll_window_slot: i64 = 172_800 => "timerRollWindowSlot",
        mapped_file_size_timer_log: usize = 100 * 1024 * 1024 => "mappedFileSizeTimerLog",
        timer_flush_interval_ms: u64 = 1000 => "timerFlushIntervalMs",
        timer_congest_num_each_slot: i64 = i64::from(i32::MAX) => "timerCongestNumEachSlot",
        message_delay_level: String = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h".into() => "messageDelayLevel",
        // ferrocket
        frame_max_length: usize = DEFAULT_MAX_FRAME => "frameMaxLength",
        max_connections: usize = 10_000 => "maxConnections",
        /// The Kafka listener (0: off). Masters only.
        kafka_listen_port: u16 = 0 => "kafkaListenPort",
        /// The gRPC listener for the 5.x SDKs (`apache.rocketmq.v2.MessagingService`, the Java
        /// proxy's `grpcServerPort`, 8081 there); 0: off, so a broker opens no port it did not
        /// before. Masters only; TLS and plaintext on the one port as `tls.server.mode` says.
        grpc_listen_port: u16 = 0 => "grpcListenPort",
        /// The Java proxy's bounds on a ReceiveMessage's long poll; the maximum is the
        /// `long_polling_timeout` the SDKs are given in their Settings.
        grpc_client_consumer_min_long_polling_timeout_millis: u64 = 5_000 => "grpcClientConsumerMinLongPollingTimeoutMillis",
        grpc_client_consumer_max_long_polling_timeout_millis: u64 = 20_000 => "grpcClientConsumerMaxLongPollingTimeoutMillis",
        /// `host:port` Kafka clients are told to connect to (default brokerIP1:kafkaListenPort).
        kafka_advertised_address: String = String::new() => "kafkaAdvertisedAddress",
        /// Kafka `num.partitions`: queues of a topic a Kafka client auto-creates.
        kafka_num_partitions: i32 = 4 => "kafkaNumPartitions",
        /// Kafka's group.initial.rebalance.delay.ms / group.min|max.session.timeout.ms.
        kafka_group_initial_rebalance_delay_ms: i32 = 3000 => "kafkaGroupInitialRebalanceDelayMs",
        kafka_group_min_session_timeout_ms: i32 = 6000 => "kafkaGroupMinSessionTimeoutMs",
        kafka_group_max_session_timeout_ms: i32 = 1_800_000 => "kafkaGroupMaxSessionTimeoutMs",
        /// Kafka's connections.max.idle.ms: a connection silent this long is closed (0: never).
        kafka_connections_max_idle_ms: u64 = 600_000 => "kafkaConnectionsMaxIdleMs",
        /// Kafka's producer.id.expiration.ms: an idempotent producer's sequence state is
        /// forgotten this long after its last write.
        kafka_producer_id_expiration_ms: u64 = 86_400_000 => "kafkaProducerIdExpirationMs",
        /// Kafka's offsets.retention.minutes: a Kafka group nobody is in loses the offsets it
        /// committed through the Kafka listener this long after its last commit.
        kafka_offsets_retention_minutes: u64 = 10_080 => "kafkaOffsetsRetentionMinutes",
        /// Kafka's log.retention.check.interval.ms: how often per-topic retention.ms and
        /// retention.bytes move log start offsets.
        kafka_log_retention_check_interval_ms: u64 = 300_000 => "kafkaLogRetentionCheckIntervalMs",
        /// Kafka's transaction.max.timeout.ms: InitProducerId with a longer transaction timeout
        /// is INVALID_TRANSACTION_TIMEOUT.
        kafka_transaction_max_timeout_ms: i32 = 900_000 => "kafkaTransactionMaxTimeoutMs",
        /// Kafka's transactional.id.expiration.ms: a transactional id idle this long (no
        /// transaction open) is forgotten.
        kafka_transactional_id_expiration_ms: u64 = 604_800_000 => "kafkaTransactionalIdExpirationMs",
        /// Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms: how often timed-out
        /// transactions are aborted (and idle transactional ids expired).
        kafka_transaction_cleanup_interval_ms: u64 = 10_000 => "kafkaTransactionAbortTimedOutTransactionCleanupIntervalMs",
        /// How many transactional ids the coordinator keeps at most (ferrocket: bounded state).
        kafka_max_transactional_ids: usize = 1000 => "kafkaMaxTransactionalIds",
        // Java's `tls.*` keys (`TlsSystemConfig`), the same in broker.conf and namesrv.conf.
        @nested tls: crate::config::TlsKeys,
    }
}

/// Keys that only size Java thread pools or tune Java-specific machinery.
const NO_EFFECT: &[&str] = &[
    "sendMessageThreadPoolNums",
    "putMessageFutureThreadPoolNums",
    "pullMessageThreadPoolNums",
    "litePullMessageThreadPoolNums",
    "processReplyMessageThreadPoolNums",
    "queryMessageThreadPoolNums",
    "adminBrokerThreadPoolNums",
    "clientManageThreadPoolNums",
    "consumerManageThreadPoolNums",
    "heartbeatThreadPoolNums",
    "endTransactionThreadPoolNums",
    "sendThreadPoolQueueCapacity",
    "pullThreadPoolQueueCapacity",
    "serverWorkerThreads",
    "serverSelectorThreads",
    "useReentrantLockWhenPutMessage",
    "transferMsgByHeap",
    "brokerFastFailureEnable",
    "waitTimeMillsInSendQueue",
    "waitTimeMillsInPullQueue",
    "osPageCacheBusyTimeOutMills",
    "timerGetMessageThreadNum",
    "timerPutMessageThreadNum",
    "timerEnableDisruptor",
    "timerEnableCheckMetrics",
    "timerCheckMetricsWhen",
    "timerWarmEnable",
    "timerProgressLogIntervalMs",
    "timerMetricSmallThreshold",
    "timerInterceptDelayLevel",
];

fn default_broker_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "DEFAULT_BROKER".into())
}

/// The address clients should use: the host name's first non-loopback IPv4, else 127.0.0.1.
fn default_ip() -> String {
    use std::net::ToSocketAddrs;
    let host = default_broker_name();
    (host.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .into_iter()
        .flatten()
        .map(|a| a.ip())
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
        .map_or_else(|| "127.0.0.1".into(), |ip| ip.to_string())
}

impl BrokerConfig {
    /// Defaults, then `file`, then `-n`. Unknown keys are warned about once; bad values and keys
    /// for behaviour ferrocket does not implement refuse start-up.
    pub fn load(file: Option<&Path>, namesrv: Option<&str>) -> Result<Self, ConfigError> {
        let mut c = Self::default();
        if let Some(path) = file {
            for (key, value) in read_properties(path)? {
                if !c.set(&key, &value)? {
                    if NO_EFFECT.contains(&key.as_str()) {
                        info!(key, "config key accepted; it tunes Java thread pools and has no effect here");
                    } else {
                        warn!(key, "unknown broker config key ignored");
                    }
                }
            }
        }
        if let Some(n) = namesrv {
            c.namesrv_addr = n.to_owned();
        }
        // Java (`BrokerStartup`): the `-c` file is where config changes are written back.
        if let (Some(path), true) = (file, c.broker_config_path.is_empty()) {
            c.broker_config_path = path.display().to_string();
        }
        c.validate()?;
        Ok(c)
    }

    /// Whether UPDATE_BROKER_CONFIG refuses `key` (`configBlackList`).
    pub fn is_black_listed(&self, key: &str) -> bool {
        self.config_black_list.split(';').any(|k| k.trim() == key)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let refuse = |key: &str, reason: &str| Err(ConfigError::Refused { key: key.into(), reason: reason.into() });
        match self.broker_role.as_str() {
            "ASYNC_MASTER" | "SYNC_MASTER" if self.broker_id != 0 => {
                return refuse("brokerId", "a master has brokerId 0 (slaves have brokerRole=SLAVE)")
            }
            "SLAVE" if self.broker_id <= 0 => return refuse("brokerId", "a slave's brokerId must be > 0"),
            "ASYNC_MASTER" | "SYNC_MASTER" | "SLAVE" => {}
            other => return refuse("brokerRole", &format!("'{other}' is not ASYNC_MASTER, SYNC_MASTER or SLAVE")),
        }
        if !matches!(self.flush_disk_type.as_str(), "ASYNC_FLUSH" | "SYNC_FLUSH") {
            return refuse("flushDiskType", "must be ASYNC_FLUSH or SYNC_FLUSH");
        }
        if let Err(why) = crate::telemetry::exporter_enabled(&self.metrics_exporter_type) {
            return refuse("metricsExporterType", why);
        }
        let unsupported = [
            ("enableDLegerCommitLog", self.enable_dleger_commit_log),
            ("enableControllerMode", self.enable_controller_mode),
            ("enableSlaveActingMaster", self.enable_slave_acting_master),
            ("authenticationEnabled", self.authentication_enabled),
            ("authorizationEnabled", self.authorization_enabled),
            ("coldDataScanEnable", self.cold_data_scan_enable),
            ("coldCtrStrategyEnable", self.cold_ctr_strategy_enable),
        ];
        for (key, on) in unsupported {
            if on {
                return refuse(key, "not implemented yet; remove the key or set it to false");
            }
        }
        if self.acl_enable && self.rocketmq_home.trim().is_empty() {
            return refuse(
                "rocketmqHome",
                "aclEnable=true reads <rocketmqHome>/conf/plain_acl.yml: set rocketmqHome (or ROCKETMQ_HOME)",
            );
        }
        let (min_poll, max_poll) = self.grpc_long_polling();
        if min_poll > max_poll || max_poll > Duration::from_secs(60) {
            return refuse("grpcClientConsumerMaxLongPollingTimeoutMillis", "must be between the minimum and 60000");
        }
        if self.store_path_commit_log.contains(',') {
            return refuse("storePathCommitLog", "several CommitLog directories are not supported yet");
        }
        if self.mapped_file_size_commit_log < 64 * 1024 {
            return refuse("mappedFileSizeCommitLog", "must be at least 65536 bytes");
        }
        if self.mapped_file_size_consume_queue < 20 {
            return refuse("mappedFileSizeConsumeQueue", "must hold at least one 20-byte unit");
        }
        if self.mapped_file_size_timer_log < 4096 {
            return refuse("mappedFileSizeTimerLog", "must be at least 4096 bytes");
        }
        if self.timer_max_delay_sec <= 0 {
            return refuse("timerMaxDelaySec", "must be positive");
        }
        if let Err(why) = self.delay_levels() {
            return refuse("messageDelayLevel", &why);
        }
        if self.namesrv_addr.split(';').any(|a| !a.is_empty() && !a.contains(':')) {
            return refuse("namesrvAddr", "expected host:port[;host:port]");
        }
        Ok(())
    }

    pub fn is_slave(&self) -> bool {
        self.broker_role == "SLAVE"
    }

    /// Slaves a SYNC_MASTER put waits for: 1 as in 4.x, or `inSyncReplicas - 1` when the 5.x
    /// replica keys are set; 0 for other roles.
    pub fn replicas_to_wait_for(&self) -> usize {
        if self.broker_role != "SYNC_MASTER" {
            return 0;
        }
        if self.in_sync_replicas > 1 || self.total_replicas > 1 {
            (self.in_sync_replicas.max(self.min_in_sync_replicas).max(1) - 1) as usize
        } else {
            1
        }
    }

    /// The NameServers to register with.
    pub fn namesrv_addrs(&self) -> Vec<String> {
        self.namesrv_addr.split(';').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect()
    }

    /// `brokerIP1:listenPort`, what clients connect to and what message ids encode.
    pub fn broker_addr(&self) -> String {
        format!("{}:{}", self.broker_ip1, self.listen_port)
    }

    /// `brokerIP2:haListenPort` (listenPort + 1 by default).
    pub fn ha_server_addr(&self) -> String {
        let ip = if self.broker_ip2.is_empty() { &self.broker_ip1 } else { &self.broker_ip2 };
        let port = if self.ha_listen_port == 0 { self.listen_port.saturating_add(1) } else { self.ha_listen_port };
        format!("{ip}:{port}")
    }

    pub fn config_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("config")
    }

    /// The keys `-m` prints (`BrokerStartup -m`: the important ones).
    pub fn important_entries(&self) -> Vec<(&'static str, String)> {
        const IMPORTANT: &[&str] = &[
            "brokerClusterName",
            "brokerName",
            "brokerId",
            "brokerRole",
            "flushDiskType",
            "namesrvAddr",
            "listenPort",
            "brokerIP1",
            "storePathRootDir",
            "autoCreateTopicEnable",
            "autoCreateSubscriptionGroup",
        ];
        self.entries().into_iter().filter(|(k, _)| IMPORTANT.contains(k)).collect()
    }
}

/// [`BrokerConfig::store_config`]: the store's part of the keys.
#[path = "config_store.rs"]
mod store;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
