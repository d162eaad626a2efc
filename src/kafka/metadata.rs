//! Metadata v0-12, CreateTopics v2-7 (configs checked and kept by `topic_configs.rs`),
//! DeleteTopics v1-5 and DescribeCluster v0-1: this broker is the single node, leader of every
//! partition (queue). DescribeConfigs and the Alter APIs are in `configs.rs`.
//! RocketMQ's system topics and names Kafka cannot express (`%RETRY%…`) are not listed, and
//! answer [`names::check_topic`]'s errors when named.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use tracing::info;

use super::api::error;
use super::api::{reply, Reply, Request};
use super::{names, refusals, topic_configs, Kafka};
use crate::model::perm;

/// Listed in Metadata: a valid Kafka name that is not a RocketMQ system topic.
pub fn visible(k: &Kafka, topic: &str) -> bool {
    names::check_topic(&k.shared.config, topic).is_ok()
}

/// A stable, non-zero id per topic name (FNV-1a, 128 bits): Metadata v10+ needs one.
pub fn topic_id(topic: &str) -> uuid::Uuid {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in topic.bytes() {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013B);
    }
    uuid::Uuid::from_u128(h.max(1))
}

/// A protocol string from any text (shared by the handlers).
pub(super) fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

/// Creates `topic` with `queues` read/write queues; persists and re-registers if it was new.
pub async fn create_topic(k: &Kafka, topic: &str, queues: i32) -> bool {
    create_topic_with(k, topic, queues, BTreeMap::new()).await
}

/// [`create_topic`] with Kafka topic configs kept in its attributes (`topic_configs.rs`).
async fn create_topic_with(k: &Kafka, topic: &str, queues: i32, attributes: BTreeMap<String, String>) -> bool {
    let (_, created) = k.shared.topics.create_if_absent(topic, queues, perm::READ | perm::WRITE, 0);
    if created && !attributes.is_empty() {
        k.shared.topics.modify_attributes(topic, |a| a.extend(attributes));
    }
    if created {
        info!(topic, queues, "topic created by a Kafka client");
        // Persisted and registered with the NameServers before the client is answered, as a
        // RocketMQ send's auto-creation is: a RocketMQ client asking next finds the route.
        k.shared.topics_changed().await;
    }
    created
}

pub async fn metadata(k: &Arc<Kafka>, req: &Request, r: MetadataRequest) -> Reply {
    let sh = &k.shared;
    let names: Vec<String> = match &r.topics {
        None => sh.topics.snapshot().1.into_keys().filter(|t| visible(k, t)).collect(),
        Some(t) if t.is_empty() && req.version == 0 => {
            sh.topics.snapshot().1.into_keys().filter(|t| visible(k, t)).collect()
        }
        Some(t) => t.iter().filter_map(|t| t.name.as_ref().map(|n| n.0.to_string())).collect(),
    };
    let may_create = (req.version < 4 || r.allow_auto_topic_creation) && sh.live.auto_create_topic_enable();
    let mut topics = Vec::with_capacity(names.len());
    for name in names {
        let mut t = MetadataResponseTopic::default().with_name(Some(TopicName(s(name.clone()))));
        if let Err((code, _)) = names::check_topic(&sh.config, &name) {
            topics.push(t.with_error_code(code));
            continue;
        }
        if sh.topics.view(&name).is_none() && may_create && r.topics.is_some() {
            create_topic(k, &name, sh.config.kafka_num_partitions).await;
        }
        let Some(view) = sh.topics.view(&name) else {
            topics.push(t.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION));
            continue;
        };
        let node = BrokerId(k.node_id);
        let partitions = (0..view.read_queue_nums)
            .map(|q| {
                MetadataResponsePartition::default()
                    .with_partition_index(q)
                    .with_leader_id(node)
                    .with_leader_epoch(0)
                    .with_replica_nodes(vec![node])
                    .with_isr_nodes(vec![node])
            })
            .collect();
        t = t.with_partitions(partitions).with_is_internal(false).with_topic_authorized_operations(i32::MIN);
        if req.version >= 10 {
            t = t.with_topic_id(topic_id(&name));
        }
        topics.push(t);
    }
    let mut resp = MetadataResponse::default()
        .with_brokers(vec![broker(k)])
        .with_cluster_id(Some(s(k.cluster_id.clone())))
        .with_controller_id(BrokerId(k.node_id))
        .with_topics(topics);
    if (8..=10).contains(&req.version) {
        resp = resp.with_cluster_authorized_operations(i32::MIN);
    }
    reply(req, &resp)
}

fn broker(k: &Kafka) -> MetadataResponseBroker {
    MetadataResponseBroker::default()
        .with_node_id(BrokerId(k.node_id))
        .with_host(s(k.advertised.0.clone()))
        .with_port(k.advertised.1)
}

pub async fn create_topics(k: &Arc<Kafka>, req: &Request, r: CreateTopicsRequest) -> Reply {
    let mut results = Vec::with_capacity(r.topics.len());
    for t in r.topics {
        let name = t.name.0.to_string();
        let queues = if t.num_partitions == -1 { k.shared.config.kafka_num_partitions } else { t.num_partitions };
        let configs: Result<BTreeMap<String, String>, _> = t
            .configs
            .iter()
            .map(|c| topic_configs::check(&c.name, c.value.as_deref()).map(|v| (c.name.to_string(), v)))
            .collect();
        let refusal = if let Err(refused) = names::check_topic(&k.shared.config, &name) {
            Some(refused)
        } else if k.shared.topics.contains(&name) {
            Some((error::TOPIC_ALREADY_EXISTS, format!("Topic '{name}' already exists.")))
        } else if !(t.replication_factor == -1 || t.replication_factor == 1) {
            Some((
                error::INVALID_REPLICATION_FACTOR,
                format!("replication factor {}: this broker keeps one replica (use 1 or -1)", t.replication_factor),
            ))
        } else if queues <= 0 || queues > 1024 {
            Some((error::INVALID_PARTITIONS, format!("{queues} partitions: must be 1 to 1024")))
        } else if let Err(refused) = &configs {
            Some(refused.clone())
        } else {
            None
        };
        let mut res = CreatableTopicResult::default().with_name(t.name.clone());
        match refusal {
            Some((code, why)) => {
                if code == error::INVALID_CONFIG {
                    refusals::warn(k, req, &format!("topic '{name}': {why}"));
                } else if code == error::INVALID_REPLICATION_FACTOR {
                    refusals::warn_kind(k, req, refusals::kind::REPLICATION, &format!("topic '{name}': {why}"));
                }
                res = res.with_error_code(code).with_error_message(Some(s(why)));
            }
            None => {
                let attributes = configs.unwrap_or_default();
                let described = topic_configs::describe(&k.shared.config, &attributes)
                    .into_iter()
                    .map(|d| {
                        CreatableTopicConfigs::default()
                            .with_name(s(d.name))
                            .with_value(Some(s(d.value)))
                            .with_config_source(d.source)
                    })
                    .collect();
                if !r.validate_only {
                    create_topic_with(k, &name, queues, attributes).await;
                }
                res = res
                    .with_num_partitions(queues)
                    .with_replication_factor(1)
                    .with_topic_id(topic_id(&name))
                    .with_configs(Some(described));
            }
        }
        if req.version < 5 {
            res = res.with_num_partitions(-1).with_replication_factor(-1).with_configs(None);
        }
        if req.version < 7 {
            res = res.with_topic_id(uuid::Uuid::nil());
        }
        results.push(res);
    }
    reply(req, &CreateTopicsResponse::default().with_topics(results))
}

pub async fn delete_topics(k: &Arc<Kafka>, req: &Request, r: DeleteTopicsRequest) -> Reply {
    let sh = &k.shared;
    let mut responses = Vec::new();
    for name in r.topic_names {
        let topic = name.0.to_string();
        let mut res = DeletableTopicResult::default().with_name(Some(name));
        if let Err((code, _)) = names::check_topic(&sh.config, &topic) {
            res = res.with_error_code(code);
        } else if !sh.topics.delete(&topic) {
            res = res.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION);
        } else {
            sh.offsets.remove_topic(&topic);
            let (store, topics) = (sh.store.clone(), vec![topic.clone()]);
            let deleted = tokio::task::spawn_blocking(move || store.delete_topics(&topics)).await;
            if !matches!(deleted, Ok(Ok(()))) {
                res = res.with_error_code(error::KAFKA_STORAGE_ERROR);
            }
            info!(topic, "topic deleted by a Kafka client");
            sh.topics_changed().await;
        }
        if req.version >= 5 && res.error_code != error::NONE {
            res = res.with_error_message(Some(s(format!("cannot delete topic '{topic}'"))));
        }
        responses.push(res);
    }
    reply(req, &DeleteTopicsResponse::default().with_responses(responses))
}

pub fn describe_cluster(k: &Kafka, req: &Request, _r: DescribeClusterRequest) -> Reply {
    let b = DescribeClusterBroker::default()
        .with_broker_id(BrokerId(k.node_id))
        .with_host(s(k.advertised.0.clone()))
        .with_port(k.advertised.1);
    let resp = DescribeClusterResponse::default()
        .with_cluster_id(s(k.cluster_id.clone()))
        .with_controller_id(BrokerId(k.node_id))
        .with_brokers(vec![b])
        .with_cluster_authorized_operations(i32::MIN);
    reply(req, &resp)
}
