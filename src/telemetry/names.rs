//! Metric and label names: Java 5.x's (`BrokerMetricsConstant`, `RemotingMetricsConstant`,
//! `DefaultStoreMetricsManager`) and ferrocket's own (`ferrocket_*`), with histogram buckets.
//!
//! May import: nothing outside `telemetry/` (the area's rule: docs/architecture.md).

pub const LABEL_CLUSTER_NAME: &str = "cluster";
pub const LABEL_NODE_TYPE: &str = "node_type";
pub const LABEL_NODE_ID: &str = "node_id";
pub const LABEL_TOPIC: &str = "topic";
pub const LABEL_CONSUMER_GROUP: &str = "consumer_group";
pub const LABEL_MESSAGE_TYPE: &str = "message_type";
pub const LABEL_IS_SYSTEM: &str = "is_system";
pub const LABEL_IS_RETRY: &str = "is_retry";
pub const LABEL_PROTOCOL_TYPE: &str = "protocol_type";
/// ferrocket's: the door a message came through or left by (`remoting`, `kafka`).
pub const LABEL_PROTOCOL: &str = "protocol";
pub const LABEL_REQUEST_CODE: &str = "request_code";
pub const LABEL_RESPONSE_CODE: &str = "response_code";
pub const LABEL_IS_LONG_POLLING: &str = "is_long_polling";
pub const LABEL_RESULT: &str = "result";

pub const NODE_TYPE_BROKER: &str = "broker";
pub const NODE_TYPE_NAMESERVER: &str = "nameserver";

pub const MESSAGES_IN_TOTAL: &str = "rocketmq_messages_in_total";
pub const MESSAGES_OUT_TOTAL: &str = "rocketmq_messages_out_total";
pub const THROUGHPUT_IN_TOTAL: &str = "rocketmq_throughput_in_total";
pub const THROUGHPUT_OUT_TOTAL: &str = "rocketmq_throughput_out_total";
pub const MESSAGE_SIZE: &str = "rocketmq_message_size";
pub const RPC_LATENCY: &str = "rocketmq_rpc_latency";
pub const TOPIC_NUMBER: &str = "rocketmq_topic_number";
pub const CONSUMER_GROUP_NUMBER: &str = "rocketmq_consumer_group_number";
pub const BROKER_PERMISSION: &str = "rocketmq_broker_permission";
pub const PRODUCER_CONNECTIONS: &str = "rocketmq_producer_connections";
pub const CONSUMER_CONNECTIONS: &str = "rocketmq_consumer_connections";
pub const CONSUMER_LAG_MESSAGES: &str = "rocketmq_consumer_lag_messages";
pub const CONSUMER_INFLIGHT_MESSAGES: &str = "rocketmq_consumer_inflight_messages";
pub const STORAGE_SIZE: &str = "rocketmq_storage_size";
pub const STORAGE_FLUSH_BEHIND: &str = "rocketmq_storage_flush_behind_bytes";
pub const STORAGE_DISPATCH_BEHIND: &str = "rocketmq_storage_dispatch_behind_bytes";

/// Messages one SYNC_FLUSH fsync made durable together.
pub const GROUP_COMMIT_BATCH: &str = "ferrocket_group_commit_batch_size";
/// Seconds one CommitLog flush (msync/fsync) took.
pub const FLUSH_LATENCY: &str = "ferrocket_flush_latency_seconds";
/// Connections open per listener (`listener`: remoting, vip, kafka, ha), TLS handshakes in
/// progress included.
pub const CONNECTIONS: &str = "ferrocket_connections";
/// Connections accepted per listener.
pub const CONNECTIONS_ACCEPTED: &str = "ferrocket_connections_accepted_total";
/// Connections a listener closed before serving them (`reason`: idle, handshake).
pub const CONNECTIONS_REFUSED: &str = "ferrocket_connections_refused_total";
/// Times a listener reached `maxConnections` (further connections wait in the backlog).
pub const CONNECTIONS_LIMIT_REACHED: &str = "ferrocket_connections_limit_reached_total";
/// Label of the connection metrics: which listener.
pub const LABEL_LISTENER: &str = "listener";
/// Label of `ferrocket_connections_refused_total`: why.
pub const LABEL_REASON: &str = "reason";
/// CommitLog records the dispatcher left out of the consume queues (an illegal topic, or a
/// dispatch that failed 30 times in a row).
pub const DISPATCH_SKIPPED: &str = "ferrocket_dispatch_skipped_records";
/// Sends and produces refused by flow control (SYSTEM_BUSY / REQUEST_TIMED_OUT), by `protocol`.
pub const FLOW_CONTROL_REFUSALS: &str = "ferrocket_flow_control_refusals_total";
/// Pulls parked for long polling.
pub const HELD_PULLS: &str = "ferrocket_held_pulls";
/// Bytes of CommitLog a slave has not yet acknowledged (master), or not yet received (slave).
pub const HA_LAG_BYTES: &str = "ferrocket_ha_lag_bytes";
pub const HA_SLAVES: &str = "ferrocket_ha_slaves";
/// NameServer: registered brokers and topics with routes.
pub const NAMESRV_BROKERS: &str = "ferrocket_namesrv_brokers";
pub const NAMESRV_TOPICS: &str = "ferrocket_namesrv_topics";

/// Histogram buckets: Java's for its histograms (message size 1 KiB..4 MiB; RPC latency in ms),
/// ours for ours.
pub const BUCKETS: &[(&str, &[f64])] = &[
    (MESSAGE_SIZE, &[1024.0, 4096.0, 524_288.0, 1_048_576.0, 2_097_152.0, 4_194_304.0]),
    (RPC_LATENCY, &[1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0]),
    (GROUP_COMMIT_BATCH, &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0]),
    (FLUSH_LATENCY, &[0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0]),
];
