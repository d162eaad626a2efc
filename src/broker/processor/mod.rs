//! Request handlers, one function per request code, grouped by feature, and the router that
//! dispatches a request to them after the ACL check (`broker/acl.rs`).
//!
//! Owns: `BrokerProcessor` (the remoting `RequestHandler` of the client and VIP ports), the reply
//! helpers (`ok`, `fail`, `Handled`, `BrokerError`) the handlers share. May import what `broker` may
//! (docs/architecture.md); the handlers import this file's reply helpers, and this file imports
//! the ACL middleware, never the other way round.

mod acl_admin;
mod admin;
mod admin_lists;
mod broker_stats;
mod cold_data;
mod consumer;
mod group_queries;
mod ha_status;
mod pop;
mod pop_ack;
mod pop_assign;
mod pop_peek;
mod pull;
mod query;
mod query_cq;
mod reset_offset;
mod retry;
mod runtime_info;
mod send;
mod stats;
mod store_admin;
mod sub_refresh;
mod system_topics;
mod transaction;
mod unsupported;

use std::sync::Arc;

use tracing::{debug, warn};

use super::{acl, BrokerInner};
use crate::protocol::header::HeaderError;
use crate::protocol::version::V5_0_0;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::{Connection, RequestHandler};

/// Why a request failed; [`BrokerError::response`] maps it to a response code and remark.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("{1}")]
    Code(ResponseCode, String),
    /// A bad argument: INVALID_PARAMETER for 5.x clients, SYSTEM_ERROR for older ones.
    #[error("{0}")]
    InvalidParameter(String),
}

impl BrokerError {
    fn response(&self, req: &RemotingCommand) -> RemotingCommand {
        let code = match self {
            Self::Header(_) => ResponseCode::SYSTEM_ERROR,
            Self::Code(code, _) => *code,
            Self::InvalidParameter(_) if req.version >= V5_0_0 => ResponseCode::INVALID_PARAMETER,
            Self::InvalidParameter(_) => ResponseCode::SYSTEM_ERROR,
        };
        RemotingCommand::error_response(req, code, self.to_string())
    }
}

/// A topic name from a request, checked where it enters (`model::name`, Java's
/// `TopicValidator`): INVALID_PARAMETER (SYSTEM_ERROR for clients before 5.0) naming the rule.
pub(crate) fn check_topic(topic: &str) -> Result<(), BrokerError> {
    crate::model::name::check_topic(topic).map_err(|e| BrokerError::InvalidParameter(e.to_string()))
}

/// A group name from a request, checked where it enters (`model::name`).
pub(crate) fn check_group(group: &str) -> Result<(), BrokerError> {
    crate::model::name::check_group(group).map_err(|e| BrokerError::InvalidParameter(e.to_string()))
}

pub(crate) fn fail<T>(code: ResponseCode, remark: impl Into<String>) -> Result<T, BrokerError> {
    Err(BrokerError::Code(code, remark.into()))
}

pub(crate) type Handled = Result<Option<RemotingCommand>, BrokerError>;

pub(crate) use crate::store::READ_AFTER_SEND_WAIT;

pub(crate) fn ok(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SUCCESS)
}

pub struct BrokerProcessor {
    inner: Arc<BrokerInner>,
    unsupported: unsupported::UnsupportedCodes,
}

impl BrokerProcessor {
    pub fn new(inner: Arc<BrokerInner>) -> Self {
        Self { inner, unsupported: Default::default() }
    }

    async fn dispatch(&self, conn: &Arc<Connection>, req: &RemotingCommand) -> Handled {
        let b = &self.inner;
        match req.request_code() {
            RequestCode::SEND_MESSAGE | RequestCode::SEND_MESSAGE_V2 | RequestCode::SEND_BATCH_MESSAGE => {
                send::send_message(b, conn, req).await
            }
            RequestCode::PULL_MESSAGE | RequestCode::LITE_PULL_MESSAGE => pull::pull_message(b, conn, req).await,
            RequestCode::POP_MESSAGE => pop::pop_message(b, req).await,
            RequestCode::ACK_MESSAGE => pop_ack::ack_message(b, req).await,
            RequestCode::CHANGE_MESSAGE_INVISIBLETIME => pop_ack::change_invisible_time(b, req).await,
            RequestCode::BATCH_ACK_MESSAGE => pop_ack::batch_ack_message(b, req).await,
            RequestCode::PEEK_MESSAGE => pop_peek::peek_message(b, req).await,
            RequestCode::NOTIFICATION => pop_peek::notification(b, req).await,
            RequestCode::POLLING_INFO => pop_peek::polling_info(b, req),
            RequestCode::QUERY_ASSIGNMENT => pop_assign::query_assignment(b, req).await,
            RequestCode::SET_MESSAGE_REQUEST_MODE => pop_assign::set_message_request_mode(b, req).await,
            RequestCode::HEART_BEAT => consumer::heart_beat(b, conn, req).await,
            RequestCode::UNREGISTER_CLIENT => consumer::unregister_client(b, conn, req).await,
            RequestCode::CHECK_CLIENT_CONFIG => consumer::check_client_config(b, req),
            RequestCode::END_TRANSACTION => transaction::end_transaction(b, req).await,
            RequestCode::GET_CONSUMER_LIST_BY_GROUP => consumer::get_consumer_list_by_group(b, req),
            RequestCode::QUERY_CONSUMER_OFFSET => consumer::query_consumer_offset(b, req),
            RequestCode::UPDATE_CONSUMER_OFFSET => consumer::update_consumer_offset(b, req),
            RequestCode::GET_MAX_OFFSET => consumer::get_max_offset(b, req).await,
            RequestCode::GET_MIN_OFFSET => consumer::get_min_offset(b, req),
            RequestCode::SEARCH_OFFSET_BY_TIMESTAMP => consumer::search_offset_by_timestamp(b, req),
            RequestCode::GET_EARLIEST_MSG_STORETIME => consumer::get_earliest_msg_storetime(b, req),
            RequestCode::CONSUMER_SEND_MSG_BACK => retry::consumer_send_msg_back(b, req).await,
            RequestCode::LOCK_BATCH_MQ => consumer::lock_batch_mq(b, req),
            RequestCode::UNLOCK_BATCH_MQ => consumer::unlock_batch_mq(b, req),
            RequestCode::QUERY_MESSAGE => query::query_message(b, req),
            RequestCode::VIEW_MESSAGE_BY_ID => query::view_message_by_id(b, req),
            RequestCode::UPDATE_AND_CREATE_TOPIC => admin::update_and_create_topic(b, req).await,
            RequestCode(18) => admin_lists::update_and_create_topic_list(b, req).await,
            RequestCode::DELETE_TOPIC_IN_BROKER => admin::delete_topic_in_broker(b, req).await,
            RequestCode::GET_ALL_TOPIC_CONFIG => admin::get_all_topic_config(b, req),
            RequestCode(351) => admin::get_topic_config(b, req),
            RequestCode::GET_ALL_CONSUMER_OFFSET => Ok(Some(ok(req).with_body(b.offsets.to_json()))),
            RequestCode::GET_ALL_DELAY_OFFSET => Ok(Some(ok(req).with_body(b.schedule.to_json()))),
            RequestCode::GET_TIMER_CHECK_POINT => match b.timer.checkpoint() {
                Some(body) => Ok(Some(ok(req).with_body(body))),
                None => fail(ResponseCode::SYSTEM_ERROR, "The checkpoint is null"),
            },
            RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
                admin::update_and_create_subscriptiongroup(b, req).await
            }
            RequestCode(225) => admin_lists::update_and_create_subscriptiongroup_list(b, req).await,
            RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => admin::get_all_subscriptiongroup_config(b, req),
            RequestCode::DELETE_SUBSCRIPTIONGROUP => admin::delete_subscriptiongroup(b, req).await,
            RequestCode::GET_TOPIC_STATS_INFO => stats::get_topic_stats_info(b, req),
            RequestCode::GET_CONSUME_STATS => stats::get_consume_stats(b, req),
            RequestCode::GET_CONSUMER_CONNECTION_LIST => stats::get_consumer_connection_list(b, req),
            RequestCode::GET_PRODUCER_CONNECTION_LIST => stats::get_producer_connection_list(b, req),
            RequestCode::QUERY_TOPIC_CONSUME_BY_WHO => stats::query_topic_consume_by_who(b, req),
            RequestCode::INVOKE_BROKER_TO_RESET_OFFSET => reset_offset::invoke_broker_to_reset_offset(b, req).await,
            RequestCode::CLONE_GROUP_OFFSET => stats::clone_group_offset(b, req),
            RequestCode::GET_CONSUMER_RUNNING_INFO => stats::get_consumer_running_info(b, req).await,
            RequestCode::CONSUME_MESSAGE_DIRECTLY => stats::consume_message_directly(b, req).await,
            RequestCode(223) => stats::invoke_broker_to_get_consumer_status(b, req).await,
            RequestCode::GET_BROKER_RUNTIME_INFO => runtime_info::get_broker_runtime_info(b, req),
            RequestCode(315) => broker_stats::view_broker_stats_data(b, req),
            RequestCode(317) => broker_stats::get_broker_consume_stats(b, req),
            RequestCode(328) => broker_stats::get_all_producer_info(b, req),
            RequestCode(343) => group_queries::query_topics_by_consumer(b, req),
            RequestCode(345) => group_queries::query_subscription_by_consumer(b, req),
            RequestCode(303) => group_queries::query_consume_time_span(b, req),
            RequestCode(352) => group_queries::get_subscription_group_config(b, req),
            RequestCode(305) => system_topics::get_system_topic_list_from_broker(b, req),
            RequestCode(306) => store_admin::clean_expired_consume_queue(b, req).await,
            RequestCode(316) => store_admin::clean_unused_topic(b, req).await,
            RequestCode(321) => query_cq::query_consume_queue(b, req),
            RequestCode(329) => store_admin::delete_expired_commit_log(b, req).await,
            RequestCode(907) => ha_status::get_broker_ha_status(b, req),
            RequestCode(908) => ha_status::reset_master_flush_offset(b, req),
            RequestCode(2001) => cold_data::update_config(b, req),
            RequestCode(2002) => cold_data::remove_config(b, req),
            RequestCode(2003) => cold_data::get_info(b, req),
            RequestCode(2004) => store_admin::set_commit_log_read_mode(b, req),
            RequestCode::GET_BROKER_CONFIG => admin::get_broker_config(b, req),
            RequestCode::UPDATE_BROKER_CONFIG => admin::update_broker_config(b, req).await,
            RequestCode::UPDATE_AND_CREATE_ACL_CONFIG => acl_admin::update_and_create_acl_config(b, req).await,
            RequestCode::DELETE_ACL_CONFIG => acl_admin::delete_acl_config(b, req).await,
            RequestCode::GET_BROKER_CLUSTER_ACL_INFO => acl_admin::get_broker_cluster_acl_info(b, req),
            RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG => acl_admin::update_global_white_addrs_config(b, req).await,
            _ => Ok(Some(self.unsupported.refuse(req, conn.peer()))),
        }
    }
}

impl RequestHandler for BrokerProcessor {
    async fn handle(&self, conn: &Arc<Connection>, req: RemotingCommand) -> Option<RemotingCommand> {
        if let Some(acl_tables) = self.inner.acl.as_deref() {
            if let Some(refused) = acl::check(acl_tables, &self.inner.store, &req, conn.peer()) {
                return refused;
            }
        }
        match self.dispatch(conn, &req).await {
            Ok(resp) => resp,
            Err(e) => {
                let resp = e.response(&req);
                // "No committed offset yet" is how every new consumer group starts, not a fault.
                if resp.response_code() == ResponseCode::QUERY_NOT_FOUND {
                    debug!(code = %req.request_code(), error = %e, peer = %conn.peer(), "request answered: not found");
                } else {
                    warn!(code = %req.request_code(), error = %e, peer = %conn.peer(), "request refused");
                }
                Some(resp)
            }
        }
    }

    fn metrics_node(&self) -> Option<&crate::telemetry::Node> {
        self.inner.metrics.as_deref()
    }

    /// Sends are stored deferred (`send::send_message`): their records are written here, once
    /// for every answer about to be written, before any of them acknowledges its message.
    fn before_write(&self) -> Result<(), String> {
        self.inner.store.commit()
    }

    fn connection_closed(&self, conn: &Arc<Connection>) {
        let inner = self.inner.clone();
        let conn_id = conn.id();
        inner.producers.connection_closed(conn_id);
        let changed = inner.consumers.connection_closed(conn_id);
        if !changed.is_empty() {
            tokio::spawn(async move {
                for group in changed {
                    inner.notify_consumer_ids_changed(&group).await;
                }
            });
        }
    }
}
