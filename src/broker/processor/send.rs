//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320)
//! (`SendMessageProcessor`, `AbstractSendMessageProcessor.msgCheck`).

use std::sync::Arc;
use std::time::Duration;

use super::{fail, BrokerError, Handled};
use crate::broker::topic::{TopicView, NOT_ALLOWED_SEND_TOPICS};
use crate::broker::BrokerInner;
use crate::broker::{convert, timer};
use crate::model::group::{dlq_topic, RETRY_GROUP_TOPIC_PREFIX};
use crate::model::message::{self, offset_msg_id, property, sys_flag, MessageToStore};
use crate::model::{perm, TopicConfig, TopicFilterType, DEFAULT_TOPIC};
use crate::protocol::body::message::decode_batch;
use crate::protocol::header::broker::{
    SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use crate::protocol::header::CommandHeader;
use crate::protocol::version::V3_4_9;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::Connection;

/// How long a send may wait for its turn before the broker answers SYSTEM_BUSY
/// (Java's `waitTimeMillsInSendQueue`).
const WAIT_IN_SEND_QUEUE: Duration = Duration::from_millis(200);

pub async fn send_message(b: &Arc<BrokerInner>, conn: &Arc<Connection>, req: &RemotingCommand) -> Handled {
    let mut h: SendMessageRequestHeader = match req.request_code() {
        RequestCode::SEND_MESSAGE => SendMessageRequestHeader::decode(&req.ext_fields)?,
        _ => SendMessageRequestHeaderV2::decode(&req.ext_fields)?.into(),
    };
    // Java decides from the header's `batch` flag (`m` in V2), whatever the request code: the C++
    // client sends batches as SEND_MESSAGE_V2 with the flag set. Its 2.x releases write the flag
    // as "1", which Java's `Boolean.parseBoolean` reads as false (it then stores the whole batch
    // body as one garbled message); ferrocket reads "1" as the true it means.
    let batch = h.batch == Some(true) || batch_flag_is_one(req);
    if b.config.is_slave() {
        return fail(ResponseCode::SERVICE_NOT_AVAILABLE, "message store is in slave mode, so putMessage is forbidden");
    }
    // Most sends find a permit at once: no timer for them.
    let free = b.send_permits.try_acquire().ok();
    let permit = match free {
        Some(p) => p,
        None => match tokio::time::timeout(WAIT_IN_SEND_QUEUE, b.send_permits.acquire()).await {
            Ok(Ok(p)) => p,
            _ => {
                return fail(
                    ResponseCode::SYSTEM_BUSY,
                    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, the store is behind",
                )
            }
        },
    };
    let mut tc = check_topic(b, &h, req).await?;
    let mut queue_id = h.queue_id;
    if queue_id < 0 {
        queue_id = (crate::store::now_ms() % i64::from(tc.write_queue_nums.max(1))) as i32;
    }
    let mut topic = h.topic.clone();
    let mut properties = h.properties.take().unwrap_or_default();
    let reconsume_times = h.reconsume_times.unwrap_or(0);
    if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        if batch {
            return fail(ResponseCode::MESSAGE_ILLEGAL, "batch request does not support retry group");
        }
        if let Some(dlq) = retry_to_dlq(b, &h, req.version, reconsume_times).await? {
            tc = TopicView::of(&dlq);
            topic = dlq.topic_name;
            queue_id = 0;
            let mut props = message::parse_properties(&properties);
            props.insert(property::DELAY.to_owned(), "-1".to_owned());
            properties = message::map_to_properties(&props);
        }
    }
    // A half message is known by its TRAN_MSG property only (the header's sysFlag is not looked
    // at), except from clients before 4.6.1 resending a delayed retry.
    let delayed =
        message::property_value(&properties, property::DELAY).is_some_and(|d| d.parse::<i32>().is_ok_and(|l| l > 0));
    let transactional = message::property_value(&properties, property::TRAN_MSG).is_some_and(parse_boolean)
        && !(reconsume_times > 0 && delayed);
    if transactional && b.config.reject_transaction_message {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the broker[{}] sending transaction message is forbidden", b.config.broker_ip1),
        );
    }
    if transactional && batch {
        return fail(ResponseCode::MESSAGE_ILLEGAL, "batch messages do not support transactions");
    }
    let mut sys = h.sys_flag;
    if tc.topic_filter_type == TopicFilterType::MultiTag {
        sys |= sys_flag::MULTI_TAGS;
    }
    let mut msgs = build_messages(b, conn, req, &h, &topic, queue_id, &properties, sys, batch)?;
    if transactional {
        crate::broker::transaction::to_half(&mut msgs[0]);
    } else if !batch {
        if let Err((code, remark)) = b.timer.divert(&mut msgs[0]) {
            return fail(code, remark);
        }
        b.schedule.divert(&mut msgs[0]);
    } else if message::property_value(&properties, property::DELAY).is_some_and(|d| d != "0") {
        return fail(ResponseCode::MESSAGE_ILLEGAL, "batch messages do not support delay levels");
    }
    // `Message.isWaitStoreMsgOK`: absent means true, otherwise `Boolean.parseBoolean`.
    let wait = message::property_value(&properties, property::WAIT).is_none_or(parse_boolean);
    // The answer goes out through the connection's writer, which commits deferred records
    // before it writes (`BrokerProcessor::before_write`): one CommitLog write per batch of
    // answers. Not for a oneway send (no answer commits it) nor a put that waits for slaves
    // (replication ships written records only).
    let result = if req.is_oneway() || b.config.replicas_to_wait_for() > 0 {
        b.store.put_messages(&msgs, wait).await
    } else {
        b.store.put_messages_deferred(&msgs, wait).await
    };
    drop(permit);
    let (mut code, mut remark) = convert::put_status_code(&result.status);
    let Some(append) = result.append else {
        return fail(code, remark.unwrap_or_default());
    };
    b.stats.add_put(append.offsets.len() as u64);
    if let Some(node) = b.metrics.as_deref().filter(|_| !crate::model::group::is_retry_or_dlq_topic(&h.topic)) {
        let kind = if transactional {
            crate::telemetry::MessageType::Transaction
        } else if delayed || message::has_any_property(&properties, &timer::TIMER_PROPERTIES) {
            crate::telemetry::MessageType::Delay
        } else if message::property_value(&properties, "__SHARDINGKEY").is_some() {
            crate::telemetry::MessageType::Fifo
        } else {
            crate::telemetry::MessageType::Normal
        };
        let system = super::admin::is_system_topic(b, &h.topic);
        let (count, bytes) = (append.offsets.len() as u64, append.wrote_bytes as u64);
        crate::telemetry::messages_in(node, &h.topic, kind, system, count, bytes);
    }
    if code == ResponseCode::SUCCESS && wait {
        if let Some((c, r)) = wait_for_slaves(b, append.end_offset).await {
            (code, remark) = (c, Some(r));
        }
    }
    let msg_id = match append.offsets.as_slice() {
        [one] => offset_msg_id(b.store_host, *one),
        all => all.iter().map(|o| offset_msg_id(b.store_host, *o)).collect::<Vec<_>>().join(","),
    };
    let mut resp = RemotingCommand::response_to(req, code);
    resp.remark = remark;
    SendMessageResponseHeader {
        msg_id,
        queue_id,
        queue_offset: append.queue_offset,
        transaction_id: if batch {
            None
        } else {
            message::property_value(&msgs[0].properties, property::UNIQ_KEY).map(str::to_owned)
        },
        recall_handle: if batch { None } else { timer::recall_handle(&msgs[0], &b.config.broker_name) },
    }
    .encode(&mut resp.ext_fields);
    resp.ext_fields.insert("MSG_REGION".into(), b.config.region_id.clone());
    resp.ext_fields.insert("TRACE_ON".into(), b.config.trace_on.to_string());
    Ok(Some(resp))
}

/// SYNC_MASTER: the put counts once enough slaves hold its bytes (`handleHA`).
pub(super) async fn wait_for_slaves(b: &BrokerInner, end_offset: u64) -> Option<(ResponseCode, String)> {
    let needed = b.config.replicas_to_wait_for();
    let ha = b.ha_service.as_ref().filter(|_| needed > 0)?;
    match ha.wait_for_replicas(end_offset, needed, Duration::from_millis(b.config.slave_timeout)).await {
        crate::ha::master::ReplicaWait::Ok => None,
        crate::ha::master::ReplicaWait::NoSlave => {
            Some((ResponseCode::SLAVE_NOT_AVAILABLE, "slave not available".into()))
        }
        crate::ha::master::ReplicaWait::Timeout => {
            Some((ResponseCode::FLUSH_SLAVE_TIMEOUT, "wait slave ack timeout".into()))
        }
    }
}

/// `msgCheck`: broker and topic writable, topic name valid, topic known or auto-created, queue
/// id in range.
async fn check_topic(
    b: &Arc<BrokerInner>,
    h: &SendMessageRequestHeader,
    req: &RemotingCommand,
) -> Result<TopicView, BrokerError> {
    if !perm::is_writeable(b.live.broker_permission()) {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the broker[{}] sending message is forbidden", b.config.broker_name),
        );
    }
    super::check_topic(&h.topic)?;
    if NOT_ALLOWED_SEND_TOPICS.contains(&h.topic.as_str()) {
        return fail(ResponseCode::NO_PERMISSION, format!("Sending message to topic[{}] is forbidden.", h.topic));
    }
    let tc = match b.topics.view(&h.topic) {
        Some(tc) => tc,
        None => {
            // `msgCheck`: unit mode marks the new topic; the default topic's perm decides
            // whether it may be created; a retry topic falls back to one queue.
            let retry = h.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX);
            let sys_flag = match (h.unit_mode == Some(true), retry) {
                (false, _) => 0,
                (true, true) => perm::FLAG_UNIT_SUB,
                (true, false) => perm::FLAG_UNIT,
            };
            let default = if h.default_topic.is_empty() { DEFAULT_TOPIC } else { h.default_topic.as_str() };
            let auto_create = b.live.auto_create_topic_enable();
            let created =
                b.topics.create_in_send(&h.topic, default, h.default_topic_queue_nums, sys_flag, auto_create).or_else(
                    || retry.then(|| b.topics.create_if_absent(&h.topic, 1, perm::READ | perm::WRITE, sys_flag).0),
                );
            let Some(tc) = created else {
                return fail(
                    ResponseCode::TOPIC_NOT_EXIST,
                    format!(
                        "topic[{}] not exist, apply first please! See http://rocketmq.apache.org/docs/faq/",
                        h.topic
                    ),
                );
            };
            b.topics_changed().await;
            TopicView::of(&tc)
        }
    };
    if !perm::is_writeable(tc.perm) {
        return fail(ResponseCode::NO_PERMISSION, format!("the topic[{}] sending message is forbidden", h.topic));
    }
    let queue_id = h.queue_id;
    if queue_id >= tc.write_queue_nums.max(tc.read_queue_nums) {
        return Err(BrokerError::InvalidParameter(format!(
            "request queueId[{queue_id}] is illegal, {} writeQueueNums {} readQueueNums {}, producer: {}",
            h.topic,
            tc.write_queue_nums,
            tc.read_queue_nums,
            req.ext_fields.get("a").or(req.ext_fields.get("producerGroup")).map_or("", String::as_str)
        )));
    }
    Ok(tc)
}

/// `handleRetryAndDLQ`: a retried message past its group's maximum goes to `%DLQ%<group>`.
async fn retry_to_dlq(
    b: &Arc<BrokerInner>,
    h: &SendMessageRequestHeader,
    version: i32,
    reconsume: i32,
) -> Result<Option<TopicConfig>, BrokerError> {
    let group = &h.topic[RETRY_GROUP_TOPIC_PREFIX.len()..];
    let Some((config, created)) = b.groups.find_or_create(group) else {
        return fail(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST, format!("subscription group not exist, {group}"));
    };
    if created {
        b.persist_groups().await;
    }
    let max = match h.max_reconsume_times {
        Some(m) if version >= V3_4_9 => m,
        _ => config.retry_max_times,
    };
    // An orderly consumer holding queue locks sends a message back only past its retries: Java
    // sends it to the DLQ at once rather than redelivering it out of order.
    if reconsume <= max && b.locks.is_lock_all_expired(group) {
        return Ok(None);
    }
    let (tc, created) = b.topics.create_if_absent(&dlq_topic(group), 1, perm::READ | perm::WRITE, 0);
    if created {
        b.topics_changed().await;
    }
    Ok(Some(tc))
}

#[allow(clippy::too_many_arguments)]
fn build_messages(
    b: &BrokerInner,
    conn: &Connection,
    req: &RemotingCommand,
    h: &SendMessageRequestHeader,
    topic: &str,
    queue_id: i32,
    properties: &str,
    sys: i32,
    batch: bool,
) -> Result<Vec<MessageToStore>, BrokerError> {
    let extra = convert::BrokerProperties {
        region: &b.config.region_id,
        trace_on: b.config.trace_on,
        cluster: &b.config.broker_cluster_name,
    };
    let flag = h.flag;
    if !batch {
        let props = convert::stored_properties(properties, extra, || convert::new_uniq_id(b.store_host));
        return Ok(vec![convert::message_to_store(
            h,
            topic,
            queue_id,
            req.body.clone(),
            props,
            flag,
            sys,
            conn.peer(),
            b.store_host,
        )]);
    }
    if topic.len() > 127 {
        return fail(ResponseCode::MESSAGE_ILLEGAL, "the topic of a batch is longer than 127 bytes");
    }
    let entries = decode_batch(&req.body)
        .map_err(|e| BrokerError::Code(ResponseCode::MESSAGE_ILLEGAL, format!("bad batch body: {e}")))?;
    if entries.is_empty() {
        return fail(ResponseCode::MESSAGE_ILLEGAL, "empty batch");
    }
    Ok(entries
        .into_iter()
        .map(|e| {
            let props = convert::stored_properties(&e.properties, extra, || convert::new_uniq_id(b.store_host));
            convert::message_to_store(h, topic, queue_id, e.body, props, e.flag, sys, conn.peer(), b.store_host)
        })
        .collect())
}

/// The batch flag written as the C++ client 2.x writes it: `"m":"1"` (V2) or `"batch":"1"`.
fn batch_flag_is_one(req: &RemotingCommand) -> bool {
    let key = if req.request_code() == RequestCode::SEND_MESSAGE { "batch" } else { "m" };
    req.ext_fields.get(key).is_some_and(|v| v.trim() == "1")
}

/// Java's `Boolean.parseBoolean`: only a case-insensitive "true" is true.
fn parse_boolean(v: &str) -> bool {
    v.eq_ignore_ascii_case("true")
}
