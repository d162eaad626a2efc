//! The ACL middleware on the broker's ports (`aclEnable=true`): every request is checked before
//! it is handled, as Java's server RPC hook does, and the ACL files are reloaded when they change.
//! The ACL admin requests mqadmin sends (codes 50-53) are `processor/acl_admin.rs`'s.
//!
//! Owns: what each request code asks for (`access_request`), the check (`check`), the reload loop
//! (`watch`). May import: `crate::acl` (accounts, signatures), `crate::model`, `crate::protocol`
//! (the request it reads), `crate::store` (the record an offset names), `broker::transaction` (the
//! half topic's name). Never the request handlers (`broker::processor` imports this file).
//!
//! ```text
//! request -> access_request (the resources each code touches, as 5.x PlainAccessResource.parse,
//!            plus LITE_PULL_MESSAGE, the POP codes (SUB on topic and group; BATCH_ACK_MESSAGE
//!            on each entry of its body), the topic of the record VIEW_MESSAGE_BY_ID and
//!            CONSUMER_SEND_MSG_BACK read by offset, and END_TRANSACTION's real topic)
//!         -> Acl::validate -> refused: SYSTEM_ERROR "org.apache.rocketmq.acl.common.AclException: <why>"
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::acl::perm::{PUB, SUB};
use crate::acl::{address, AccessRequest, Acl};
use crate::broker::transaction::HALF_TOPIC;
use crate::model::group::{retry_topic, RETRY_GROUP_TOPIC_PREFIX};
use crate::model::message::{self, property};
use crate::protocol::body::client::HeartbeatData;
use crate::protocol::body::pop::BatchAckMessageRequestBody;
use crate::protocol::header::acl::{ACCESS_KEY, SIGNATURE, UNIQUE_MSG_QUERY_FLAG};
use crate::protocol::version::V4_9_3;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::store::MessageStore;

/// How often the files are checked for changes (`AclFileWatchService.WATCH_INTERVAL`).
const WATCH_INTERVAL: Duration = Duration::from_secs(5);

/// The record at a CommitLog offset, as permissions see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordTopic {
    /// The topic it is stored in.
    pub topic: String,
    /// For a transactional half message, the topic a commit puts it in (`REAL_TOPIC`).
    pub bound_for: Option<String>,
}

/// The [`RecordTopic`] of the record at `offset` in `store`.
pub fn record_topic(store: &MessageStore, offset: i64) -> Option<RecordTopic> {
    let m = store.named_message(offset)?;
    let bound_for = (m.topic == HALF_TOPIC)
        .then(|| message::parse_properties(&m.properties).remove(property::REAL_TOPIC))
        .flatten();
    Some(RecordTopic { topic: m.topic, bound_for })
}

/// What `req` asks for, as the validator sees it. `Err` is why it cannot even be read.
/// `record_at` finds the record at a CommitLog offset: VIEW_MESSAGE_BY_ID and
/// CONSUMER_SEND_MSG_BACK read a record by its offset, whatever its topic, so (unlike Java) they
/// need SUB on that topic too (offset ids are sequential: without it an account could read the
/// whole CommitLog), and END_TRANSACTION needs PUB on the topic the half message is bound for
/// (else any account could commit or roll back any producer's transaction).
pub fn access_request<'a>(
    req: &'a RemotingCommand,
    peer: SocketAddr,
    record_at: &dyn Fn(i64) -> Option<RecordTopic>,
) -> Result<AccessRequest<'a>, String> {
    let ext = &req.ext_fields;
    let get = |k: &str| ext.get(k).map(String::as_str);
    let mut resources: Vec<(String, u8)> = Vec::new();
    let mut add = |res: Option<String>, perm: u8| {
        if let Some(r) = res {
            resources.push((r, perm));
        }
    };
    let topic_perm = |t: &str| if t.starts_with(RETRY_GROUP_TOPIC_PREFIX) { SUB } else { PUB };
    let group = |k: &str| get(k).map(retry_topic);
    let record = |k: &str| get(k).and_then(|o| o.trim().parse().ok()).and_then(record_at);
    match req.request_code() {
        RequestCode::SEND_MESSAGE => {
            if let Some(t) = get("topic") {
                add(Some(t.to_owned()), topic_perm(t));
            }
        }
        RequestCode::SEND_MESSAGE_V2 | RequestCode::SEND_BATCH_MESSAGE => {
            if let Some(t) = get("b") {
                add(Some(t.to_owned()), topic_perm(t));
            }
        }
        RequestCode::CONSUMER_SEND_MSG_BACK => {
            add(group("group"), SUB);
            add(record("offset").map(|r| r.topic), SUB);
        }
        RequestCode::VIEW_MESSAGE_BY_ID => add(record("offset").map(|r| r.topic), SUB),
        RequestCode::END_TRANSACTION => add(record("commitLogOffset").map(|r| r.bound_for.unwrap_or(r.topic)), PUB),
        // Java's ACL 1.0 (`PlainAccessResource.parse`) has no case for LITE_PULL_MESSAGE, so a
        // lite pull needed no permission at all; it is checked like the pull it is (as 5.x ACL 2.0).
        RequestCode::PULL_MESSAGE
        | RequestCode::LITE_PULL_MESSAGE
        | RequestCode::POP_MESSAGE
        | RequestCode::PEEK_MESSAGE
        | RequestCode::ACK_MESSAGE
        | RequestCode::CHANGE_MESSAGE_INVISIBLETIME
        | RequestCode::NOTIFICATION
        | RequestCode::POLLING_INFO => {
            add(get("topic").map(str::to_owned), SUB);
            add(group("consumerGroup"), SUB);
        }
        // The names are in the body: every entry's topic and group.
        RequestCode::BATCH_ACK_MESSAGE => {
            for a in BatchAckMessageRequestBody::parse(&req.body)?.acks {
                add(Some(a.topic), SUB);
                add(Some(retry_topic(&a.consumer_group)), SUB);
            }
        }
        RequestCode::QUERY_MESSAGE => add(get("topic").map(str::to_owned), SUB),
        RequestCode::HEART_BEAT => {
            let hb = HeartbeatData::parse(&req.body)?;
            for c in &hb.consumer_data_set {
                add(Some(retry_topic(&c.group_name)), SUB);
                for s in &c.subscription_data_set {
                    add(Some(s.topic.clone()), SUB);
                }
            }
        }
        RequestCode::UNREGISTER_CLIENT | RequestCode::GET_CONSUMER_LIST_BY_GROUP => add(group("consumerGroup"), SUB),
        RequestCode::UPDATE_CONSUMER_OFFSET => {
            add(group("consumerGroup"), SUB);
            add(get("topic").map(str::to_owned), SUB);
        }
        _ => {}
    }
    let skip_unique = req.version <= V4_9_3;
    let signed_values = ext
        .iter()
        .filter(|(k, _)| *k != SIGNATURE && !(skip_unique && *k == UNIQUE_MSG_QUERY_FLAG))
        .map(|(_, v)| v.as_str())
        .collect();
    Ok(AccessRequest {
        code: req.code,
        host: address::host_of(peer.ip()),
        access_key: get(ACCESS_KEY),
        signature: get(SIGNATURE),
        signed_values,
        body: &req.body,
        resources,
    })
}

/// The hook: `None` when `req` may be handled, else the response refusing it (`Some(None)` for a
/// oneway request, which is refused without an answer).
pub fn check(
    acl: &Acl,
    store: &MessageStore,
    req: &RemotingCommand,
    peer: SocketAddr,
) -> Option<Option<RemotingCommand>> {
    let why = match access_request(req, peer, &|offset| record_topic(store, offset)) {
        Ok(access) => acl.validate(&access).err()?,
        Err(e) => e,
    };
    warn!(code = %req.request_code(), peer = %peer, access_key = req.ext_fields.get(ACCESS_KEY).map(String::as_str).unwrap_or(""), reason = %why, "request refused by ACL");
    let remark = format!("org.apache.rocketmq.acl.common.AclException: {why}");
    Some((!req.is_oneway()).then(|| RemotingCommand::error_response(req, ResponseCode::SYSTEM_ERROR, remark)))
}

/// Reloads the ACL files when they change, until `shutdown`.
pub async fn watch(acl: Arc<Acl>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(WATCH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let acl = acl.clone();
        match tokio::task::spawn_blocking(move || acl.reload_if_changed()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                warn!(error = %e, "ACL files changed but cannot be loaded; the previous accounts stay in force")
            }
            Err(e) => warn!(error = %e, "ACL reload did not finish"),
        }
    }
}
