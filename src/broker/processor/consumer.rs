//! Client registration and offsets: HEART_BEAT (34), UNREGISTER_CLIENT (35),
//! GET_CONSUMER_LIST_BY_GROUP (38), QUERY/UPDATE_CONSUMER_OFFSET (14/15), GET_MAX_OFFSET (30),
//! GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32),
//! CHECK_CLIENT_CONFIG (46).
//!
//! May import: `filter`, `model`, `protocol`, `remoting` and modules of `broker/`; the area's rule
//! is its line in docs/architecture.md.

use std::sync::Arc;
use std::time::Instant;

use tracing::info;

use super::{fail, ok, BrokerError, Handled};
use crate::broker::client::ClientChannel;
use crate::broker::BrokerInner;
use crate::model::group::retry_topic;
use crate::model::perm;
use crate::protocol::body::client::{
    check_client_subscription, ConsumerListBody, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody,
};
use crate::protocol::body::json;
use crate::protocol::body::to_vec;
use crate::protocol::header::broker::*;
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};
use crate::remoting::Connection;

pub async fn heart_beat(b: &Arc<BrokerInner>, conn: &Arc<Connection>, req: &RemotingCommand) -> Handled {
    let hb = HeartbeatData::parse(&req.body).map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, e))?;
    check_names(&hb)?;
    let channel = ClientChannel {
        link: crate::broker::client::Link::Remoting(conn.clone()),
        client_id: hb.client_id.clone(),
        language: req.language,
        version: req.version,
        last_update: Instant::now(),
    };
    let mut sub_change = !hb.without_sub;
    for c in &hb.consumer_data_set {
        if hb.without_sub {
            match b.consumers.refresh(&c.group_name, hb.heartbeat_fingerprint, channel.clone()) {
                Some(_) => continue,
                None => {
                    // Unknown group, changed fingerprint or new channel: ask for the full data.
                    sub_change = true;
                    continue;
                }
            }
        }
        let Some((group, created)) = b.groups.find_or_create(&c.group_name) else { continue };
        if created {
            b.persist_groups().await;
        }
        // Java creates the retry topic for every consumer group it knows (broadcasting ones
        // too), marked as a unit-mode subscription when the consumer says so.
        if group.retry_queue_nums > 0 {
            let unit_flag = if c.unit_mode { perm::FLAG_UNIT_SUB } else { 0 };
            let retry = retry_topic(&c.group_name);
            let (_, created) =
                b.topics.create_if_absent(&retry, group.retry_queue_nums, perm::READ | perm::WRITE, unit_flag);
            if created {
                b.topics_changed().await;
            }
        }
        if b.consumers.register(c, channel.clone(), hb.heartbeat_fingerprint) {
            info!(group = c.group_name, client = hb.client_id, peer = %conn.peer(), "consumer joined");
            b.notify_consumer_ids_changed(&c.group_name).await;
        }
    }
    for group in &hb.producer_groups {
        b.producers.register(group, channel.clone());
    }
    // Heartbeat v2 (5.x): the client may then send only its fingerprint while nothing changes.
    let resp = ok(req).with_ext("IS_SUPPORT_HEART_BEAT_V2", "true").with_ext("IS_SUB_CHANGE", sub_change.to_string());
    Ok(Some(resp))
}

/// A consumer group is made a subscription group and a `%RETRY%<group>` topic: its name follows
/// the group rules. Subscribed topics need only be names (a topic the Kafka door made may hold
/// '.'); producer groups live in memory, with their connection.
fn check_names(hb: &HeartbeatData) -> Result<(), BrokerError> {
    for c in &hb.consumer_data_set {
        super::check_group(&c.group_name)?;
        for s in &c.subscription_data_set {
            if !crate::model::name::is_path_component(&s.topic) {
                return Err(BrokerError::InvalidParameter(format!(
                    "The subscribed topic[{}] of group {} is not a topic name",
                    crate::model::name::shown(&s.topic),
                    c.group_name
                )));
            }
        }
    }
    Ok(())
}

pub async fn unregister_client(b: &Arc<BrokerInner>, conn: &Arc<Connection>, req: &RemotingCommand) -> Handled {
    let h = UnregisterClientRequestHeader::decode(&req.ext_fields)?;
    if let Some(g) = &h.producer_group {
        b.producers.unregister(g, conn.id());
    }
    if let Some(g) = &h.consumer_group {
        if b.consumers.unregister(g, conn.id()) {
            info!(group = g, client = h.client_id, "consumer left");
            b.notify_consumer_ids_changed(g).await;
        }
    }
    Ok(Some(ok(req)))
}

pub fn get_consumer_list_by_group(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = ConsumerGroupHeader::decode(&req.ext_fields)?;
    match b.consumers.group(&h.consumer_group) {
        Some(info) => Ok(Some(ok(req).with_body(to_vec(&ConsumerListBody { consumer_id_list: info.client_ids() })))),
        None => fail(ResponseCode::SYSTEM_ERROR, format!("no consumer for this group, {}", h.consumer_group)),
    }
}

fn offset_response(req: &RemotingCommand, offset: i64) -> Handled {
    let mut resp = ok(req);
    OffsetResponseHeader { offset }.encode(&mut resp.ext_fields);
    Ok(Some(resp))
}

pub fn query_consumer_offset(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = QueryConsumerOffsetRequestHeader::decode(&req.ext_fields)?;
    let offset = b.offsets.query(&h.consumer_group, &h.topic, h.queue_id);
    if offset >= 0 {
        return offset_response(req, offset);
    }
    if h.set_zero_if_not_found == Some(false) {
        return fail(ResponseCode::QUERY_NOT_FOUND, "Not found, do not set to zero, maybe this group boot first");
    }
    // A new group on a young queue whose head is still in memory starts from 0 (Java's rule).
    let min = b.store.min_offset_in_queue(&h.topic, h.queue_id);
    if min <= 0 && b.store.is_in_memory(&h.topic, h.queue_id, 0) {
        return offset_response(req, 0);
    }
    fail(ResponseCode::QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

pub fn update_consumer_offset(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = UpdateConsumerOffsetRequestHeader::decode(&req.ext_fields)?;
    // Offsets are kept as `topic@group`: the group may not hold the separator (the topic must
    // exist, and no door creates one with it).
    super::check_group(&h.consumer_group)?;
    if !b.groups.contains(&h.consumer_group) {
        return fail(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {}", h.consumer_group),
        );
    }
    if !b.topics.contains(&h.topic) {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic not exist, {}", h.topic));
    }
    b.offsets.commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    Ok(Some(ok(req)))
}

pub async fn get_max_offset(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = TopicQueueHeader::decode(&req.ext_fields)?;
    // A max offset asked right after a send was acknowledged counts that message.
    b.store.await_dispatched(super::READ_AFTER_SEND_WAIT).await;
    offset_response(req, b.store.max_offset_in_queue(&h.topic, h.queue_id))
}

pub fn get_min_offset(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = TopicQueueHeader::decode(&req.ext_fields)?;
    offset_response(req, b.store.min_offset_in_queue(&h.topic, h.queue_id))
}

pub fn search_offset_by_timestamp(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = SearchOffsetRequestHeader::decode(&req.ext_fields)?;
    offset_response(req, b.store.offset_in_queue_by_time(&h.topic, h.queue_id, h.timestamp))
}

pub fn get_earliest_msg_storetime(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = TopicQueueHeader::decode(&req.ext_fields)?;
    let mut resp = ok(req);
    let timestamp = b.store.earliest_message_time(&h.topic, h.queue_id).unwrap_or(-1);
    TimestampResponseHeader { timestamp }.encode(&mut resp.ext_fields);
    Ok(Some(resp))
}

pub fn lock_batch_mq(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let body: LockBatchRequestBody = json::from_slice(&req.body)
        .map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, format!("invalid LockBatchRequestBody: {e}")))?;
    super::check_group(&body.consumer_group)?;
    let locked = b.locks.try_lock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    Ok(Some(ok(req).with_body(to_vec(&LockBatchResponseBody { lock_ok_mq_set: locked }))))
}

pub fn unlock_batch_mq(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let body: LockBatchRequestBody = json::from_slice(&req.body)
        .map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, format!("invalid UnlockBatchRequestBody: {e}")))?;
    b.locks.unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    Ok(Some(ok(req)))
}

/// CHECK_CLIENT_CONFIG (46): a push or lite-pull consumer with a SQL92 subscription asks this
/// when it starts (`ClientManageProcessor.checkClientConfig`). Nothing is registered.
pub fn check_client_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let (_, sub) =
        check_client_subscription(&req.body).map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, e))?;
    let Some(sub) = sub.filter(|s| !s.is_tag_type()) else { return Ok(Some(ok(req))) };
    if !b.live.config().enable_property_filter {
        return Err(BrokerError::Code(
            ResponseCode::SYSTEM_ERROR,
            format!("The broker does not support consumer to filter message by {}", sub.expression_type),
        ));
    }
    if sub.expression_type != crate::filter::SQL92 {
        return Err(BrokerError::Code(
            ResponseCode::SUBSCRIPTION_PARSE_FAILED,
            format!("no filter for expression type {}", sub.expression_type),
        ));
    }
    match crate::filter::SqlFilter::compile(&sub.sub_string) {
        Ok(_) => Ok(Some(ok(req))),
        Err(e) => Err(BrokerError::Code(ResponseCode::SUBSCRIPTION_PARSE_FAILED, e.to_string())),
    }
}
