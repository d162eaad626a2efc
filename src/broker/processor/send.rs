//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320)
//! (`SendMessageProcessor`, `AbstractSendMessageProcessor.msgCheck`).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use super::{fail, BrokerError, Handled};
use crate::broker::topic::TopicView;
use crate::broker::BrokerInner;
use crate::broker::{convert, timer};
use crate::core::txn::without_reserved;
use crate::core::{AutoCreate, Durability, Outcome, Protocol, Refusal, Replicas, TopicWrite, Traffic};
use crate::model::group::{dlq_topic, RETRY_GROUP_TOPIC_PREFIX};
use crate::model::message::{self, offset_msg_id, property, sys_flag, MessageToStore};
use crate::model::{perm, TopicConfig, TopicFilterType};
use crate::protocol::body::message::decode_batch;
use crate::protocol::header::broker::{
    SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use crate::protocol::header::CommandHeader;
use crate::protocol::version::V3_4_9;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::Connection;
use crate::telemetry::MessageType;

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
    let permit = b.admit(Protocol::Remoting).await.map_err(|r| refused(r, req))?;
    let write = TopicWrite {
        protocol: Protocol::Remoting,
        topic: &h.topic,
        queue_id: h.queue_id,
        create: Some(AutoCreate {
            default_topic: &h.default_topic,
            queue_nums: h.default_topic_queue_nums,
            unit: h.unit_mode == Some(true),
        }),
    };
    let mut tc = b.writable_topic(&write).await.map_err(|r| refused(r, req))?;
    let mut queue_id = h.queue_id;
    if queue_id < 0 {
        queue_id = (crate::store::now_ms() % i64::from(tc.write_queue_nums.max(1))) as i32;
    }
    let mut topic = h.topic.clone();
    let mut properties = h.properties.take().unwrap_or_default();
    if let Cow::Owned(p) = without_reserved(&properties) {
        properties = p;
    }
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
    if transactional && b.live.config().reject_transaction_message {
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
    let kind = if transactional {
        MessageType::Transaction
    } else if delayed || message::has_any_property(&properties, &timer::TIMER_PROPERTIES) {
        MessageType::Delay
    } else if message::property_value(&properties, "__SHARDINGKEY").is_some() {
        MessageType::Fifo
    } else {
        MessageType::Normal
    };
    // The answer goes out through the connection's writer, which commits deferred records
    // before it writes (`BrokerProcessor::before_write`): one CommitLog write per batch of
    // answers. Not for a oneway send (no answer commits it); the core never defers a put that
    // waits for slaves (replication ships written records only).
    let how = Durability {
        wait_flush: wait,
        replicas: Replicas::After,
        replica_timeout: Duration::from_millis(b.live.config().slave_timeout),
        deferred: !req.is_oneway(),
    };
    // The metrics count it under the topic the producer named (a retry or DLQ topic is not
    // counted); the statistics under the topic it is stored on (core::append).
    let traffic = Traffic { protocol: Protocol::Remoting, topic: &h.topic, kind };
    let appended = b.append(&msgs, how, traffic).await;
    drop(permit);
    let appended = appended.map_err(|r| refused(r, req))?;
    let append = appended.result;
    let (code, remark) = match appended.shortfall {
        None => (ResponseCode::SUCCESS, None),
        Some(r) => (ResponseCode(r.outcome.codes().remoting), Some(r.why)),
    };
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

/// A refusal of the shared core as this door answers it: the code from the core's table; a bad
/// name or queue id is an invalid parameter (INVALID_PARAMETER for 5.x clients, SYSTEM_ERROR
/// for older ones), its remark naming the producer group.
pub(super) fn refused(r: Refusal, req: &RemotingCommand) -> BrokerError {
    match r.outcome {
        Outcome::QueueIllegal => {
            let producer = req.ext_fields.get("a").or(req.ext_fields.get("producerGroup")).map_or("", String::as_str);
            BrokerError::InvalidParameter(format!("{}, producer: {producer}", r.why))
        }
        Outcome::IllegalTopic => BrokerError::InvalidParameter(r.why),
        o => BrokerError::Code(ResponseCode(o.codes().remoting), r.why),
    }
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
    let extra = b.broker_properties();
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
            let props = convert::stored_properties(&without_reserved(&e.properties), extra, || {
                convert::new_uniq_id(b.store_host)
            });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The core's table uses RocketMQ's numbers: each equals the named response code.
    #[test]
    fn the_core_table_speaks_remoting() {
        let named = |o: Outcome| match o {
            Outcome::BrokerNotWritable | Outcome::SendForbidden | Outcome::TopicNotWritable => {
                ResponseCode::NO_PERMISSION
            }
            Outcome::IllegalTopic | Outcome::QueueIllegal => ResponseCode::INVALID_PARAMETER,
            Outcome::TopicNotExist => ResponseCode::TOPIC_NOT_EXIST,
            Outcome::Busy => ResponseCode::SYSTEM_BUSY,
            Outcome::NotEnoughReplicas | Outcome::SlaveLostAfterAppend => ResponseCode::SLAVE_NOT_AVAILABLE,
            Outcome::FlushTimeout => ResponseCode::FLUSH_DISK_TIMEOUT,
            Outcome::StoreUnavailable => ResponseCode::SERVICE_NOT_AVAILABLE,
            Outcome::MessageIllegal => ResponseCode::MESSAGE_ILLEGAL,
            Outcome::StoreFailed => ResponseCode::SYSTEM_ERROR,
            Outcome::SlaveTimeout => ResponseCode::FLUSH_SLAVE_TIMEOUT,
        };
        for o in Outcome::ALL {
            assert_eq!(ResponseCode(o.codes().remoting), named(o), "{o:?}");
        }
    }
}
