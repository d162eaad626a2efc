//! The Kafka front end: a second wire protocol over the same topics, queues (= partitions),
//! consumer offsets and store as the RocketMQ handlers. Unchanged Kafka clients produce and
//! fetch on the CommitLog RocketMQ clients use; a message written with either protocol is read
//! with the other.
//!
//! May import: `crate::core` (append, waits, the managers), `crate::model`, `crate::store`,
//! `crate::meta`, `crate::persist`, `crate::telemetry`, `crate::acl` (accounts and permissions,
//! for SASL and authorization), `crate::net` (the listener, TLS). Never the broker (which
//! starts it: `node.rs`), the RocketMQ codec
//! (`protocol`) or transport (`remoting`): tests/it/layering.rs checks it.
//!
//! ```text
//! client --frame--> conn.rs (one request at a time per connection, answers in order, as Kafka)
//!                     |-- versions.rs   ApiVersions, advertised ranges, header versions
//!                     |-- sasl.rs       SaslHandshake/SaslAuthenticate (PLAIN; SCRAM in sasl_scram.rs)
//!                     |-- authz.rs      ACL checks before each handler (authz_groups.rs: groups, admin)
//!                     |-- produce.rs    record batches (records.rs, inflate.rs capped, off the
//!                     |                 async workers) -> mapping.rs -> store
//!                     |-- fetch.rs      store -> mapping.rs -> v2 batches; long poll on meta::hold
//!                     |-- metadata.rs   Metadata, topics, cluster
//!                     |-- configs.rs    Describe/Alter/IncrementalAlterConfigs (topic_configs.rs:
//!                     |                 the keys, kept in the topic's attributes; topic_configs_fixed.rs
//!                     |                 the ones described at their one value; group_configs.rs)
//!                     |-- delete_records.rs  DeleteRecords: moves the store's log start offset
//!                     |-- create_partitions.rs  CreatePartitions: grows a topic's queues
//!                     |-- describe_topic_partitions.rs  DescribeTopicPartitions (paged Metadata)
//!                     |-- log_dirs.rs   DescribeLogDirs: the CommitLog's directory, queue sizes
//!                     |-- offset_delete.rs  OffsetDelete: forgets some of a group's offsets
//!                     |-- groups.rs     FindCoordinator, group/ coordinator, Describe/DeleteGroups
//!                     |-- offsets.rs    OffsetCommit, OffsetFetch (RocketMQ consumer offsets)
//!                     |-- producer_ids.rs  InitProducerId, idempotent sequences (expiring)
//!                     |-- txn.rs        transactions: InitProducerId with a transactional id,
//!                     |                 AddPartitions/AddOffsetsToTxn, TxnOffsetCommit, EndTxn
//!                     |                 (txn_coordinator.rs state machine, txn_log.rs on disk,
//!                     |                 txn_markers.rs control records + timeouts)
//!                     `-- txn_admin.rs  ListTransactions, DescribeTransactions, DescribeProducers
//! retention.rs: a task that expires idle groups and, after kafkaOffsetsRetentionMinutes, the
//! offsets of Kafka groups nobody is in; log_retention.rs: a task that enforces the topics'
//! retention.ms / retention.bytes by moving log start offsets
//! refusals.rs: one rate-limited WARN line per refused request (client, API, reason)
//! every topic or group a request names passes names.rs first (Kafka's rules, RocketMQ's
//! system topics and groups refused)
//! ```
//! cluster_id.rs: the Kafka cluster id, kept in `config/kafkaClusterId`
//! Partition = queue, Kafka offset = queue offset, committed offsets = RocketMQ consumer offsets.

pub mod api;
mod authz;
mod authz_admin;
mod authz_gate;
mod authz_groups;
mod authz_txn;
mod cluster_id;
mod commit_metadata;
mod configs;
pub mod conn;
mod create_partitions;
mod deflate;
mod delete_records;
mod describe_topic_partitions;
mod fetch;
pub mod group;
mod group_configs;
mod groups;
mod inflate;
mod log_dirs;
mod log_retention;
mod mapping;
mod metadata;
mod names;
mod offset_delete;
mod offsets;
mod produce;
mod producer_ids;
pub mod records;
mod refusals;
mod retention;
mod sasl;
mod sasl_scram;
mod topic_configs;
mod topic_configs_fixed;
mod txn;
mod txn_admin;
mod txn_coordinator;
mod txn_log;
mod txn_markers;
mod txn_meta;
mod versions;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::info;

use crate::net::{Listener, Stream};

/// What the Kafka handlers share with the RocketMQ side: the broker's [`Core`](crate::core::Core).
pub type Shared = crate::core::Core;

/// The Kafka front end's state: the shared managers plus the group coordinator and producer ids.
pub struct Kafka {
    pub shared: Arc<Shared>,
    pub coordinator: Arc<group::Coordinator>,
    pub producers: producer_ids::ProducerIds,
    /// `host:port` advertised in Metadata and FindCoordinator.
    pub advertised: (String, i32),
    pub node_id: i32,
    /// OffsetCommit metadata strings; offsets themselves are RocketMQ's.
    commit_metadata: commit_metadata::CommitMetadata,
    /// When each Kafka group last committed: offsets.retention.minutes.
    retention: retention::GroupRetention,
    /// SCRAM credentials derived from the ACL accounts.
    scram: sasl_scram::Cache,
    /// Rate limit of the refusal WARN lines.
    refusals: refusals::Refusals,
    /// retention.bytes cursors of the per-topic retention sweep.
    log_retention: log_retention::LogRetention,
    /// The transaction coordinator's table and its log (`config/kafkaTransactions.json`).
    txns: txn_log::TxnLog,
    /// ListOffsets -3: the running maximum of record timestamps per queue.
    max_timestamps: Arc<fetch::max_timestamp::MaxTimestamps>,
    /// Metadata's and DescribeCluster's cluster id (`config/kafkaClusterId`).
    pub cluster_id: String,
}

impl Kafka {
    pub fn new(shared: Arc<Shared>) -> Result<Arc<Self>, String> {
        let c = &shared.config;
        let advertised = if c.kafka_advertised_address.is_empty() {
            (c.broker_ip1.clone(), i32::from(c.kafka_listen_port))
        } else {
            let (h, p) = c.kafka_advertised_address.rsplit_once(':').ok_or_else(|| {
                format!("config key 'kafkaAdvertisedAddress': '{}' is not host:port", c.kafka_advertised_address)
            })?;
            let port = p.parse::<u16>().map_err(|_| {
                format!("config key 'kafkaAdvertisedAddress': '{}' has no valid port", c.kafka_advertised_address)
            })?;
            (h.to_owned(), i32::from(port))
        };
        let producers = producer_ids::ProducerIds::open(
            &c.config_dir().join("kafkaProducerId.json"),
            c.kafka_producer_id_expiration_ms,
        )?;
        let commit_metadata = commit_metadata::CommitMetadata::open(&c.config_dir().join("kafkaCommitMetadata.json"))?;
        let retention = retention::GroupRetention::open(
            &c.config_dir().join("kafkaGroupCommits.json"),
            c.kafka_offsets_retention_minutes,
        )?;
        let txns = txn_log::TxnLog::open(
            &c.config_dir().join(txn_log::FILE),
            txn_coordinator::Limits {
                max_timeout_ms: c.kafka_transaction_max_timeout_ms,
                expiration_ms: c.kafka_transactional_id_expiration_ms,
                max_ids: c.kafka_max_transactional_ids,
            },
        )?;
        let node_id = i32::try_from(c.broker_id).unwrap_or(0);
        let cluster_id = cluster_id::load_or_create(&c.config_dir())?;
        Ok(Arc::new(Self {
            coordinator: group::Coordinator::new(group::CoordinatorConfig {
                min_session_timeout_ms: c.kafka_group_min_session_timeout_ms,
                max_session_timeout_ms: c.kafka_group_max_session_timeout_ms,
                initial_rebalance_delay_ms: c.kafka_group_initial_rebalance_delay_ms.max(0),
                ..group::CoordinatorConfig::default()
            }),
            producers,
            advertised,
            node_id,
            shared,
            commit_metadata,
            retention,
            scram: sasl_scram::Cache::default(),
            refusals: refusals::Refusals::default(),
            log_retention: log_retention::LogRetention::default(),
            txns,
            max_timestamps: Arc::default(),
            cluster_id,
        }))
    }

    /// Serves Kafka connections accepted by `listener` (`maxConnections`, TLS as
    /// `tls.server.mode` says: `SSL`/`SASL_SSL` clients) until `shutdown`.
    pub async fn serve(self: Arc<Self>, listener: Listener, shutdown: CancellationToken, tracker: TaskTracker) {
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        info!(addr, advertised = format!("{}:{}", self.advertised.0, self.advertised.1), "Kafka listener started");
        tracker.spawn(retention::run(self.clone(), shutdown.clone()));
        tracker.spawn(log_retention::run(self.clone(), shutdown.clone()));
        // Transactions open at the last stop hold their queues' LSO again before anyone reads.
        txn_markers::recover(&self).await;
        tracker.spawn(txn_markers::run(self.clone(), shutdown.clone()));
        let stop = shutdown.clone();
        let serve = move |stream: Stream, peer: SocketAddr| conn::serve(self.clone(), stream, peer, stop.clone());
        listener.serve(serve, shutdown, tracker).await;
    }
}
