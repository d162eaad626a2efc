//! Bulk creation (`mqadmin updateTopicList`, `updateSubGroupList`):
//! UPDATE_AND_CREATE_TOPIC_LIST (18) and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225).
//!
//! ```text
//! 18   body CreateTopicListRequestBody {"topicConfigList":[TopicConfig...]}
//! 225  body SubscriptionGroupList      {"groupConfigList":[SubscriptionGroupConfig...]}
//! each entry checked as the single request (17 / 200) checks it, all before any is applied:
//! one bad entry refuses the whole list; at most MAX_LIST entries (Java has no bound)
//! ```
//! Both need an admin account under ACL 1.0, as 17 and 200 do (`acl::perm::ADMIN_CODES`; Java's
//! plain ACL lets any account send them).
//!
//! May import: `model`, `protocol` and modules of `broker/`.

use std::sync::Arc;

use serde::Deserialize;

use super::{ok, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::model::group::SubscriptionGroupConfig;
use crate::model::TopicConfig;
use crate::protocol::body::json;
use crate::protocol::{RemotingCommand, ResponseCode};

/// Entries one list request may carry.
pub const MAX_LIST: usize = 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateTopicListRequestBody {
    topic_config_list: Vec<TopicConfig>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubscriptionGroupList {
    group_config_list: Vec<SubscriptionGroupConfig>,
}

fn decode<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, BrokerError> {
    json::from_slice(body)
        .map_err(|e| BrokerError::Code(ResponseCode::SYSTEM_ERROR, format!("invalid {what} body: {e}")))
}

fn check_len(n: usize, what: &str) -> Result<(), BrokerError> {
    if n > MAX_LIST {
        return Err(BrokerError::InvalidParameter(format!("{n} {what} in one request; at most {MAX_LIST}")));
    }
    Ok(())
}

/// Attributes as a topic file gives them (`+key` adds, `-key` removes): the keys they add.
fn added_attributes(tc: &mut TopicConfig) {
    let given = std::mem::take(&mut tc.attributes);
    tc.attributes = given
        .into_iter()
        .filter(|(k, _)| !k.starts_with('-'))
        .map(|(k, v)| (k.strip_prefix('+').map(str::to_owned).unwrap_or(k), v))
        .collect();
}

pub async fn update_and_create_topic_list(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let body: CreateTopicListRequestBody = decode(&req.body, "CreateTopicListRequestBody")?;
    let mut list = body.topic_config_list;
    check_len(list.len(), "topics")?;
    for tc in &mut list {
        super::admin::check_new_topic(b, tc)?;
        added_attributes(tc);
        // As UPDATE_AND_CREATE_TOPIC: the whole config is replaced by what was sent.
        tc.extra = Default::default();
    }
    let names: Vec<&str> = list.iter().map(|t| t.topic_name.as_str()).collect();
    tracing::info!(topics = names.join(";"), "creating or updating topics in bulk");
    let mut changed = false;
    for tc in list {
        changed |= b.topics.update(tc);
    }
    if changed {
        b.topics_changed().await;
    }
    Ok(Some(ok(req)))
}

pub async fn update_and_create_subscriptiongroup_list(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let body: SubscriptionGroupList = decode(&req.body, "SubscriptionGroupList")?;
    check_len(body.group_config_list.len(), "groups")?;
    for g in &body.group_config_list {
        super::check_group(&g.group_name)?;
    }
    for g in body.group_config_list {
        b.groups.update(g);
    }
    b.persist_groups().await;
    Ok(Some(ok(req)))
}
