//! CreatePartitions v0-3 (`kafka-topics --alter --partitions N`): a topic grows to N partitions
//! as RocketMQ's `updateTopic` grows it, by raising its read and write queue numbers in the
//! shared topic table (persisted, re-registered with the NameServers before the answer, so
//! RocketMQ clients see the new queues too). Kafka never shrinks a topic: neither does this.
//!
//! ```text
//! unknown topic                      UNKNOWN_TOPIC_OR_PARTITION
//! N == current                       INVALID_PARTITIONS "Topic already has 3 partition(s)."
//! N <  current                       INVALID_PARTITIONS "... would not be an increase."
//! N >  MAX_PARTITIONS (1024)         INVALID_PARTITIONS (the CreateTopics bound)
//! assignments given                  one per new partition, each naming only this broker,
//!                                    else INVALID_REPLICA_ASSIGNMENT
//! a topic named twice                INVALID_REQUEST for each
//! validate_only                      checked, nothing changed
//! ```
//!
//! May import: `super::api`, `super::names`, `super::metadata` (helpers), the Kafka codec,
//! `crate::core` (through [`Kafka`]).

use std::collections::HashMap;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::*;
use tracing::info;

use super::api::{error, reply, Refusal, Reply, Request};
use super::metadata::s;
use super::{names, refusals, Kafka};

/// The most partitions a topic may have (CreateTopics' bound).
pub const MAX_PARTITIONS: i32 = 1024;

/// Checks one topic's growth against its current partition count; the new count.
fn check(k: &Kafka, t: &create_partitions_request::CreatePartitionsTopic, current: i32) -> Result<i32, Refusal> {
    let name = t.name.0.as_str();
    if t.count == current {
        return Err((error::INVALID_PARTITIONS, format!("Topic already has {current} partition(s).")));
    }
    if t.count < current {
        return Err((
            error::INVALID_PARTITIONS,
            format!("The topic {name} currently has {current} partition(s); {} would not be an increase.", t.count),
        ));
    }
    if t.count > MAX_PARTITIONS {
        return Err((error::INVALID_PARTITIONS, format!("{} partitions: must be 1 to {MAX_PARTITIONS}", t.count)));
    }
    let additional = t.count - current;
    if let Some(assignments) = &t.assignments {
        if i32::try_from(assignments.len()).ok() != Some(additional) {
            return Err((
                error::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "Attempted to add {additional} additional partition(s), but only {} assignment(s) were specified.",
                    assignments.len()
                ),
            ));
        }
        if let Some(bad) =
            assignments.iter().find(|a| a.broker_ids.iter().any(|b| b.0 != k.node_id) || a.broker_ids.len() != 1)
        {
            return Err((
                error::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "replica assignment {:?}: this broker (id {}) keeps the one replica of each partition",
                    bad.broker_ids.iter().map(|b| b.0).collect::<Vec<_>>(),
                    k.node_id
                ),
            ));
        }
    }
    Ok(t.count)
}

/// Grows `name` to `count` queues unless another request grew it first; the refusal otherwise.
fn grow(k: &Kafka, t: &create_partitions_request::CreatePartitionsTopic, validate_only: bool) -> Result<(), Refusal> {
    let name = t.name.0.as_str();
    names::check_topic(&k.shared.config, name)?;
    let unknown = || (error::UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.".to_owned());
    if validate_only {
        let view = k.shared.topics.view(name).ok_or_else(unknown)?;
        return check(k, t, view.read_queue_nums).map(|_| ());
    }
    // Checked and changed under the table's write lock: two requests cannot both grow from 3.
    k.shared
        .topics
        .modify(name, |tc| -> Result<(), Refusal> {
            let count = check(k, t, tc.read_queue_nums)?;
            tc.read_queue_nums = count;
            tc.write_queue_nums = tc.write_queue_nums.max(count);
            Ok(())
        })
        .ok_or_else(unknown)?
}

pub async fn handle(k: &Kafka, req: &Request, r: CreatePartitionsRequest) -> Reply {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for t in &r.topics {
        *seen.entry(t.name.0.as_str()).or_default() += 1;
    }
    let mut results = Vec::with_capacity(r.topics.len());
    let mut changed = false;
    for t in &r.topics {
        let outcome = if seen.get(t.name.0.as_str()).copied().unwrap_or(0) > 1 {
            Err((error::INVALID_REQUEST, "Duplicate topic name.".to_owned()))
        } else {
            grow(k, t, r.validate_only)
        };
        let res = CreatePartitionsTopicResult::default().with_name(t.name.clone());
        results.push(match outcome {
            Ok(()) => {
                if !r.validate_only {
                    info!(topic = %t.name.0, partitions = t.count, client = req.client_id, "topic grown by a Kafka client");
                    changed = true;
                }
                res
            }
            Err((code, why)) => {
                if code == error::INVALID_REPLICA_ASSIGNMENT || code == error::INVALID_REQUEST {
                    refusals::warn(k, req, &format!("topic '{}': {why}", crate::model::name::shown(t.name.0.as_str())));
                }
                res.with_error_code(code).with_error_message(Some(s(why)))
            }
        });
    }
    if changed {
        // Persisted and registered before the answer: the next Metadata (Kafka) and route lookup
        // (RocketMQ) both see the new partitions.
        k.shared.topics_changed().await;
    }
    reply(req, &CreatePartitionsResponse::default().with_results(results))
}
