//! QUERY_ASSIGNMENT (400) and SET_MESSAGE_REQUEST_MODE (401), as Java's
//! `QueryAssignmentProcessor`: a push consumer with `clientRebalance=false` asks the broker which
//! queues it reads and how (PULL or POP). POP mode (set by SET_MESSAGE_REQUEST_MODE, `mqadmin
//! setConsumeMode`) hands out queue -1 (every queue, popped by the broker) unless
//! popShareQueueNum limits the sharing; PULL mode (the default, and always on retry topics)
//! divides the queues between the group's clients like `AllocateMessageQueueAveragely`.
//!
//! The queues are those of every broker of the topic's route, as the NameServers have it
//! (`broker/routes.rs`): the client asks one broker for its whole assignment.
//!
//! May import: `model`, `protocol`, `core` and modules of `broker/`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{fail, BrokerError, Handled};
use crate::broker::BrokerInner;
use crate::core::pop::mode::{Mode, RequestMode};
use crate::model::group::RETRY_GROUP_TOPIC_PREFIX;
use crate::protocol::{RemotingCommand, ResponseCode};

/// `QueryAssignmentRequestBody`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryAssignment {
    topic: String,
    consumer_group: String,
    client_id: String,
    #[serde(default)]
    message_model: Option<String>,
}

#[derive(Serialize, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
struct MessageQueue {
    topic: String,
    broker_name: String,
    queue_id: i32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Assignment {
    message_queue: MessageQueue,
    mode: Mode,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Assignments {
    message_queue_assignments: Option<Vec<Assignment>>,
}

fn body<T: for<'de> Deserialize<'de>>(req: &RemotingCommand) -> Result<T, BrokerError> {
    crate::model::json::from_slice(&req.body)
        .map_err(|e| BrokerError::InvalidParameter(format!("bad request body: {e}")))
}

pub async fn query_assignment(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let q: QueryAssignment = body(req)?;
    super::check_topic(&q.topic)?;
    super::check_group(&q.consumer_group)?;
    let mode = if q.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        RequestMode { mode: Mode::Pull, ..RequestMode::default() }
    } else {
        b.pop.request_modes(&b.config.config_dir()).get(&q.topic, &q.consumer_group).unwrap_or_default()
    };
    let queues = b.routes.subscribe_queues(b, &q.topic).await.map(|brokers| {
        let queue =
            |broker: &str, queue_id| MessageQueue { topic: q.topic.clone(), broker_name: broker.into(), queue_id };
        brokers.iter().flat_map(|r| (0..r.read_queue_nums).map(|id| queue(&r.broker_name, id))).collect::<Vec<_>>()
    });
    let assigned = match (queues, q.message_model.as_deref()) {
        (None, _) => None,
        (Some(all), Some("BROADCASTING")) => Some(all),
        (Some(all), _) => {
            let mut cids = b.consumers.group(&q.consumer_group).map(|g| g.client_ids()).unwrap_or_default();
            cids.sort();
            if cids.is_empty() {
                None
            } else if mode.mode == Mode::Pop {
                Some(allocate_for_pop(&all, &cids, &q.client_id, mode.pop_share_queue_num))
            } else {
                Some(allocate_averagely(&all, &cids, &q.client_id))
            }
        }
    };
    let body = Assignments {
        message_queue_assignments: assigned.map(|qs| {
            let mut qs = qs;
            qs.sort();
            qs.dedup();
            qs.into_iter().map(|message_queue| Assignment { message_queue, mode: mode.mode }).collect()
        }),
    };
    let json = serde_json::to_vec(&body).map_err(|e| BrokerError::InvalidParameter(e.to_string()))?;
    Ok(Some(super::ok(req).with_body(json)))
}

pub async fn set_message_request_mode(b: &Arc<BrokerInner>, req: &RemotingCommand) -> Handled {
    let m: RequestMode = body(req)?;
    super::check_topic(&m.topic)?;
    super::check_group(&m.consumer_group)?;
    if m.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        return fail(ResponseCode::NO_PERMISSION, "retry topic is not allowed to set mode");
    }
    if b.topics.view(&m.topic).is_none() {
        return fail(ResponseCode::TOPIC_NOT_EXIST, format!("topic[{}] not exist", m.topic));
    }
    if b.groups.get(&m.consumer_group).is_none() {
        return fail(ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group does not exist");
    }
    if let Err(e) = b.pop.request_modes(&b.config.config_dir()).set(m).await {
        return fail(ResponseCode::SYSTEM_ERROR, format!("cannot write messageRequestMode.json: {e}"));
    }
    Ok(Some(super::ok(req)))
}

/// `AllocateMessageQueueAveragely` over sorted queues and client ids.
fn allocate_averagely(all: &[MessageQueue], cids: &[String], me: &str) -> Vec<MessageQueue> {
    let Some(index) = cids.iter().position(|c| c == me) else { return Vec::new() };
    let (n, c) = (all.len(), cids.len());
    if n == 0 {
        return Vec::new();
    }
    let rem = n % c;
    let size = if n <= c {
        1
    } else if rem > 0 && index < rem {
        n / c + 1
    } else {
        n / c
    };
    let start = if rem > 0 && index < rem { index * size } else { index * size + rem };
    let range = size.min(n.saturating_sub(start));
    (0..range).map(|i| all[(start + i) % n].clone()).collect()
}

/// `allocate4Pop`: every queue as -1 when all clients share all queues, else this client's
/// average share plus that of the next popShareQueueNum clients.
fn allocate_for_pop(all: &[MessageQueue], cids: &[String], me: &str, share: i32) -> Vec<MessageQueue> {
    if share <= 0 || share as usize >= cids.len().saturating_sub(1) {
        return all.iter().map(|q| MessageQueue { queue_id: -1, ..q.clone() }).collect();
    }
    let Some(index) = cids.iter().position(|c| c == me) else { return Vec::new() };
    if all.is_empty() {
        return Vec::new();
    }
    if cids.len() > all.len() {
        return vec![all[index % all.len()].clone()];
    }
    let mut out = allocate_averagely(all, cids, me);
    for i in 1..=share as usize {
        out.extend(allocate_averagely(all, cids, &cids[(index + i) % cids.len()]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: i32) -> Vec<MessageQueue> {
        (0..n).map(|queue_id| MessageQueue { topic: "T".into(), broker_name: "b".into(), queue_id }).collect()
    }

    #[test]
    fn queues_are_divided_like_allocate_message_queue_averagely() {
        let cids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let ids = |me| allocate_averagely(&queues(8), &cids, me).iter().map(|q| q.queue_id).collect::<Vec<_>>();
        assert_eq!((ids("a"), ids("b"), ids("c")), (vec![0, 1, 2], vec![3, 4, 5], vec![6, 7]));
        assert!(ids("stranger").is_empty());
        let pop = allocate_for_pop(&queues(4), &cids, "a", 0);
        assert!(pop.iter().all(|q| q.queue_id == -1));
        let shared = allocate_for_pop(&queues(6), &cids, "a", 1);
        assert_eq!(shared.iter().map(|q| q.queue_id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }
}
