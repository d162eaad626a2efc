//! The core every door shares: the RocketMQ remoting handlers (`broker/processor`) and the Kafka
//! handlers (`kafka`) only translate requests, answers and error codes; what a message goes
//! through on its way in and what a waiting read waits on is decided here, once.
//!
//! ```text
//!   broker/processor/send.rs        kafka/produce.rs
//!              \                        /
//!               append.rs: admit (flow control) -> writable_topic (name, broker and topic
//!               permission, auto-create + NameServer registration wait, queue range) ->
//!               append (in-sync check, put, flush wait, stats + metrics, replica wait)
//!               outcome.rs: one table, outcome -> RocketMQ code / Kafka code
//!   broker/processor/pull.rs        kafka/fetch.rs
//!              \                        /
//!               wait.rs: wait_for_arrivals (held-request accounting, dispatcher wake-ups)
//!               committed.rs: get_committed (a pull never past the LSO, no marker, no aborted record)
//! ```
//! Owns: [`Core`] (the managers both doors use, flow-control permits, the put/get counters,
//! the registration tickets), the standard properties a broker writes into every message
//! (`properties.rs`), the code table, and what Kafka transactions leave in the log (`txn.rs`:
//! open transactions, aborted ranges; read by Kafka fetches and RocketMQ pulls alike), and the
//! shapes in which the gRPC door's clients reach the broker's client tables (`door.rs`).
//!
//! May import: `model`, `store`, `meta`, `ha` (the replica wait), `acl` (the accounts every door
//! checks), `telemetry`, `persist`. Never a
//! front end (`broker`, `kafka`), a codec (`protocol`, `kafka_protocol`) or `remoting`.

pub mod append;
pub mod committed;
mod compaction;
pub mod door;
pub mod outcome;
pub mod pop;
pub mod properties;
pub mod stats;
pub mod txn;
pub mod wait;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::meta::config::BrokerConfig;
use crate::meta::hold::PullHold;
use crate::meta::live::LiveConfig;
use crate::meta::offset::ConsumerOffsetManager;
use crate::meta::subscription::SubscriptionGroupManager;
use crate::meta::topic::TopicConfigManager;
use crate::store::MessageStore;

pub use append::{AutoCreate, Durability, Replicas, TopicWrite, Traffic};
pub use outcome::{Outcome, Refusal};

/// Sends and produces in progress at once; one that cannot get a permit within
/// [`append::WAIT_IN_SEND_QUEUE`] is refused as busy.
const APPEND_PERMITS: usize = 1024;

/// Which door a request came through (the `protocol` label of the shared metrics).
pub use crate::telemetry::Protocol;

/// What both doors share: metadata managers, the store, replication, flow control, statistics.
pub struct Core {
    pub config: BrokerConfig,
    pub store: Arc<MessageStore>,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Long polls and fetches waiting for arrivals.
    pub hold: Arc<PullHold>,
    /// Keys UPDATE_BROKER_CONFIG may change while running.
    pub live: Arc<LiveConfig>,
    /// Master roles: streams the CommitLog to slaves; SYNC_MASTER puts wait for it.
    pub ha_service: Option<Arc<crate::ha::HaService>>,
    /// Labels of this broker's metrics; `None` with `metricsExporterType=DISABLE`.
    pub metrics: Option<Arc<crate::telemetry::Node>>,
    pub stats: stats::BrokerStats,
    /// Appends in progress (flow control).
    pub send_permits: Semaphore,
    /// `brokerIP1:listenPort`, written into every stored message and message id.
    pub store_host: SocketAddr,
    /// Cancelled when the broker starts shutting down: held reads are answered at once.
    pub closing: CancellationToken,
    /// Rung to register with the NameServers now.
    pub register_now: Arc<Notify>,
    /// Registrations asked for by topic changes, and the last of them a finished round of
    /// REGISTER_BROKER covered (`topics_changed` waits for its own).
    pub register_asked: AtomicU64,
    pub register_done: tokio::sync::watch::Sender<u64>,
    /// Whether the registration loop runs (a broker that never serves does not wait for it).
    pub registering: AtomicBool,
    /// `aclEnable=true`: the accounts every door checks requests against.
    pub acl: Option<Arc<crate::acl::Acl>>,
    /// Kafka transactions in the log: open ones (the LSO), aborted ranges, read by both doors.
    pub txn: Arc<txn::TxnMarkers>,
    /// POP consumption: checkpoints of popped, unacked messages and their revive timer.
    pub pop: pop::PopService,
}

/// The managers a [`Core`] is built from (loaded by the broker from its config files).
pub struct Parts {
    pub config: BrokerConfig,
    pub store: Arc<MessageStore>,
    pub topics: TopicConfigManager,
    pub groups: SubscriptionGroupManager,
    pub offsets: ConsumerOffsetManager,
    pub hold: Arc<PullHold>,
    pub ha_service: Option<Arc<crate::ha::HaService>>,
    pub metrics: Option<Arc<crate::telemetry::Node>>,
    pub store_host: SocketAddr,
    pub acl: Option<Arc<crate::acl::Acl>>,
    pub txn: txn::TxnMarkers,
}

impl Core {
    pub fn new(p: Parts) -> Self {
        let topics = Arc::new(p.topics);
        // The end of a transaction moves the LSO: reads held on the queue read again.
        let hold = p.hold.clone();
        p.txn.set_end_listener(Box::new(move |topic, queue_id| hold.message_arrived(topic, queue_id)));
        let txn = Arc::new(p.txn);
        compaction::attach(&p.store, &topics, &txn);
        let stats = stats::BrokerStats::new(&p.config.broker_cluster_name, stats::now_ms());
        Self {
            live: Arc::new(LiveConfig::new(&p.config)),
            config: p.config,
            store: p.store,
            topics,
            groups: Arc::new(p.groups),
            offsets: Arc::new(p.offsets),
            hold: p.hold,
            ha_service: p.ha_service,
            metrics: p.metrics,
            stats,
            send_permits: Semaphore::new(APPEND_PERMITS),
            store_host: p.store_host,
            closing: CancellationToken::new(),
            register_now: Arc::new(Notify::new()),
            register_asked: AtomicU64::new(0),
            register_done: tokio::sync::watch::Sender::new(0),
            registering: AtomicBool::new(false),
            acl: p.acl,
            txn,
            pop: pop::PopService::default(),
        }
    }

    /// A core over a fresh store in `config`'s directories, loading its files (tests, tools).
    pub fn open(config: BrokerConfig) -> Result<Self, String> {
        let store = Arc::new(MessageStore::open(config.store_config()).map_err(|e| e.to_string())?);
        Ok(Self::new(Parts {
            topics: TopicConfigManager::load(&config)?,
            groups: SubscriptionGroupManager::load(&config)?,
            offsets: ConsumerOffsetManager::load(&config)?,
            txn: txn::TxnMarkers::open(&config.config_dir().join(txn::MARKERS_FILE))?,
            store,
            hold: Arc::new(PullHold::default()),
            ha_service: None,
            metrics: None,
            acl: None,
            store_host: config.broker_addr().parse().map_err(|_| format!("bad address {}", config.broker_addr()))?,
            config,
        }))
    }

    /// Persists topics and registers with the NameServers before returning (topic created or
    /// changed).
    pub async fn topics_changed(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.persist_topics().await;
        let ticket = self.register_asked.fetch_add(1, SeqCst) + 1;
        self.register_now.notify_one();
        if !self.registering.load(SeqCst) {
            return;
        }
        // Java registers a topic a send created before it answers the send
        // (`createTopicInSendMessageMethod` -> `registerBrokerAll`, up to
        // registerBrokerTimeoutMills): a client asking the NameServer next finds the route.
        let mut done = self.register_done.subscribe();
        let wait = Duration::from_millis(self.live.config().register_broker_timeout_mills);
        let _ = tokio::time::timeout(wait, done.wait_for(|d| *d >= ticket)).await;
    }

    /// Returns once topics.json holds every topic change made so far (written off the async
    /// workers; a failed write is logged by the file's writer, once).
    pub async fn persist_topics(&self) {
        let _ = self.topics.persist().await;
    }

    /// Returns once subscriptionGroup.json holds every group change made so far.
    pub async fn persist_groups(&self) {
        let _ = self.groups.persist().await;
    }

    /// The properties this broker writes into every message it takes in.
    pub fn broker_properties(&self) -> properties::BrokerProperties<'_> {
        properties::BrokerProperties {
            region: &self.config.region_id,
            trace_on: self.config.trace_on,
            cluster: &self.config.broker_cluster_name,
        }
    }

    /// RocketMQ's own topics (`TopicValidator.isSystemTopic` and the names a broker registers
    /// for itself): labelled `is_system` in metrics, hidden from Kafka clients.
    pub fn is_system_topic(&self, topic: &str) -> bool {
        crate::meta::names::is_system_topic(&self.config, topic)
    }

    /// Messages a POP (remoting or gRPC) handed to `group`: the broker statistics (`statsAll`'s
    /// consumed counts) and `rocketmq_messages_out_total` / `throughput_out` under `protocol`.
    pub fn count_popped(&self, protocol: Protocol, group: &str, topic: &str, count: u64, bytes: u64) {
        let system = self.is_system_topic(topic);
        self.stats.pulled(group, topic, count, bytes, system);
        if let Some(node) = self.metrics.as_deref().filter(|_| count > 0) {
            crate::telemetry::messages_out(node, protocol, topic, group, system, count, bytes);
        }
    }
}

#[cfg(test)]
mod append_tests;
