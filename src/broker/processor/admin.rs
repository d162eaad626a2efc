//! Admin requests served by the broker (`AdminBrokerProcessor`): topics, subscription groups,
//! runtime information.
//!
//! May import: `config`, `model`, `protocol` and modules of `broker/`; the area's rule is its line
//! in docs/architecture.md.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{fail, ok, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::model::group::SubscriptionGroupConfig;
use crate::model::{TopicConfig, TopicFilterType};
use crate::protocol::body::register::TopicConfigSerializeWrapper;
use crate::protocol::body::{json, to_vec};
use crate::protocol::header::broker::{CreateTopicRequestHeader, TopicHeader};
use crate::protocol::header::{command_header, CommandHeader};
use crate::protocol::{RemotingCommand, ResponseCode};

command_header! {
    /// DELETE_SUBSCRIPTIONGROUP (207).
    pub struct DeleteSubscriptionGroupRequestHeader {
        group_name: String = "groupName",
        clean_offset: bool = "cleanOffset",
    }
}

/// The checks UPDATE_AND_CREATE_TOPIC (17) and UPDATE_AND_CREATE_TOPIC_LIST (18) make of
/// each topic they create or replace.
pub(crate) fn check_new_topic(b: &BrokerInner, tc: &TopicConfig) -> Result<(), BrokerError> {
    super::check_topic(&tc.topic_name)?;
    if b.is_system_topic(&tc.topic_name) {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!("The topic[{}] is conflict with system topic.", tc.topic_name),
        );
    }
    if tc.read_queue_nums <= 0 || tc.write_queue_nums <= 0 {
        return Err(BrokerError::InvalidParameter(format!(
            "queue numbers must be positive: readQueueNums {} writeQueueNums {}",
            tc.read_queue_nums, tc.write_queue_nums
        )));
    }
    Ok(())
}

pub async fn update_and_create_topic(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = CreateTopicRequestHeader::decode(&req.ext_fields)?;
    let filter = match h.topic_filter_type.as_deref() {
        None | Some("") => TopicFilterType::SingleTag,
        Some(f) => TopicFilterType::parse(f)
            .ok_or_else(|| BrokerError::InvalidParameter(format!("unknown topicFilterType '{f}'")))?,
    };
    let tc = TopicConfig {
        topic_name: h.topic.clone(),
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        topic_filter_type: filter,
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order,
        attributes: parse_attributes(h.attributes.as_deref()),
        // UPDATE_AND_CREATE_TOPIC replaces the whole config, as Java does.
        extra: Default::default(),
    };
    check_new_topic(b, &tc)?;
    if b.topics.update(tc) {
        b.topics_changed().await;
    }
    Ok(Some(ok(req)))
}

/// `+k=v,+k2=v2` (the `attributes` header) into a map; `-k` entries (removals) are dropped.
fn parse_attributes(s: Option<&str>) -> BTreeMap<String, String> {
    s.unwrap_or("")
        .split(',')
        .filter_map(|kv| kv.trim().strip_prefix('+'))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

pub async fn delete_topic_in_broker(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = TopicHeader::decode(&req.ext_fields)?;
    // The store removes `consumequeue/<topic>`: a name like ".." would be the whole store. Not
    // the full topic rules: a topic the Kafka door made ("a.b") can still be deleted.
    if !crate::model::name::is_path_component(&h.topic) {
        return Err(BrokerError::InvalidParameter(format!(
            "The specified topic[{}] is not a topic name",
            crate::model::name::shown(&h.topic)
        )));
    }
    if b.is_system_topic(&h.topic) {
        return fail(ResponseCode::SYSTEM_ERROR, format!("The topic[{}] is conflict with system topic.", h.topic));
    }
    b.topics.delete(&h.topic);
    b.stats.topic_deleted(&h.topic);
    b.offsets.remove_topic(&h.topic);
    let store = b.store.clone();
    let topics = vec![h.topic.clone()];
    tokio::task::spawn_blocking(move || store.delete_topics(&topics))
        .await
        .map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, e.to_string()))?
        .map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, e.to_string()))?;
    // Persist, but do not re-register now (Java neither): mqadmin deletes the route from the
    // NameServers next, and a registration racing with that could bring the route back.
    b.persist_topics().await;
    Ok(Some(ok(req)))
}

/// GET_TOPIC_CONFIG (351, 5.x admin): one topic's config.
pub fn get_topic_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = TopicHeader::decode(&req.ext_fields)?;
    match b.topics.get(&h.topic) {
        Some(tc) => Ok(Some(ok(req).with_body(to_vec(&tc)))),
        None => fail(ResponseCode::TOPIC_NOT_EXIST, format!("No topic in this broker. topic: {}", h.topic)),
    }
}

pub fn get_all_topic_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let (data_version, topic_config_table) = b.topics.snapshot();
    Ok(Some(ok(req).with_body(to_vec(&TopicConfigSerializeWrapper { data_version, topic_config_table }))))
}

pub async fn update_and_create_subscriptiongroup(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let g: SubscriptionGroupConfig = json::from_slice(&req.body).map_err(|e| {
        BrokerError::Code(ResponseCode::SYSTEM_ERROR, format!("invalid SubscriptionGroupConfig body: {e}"))
    })?;
    super::check_group(&g.group_name)?;
    b.groups.update(g);
    b.persist_groups().await;
    Ok(Some(ok(req)))
}

pub fn get_all_subscriptiongroup_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let body = serde_json::json!({ "subscriptionGroupTable": b.groups.all(), "dataVersion": b.topics.data_version() });
    Ok(Some(ok(req).with_body(serde_json::to_vec(&body).unwrap_or_default())))
}

pub async fn delete_subscriptiongroup(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let h = DeleteSubscriptionGroupRequestHeader::decode(&req.ext_fields)?;
    b.groups.delete(&h.group_name);
    b.stats.group_deleted(&h.group_name);
    b.persist_groups().await;
    Ok(Some(ok(req)))
}

/// UPDATE_BROKER_CONFIG (`AdminBrokerProcessor.updateBrokerConfig`): every key is checked (a
/// black-listed key NO_PERMISSION, as Java; an unknown key or a bad value SYSTEM_ERROR naming
/// it, where Java ignores it), then all of them replace the config GET_BROKER_CONFIG reads, at
/// once and together (as Java's `Configuration.update` sets every field). The keys the broker
/// reads per use (`meta::live::LIVE_KEYS`) take effect at once, in the broker and in the store;
/// the others are said in the remark to need a restart. All are written back to the config
/// file, so a restart keeps them. Without a config file a key that needs a restart is refused:
/// the change could never take effect.
pub async fn update_broker_config(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let pairs = crate::properties::parse_properties(&req.body);
    if pairs.iter().any(|(k, _)| b.config.is_black_listed(k)) {
        return fail(ResponseCode::NO_PERMISSION, "Can not update config in black list.");
    }
    let mut restart: Vec<&str> = Vec::new();
    let mut permission_changed = false;
    let updated = b.live.update(|next| {
        let permission = next.broker_permission;
        for (key, value) in &pairs {
            if !next.set(key, value).map_err(|e| e.to_string())? {
                return Err(format!("config key '{key}' is not a broker config key"));
            }
            if !crate::meta::live::is_live(key) {
                if !b.config_file.exists() {
                    return Err(format!("config key '{key}' cannot be changed while the broker runs and there is no config file (-c) to keep it in; edit broker.conf and restart"));
                }
                restart.push(key.as_str());
            }
        }
        next.validate().map_err(|e| e.to_string())?;
        permission_changed = next.broker_permission != permission;
        Ok(())
    });
    let next = match updated {
        Ok(next) => next,
        Err(why) => return fail(ResponseCode::SYSTEM_ERROR, why),
    };
    if permission_changed {
        b.topics.bump_version();
    }
    b.groups.set_auto_create(next.auto_create_subscription_group);
    b.store.update_live_config(&next.store_config());
    tracing::info!(keys = ?pairs.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), "broker config updated");
    b.register_now.notify_one();
    if let Err(e) = b.config_file.record(&pairs).await {
        let path = b.config_file.path().map(|p| p.display().to_string()).unwrap_or_default();
        return fail(ResponseCode::SYSTEM_ERROR, format!("config updated but not written to {path}: {e}"));
    }
    let mut resp = ok(req);
    if !restart.is_empty() {
        restart.dedup();
        resp.remark = Some(format!("{} written to the config file; takes effect after a restart", restart.join(", ")));
    }
    Ok(Some(resp))
}

/// GET_BROKER_CONFIG: every key with its current value, updated ones included (as Java reads
/// its config objects' fields), whether the change took effect yet or waits for a restart.
pub fn get_broker_config(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let text = crate::properties::to_properties(&b.live.config().entries());
    let mut resp = ok(req).with_body(text);
    resp.ext_fields.insert("version".into(), serde_json::to_string(&b.topics.data_version()).unwrap_or_default());
    Ok(Some(resp))
}
