//! OffsetDelete v0 (`kafka-consumer-groups --delete-offsets`): forgets a group's committed
//! offsets of some partitions (RocketMQ consumer offsets, and the commit metadata strings) as
//! Kafka's classic groups do.
//!
//! ```text
//! group unknown (no members, no offsets)          GROUP_ID_NOT_FOUND (whole answer)
//! group with members, protocol type not consumer  NON_EMPTY_GROUP (whole answer)
//! a consumer group subscribed to the topic        GROUP_SUBSCRIBED_TO_TOPIC for its partitions
//!   (Stable: the members' subscriptions; while it rebalances every topic counts as subscribed)
//! unknown topic or partition                      UNKNOWN_TOPIC_OR_PARTITION
//! otherwise                                       NONE (also when no offset was committed)
//! ```
//!
//! May import: `super::api`, `super::names`, `super::group` (descriptions), the Kafka codec,
//! `crate::core` (through [`Kafka`]).

use std::collections::BTreeSet;

use bytes::Buf;
use kafka_protocol::messages::offset_delete_response::{OffsetDeleteResponsePartition, OffsetDeleteResponseTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;
use tracing::info;

use super::api::{error, reply, Reply, Request};
use super::{names, Kafka};

/// The topics a group's members subscribe to: `None` when they cannot be known now (a group
/// rebalancing, whose members' subscriptions are not settled).
fn subscribed(d: &super::group::GroupDescription) -> Option<BTreeSet<String>> {
    if d.state != "Stable" {
        return None;
    }
    let mut topics = BTreeSet::new();
    for m in &d.members {
        let mut b = m.metadata.clone();
        if b.remaining() < 2 {
            return None;
        }
        let version = b.get_i16().clamp(0, 3);
        let sub = ConsumerProtocolSubscription::decode(&mut b, version).ok()?;
        topics.extend(sub.topics.into_iter().map(|t| t.to_string()));
    }
    Some(topics)
}

pub async fn handle(k: &Kafka, req: &Request, r: OffsetDeleteRequest) -> Reply {
    let group = r.group_id.0.to_string();
    let top = |code: i16| reply(req, &OffsetDeleteResponse::default().with_error_code(code));
    if let Err((code, _)) = names::check_group(&group) {
        return top(code);
    }
    let d = k.coordinator.describe_group(&group);
    let has_members = !matches!(d.state, "Dead" | "Empty");
    if !has_members && k.shared.offsets.topics_of_group(&group).is_empty() {
        return top(error::GROUP_ID_NOT_FOUND);
    }
    if has_members && d.protocol_type != "consumer" {
        return top(error::NON_EMPTY_GROUP);
    }
    let subscriptions = if has_members { subscribed(&d) } else { Some(BTreeSet::new()) };
    let mut topics = Vec::with_capacity(r.topics.len());
    for t in r.topics {
        let name = t.name.0.to_string();
        let queues = match names::check_topic(&k.shared.config, &name) {
            Ok(()) => k.shared.topics.view(&name).map_or(0, |v| v.read_queue_nums),
            Err(_) => 0,
        };
        let in_use = subscriptions.as_ref().is_none_or(|s| s.contains(&name));
        let mut deleted = Vec::new();
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                let q = p.partition_index;
                let code = if !(0..queues).contains(&q) {
                    error::UNKNOWN_TOPIC_OR_PARTITION
                } else if in_use {
                    error::GROUP_SUBSCRIBED_TO_TOPIC
                } else {
                    deleted.push(q);
                    error::NONE
                };
                OffsetDeleteResponsePartition::default().with_partition_index(q).with_error_code(code)
            })
            .collect();
        let removed = k.shared.offsets.remove_queues(&group, &name, &deleted);
        for q in &removed {
            k.commit_metadata.set(&group, &name, *q, "").await;
        }
        if !removed.is_empty() {
            info!(group, topic = name, partitions = ?removed, client = req.client_id, "committed offsets deleted by a Kafka client");
        }
        topics.push(OffsetDeleteResponseTopic::default().with_name(t.name).with_partitions(partitions));
    }
    reply(req, &OffsetDeleteResponse::default().with_topics(topics))
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, BytesMut};
    use kafka_protocol::protocol::{Encodable, StrBytes};

    use super::*;
    use crate::kafka::group::{GroupDescription, MemberDescription};

    fn member(topics: &[&str]) -> MemberDescription {
        let sub = ConsumerProtocolSubscription::default()
            .with_topics(topics.iter().map(|t| StrBytes::from_string((*t).to_owned())).collect());
        let mut b = BytesMut::new();
        b.put_i16(1);
        sub.encode(&mut b, 1).unwrap();
        MemberDescription {
            member_id: "m".into(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            metadata: b.freeze(),
            assignment: bytes::Bytes::new(),
        }
    }

    fn group(state: &'static str, members: Vec<MemberDescription>) -> GroupDescription {
        GroupDescription {
            error: 0,
            group_id: "g".into(),
            state,
            protocol_type: "consumer".into(),
            protocol: "range".into(),
            members,
        }
    }

    #[test]
    fn subscriptions_of_a_stable_group_only() {
        let g = group("Stable", vec![member(&["a", "b"]), member(&["c"])]);
        let topics: Vec<String> = subscribed(&g).unwrap().into_iter().collect();
        assert_eq!(topics, ["a", "b", "c"]);
        assert!(subscribed(&group("PreparingRebalance", vec![member(&["a"])])).is_none());
        let mut garbled = member(&["a"]);
        garbled.metadata = bytes::Bytes::from_static(&[0, 1, 0x7f, 0xff, 0xff, 0xff]);
        assert!(subscribed(&group("Stable", vec![garbled])).is_none(), "unreadable: counted as subscribed");
    }
}
