//! Admin views of topics, groups and clients, and offset resets (`AdminBrokerProcessor`):
//! GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208), GET_CONSUMER_CONNECTION_LIST (203),
//! GET_PRODUCER_CONNECTION_LIST (204), QUERY_TOPIC_CONSUME_BY_WHO (300),
//! INVOKE_BROKER_TO_RESET_OFFSET (222), CLONE_GROUP_OFFSET (314), GET_CONSUMER_RUNNING_INFO (307).
//!
//! May import: `protocol` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::{fail, ok, BrokerError, Handled};
use crate::broker::client::{ClientChannel, Link};
use crate::broker::BrokerInner;
use crate::core::door::Verified;
use crate::protocol::body::admin::*;
use crate::protocol::body::client::MessageQueue;
use crate::protocol::header::broker::*;
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};

fn mq(b: &BrokerInner, topic: &str, queue_id: i32) -> MessageQueue {
    MessageQueue { broker_name: b.config.broker_name.clone(), queue_id, topic: topic.to_owned() }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

pub fn get_topic_stats_info(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = TopicHeader::decode(&req.ext_fields)?;
    let Some(tc) = b.topics.get(&h.topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic[{}] not exist", h.topic));
    };
    let mut table = BTreeMap::new();
    for q in 0..tc.write_queue_nums {
        let max = b.store.max_offset_in_queue(&h.topic, q);
        let last = if max > 0 { b.store.message_store_timestamp(&h.topic, q, max - 1).unwrap_or(0) } else { 0 };
        let v = TopicOffset {
            last_update_timestamp: last,
            max_offset: max,
            min_offset: b.store.min_offset_in_queue(&h.topic, q),
        };
        table.insert(mq(b, &h.topic, q), json(&v));
    }
    Ok(Some(ok(req).with_body(mq_keyed("offsetTable", &table, &[]))))
}

pub fn get_consume_stats(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GetConsumeStatsRequestHeader::decode(&req.ext_fields)?;
    let topics: BTreeSet<String> = match (&h.topic, &h.topic_list) {
        (Some(t), _) => [t.clone()].into(),
        (None, Some(list)) => list.split(';').filter(|t| !t.is_empty()).map(str::to_owned).collect(),
        (None, None) => b.offsets.topics_of_group(&h.consumer_group).into_iter().collect(),
    };
    let mut table = BTreeMap::new();
    let mut consume_tps = 0.0;
    for topic in &topics {
        let Some(tc) = b.topics.get(topic) else { continue };
        // `tpsGroupGetNums`: what the group read from the topic over the last minute.
        consume_tps += b.stats.group_get_tps(&h.consumer_group, topic);
        for q in 0..tc.read_queue_nums {
            let broker_offset = b.store.max_offset_in_queue(topic, q);
            let consumer_offset = b.offsets.query(&h.consumer_group, topic, q).max(0);
            let last = if consumer_offset > 0 {
                b.store.message_store_timestamp(topic, q, consumer_offset - 1).unwrap_or(0)
            } else {
                0
            };
            let v =
                OffsetWrapper { broker_offset, consumer_offset, last_timestamp: last, pull_offset: consumer_offset };
            table.insert(mq(b, topic, q), json(&v));
        }
    }
    let tps = crate::core::stats::format::java_double(consume_tps);
    Ok(Some(ok(req).with_body(mq_keyed("offsetTable", &table, &[("consumeTps", tps)]))))
}

fn connections(channels: impl Iterator<Item = crate::broker::client::ClientChannel>) -> Vec<ConnectionInfo> {
    channels
        .map(|c| ConnectionInfo {
            client_addr: c.link.peer().to_string(),
            client_id: c.client_id.clone(),
            language: c.language.name().to_owned(),
            version: c.version,
        })
        .collect()
}

pub fn get_consumer_connection_list(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = ConsumerGroupHeader::decode(&req.ext_fields)?;
    let Some(info) = b.consumers.group(&h.consumer_group) else {
        return fail(ResponseCode::CONSUMER_NOT_ONLINE, format!("the consumer group[{}] not online", h.consumer_group));
    };
    let body = ConsumerConnection {
        connection_set: connections(info.channels.values().cloned()),
        consume_from_where: info.consume_from_where.clone(),
        consume_type: info.consume_type.clone(),
        message_model: info.message_model.clone(),
        subscription_table: info.subscriptions.clone(),
    };
    Ok(Some(ok(req).with_body(json(&body))))
}

pub fn get_producer_connection_list(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = ProducerGroupHeader::decode(&req.ext_fields)?;
    let channels = b.producers.channels(&h.producer_group);
    if channels.is_empty() {
        return fail(ResponseCode::SYSTEM_ERROR, format!("the producer group[{}] not exist", h.producer_group));
    }
    Ok(Some(ok(req).with_body(json(&ProducerConnection { connection_set: connections(channels.into_iter()) }))))
}

pub fn query_topic_consume_by_who(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = TopicHeader::decode(&req.ext_fields)?;
    let mut groups: BTreeSet<String> = b.consumers.groups_subscribing(&h.topic).into_iter().collect();
    groups.extend(b.offsets.groups_of_topic(&h.topic));
    Ok(Some(ok(req).with_body(json(&GroupList { group_list: groups.into_iter().collect() }))))
}

/// Resets a group's offsets on a topic to the first message stored at or after `timestamp`
/// (-1: the end), tells the online consumers (RESET_CONSUMER_CLIENT_OFFSET) and stores the new
/// offsets. CONSUMER_NOT_ONLINE when nobody is connected, so mqadmin falls back to its own path.
pub async fn invoke_broker_to_reset_offset(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = ResetOffsetRequestHeader::decode(&req.ext_fields)?;
    let Some(tc) = b.topics.get(&h.topic) else {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("[reset-offset] topic[{}] not exist", h.topic));
    };
    let Some(info) = b.consumers.group(&h.group) else {
        return fail(
            ResponseCode::CONSUMER_NOT_ONLINE,
            format!("Consumer not online, so can not reset offset, Group: {} Topic: {}", h.group, h.topic),
        );
    };
    let mut table = BTreeMap::new();
    for q in 0..tc.read_queue_nums {
        if h.queue_id.is_some_and(|id| id >= 0 && id != q) {
            continue;
        }
        let target = match (h.offset, h.timestamp) {
            (Some(o), _) if o >= 0 => o,
            (_, -1) => b.store.max_offset_in_queue(&h.topic, q),
            (_, ts) => b.store.offset_in_queue_by_time(&h.topic, q, ts),
        };
        let current = b.offsets.query(&h.group, &h.topic, q);
        if h.is_force || current < 0 || target < current {
            b.offsets.commit(&h.group, &h.topic, q, target);
        }
        table.insert(mq(b, &h.topic, q), target.to_string());
    }
    let body = mq_keyed("offsetTable", &table, &[]);
    for ch in info.channels.values() {
        let mut notify = RemotingCommand::request(RequestCode::RESET_CONSUMER_CLIENT_OFFSET).with_body(body.clone());
        h.encode(&mut notify.ext_fields);
        if let Some(conn) = ch.link.remoting() {
            let _ = conn.invoke_oneway(notify).await;
        }
    }
    Ok(Some(ok(req).with_body(body)))
}

pub fn clone_group_offset(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = CloneGroupOffsetRequestHeader::decode(&req.ext_fields)?;
    let topics: Vec<String> = match &h.topic {
        Some(t) => vec![t.clone()],
        None => b.offsets.topics_of_group(&h.src_group),
    };
    for topic in topics {
        for (q, offset) in b.offsets.queue_offsets(&h.src_group, &topic) {
            b.offsets.commit(&h.dest_group, &topic, q, offset);
        }
    }
    Ok(Some(ok(req)))
}

/// The member `client_id` of `group`, or Java's "not online" refusal.
fn online_member(b: &BrokerInner, group: &str, client_id: &str) -> Result<ClientChannel, BrokerError> {
    let channel =
        b.consumers.group(group).and_then(|i| i.channels.values().find(|c| c.client_id == client_id).cloned());
    match channel {
        Some(ch) => Ok(ch),
        None => fail(ResponseCode::SYSTEM_ERROR, format!("The Consumer <{group}> <{client_id}> not online")),
    }
}

/// How long the broker waits for a client's answer (`Broker2Client.callClient`).
const CLIENT_ANSWER: Duration = Duration::from_secs(10);

/// Asks the client for its running info and relays the answer (Java waits 10 s). A gRPC
/// client answers only a jstack request (PrintThreadStackTraceCommand, as Java's proxy): its
/// running info is then its thread stacks alone.
pub async fn get_consumer_running_info(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GetConsumerRunningInfoRequestHeader::decode(&req.ext_fields)?;
    let ch = online_member(b, &h.consumer_group, &h.client_id)?;
    let conn = match &ch.link {
        Link::Remoting(conn) => conn,
        Link::Door { client, .. } if h.jstack_enable => {
            let Some(stack) = client.thread_stack_trace(CLIENT_ANSWER).await else {
                return fail(ResponseCode::CONSUME_MSG_TIMEOUT, "the gRPC client did not send its thread stacks");
            };
            let info = serde_json::json!({
                "jstack": stack, "properties": {}, "subscriptionSet": [], "mqTable": {}, "statusTable": {},
            });
            return Ok(Some(ok(req).with_body(info.to_string().into_bytes())));
        }
        Link::Door { .. } => {
            return fail(
                ResponseCode::SYSTEM_ERROR,
                format!("The Consumer <{}> <{}> is a gRPC client: no running info", h.consumer_group, h.client_id),
            )
        }
    };
    let mut ask = RemotingCommand::request(RequestCode::GET_CONSUMER_RUNNING_INFO);
    h.encode(&mut ask.ext_fields);
    match conn.invoke(ask, CLIENT_ANSWER).await {
        Ok(answer) => Ok(Some(relayed(req, answer))),
        Err(e) => fail(ResponseCode::CONSUME_MSG_TIMEOUT, format!("consumer running info request failed: {e}")),
    }
}

fn relayed(req: &RemotingCommand, answer: RemotingCommand) -> RemotingCommand {
    let mut resp = RemotingCommand::response_to(req, answer.response_code());
    resp.remark = answer.remark;
    resp.body = answer.body;
    resp
}

/// CONSUME_MESSAGE_DIRECTLY (309, mqadmin `consumeMessage`): the message `msgId` names (an
/// offset message id) is given to one online consumer to consume once, and its
/// ConsumeMessageDirectlyResult relayed. A remoting client gets the request with the stored
/// record as its body (`AdminBrokerProcessor.consumeMessageDirectly`); a gRPC client a
/// VerifyMessageCommand, whose answer maps as Java's proxy maps it.
pub async fn consume_message_directly(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = ConsumeMessageDirectlyResultRequestHeader::decode(&req.ext_fields)?;
    let ch = online_member(b, &h.consumer_group, &h.client_id)?;
    // The id is the client's: only a genuine record starting where it says (`named_record`).
    let record = crate::model::message::decode_offset_msg_id(&h.msg_id).and_then(|(_, at)| b.store.named_record(at));
    let Some(record) = record else {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!("no message with the id {}", crate::model::name::shown(&h.msg_id)),
        );
    };
    match &ch.link {
        Link::Remoting(conn) => {
            let mut ask = RemotingCommand::request(RequestCode::CONSUME_MESSAGE_DIRECTLY);
            ask.ext_fields = req.ext_fields.clone();
            ask.ext_fields.insert("brokerName".into(), b.config.broker_name.clone());
            ask.body = record.into_bytes();
            match conn.invoke(ask, CLIENT_ANSWER).await {
                Ok(answer) => Ok(Some(relayed(req, answer))),
                Err(e) => fail(ResponseCode::CONSUME_MSG_TIMEOUT, format!("consume message directly failed: {e}")),
            }
        }
        Link::Door { client, .. } => {
            let started = std::time::Instant::now();
            let Some(verified) = client.verify_message(record.into_bytes().to_vec(), CLIENT_ANSWER).await else {
                return fail(ResponseCode::CONSUME_MSG_TIMEOUT, "the gRPC client did not answer in time");
            };
            let result = match verified {
                Verified::Consumed => Some("CR_SUCCESS"),
                Verified::Later => Some("CR_LATER"),
                Verified::Corrupted => Some("CR_RETURN_NULL"),
                Verified::Other => None,
            };
            let mut body = serde_json::json!({
                "order": false, "autoCommit": true, "remark": "from gRPC client",
                "spentTimeMills": started.elapsed().as_millis() as u64,
            });
            if let Some(r) = result {
                body["consumeResult"] = r.into();
            }
            Ok(Some(ok(req).with_body(body.to_string().into_bytes())))
        }
    }
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): asks each online consumer of the group (or the
/// one whose client id is `clientAddr`) for its offsets (GET_CONSUMER_STATUS_FROM_CLIENT, 221) and relays them
/// keyed by client id (`Broker2Client.getConsumeStatus`).
pub async fn invoke_broker_to_get_consumer_status(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = GetConsumerStatusRequestHeader::decode(&req.ext_fields)?;
    let Some(info) = b.consumers.group(&h.group) else {
        return fail(
            ResponseCode::CONSUMER_NOT_ONLINE,
            format!("No Any Consumer online in the consumer group: [{}]", h.group),
        );
    };
    let mut tables = BTreeMap::new();
    for ch in info.channels.values() {
        // `clientAddr` names a client by its client id, despite the field's name (Java compares
        // it with ClientChannelInfo.clientId); blank means every client.
        if h.client_addr.as_deref().map(str::trim).is_some_and(|a| !a.is_empty() && a != ch.client_id) {
            continue;
        }
        let mut ask = RemotingCommand::request(RequestCode::GET_CONSUMER_STATUS_FROM_CLIENT);
        h.encode(&mut ask.ext_fields);
        let Some(conn) = ch.link.remoting() else { continue };
        let Ok(answer) = conn.invoke(ask, Duration::from_secs(5)).await else { continue };
        if answer.response_code() != ResponseCode::SUCCESS {
            continue;
        }
        if let Ok(entries) = parse_mq_keyed(&answer.body, "messageQueueTable") {
            tables.insert(ch.client_id.clone(), entries.into_iter().map(|(mq, v)| (mq, v.to_string())).collect());
        }
    }
    Ok(Some(ok(req).with_body(consumer_status_table(&tables))))
}
