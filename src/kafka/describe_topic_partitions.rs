//! DescribeTopicPartitions v0 (KIP-966; what Kafka 4's `Admin.describeTopics` and
//! `kafka-topics --describe` send): Metadata's partitions, paged. Topics are answered in name
//! order from the cursor's topic and partition, at most `response_partition_limit` partitions
//! (capped at Kafka's `max.request.partition.size.limit` default, 2000) per answer, with the
//! cursor to ask from next when more are left.
//!
//! ```text
//! topics = []        every listed topic (RocketMQ system topics and names Kafka cannot
//!                    express left out), from the cursor on
//! topics = [a, b]    those; unknown ones UNKNOWN_TOPIC_OR_PARTITION, reserved ones
//!                    names.rs's error; the cursor's topic must be among them (INVALID_REQUEST)
//! cursor             (topic, first partition); a negative partition is INVALID_REQUEST
//! ```
//! Every partition has this broker as leader, replica and ISR (one node).
//!
//! May import: `super::api`, `super::names`, `super::metadata` (topic ids, listing), the Kafka
//! codec, `crate::core` (through [`Kafka`]).

use std::collections::BTreeSet;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::*;

use super::api::{error, reply, Reply, Request};
use super::metadata::{s, topic_id, visible};
use super::{names, refusals, Kafka};

/// Kafka's `max.request.partition.size.limit` default: the most partitions one answer holds.
pub const MAX_PARTITIONS_PER_ANSWER: i32 = 2000;

fn refused(name: &str, code: i16) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic::default()
        .with_error_code(code)
        .with_name(Some(TopicName(s(name))))
        .with_topic_authorized_operations(i32::MIN)
}

pub fn handle(k: &Kafka, req: &Request, r: DescribeTopicPartitionsRequest) -> Reply {
    let all = r.topics.is_empty();
    let cursor_topic = r.cursor.as_ref().map_or("", |c| c.topic_name.0.as_str()).to_owned();
    let topics: BTreeSet<String> = if all {
        k.shared.topics.snapshot().1.into_keys().filter(|t| visible(k, t)).collect()
    } else {
        r.topics.iter().map(|t| t.name.0.to_string()).collect()
    };
    let topics: Vec<String> = topics.into_iter().filter(|t| t.as_str() >= cursor_topic.as_str()).collect();
    let bad_cursor = match &r.cursor {
        Some(c) if c.partition_index < 0 => Some(format!("cursor partition must be valid: {}", c.partition_index)),
        Some(c) if !all && !topics.iter().any(|t| *t == *c.topic_name.0) => {
            Some(format!("the topic list must contain the cursor topic: {}", c.topic_name.0.as_str()))
        }
        _ => None,
    };
    if let Some(why) = bad_cursor {
        refusals::warn_kind(k, req, refusals::kind::BAD_REQUEST, &why);
        let answered = r.topics.iter().map(|t| refused(t.name.0.as_str(), error::INVALID_REQUEST)).collect();
        return reply(req, &DescribeTopicPartitionsResponse::default().with_topics(answered));
    }
    let mut remaining = r.response_partition_limit.clamp(1, MAX_PARTITIONS_PER_ANSWER);
    let node = BrokerId(k.node_id);
    let mut out = DescribeTopicPartitionsResponse::default();
    for name in topics {
        if remaining == 0 {
            out.next_cursor = Some(Cursor::default().with_topic_name(TopicName(s(name))).with_partition_index(0));
            break;
        }
        if let Err((code, _)) = names::check_topic(&k.shared.config, &name) {
            if !all {
                out.topics.push(refused(&name, code));
            }
            continue;
        }
        let Some(view) = k.shared.topics.view(&name) else {
            if !all {
                out.topics.push(refused(&name, error::UNKNOWN_TOPIC_OR_PARTITION));
            }
            continue;
        };
        let first = if name == cursor_topic { r.cursor.as_ref().map_or(0, |c| c.partition_index) } else { 0 };
        let end = view.read_queue_nums.max(0);
        let last = first.saturating_add(remaining).min(end);
        let partitions: Vec<_> = (first..last)
            .map(|q| {
                DescribeTopicPartitionsResponsePartition::default()
                    .with_partition_index(q)
                    .with_leader_id(node)
                    .with_leader_epoch(0)
                    .with_replica_nodes(vec![node])
                    .with_isr_nodes(vec![node])
                    .with_eligible_leader_replicas(Some(Vec::new()))
                    .with_last_known_elr(Some(Vec::new()))
            })
            .collect();
        remaining -= (last - first).max(0);
        out.topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(TopicName(s(name.clone()))))
                .with_topic_id(topic_id(&name))
                .with_partitions(partitions)
                .with_topic_authorized_operations(i32::MIN),
        );
        if last < end {
            out.next_cursor = Some(Cursor::default().with_topic_name(TopicName(s(name))).with_partition_index(last));
            break;
        }
    }
    reply(req, &out)
}
