//! The NameServer's request handler: one function per request code
//! (`DefaultRequestProcessor.java`, `ClientRequestProcessor.java`).
//!
//! May import: `config`, `model`, `persist`, `protocol`, `remoting`, `telemetry` and modules of
//! `namesrv/`; the area's rule is its line in docs/architecture.md.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Instant;

use tracing::{info, warn};

use super::config::NamesrvConfig;
use super::kv::{KvConfigManager, KvError};
use super::route::{BrokerIdentity, Registration, RouteError, RouteInfoManager};
use crate::model::{perm, DataVersion};
use crate::protocol::body::register::{RegisterBodyError, RegisterBrokerBody};
use crate::protocol::body::route::{RouteJson, TopicRouteData};
use crate::protocol::body::{json, to_vec, KvTable, TopicList};
use crate::protocol::header::namesrv::*;
use crate::protocol::header::{CommandHeader, HeaderError};
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::{Connection, RequestHandler};

/// KV namespace holding order-topic queue layouts (`NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`).
pub const NAMESPACE_ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// Why a request failed; [`NamesrvError::response`] maps each to a response code and remark.
#[derive(Debug, thiserror::Error)]
pub enum NamesrvError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error(transparent)]
    RegisterBody(#[from] RegisterBodyError),
    #[error("invalid request body: {0}")]
    Body(String),
    #[error(transparent)]
    Kv(#[from] KvError),
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error("crc32 not match")]
    CrcMismatch,
    #[error("{0}")]
    Refused(String),
    #[error("Can not update config in black list.")]
    BlackListed,
}

impl NamesrvError {
    fn response(&self, req: &RemotingCommand) -> RemotingCommand {
        let code = match self {
            Self::BlackListed => ResponseCode::NO_PERMISSION,
            _ => ResponseCode::SYSTEM_ERROR,
        };
        RemotingCommand::error_response(req, code, self.to_string())
    }
}

type Handled = Result<RemotingCommand, NamesrvError>;

/// Route tables, KV config and configuration, shared by every connection.
pub struct NamesrvProcessor {
    routes: RwLock<RouteInfoManager>,
    kv: Arc<KvConfigManager>,
    config: Arc<RwLock<NamesrvConfig>>,
    /// The one writer of the config file UPDATE_NAMESRV_CONFIG persists to.
    config_file: Arc<crate::persist::ConfigFile>,
    /// Labels of the NameServer's metrics; `None` with `metricsExporterType=DISABLE`.
    metrics: Option<Arc<crate::telemetry::Node>>,
    /// Keys UPDATE_NAMESRV_CONFIG changed: the ones written back to that file.
    updated: Arc<Mutex<BTreeSet<&'static str>>>,
    started: Instant,
    /// Connections brokers registered over, so an expired broker's connection can be closed.
    broker_conns: Mutex<HashMap<u64, Weak<Connection>>>,
}

impl NamesrvProcessor {
    pub fn new(config: NamesrvConfig, kv: KvConfigManager) -> Self {
        let path = config.config_store_path.clone();
        let metrics = config.metrics_node();
        let config = Arc::new(RwLock::new(config));
        let source = config.clone();
        let updated: Arc<Mutex<BTreeSet<&'static str>>> = Arc::default();
        let (keys, file) = (updated.clone(), path.clone());
        // The file as it is, with every key changed since start-up set to its current value (the
        // writer is the file's only writer, so reading it here sees our last write).
        let snapshot = move || {
            let text = std::fs::read(&file).unwrap_or_default();
            let changed: Vec<(String, String)> = {
                let (c, keys) =
                    (source.read().unwrap_or_else(|e| e.into_inner()), keys.lock().unwrap_or_else(|e| e.into_inner()));
                c.entries().into_iter().filter(|(k, _)| keys.contains(k)).map(|(k, v)| (k.to_owned(), v)).collect()
            };
            crate::properties::merge_properties(&text, &changed)
        };
        Self {
            routes: RwLock::new(RouteInfoManager::new()),
            kv: Arc::new(kv),
            config,
            config_file: crate::persist::ConfigFile::new(path, Box::new(snapshot)),
            updated,
            metrics,
            started: Instant::now(),
            broker_conns: Mutex::new(HashMap::new()),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The labels of this NameServer's metrics.
    pub fn metrics_labels(&self) -> Option<Arc<crate::telemetry::Node>> {
        self.metrics.clone()
    }

    /// Live brokers and topics with routes.
    pub fn route_counts(&self) -> (usize, usize) {
        self.routes().counts()
    }

    fn routes(&self) -> std::sync::RwLockReadGuard<'_, RouteInfoManager> {
        self.routes.read().unwrap_or_else(|e| e.into_inner())
    }

    fn routes_mut(&self) -> std::sync::RwLockWriteGuard<'_, RouteInfoManager> {
        self.routes.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn config(&self) -> NamesrvConfig {
        self.config.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn conns(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Weak<Connection>>> {
        self.broker_conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes brokers past their timeout and closes their connections (`scanNotActiveBroker`).
    pub fn scan_not_active_brokers(&self) {
        let expired = self.routes_mut().scan_not_active(self.now_ms());
        for (cluster, addr, conn_id) in expired {
            warn!(cluster, broker = addr, "broker expired: no registration within its timeout; removed");
            if let Some(conn) = conn_id.and_then(|id| self.conns().remove(&id)).and_then(|w| w.upgrade()) {
                conn.close();
            }
        }
    }

    async fn dispatch(&self, conn: &Arc<Connection>, req: &RemotingCommand) -> Handled {
        match req.request_code() {
            RequestCode::GET_ROUTEINFO_BY_TOPIC => self.get_routeinfo_by_topic(req),
            RequestCode::REGISTER_BROKER => self.register_broker(conn, req),
            RequestCode::UNREGISTER_BROKER => self.unregister_broker(req),
            RequestCode::QUERY_DATA_VERSION => self.query_data_version(req),
            RequestCode::BROKER_HEARTBEAT => self.broker_heartbeat(req),
            RequestCode::GET_BROKER_CLUSTER_INFO => Ok(ok(req).with_body(self.routes().cluster_info().to_json())),
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => self.topic_list(req, true, |r| r.all_topics()),
            RequestCode::GET_TOPICS_BY_CLUSTER => self.get_topics_by_cluster(req),
            RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS => Ok(ok(req).with_body(to_vec(&self.routes().system_topics()))),
            RequestCode::GET_UNIT_TOPIC_LIST => {
                self.topic_list(req, false, |r| r.topics_with_sys_flag(|f| f & perm::FLAG_UNIT != 0))
            }
            RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST => {
                self.topic_list(req, false, |r| r.topics_with_sys_flag(|f| f & perm::FLAG_UNIT_SUB != 0))
            }
            RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => self.topic_list(req, false, |r| {
                r.topics_with_sys_flag(|f| f & perm::FLAG_UNIT == 0 && f & perm::FLAG_UNIT_SUB != 0)
            }),
            RequestCode::DELETE_TOPIC_IN_NAMESRV => self.delete_topic_in_namesrv(req),
            RequestCode::REGISTER_TOPIC_IN_NAMESRV => self.register_topic_in_namesrv(req),
            RequestCode::WIPE_WRITE_PERM_OF_BROKER => self.write_perm_of_broker(req, false),
            RequestCode::ADD_WRITE_PERM_OF_BROKER => self.write_perm_of_broker(req, true),
            RequestCode::PUT_KV_CONFIG => self.put_kv_config(req).await,
            RequestCode::GET_KV_CONFIG => self.get_kv_config(req),
            RequestCode::DELETE_KV_CONFIG => self.delete_kv_config(req).await,
            RequestCode::GET_KVLIST_BY_NAMESPACE => self.get_kvlist_by_namespace(req),
            RequestCode::GET_NAMESRV_CONFIG => {
                Ok(ok(req).with_body(crate::properties::to_properties(&self.config().entries())))
            }
            RequestCode::UPDATE_NAMESRV_CONFIG => self.update_namesrv_config(req).await,
            code => Ok(RemotingCommand::error_response(
                req,
                ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
                format!(" request type {} not supported", code.0),
            )),
        }
    }

    fn get_routeinfo_by_topic(&self, req: &RemotingCommand) -> Handled {
        let h = GetRouteInfoRequestHeader::decode(&req.ext_fields)?;
        let config = self.config();
        if config.need_wait_for_service && self.started.elapsed().as_secs() < config.wait_seconds_for_service {
            return Ok(RemotingCommand::error_response(req, ResponseCode::SYSTEM_ERROR, "name server not ready"));
        }
        let Some(mut route) = self.routes().route(&h.topic) else {
            return Ok(RemotingCommand::error_response(
                req,
                ResponseCode::TOPIC_NOT_EXIST,
                format!(
                    "No topic route info in name server for the topic: {}\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
                    h.topic
                ),
            ));
        };
        if config.order_message_enable {
            route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, &h.topic);
        }
        let form = RouteJson::for_request(req.version, h.accept_standard_json_only.unwrap_or(false));
        Ok(ok(req).with_body(route.to_json(form)))
    }

    fn register_broker(&self, conn: &Arc<Connection>, req: &RemotingCommand) -> Handled {
        let h = RegisterBrokerRequestHeader::decode(&req.ext_fields)?;
        let crc = h.body_crc32.unwrap_or(0);
        if crc != 0 && crc != (crc32fast::hash(&req.body) & 0x7FFF_FFFF) as i32 {
            return Err(NamesrvError::CrcMismatch);
        }
        let body = if req.body.is_empty() {
            RegisterBrokerBody::default()
        } else {
            RegisterBrokerBody::decode(&req.body, h.compressed, req.version)?
        };
        let config = self.config();
        let wrapper = body.topic_config_serialize_wrapper;
        let registration = Registration {
            broker: BrokerIdentity {
                cluster: h.cluster_name.clone(),
                name: h.broker_name.clone(),
                addr: h.broker_addr.clone(),
                id: h.broker_id,
            },
            ha_server_addr: h.ha_server_addr.unwrap_or_default(),
            timeout_ms: h
                .heartbeat_timeout_millis
                .and_then(|t| u64::try_from(t).ok())
                .unwrap_or(config.broker_channel_expired_time),
            enable_acting_master: h.enable_acting_master,
            zone_name: req.ext_fields.get("__ZONE_NAME").cloned(),
            data_version: wrapper.data_version,
            topics: Some(wrapper.topic_config_table),
            conn_id: Some(conn.id()),
        };
        let (result, first) = {
            let mut routes = self.routes_mut();
            let first = routes.brokers_on_connection(conn.id()).is_empty();
            let r =
                routes.register_broker(registration, self.now_ms(), config.delete_topic_with_broker_registration)?;
            (r, first)
        };
        if first {
            info!(
                cluster = h.cluster_name,
                broker = h.broker_name,
                id = h.broker_id,
                addr = h.broker_addr,
                "broker registered"
            );
        }
        self.conns().insert(conn.id(), Arc::downgrade(conn));
        let mut resp = ok(req);
        RegisterBrokerResponseHeader { ha_server_addr: result.ha_server_addr, master_addr: result.master_addr }
            .encode(&mut resp.ext_fields);
        if config.return_order_topic_config_to_broker {
            if let Some(table) = self.kv.namespace(NAMESPACE_ORDER_TOPIC_CONFIG) {
                resp.body = to_vec(&KvTable { table }).into();
            }
        }
        Ok(resp)
    }

    fn unregister_broker(&self, req: &RemotingCommand) -> Handled {
        let h = BrokerIdentityHeader::decode(&req.ext_fields)?;
        self.routes_mut().unregister_broker(&h.cluster_name, &h.broker_addr, &h.broker_name);
        info!(
            cluster = h.cluster_name,
            broker = h.broker_name,
            id = h.broker_id,
            addr = h.broker_addr,
            "broker unregistered"
        );
        Ok(ok(req))
    }

    fn query_data_version(&self, req: &RemotingCommand) -> Handled {
        let h = BrokerIdentityHeader::decode(&req.ext_fields)?;
        let version: DataVersion = if req.body.is_empty() {
            DataVersion::default()
        } else {
            json::from_slice(&req.body).map_err(|e| NamesrvError::Body(format!("DataVersion: {e}")))?
        };
        let (changed, stored) =
            self.routes_mut().query_data_version(&h.cluster_name, &h.broker_addr, &version, self.now_ms());
        let mut resp = ok(req);
        QueryDataVersionResponseHeader { changed }.encode(&mut resp.ext_fields);
        if let Some(stored) = stored {
            resp.body = to_vec(&stored).into();
        }
        Ok(resp)
    }

    fn broker_heartbeat(&self, req: &RemotingCommand) -> Handled {
        let h = BrokerHeartbeatRequestHeader::decode(&req.ext_fields)?;
        self.routes_mut().touch(&h.cluster_name, &h.broker_addr, self.now_ms());
        Ok(ok(req))
    }

    fn topic_list(&self, req: &RemotingCommand, all: bool, list: impl Fn(&RouteInfoManager) -> TopicList) -> Handled {
        let config = self.config();
        let enabled = if all { config.enable_all_topic_list } else { config.enable_topic_list };
        if !enabled {
            return Ok(RemotingCommand::error_response(req, ResponseCode::SYSTEM_ERROR, "disable"));
        }
        Ok(ok(req).with_body(to_vec(&list(&self.routes()))))
    }

    fn get_topics_by_cluster(&self, req: &RemotingCommand) -> Handled {
        let h = GetTopicsByClusterRequestHeader::decode(&req.ext_fields)?;
        self.topic_list(req, false, |r| r.topics_by_cluster(&h.cluster))
    }

    fn delete_topic_in_namesrv(&self, req: &RemotingCommand) -> Handled {
        let h = DeleteTopicFromNamesrvRequestHeader::decode(&req.ext_fields)?;
        self.routes_mut().delete_topic(&h.topic, h.cluster_name.as_deref());
        info!(topic = h.topic, cluster = h.cluster_name, "topic deleted from routes");
        Ok(ok(req))
    }

    fn register_topic_in_namesrv(&self, req: &RemotingCommand) -> Handled {
        let h = RegisterTopicRequestHeader::decode(&req.ext_fields)?;
        let route: TopicRouteData =
            json::from_slice(&req.body).map_err(|e| NamesrvError::Body(format!("TopicRouteData: {e}")))?;
        self.routes_mut().register_topic(&h.topic, &route.queue_datas);
        Ok(ok(req))
    }

    fn write_perm_of_broker(&self, req: &RemotingCommand, add: bool) -> Handled {
        let h = BrokerNameHeader::decode(&req.ext_fields)?;
        let count = self.routes_mut().set_write_perm_of_broker(&h.broker_name, add);
        info!(broker = h.broker_name, topics = count, add, "write permission of broker changed");
        let mut resp = ok(req);
        if add {
            AddWritePermOfBrokerResponseHeader { add_topic_count: count }.encode(&mut resp.ext_fields);
        } else {
            WipeWritePermOfBrokerResponseHeader { wipe_topic_count: count }.encode(&mut resp.ext_fields);
        }
        Ok(resp)
    }

    async fn put_kv_config(&self, req: &RemotingCommand) -> Handled {
        let h = PutKvConfigRequestHeader::decode(&req.ext_fields)?;
        let kv = self.kv.clone();
        blocking(move || kv.put(&h.namespace, &h.key, &h.value)).await??;
        Ok(ok(req))
    }

    fn get_kv_config(&self, req: &RemotingCommand) -> Handled {
        let h = KvConfigKeyHeader::decode(&req.ext_fields)?;
        match self.kv.get(&h.namespace, &h.key) {
            Some(value) => {
                let mut resp = ok(req);
                GetKvConfigResponseHeader { value: Some(value) }.encode(&mut resp.ext_fields);
                Ok(resp)
            }
            None => Ok(RemotingCommand::error_response(
                req,
                ResponseCode::QUERY_NOT_FOUND,
                format!("No config item, Namespace: {} Key: {}", h.namespace, h.key),
            )),
        }
    }

    async fn delete_kv_config(&self, req: &RemotingCommand) -> Handled {
        let h = KvConfigKeyHeader::decode(&req.ext_fields)?;
        let kv = self.kv.clone();
        blocking(move || kv.delete(&h.namespace, &h.key)).await??;
        Ok(ok(req))
    }

    fn get_kvlist_by_namespace(&self, req: &RemotingCommand) -> Handled {
        let h = GetKvListByNamespaceRequestHeader::decode(&req.ext_fields)?;
        match self.kv.namespace(&h.namespace) {
            Some(table) => Ok(ok(req).with_body(to_vec(&KvTable { table }))),
            None => Ok(RemotingCommand::error_response(
                req,
                ResponseCode::QUERY_NOT_FOUND,
                format!("No config item, Namespace: {}", h.namespace),
            )),
        }
    }

    async fn update_namesrv_config(&self, req: &RemotingCommand) -> Handled {
        let text = String::from_utf8_lossy(&req.body);
        let pairs = crate::properties::parse_properties(text.as_bytes());
        {
            // Read, change and store under one lock: concurrent updates never lose each other's keys.
            let mut current = self.config.write().unwrap_or_else(|e| e.into_inner());
            let mut next = current.clone();
            if pairs.iter().any(|(k, _)| next.is_black_listed(k)) {
                return Err(NamesrvError::BlackListed);
            }
            for (key, value) in &pairs {
                if !next.set(key, value).map_err(|e| NamesrvError::Refused(e.to_string()))? {
                    return Err(NamesrvError::Refused(format!("unknown config key '{key}'")));
                }
            }
            next.validate().map_err(|e| NamesrvError::Refused(e.to_string()))?;
            if next.config_store_path != current.config_store_path {
                return Err(NamesrvError::Refused("configStorePath cannot change while running".into()));
            }
            *current = next;
            let known = NamesrvConfig::KEYS.iter().filter(|k| pairs.iter().any(|(p, _)| p == *k));
            self.updated.lock().unwrap_or_else(|e| e.into_inner()).extend(known);
        }
        info!(keys = ?pairs.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), "namesrv config updated");
        // One writer: the file never ends up with an older config than a later request's.
        self.config_file
            .persist()
            .await
            .map_err(|e| NamesrvError::Refused(format!("config updated but not persisted: {e}")))?;
        Ok(ok(req))
    }
}

impl RequestHandler for NamesrvProcessor {
    async fn handle(&self, conn: &Arc<Connection>, req: RemotingCommand) -> Option<RemotingCommand> {
        let resp = match self.dispatch(conn, &req).await {
            Ok(resp) => resp,
            Err(e) => {
                warn!(code = %req.request_code(), error = %e, "request failed");
                e.response(&req)
            }
        };
        Some(resp)
    }

    fn metrics_node(&self) -> Option<&crate::telemetry::Node> {
        self.metrics.as_deref()
    }

    fn connection_closed(&self, conn: &Arc<Connection>) {
        self.conns().remove(&conn.id());
        let mut routes = self.routes_mut();
        for (cluster, addr) in routes.brokers_on_connection(conn.id()) {
            routes.remove_broker_addr(&cluster, &addr);
            info!(cluster, broker = addr, "broker connection closed; broker removed");
        }
    }
}

fn ok(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SUCCESS)
}

/// Runs blocking file work off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, NamesrvError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| NamesrvError::Refused(format!("background file task failed: {e}")))
}
