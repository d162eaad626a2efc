//! The broker: takes messages from producers, serves consumers' (long-polling) pulls, keeps
//! consumer offsets and groups, registers with the NameServers.
//!
//! May import: `crate::core` (append, waits, the managers both doors share: `BrokerInner`
//! derefs to the `Core`), `crate::protocol`, `crate::remoting`, `crate::store`, `crate::model`,
//! `crate::properties`, `crate::persist`, `crate::acl` (aclEnable), `crate::meta`, `crate::net`
//! (listeners, TLS), `crate::ha`. Never the Kafka front end: the composition root (`node.rs`)
//! starts it beside the broker. `convert.rs` is the only bridge between wire and store types.
//!
//! ```text
//! client --SEND_MESSAGE_V2--> processor/send.rs --core::append--> store (CommitLog)
//! client --PULL_MESSAGE-----> processor/pull.rs <--records (mmap, zero copy)-- store
//!                                   ^ held in core::wait_for_arrivals until the store's
//!                                     dispatcher signals the queue (meta/hold.rs)
//! ```

pub mod acl;
pub mod client;
pub mod coldctr;
pub mod config_file;
pub use crate::meta::live::LiveConfig;
pub use crate::meta::{config, hold, offset, subscription, topic};
pub mod convert;
pub mod door;
pub mod filter;
mod housekeeping;
pub mod lock;
pub mod metrics;
pub mod processor;
pub mod register;
pub mod routes;
pub mod schedule;
pub mod slave_sync;
pub use crate::core::stats;
pub mod timer;
pub mod transaction;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info, warn};

pub use config::BrokerConfig;

use crate::net::tls::{tls_settings, TlsClient, TlsError, TlsServer};
use crate::net::{Listener, ListenerConfig, ListenerKind};
use crate::protocol::{FrameLimits, RemotingCommand, RequestCode};
use crate::remoting::{ConnectionOptions, NoCallbacks, RemotingClient, RemotingServer, ServerConfig};
use crate::store::{MessageStore, StoreError};

/// A broker that failed to start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot load {what}: {why}")]
    Config { what: &'static str, why: String },
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("brokerIP1:listenPort '{0}' is not an ip:port")]
    BadAddress(String),
}

/// Everything the request handlers share: the [`Core`](crate::core::Core) both doors share
/// (reached through `Deref`: `b.store`, `b.topics`, `b.config` ...) and what only the RocketMQ
/// side has.
pub struct BrokerInner {
    pub core: Arc<crate::core::Core>,
    pub consumers: client::ConsumerManager,
    pub producers: client::ProducerManager,
    /// Compiled SQL92 subscriptions.
    pub filters: filter::ConsumerFilters,
    pub locks: lock::RebalanceLockManager,
    pub schedule: schedule::ScheduleService,
    /// Timer messages (`TIMER_DELAY_SEC`/`TIMER_DELAY_MS`/`TIMER_DELIVER_MS`).
    pub timer: timer::TimerService,
    /// Transactions committed here but not yet on the slaves (SYNC_MASTER).
    pub unreplicated_commits: transaction::UnreplicatedCommits,
    /// Transactions ended recently, so that a second end stores nothing twice.
    pub finished_transactions: transaction::finished::FinishedTransactions,
    /// Where UPDATE_BROKER_CONFIG's changes are kept across restarts.
    pub config_file: config_file::BrokerConfigFile,
    /// Slave role: replicates from the master.
    pub ha_client: Option<Arc<crate::ha::HaClient>>,
    /// Slave role: the master's broker address (from registration), for metadata sync.
    pub master_addr: std::sync::Mutex<Option<String>>,
    pub outbound: RemotingClient<NoCallbacks>,
    /// Slave: rung when the dispatcher learned a topic from replicated records.
    pub topics_learned: Notify,
    /// Cold-read flow control's tables (`coldDataFlowControlEnable`).
    pub cold_ctr: coldctr::ColdDataCtr,
    /// Topic routes from the NameServers, for QUERY_ASSIGNMENT.
    pub routes: routes::TopicRoutes,
}

impl std::ops::Deref for BrokerInner {
    type Target = crate::core::Core;

    fn deref(&self) -> &crate::core::Core {
        &self.core
    }
}

/// `DefaultMQProducer.defaultTopicQueueNums`: the queues a client asks for when its send
/// auto-creates a topic (capped by the default topic's queues).
const CLIENT_DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;

impl BrokerInner {
    /// Slave: learns the topic of a dispatched record when it does not know it (or not that
    /// queue), so that everything it holds is consumable even if its master died before the
    /// metadata sync copied the topic. Runs on the dispatcher thread: in memory only.
    fn learn_topic(&self, topic: &str, queue_id: i32) {
        let default_queues = self.config.default_topic_queue_nums.min(CLIENT_DEFAULT_TOPIC_QUEUE_NUMS);
        if self.topics.learn(topic, queue_id, default_queues) {
            self.topics_learned.notify_one();
        }
    }

    /// Tells every member of `group` that membership changed (NOTIFY_CONSUMER_IDS_CHANGED).
    pub async fn notify_consumer_ids_changed(&self, group: &str) {
        let enabled = self.groups.get(group).is_none_or(|g| g.notify_consumer_ids_changed_enable);
        let Some(info) = self.consumers.group(group).filter(|_| enabled) else { return };
        for ch in info.channels.values() {
            let req =
                RemotingCommand::request(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED).with_ext("consumerGroup", group);
            // A gRPC client does not rebalance: only remoting members are told.
            let Some(conn) = ch.link.remoting() else { continue };
            if let Err(e) = conn.invoke_oneway(req).await {
                warn!(group, client = ch.client_id, error = %e, "cannot notify consumer of membership change");
            }
        }
    }
}

/// A bound broker, not yet serving.
pub struct Broker {
    server: RemotingServer,
    /// The "VIP"/fast port, listenPort - 2: same requests, used by Java slaves for metadata sync
    /// and by clients with sendMessageWithVIPChannel.
    vip_server: Option<RemotingServer>,
    ha_listener: Option<tokio::net::TcpListener>,
    /// TLS on the HA (and Kafka) port too (`tls.server.mode`).
    tls_server: Option<Arc<TlsServer>>,
    inner: Arc<BrokerInner>,
}

/// Listening sockets bound by the caller (a test harness binding port 0, so no port is picked
/// and then lost to somebody else); `None`: bound here from the config's ports.
#[derive(Default)]
pub struct Sockets {
    /// `listenPort`: its port becomes the config's `listenPort` (registration, message ids).
    pub remoting: Option<tokio::net::TcpListener>,
    /// The VIP port; with `remoting` given and this `None`, there is no VIP port.
    pub vip: Option<tokio::net::TcpListener>,
    /// `haListenPort` (masters); its port becomes the config's `haListenPort`.
    pub ha: Option<tokio::net::TcpListener>,
}

impl Broker {
    /// Opens (and recovers) the store, loads the config files and binds the listen ports.
    pub async fn bind(config: BrokerConfig) -> Result<Self, StartError> {
        Self::bind_with(config, Sockets::default()).await
    }

    /// As [`Self::bind`], on sockets the caller bound where it gave them.
    pub async fn bind_with(mut config: BrokerConfig, sockets: Sockets) -> Result<Self, StartError> {
        let port = |l: &tokio::net::TcpListener| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(|source| StartError::Bind { addr: "a given socket".into(), source })
        };
        if let Some(l) = &sockets.remoting {
            config.listen_port = port(l)?;
        }
        if let Some(l) = &sockets.ha {
            config.ha_listen_port = port(l)?;
        }
        let store_host: SocketAddr =
            config.broker_addr().parse().map_err(|_| StartError::BadAddress(config.broker_addr()))?;
        let store_config = config.store_config();
        let store = tokio::task::spawn_blocking(move || MessageStore::open(store_config))
            .await
            .map_err(|e| StartError::Config { what: "store", why: e.to_string() })??;
        let store = Arc::new(store);
        let cfg = |what: &'static str| move |why: String| StartError::Config { what, why };
        let topics = topic::TopicConfigManager::load(&config).map_err(cfg("topics.json"))?;
        let groups = subscription::SubscriptionGroupManager::load(&config).map_err(cfg("subscriptionGroup.json"))?;
        let offsets = offset::ConsumerOffsetManager::load(&config).map_err(cfg("consumerOffset.json"))?;
        let txn = crate::core::txn::TxnMarkers::open(&config.config_dir().join(crate::core::txn::MARKERS_FILE))
            .map_err(cfg(crate::core::txn::MARKERS_FILE))?;
        let schedule = schedule::ScheduleService::load(&config).map_err(cfg("delayOffset.json"))?;
        let timer = timer::TimerService::open(&config)?;
        let hold = Arc::new(hold::PullHold::default());
        let (arrivals, timer_arrived) = (hold.clone(), timer.arrived.clone());
        store.set_arrival_listener(Arc::new(move |topic, queue_id| {
            arrivals.message_arrived(topic, queue_id);
            if topic == timer::TIMER_TOPIC {
                timer_arrived.notify_one();
            }
        }));
        let tls_error = |e: TlsError| StartError::Config { what: "the TLS settings", why: e.to_string() };
        let tls = tls_settings(&config.entries()).map_err(tls_error)?;
        let tls_server = TlsServer::new(&tls).map_err(tls_error)?;
        let tls_client = TlsClient::new(&tls).map_err(tls_error)?;
        let addr = format!("{}:{}", config.bind_address, config.listen_port);
        let server_config = ServerConfig {
            connection: ConnectionOptions {
                limits: FrameLimits { max_frame: config.frame_max_length },
                idle_timeout: match config.server_channel_max_idle_time_seconds {
                    0 => None,
                    s => Some(Duration::from_secs(s)),
                },
            },
            max_connections: config.max_connections,
        };
        let metrics_node = metrics::node(&config);
        // A given client port comes with its VIP port or none (listenPort - 2 is nobody's to take).
        let remoting_given = sockets.remoting.is_some();
        let server = match sockets.remoting {
            Some(l) => RemotingServer::from_listener(l, server_config),
            None => {
                RemotingServer::bind(&addr, server_config).await.map_err(|source| StartError::Bind { addr, source })?
            }
        }
        .with_tls(tls_server.clone())
        .with_metrics(ListenerKind::Remoting, metrics_node.clone());
        let vip_given =
            sockets.vip.map(|l| RemotingServer::from_listener(l, server_config).with_tls(tls_server.clone()));
        let vip_port = config.listen_port.checked_sub(2).filter(|p| *p > 0 && !remoting_given);
        let vip_server = match (vip_given, vip_port) {
            (Some(s), _) => Some(s),
            (None, None) => None,
            (None, Some(port)) => {
                let vip_addr = format!("{}:{port}", config.bind_address);
                match RemotingServer::bind(&vip_addr, server_config).await {
                    Ok(s) => Some(s.with_tls(tls_server.clone())),
                    Err(e) => {
                        warn!(addr = vip_addr, error = %e, "cannot listen on the VIP port (listenPort - 2); Java slaves and VIP-channel clients cannot reach this broker");
                        None
                    }
                }
            }
        }
        .map(|s| s.with_metrics(ListenerKind::Vip, metrics_node.clone()));
        let (ha_service, ha_client, ha_listener) = if config.is_slave() {
            let master = (!config.ha_master_address.is_empty()).then(|| config.ha_master_address.clone());
            (None, Some(crate::ha::HaClient::new(store.clone(), master, tls_client.clone())), None)
        } else {
            let listener = match sockets.ha {
                Some(l) => l,
                None => {
                    let ha_port = config.ha_server_addr().rsplit(':').next().unwrap_or("0").to_owned();
                    let ha_addr = format!("{}:{ha_port}", config.bind_address);
                    tokio::net::TcpListener::bind(&ha_addr)
                        .await
                        .map_err(|source| StartError::Bind { addr: ha_addr, source })?
                }
            };
            (Some(crate::ha::HaService::new(store.clone(), config.ha_max_gap_not_in_sync)), None, Some(listener))
        };
        let outbound = RemotingClient::new(
            Arc::new(NoCallbacks),
            FrameLimits::default(),
            TaskTracker::new(),
            CancellationToken::new(),
        )
        .with_tls(tls_client);
        let acl = match config.acl_enable {
            true => Some(Arc::new(
                crate::acl::Acl::open(Path::new(config.rocketmq_home.trim()))
                    .map_err(|why| StartError::Config { what: "the ACL (aclEnable=true)", why })?,
            )),
            false => None,
        };
        let config_path = (!config.broker_config_path.is_empty()).then(|| PathBuf::from(&config.broker_config_path));
        let core = Arc::new(crate::core::Core::new(crate::core::Parts {
            metrics: metrics_node,
            config,
            store,
            topics,
            groups,
            offsets,
            hold,
            ha_service,
            store_host,
            acl,
            txn,
        }));
        let inner = Arc::new(BrokerInner {
            core,
            config_file: config_file::BrokerConfigFile::new(config_path),
            consumers: client::ConsumerManager::default(),
            producers: client::ProducerManager::default(),
            filters: filter::ConsumerFilters::default(),
            locks: lock::RebalanceLockManager::default(),
            ha_client,
            master_addr: std::sync::Mutex::new(None),
            schedule,
            timer,
            unreplicated_commits: transaction::UnreplicatedCommits::default(),
            finished_transactions: Default::default(),
            outbound,
            topics_learned: Notify::new(),
            cold_ctr: coldctr::ColdDataCtr::default(),
            routes: routes::TopicRoutes::default(),
        });
        if !inner.config.is_slave() {
            // No pop, ack or change is served before `pop_restore` replays the state log (it
            // runs once the broker runs, after its listeners are open).
            inner.pop.hold_until_restored();
        }
        if inner.config.is_slave() {
            // From now on the dispatcher teaches the slave every topic it stores; what it
            // dispatched before (recovery, or a crash before topics.json was written) is
            // learned from the existing ConsumeQueues.
            let (arrivals, weak) = (inner.hold.clone(), Arc::downgrade(&inner));
            inner.store.set_arrival_listener(Arc::new(move |topic, queue_id| {
                arrivals.message_arrived(topic, queue_id);
                if let Some(inner) = weak.upgrade() {
                    inner.learn_topic(topic, queue_id);
                }
            }));
            for (topic, queue_id) in inner.store.queue_ids() {
                inner.learn_topic(&topic, queue_id);
            }
        }
        Ok(Self { server, vip_server, ha_listener, tls_server, inner })
    }

    /// TLS as `tls.server.mode` says, for the other doors of this process (Kafka).
    pub fn tls_server(&self) -> Option<Arc<TlsServer>> {
        self.tls_server.clone()
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.server.local_addr()
    }

    pub fn inner(&self) -> Arc<BrokerInner> {
        self.inner.clone()
    }

    /// Serves until `shutdown`, then unregisters, persists and shuts the store down cleanly.
    pub async fn run(self, shutdown: CancellationToken) {
        self.run_on(shutdown, TaskTracker::new()).await
    }

    /// As [`Self::run`], on `tracker`: what else the caller runs there (another front end on
    /// this broker's state) has ended before the store shuts down.
    pub async fn run_on(self, shutdown: CancellationToken, tracker: TaskTracker) {
        let inner = self.inner.clone();
        let addr = self.server.local_addr().map(|a| a.to_string()).unwrap_or_default();
        info!(
            addr,
            broker = inner.config.broker_name,
            cluster = inner.config.broker_cluster_name,
            version = env!("CARGO_PKG_VERSION"),
            "ferrocket broker started"
        );
        inner.persist_topics().await;
        metrics::start(&inner, shutdown.clone()).await;
        tracker.spawn(register::run(inner.clone(), shutdown.clone()));
        tracker.spawn(housekeeping::run(inner.clone(), shutdown.clone()));
        if let Some(acl) = inner.acl.clone() {
            tracker.spawn(acl::watch(acl, shutdown.clone()));
        }
        if let (Some(ha), Some(listener)) = (inner.ha_service.clone(), self.ha_listener) {
            let (stop, ha_tracker) = (shutdown.clone(), tracker.clone());
            let mut ha_config = ListenerConfig::new(ListenerKind::Ha);
            ha_config.max_connections = inner.config.max_connections;
            ha_config.tls = self.tls_server.clone();
            ha_config.metrics = inner.metrics.clone();
            crate::ha::HaService::listener_timeouts(&mut ha_config);
            let started = listener.into_std().and_then(|std| {
                crate::ha::spawn_thread("ferrocket-ha-master", move || async move {
                    match tokio::net::TcpListener::from_std(std) {
                        Ok(listener) => ha.serve(Listener::new(listener, ha_config), stop, ha_tracker).await,
                        Err(e) => error!(error = %e, "HA listener unusable; no slave can connect"),
                    }
                })
            });
            match started {
                Ok(finished) => {
                    tracker.spawn(async move {
                        let _ = finished.await;
                    });
                }
                Err(e) => error!(error = %e, "cannot start the HA thread; no slave can connect"),
            }
        }
        if let Some(client) = inner.ha_client.clone() {
            let stop = shutdown.clone();
            match crate::ha::spawn_thread("ferrocket-ha-slave", move || client.run(stop)) {
                Ok(finished) => {
                    tracker.spawn(async move {
                        let _ = finished.await;
                    });
                }
                Err(e) => error!(error = %e, "cannot start the HA thread; not replicating"),
            }
            tracker.spawn(slave_sync::run(inner.clone(), shutdown.clone()));
            tracker.spawn(slave_sync::persist_learned_topics(inner.clone(), shutdown.clone()));
        } else {
            tracker.spawn(schedule::run(inner.clone(), shutdown.clone()));
            let replayed = inner.pop_restore().await;
            info!(replayed, "pop state restored");
            tracker.spawn(crate::core::pop::revive::run(inner.core.clone()));
            tracker.spawn(transaction::check::run(inner.clone(), shutdown.clone()));
            if inner.timer.files.is_some() {
                let (timer_inner, stop) = (inner.clone(), shutdown.clone());
                match crate::ha::spawn_thread("ferrocket-timer", move || timer::engine::run(timer_inner, stop)) {
                    Ok(finished) => {
                        tracker.spawn(async move {
                            let _ = finished.await;
                        });
                    }
                    Err(e) => error!(error = %e, "cannot start the timer thread; timer messages are not delivered"),
                }
            }
        }
        let processor = Arc::new(processor::BrokerProcessor::new(inner.clone()));
        if let Some(vip) = self.vip_server {
            tracker.spawn(vip.serve(processor.clone(), shutdown.clone(), tracker.clone()));
        }
        self.server.serve(processor, shutdown.clone(), tracker.clone()).await;
        inner.closing.cancel();
        register::unregister_all(&inner).await;
        tracker.close();
        // A task that does not end keeps the broker from stopping: say how many are left.
        while tokio::time::timeout(Duration::from_secs(5), tracker.wait()).await.is_err() {
            warn!(tasks = tracker.len(), "broker stopping: still waiting for tasks to end");
        }
        let files = inner.clone();
        let _ = tokio::task::spawn_blocking(move || housekeeping::persist_all(&files)).await;
        let store = inner.store.clone();
        match tokio::task::spawn_blocking(move || store.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => error!(error = %e, "store shutdown failed"),
            Err(e) => error!(error = %e, "store shutdown panicked"),
        }
        info!(addr, "ferrocket broker stopped");
    }
}
