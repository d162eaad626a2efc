//! CONSUMER_SEND_MSG_BACK (36): a message a consumer failed goes to `%RETRY%<group>` with delay
//! level 3 + reconsume times, or to `%DLQ%<group>` past the group's maximum
//! (`SendMessageProcessor.consumerSendMsgBack`).
//!
//! May import: `model`, `protocol`, `store` and modules of `broker/`; the area's rule is its line
//! in docs/architecture.md.

use std::sync::Arc;

use super::{fail, ok, Handled};
use crate::broker::BrokerInner;
use crate::model::group::{dlq_topic, retry_topic};
use crate::model::message::{self, offset_msg_id, property, MessageToStore};
use crate::model::perm;
use crate::protocol::header::broker::ConsumerSendMsgBackRequestHeader;
use crate::protocol::header::CommandHeader;
use crate::protocol::version::V3_4_9;
use crate::protocol::{RemotingCommand, ResponseCode};

pub async fn consumer_send_msg_back(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = ConsumerSendMsgBackRequestHeader::decode(&req.ext_fields)?;
    // The group names `%RETRY%<group>` and `%DLQ%<group>`, directories of the store.
    super::check_group(&h.group)?;
    let Some((group, created)) = b.groups.find_or_create(&h.group) else {
        return fail(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST, format!("subscription group not exist, {}", h.group));
    };
    if created {
        b.persist_groups().await;
    }
    if !perm::is_writeable(b.live.broker_permission()) {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the broker[{}] sending message is forbidden", b.config.broker_name),
        );
    }
    if group.retry_queue_nums <= 0 {
        return Ok(Some(ok(req)));
    }
    // The retry topic is created (unit mode marked, as the header says) and must be writable
    // even when the message goes on to the DLQ, as in Java.
    let unit_flag = if h.unit_mode { perm::FLAG_UNIT_SUB } else { 0 };
    let rw = perm::READ | perm::WRITE;
    let (retry_tc, created) = b.topics.create_if_absent(&retry_topic(&h.group), group.retry_queue_nums, rw, unit_flag);
    if created {
        b.topics_changed().await;
    }
    if !perm::is_writeable(retry_tc.perm) {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the topic[{}] sending message is forbidden", retry_tc.topic_name),
        );
    }
    let Some(original) = b.store.named_message(h.offset) else {
        return fail(ResponseCode::SYSTEM_ERROR, format!("look message by offset failed, {}", h.offset));
    };
    let mut props = message::parse_properties(&original.properties);
    // A retry of a Kafka record is no part of its transaction (`core::txn::without_reserved`).
    for name in crate::core::txn::RESERVED {
        props.remove(name);
    }
    props.entry(property::RETRY_TOPIC.to_owned()).or_insert_with(|| original.topic.clone());
    // Java: the first message's offset id (`msgExt.getMsgId()` of the looked-up record), kept
    // across retries; the header's originMsgId (the client's UNIQ_KEY) is not used.
    let origin_id = props
        .get(property::ORIGIN_MESSAGE_ID)
        .cloned()
        .unwrap_or_else(|| offset_msg_id(original.store_host, original.commit_log_offset));
    props.insert(property::ORIGIN_MESSAGE_ID.to_owned(), origin_id);
    // Java: `msgExt.setWaitStoreMsgOK(false)` before copying the properties.
    props.insert(property::WAIT.to_owned(), "false".to_owned());
    let max = match h.max_reconsume_times {
        Some(m) if req.version >= V3_4_9 => m,
        _ => group.retry_max_times,
    };
    let (topic, queue_id) = if original.reconsume_times >= max || h.delay_level < 0 {
        props.insert(property::DELAY.to_owned(), "0".to_owned());
        let (dlq, created) = b.topics.create_if_absent(&dlq_topic(&h.group), 1, rw, 0);
        if created {
            b.topics_changed().await;
        }
        (dlq.topic_name, 0)
    } else {
        let level = if h.delay_level == 0 { 3 + original.reconsume_times } else { h.delay_level };
        props.insert(property::DELAY.to_owned(), level.to_string());
        let q = (crate::store::now_ms() % i64::from(group.retry_queue_nums)) as i32;
        (retry_tc.topic_name, q)
    };
    let tags = props.get(property::TAGS).cloned();
    let mut msg = MessageToStore {
        topic,
        queue_id,
        flag: original.flag,
        body: original.body.clone(),
        properties: message::map_to_properties(&props),
        tags_code: message::tags_code(tags.as_deref()),
        born_timestamp: original.born_timestamp,
        born_host: original.born_host,
        store_host: b.store_host,
        sys_flag: original.sys_flag,
        reconsume_times: original.reconsume_times + 1,
        prepared_transaction_offset: 0,
    };
    b.schedule.divert(&mut msg);
    let r = b.store.put_messages(std::slice::from_ref(&msg), false).await;
    let (code, remark) = crate::broker::convert::put_status_code(&r.status);
    match code {
        ResponseCode::SUCCESS => {
            // Statistics as Java keeps them: a put under the topic it is stored on (the schedule
            // topic; the delivery counts it under the retry topic), a send-back of the original
            // topic by the group.
            let bytes = r.append.as_ref().map_or(0, |a| a.wrote_bytes as u64);
            b.stats.put(&msg.topic, msg.queue_id, 1, bytes, 0, b.is_system_topic(&msg.topic));
            b.stats.sent_back(&h.group, &original.topic);
            Ok(Some(ok(req)))
        }
        _ => fail(code, remark.unwrap_or_default()),
    }
}
