//! SendMessage (Java's `SendMessageActivity` in front of `SendMessageProcessor`): the request
//! checked as the proxy checks it, each message turned into the record the store appends, and
//! the put done through the core's `admit` / `writable_topic` / `append`, so flow control,
//! statistics, metrics, flush and replica waits are the same as for the other doors.
//!
//! ```text
//! messages (1..=1024, one topic) -> validate (topic, tag, keys, properties, group, body, delay)
//!   -> queue: a lone message with a message group -> Guava consistentHash(group.hashCode(),
//!             writeQueueNums) (FIFO, as the Java proxy), otherwise round robin
//!   -> record: user properties + TAGS, KEYS, UNIQ_KEY (the client's id), PGROUP (= topic),
//!              __SHARDINGKEY, TIMER_DELIVER_MS, TRAN_MSG (+ CHECK_IMMUNITY_TIME_IN_SECONDS)
//!   -> the broker's hooks (half message, or timer/delay diversion) -> core append
//! ```
//!
//! May import: `core`, `model`, `meta`, `store` (the clock), `telemetry`, `grpc`.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::pb::{Code, Message, MessageType, SendMessageRequest, SendMessageResponse, SendResultEntry};
use super::status::{self, of_refusal, Refused};
use super::{validate, Grpc};
use crate::core::{Durability, Protocol, Replicas, TopicWrite, Traffic};
use crate::model::message::{self, property, sys_flag, MessageToStore};
use crate::model::TopicFilterType;
use crate::telemetry::MessageType as Kind;

/// The property the Java proxy writes a message's group into (`PROPERTY_SHARDING_KEY`).
const SHARDING_KEY: &str = "__SHARDINGKEY";
const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
const BORN_HOST: &str = "__BORNHOST";
const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";

/// One message made ready to store, and what the answer needs of it.
struct Built {
    record: MessageToStore,
    kind: Kind,
}

pub async fn send(g: &Grpc, req: SendMessageRequest, peer: SocketAddr) -> SendMessageResponse {
    match try_send(g, req, peer).await {
        Ok(r) => r,
        Err(r) => SendMessageResponse { status: Some(r.status()), entries: Vec::new() },
    }
}

async fn try_send(g: &Grpc, req: SendMessageRequest, peer: SocketAddr) -> Result<SendMessageResponse, Refused> {
    let core = &g.core;
    let count = req.messages.len();
    if count == 0 {
        return Err(Refused::new(Code::MessageCorrupted, "no message to send"));
    }
    if count > validate::MAX_MESSAGES_PER_SEND {
        return Err(Refused::new(
            Code::MessageCorrupted,
            format!("{count} messages in one request, max is {}", validate::MAX_MESSAGES_PER_SEND),
        ));
    }
    let topic = validate::topic(&core.config, req.messages[0].topic.as_ref())?.to_owned();
    if core.config.is_slave() {
        return Err(Refused::new(Code::Forbidden, "message store is in slave mode, so putMessage is forbidden"));
    }
    let live = core.live.config();
    let now = crate::store::now_ms();
    let tc =
        core.topics.get(&topic).ok_or_else(|| Refused::new(Code::TopicNotFound, format!("topic {topic} not found")))?;
    let accepted =
        super::route::accepted_types(tc.attributes.get(super::route::MESSAGE_TYPE_ATTRIBUTE).map(String::as_str));
    let group = match count {
        1 => req.messages[0]
            .system_properties
            .as_ref()
            .and_then(|s| s.message_group.as_deref())
            .filter(|g| !g.is_empty()),
        _ => None,
    };
    let writable = tc.write_queue_nums.max(1);
    let queue_id = match group {
        Some(group) => super::hash::queue_of_group(group, writable),
        None => (g.round_robin.fetch_add(1, Ordering::Relaxed) % writable as usize) as i32,
    };
    let mut built = Vec::with_capacity(count);
    for m in &req.messages {
        if m.topic.as_ref().map(|t| t.name.as_str()) != Some(topic.as_str()) {
            return Err(Refused::new(Code::MessageCorrupted, "topic in message is not same"));
        }
        built.push(build(g, m, &topic, queue_id, peer, now, live.max_message_size)?);
    }
    // `DefaultTopicMessageTypeValidator`: the topic's `message.type` (NORMAL when unset, MIXED
    // takes any) must be the message's.
    if let Some(b) = built.iter().find(|b| !accepted.contains(&(wire_type(b.kind) as i32))) {
        let why = format!(
            "TopicMessageType validate failed, the topic {topic} accepts {:?}, but actual type is {:?}",
            accepted.iter().filter_map(|t| MessageType::try_from(*t).ok()).collect::<Vec<_>>(),
            wire_type(b.kind)
        );
        return Err(Refused::new(Code::MessagePropertyConflictWithType, why));
    }
    let transactional = built.iter().any(|b| b.kind == Kind::Transaction);
    if transactional && live.reject_transaction_message {
        let why = format!("the broker[{}] sending transaction message is forbidden", core.config.broker_ip1);
        return Err(Refused::new(Code::Forbidden, why));
    }
    if count > 1 && built.iter().any(|b| b.kind != Kind::Normal) {
        return Err(Refused::new(Code::MessageCorrupted, "a batch holds normal messages only"));
    }
    let multi_tags = tc.topic_filter_type == TopicFilterType::MultiTag;
    for b in &mut built {
        if multi_tags {
            b.record.sys_flag |= sys_flag::MULTI_TAGS;
        }
        match b.kind {
            Kind::Transaction => g.broker.to_half(&mut b.record),
            _ => g.broker.divert_delayed(&mut b.record).map_err(|why| Refused::new(Code::IllegalDeliveryTime, why))?,
        }
    }
    let kind = built[0].kind;
    let records: Vec<MessageToStore> = built.into_iter().map(|b| b.record).collect();
    let permit = core.admit(Protocol::Grpc).await.map_err(of_refusal)?;
    let write = TopicWrite { protocol: Protocol::Grpc, topic: &topic, queue_id, create: None };
    core.writable_topic(&write).await.map_err(of_refusal)?;
    let how = Durability {
        wait_flush: true,
        replicas: Replicas::After,
        replica_timeout: Duration::from_millis(live.slave_timeout),
        deferred: false,
    };
    let appended = core.append(&records, how, Traffic { protocol: Protocol::Grpc, topic: &topic, kind }).await;
    drop(permit);
    let appended = appended.map_err(of_refusal)?;
    let entry_status = appended.shortfall.map_or_else(status::ok, |r| of_refusal(r).status());
    let result = &appended.result;
    let entries: Vec<SendResultEntry> = records
        .iter()
        .zip(&result.offsets)
        .enumerate()
        .map(|(i, (r, commit_log_offset))| {
            let queue_offset = result.queue_offset + i as i64;
            SendResultEntry {
                status: Some(entry_status.clone()),
                message_id: message::property_value(&r.properties, property::UNIQ_KEY).unwrap_or("").to_owned(),
                transaction_id: if kind == Kind::Transaction {
                    super::txn::transaction_id(*commit_log_offset, queue_offset)
                } else {
                    String::new()
                },
                offset: queue_offset,
                recall_handle: String::new(),
            }
        })
        .collect();
    Ok(SendMessageResponse { status: Some(entry_status), entries })
}

fn wire_type(k: Kind) -> MessageType {
    match k {
        Kind::Normal => MessageType::Normal,
        Kind::Fifo => MessageType::Fifo,
        Kind::Delay => MessageType::Delay,
        Kind::Transaction => MessageType::Transaction,
    }
}

/// One message as the store takes it, checked as `buildMessageProperty` checks it.
fn build(
    g: &Grpc,
    m: &Message,
    topic: &str,
    queue_id: i32,
    peer: SocketAddr,
    now: i64,
    max_body: usize,
) -> Result<Built, Refused> {
    let sys = m.system_properties.clone().unwrap_or_default();
    validate::body(m.body.len(), max_body)?;
    if m.user_properties.len() > validate::MAX_USER_PROPERTIES {
        let why = format!("too many user properties, max is {}", validate::MAX_USER_PROPERTIES);
        return Err(Refused::new(Code::MessagePropertiesTooLarge, why));
    }
    let mut size = 0usize;
    let mut props: Vec<(&str, String)> = Vec::with_capacity(m.user_properties.len() + 10);
    for (k, v) in &m.user_properties {
        validate::property(k, v)?;
        size += k.len() + v.len();
        props.push((k, v.clone()));
    }
    let tag = sys.tag.clone().unwrap_or_default();
    validate::tag(&tag)?;
    size += tag.len();
    if !tag.is_empty() {
        props.push((property::TAGS, tag.clone()));
    }
    for k in &sys.keys {
        validate::key(k)?;
        size += k.len();
    }
    if !sys.keys.is_empty() {
        props.push((property::KEYS, sys.keys.join(" ")));
    }
    if size > validate::MAX_USER_PROPERTY_SIZE {
        let why = format!("the total size of user property is too large, max is {}", validate::MAX_USER_PROPERTY_SIZE);
        return Err(Refused::new(Code::MessagePropertiesTooLarge, why));
    }
    if sys.message_id.trim().is_empty() || validate::has_control(&sys.message_id) || sys.message_id.len() > 128 {
        return Err(Refused::new(Code::IllegalMessageId, "message id cannot be empty"));
    }
    props.push((property::UNIQ_KEY, sys.message_id.clone()));
    let mut kind = Kind::Normal;
    if sys.message_type == MessageType::Transaction as i32 {
        kind = Kind::Transaction;
        props.push((property::TRAN_MSG, "true".into()));
        if let Some(d) = &sys.orphaned_transaction_recovery_duration {
            if d.seconds < 0 || d.seconds > validate::MAX_TRANSACTION_RECOVERY_SECONDS {
                let why = format!(
                    "the orphaned transaction recovery duration must be 0..{} s",
                    validate::MAX_TRANSACTION_RECOVERY_SECONDS
                );
                return Err(Refused::new(Code::BadRequest, why));
            }
            props.push((property::CHECK_IMMUNITY_TIME_IN_SECONDS, d.seconds.to_string()));
        }
    }
    if let Some(at) = &sys.delivery_timestamp {
        let at_ms = at.seconds.saturating_mul(1000).saturating_add(i64::from(at.nanos / 1_000_000));
        validate::delivery_time(at_ms, now)?;
        props.push((property::TIMER_DELIVER_MS, at_ms.to_string()));
        if kind == Kind::Normal {
            kind = Kind::Delay;
        }
    }
    if let Some(attempt) = sys.delivery_attempt {
        props.push((property::RECONSUME_TIME, attempt.to_string()));
    }
    // The producer group of a gRPC producer is its topic (the transaction check asks by it).
    props.push((property::PGROUP, topic.to_owned()));
    if let Some(group) = sys.message_group.as_deref().filter(|g| !g.is_empty()) {
        validate::message_group(group)?;
        props.push((SHARDING_KEY, group.to_owned()));
        if kind == Kind::Normal {
            kind = Kind::Fifo;
        }
    }
    if let Some(trace) = sys.trace_context.as_deref().filter(|t| !t.is_empty() && t.len() <= 1024) {
        props.push((TRACE_CONTEXT, trace.to_owned()));
    }
    let born_host = match sys.born_host.as_str() {
        h if !h.trim().is_empty() && h.len() <= 255 && !validate::has_control(h) => h.to_owned(),
        _ => peer.to_string(),
    };
    props.push((BORN_HOST, born_host));
    let born_ms = sys
        .born_timestamp
        .as_ref()
        .map(|t| t.seconds.saturating_mul(1000).saturating_add(i64::from(t.nanos / 1_000_000)))
        .filter(|ms| *ms > 0)
        .unwrap_or(now);
    props.push((BORN_TIMESTAMP, born_ms.to_string()));
    let client = message::properties_to_string(props.iter().map(|(k, v)| (*k, v.as_str())));
    let core = &g.core;
    let properties = crate::core::properties::stored_properties(&client, core.broker_properties(), || {
        crate::core::properties::new_uniq_id(core.store_host)
    });
    let mut flags = 0;
    if sys.body_encoding == super::pb::Encoding::Gzip as i32 {
        flags |= sys_flag::COMPRESSED;
    }
    if kind == Kind::Transaction {
        flags |= sys_flag::TRANSACTION_PREPARED;
    }
    let record = MessageToStore {
        topic: topic.to_owned(),
        queue_id,
        flag: 0,
        body: m.body.clone(),
        tags_code: message::tags_code(Some(tag.as_str())),
        properties,
        born_timestamp: born_ms,
        born_host: peer,
        store_host: core.store_host,
        sys_flag: flags,
        reconsume_times: sys.delivery_attempt.unwrap_or(0).max(0),
        prepared_transaction_offset: 0,
    };
    Ok(Built { record, kind })
}
