//! DescribeConfigs v1-4, AlterConfigs v0-2 and IncrementalAlterConfigs v0-1. Topic configs are
//! the topic's attributes (`topic_configs.rs` says which keys and how they are kept); broker
//! configs are read from the broker's settings and are not altered over the wire (they come
//! from broker.conf); group configs (`group_configs.rs`) are described with Kafka's defaults.
//!
//! May import: `super::api`, `super::names`, `super::topic_configs`, `super::refusals`, the
//! Kafka codec, `crate::core` (through [`Kafka`]).

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::*;

use super::api::{error, reply, Refusal, Reply, Request};
use super::group_configs::{self, GROUP};
use super::metadata::s;
use super::topic_configs::{self as tc, BROKER, DEFAULT_CONFIG, TOPIC};
use super::{names, refusals, Kafka};

/// Topic configs from the topic's attributes, broker configs from the broker's settings.
pub fn describe_configs(k: &Kafka, req: &Request, r: DescribeConfigsRequest) -> Reply {
    let c = &*k.shared.live.config();
    let mut results = Vec::new();
    for res in r.resources {
        let mut out = DescribeConfigsResult::default()
            .with_resource_type(res.resource_type)
            .with_resource_name(res.resource_name.clone());
        let entries: Vec<tc::Described> = match res.resource_type {
            TOPIC => {
                if let Err((code, why)) = names::check_topic(c, &res.resource_name) {
                    results.push(out.with_error_code(code).with_error_message(Some(s(why))));
                    continue;
                }
                let Some(topic) = k.shared.topics.get(&res.resource_name) else {
                    results.push(out.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION));
                    continue;
                };
                tc::describe(c, &topic.attributes)
            }
            BROKER => broker_entries(k),
            GROUP => {
                if let Err((code, why)) = names::check_group(&res.resource_name) {
                    results.push(out.with_error_code(code).with_error_message(Some(s(why))));
                    continue;
                }
                group_configs::describe()
            }
            other => {
                let why = format!("resource type {other} is not described here");
                refusals::warn(k, req, &why);
                results.push(out.with_error_code(error::INVALID_REQUEST).with_error_message(Some(s(why))));
                continue;
            }
        };
        let wanted = |n: &str| res.configuration_keys.as_ref().is_none_or(|keys| keys.iter().any(|kk| &**kk == n));
        out.configs = entries
            .into_iter()
            .filter(|d| wanted(d.name))
            .map(|d| {
                let mut e = DescribeConfigsResourceResult::default()
                    .with_name(s(d.name))
                    .with_value(Some(s(d.value.clone())))
                    .with_read_only(res.resource_type != TOPIC)
                    .with_config_source(d.source);
                if r.include_synonyms {
                    let mut synonyms = Vec::new();
                    if d.source != DEFAULT_CONFIG {
                        synonyms.push(synonym(d.name, &d.value, d.source));
                    }
                    if !d.synonym.0.is_empty() {
                        synonyms.push(synonym(d.synonym.0, &d.synonym.1, DEFAULT_CONFIG));
                    }
                    e = e.with_synonyms(synonyms);
                }
                if req.version >= 3 {
                    e = e.with_config_type(d.kind);
                }
                e
            })
            .collect();
        results.push(out);
    }
    reply(req, &DescribeConfigsResponse::default().with_results(results))
}

fn synonym(name: &str, value: &str, source: i8) -> DescribeConfigsSynonym {
    DescribeConfigsSynonym::default().with_name(s(name)).with_value(Some(s(value))).with_source(source)
}

fn broker_entries(k: &Kafka) -> Vec<tc::Described> {
    let c = &*k.shared.live.config();
    let entry = |name: &'static str, value: String| tc::Described {
        name,
        value: value.clone(),
        source: DEFAULT_CONFIG,
        synonym: (name, value),
        kind: 0,
    };
    vec![
        entry("num.partitions", c.kafka_num_partitions.to_string()),
        entry("auto.create.topics.enable", k.shared.live.auto_create_topic_enable().to_string()),
        entry("message.max.bytes", c.max_message_size.to_string()),
        entry("log.retention.check.interval.ms", c.kafka_log_retention_check_interval_ms.to_string()),
    ]
}

/// One resource to alter: its type, name and the changes (name, operation, value).
struct Alteration {
    resource_type: i8,
    name: String,
    changes: Vec<(String, i8, Option<String>)>,
    /// AlterConfigs replaces the whole set: keys not named go back to their defaults.
    replace: bool,
}

/// Checks and (unless `validate_only`) applies one alteration; persists and re-registers the
/// topic when its attributes changed.
async fn alter(k: &Kafka, req: &Request, a: Alteration, validate_only: bool) -> Result<(), Refusal> {
    let refuse = |r: Refusal| {
        if r.0 == error::INVALID_CONFIG || r.0 == error::INVALID_REQUEST {
            refusals::warn(k, req, &r.1);
        }
        r
    };
    if a.resource_type != TOPIC {
        return Err(refuse((
            error::INVALID_REQUEST,
            format!(
                "resource type {}: only topic configs can be altered here (broker configs come from broker.conf; group configs tune the KIP-848 protocols, not served)",
                a.resource_type
            ),
        )));
    }
    names::check_topic(&k.shared.config, &a.name)?;
    let Some(topic) = k.shared.topics.get(&a.name) else {
        return Err((error::UNKNOWN_TOPIC_OR_PARTITION, format!("Topic {} does not exist", a.name)));
    };
    let mut next: BTreeMap<String, String> = topic.attributes.clone();
    if a.replace {
        next.retain(|name, _| !tc::is_known(name));
    }
    for (name, op, value) in &a.changes {
        tc::apply(&mut next, name, *op, value.as_deref()).map_err(refuse)?;
    }
    if validate_only || next == topic.attributes {
        return Ok(());
    }
    let changed = k.shared.topics.modify_attributes(&a.name, |attrs| *attrs = next);
    if changed.is_none() {
        return Err((error::UNKNOWN_TOPIC_OR_PARTITION, format!("Topic {} does not exist", a.name)));
    }
    tracing::info!(topic = a.name, client = req.client_id, "topic configs altered by a Kafka client");
    k.shared.topics_changed().await;
    Ok(())
}

/// AlterConfigs (legacy): the named configs replace the topic's whole set.
pub async fn alter_configs(k: &Kafka, req: &Request, r: AlterConfigsRequest) -> Reply {
    let mut responses = Vec::with_capacity(r.resources.len());
    for res in r.resources {
        let a = Alteration {
            resource_type: res.resource_type,
            name: res.resource_name.to_string(),
            changes: res
                .configs
                .iter()
                .map(|c| (c.name.to_string(), 0, c.value.as_ref().map(|v| v.to_string())))
                .collect(),
            replace: true,
        };
        let (code, why) = match alter(k, req, a, r.validate_only).await {
            Ok(()) => (error::NONE, None),
            Err((code, why)) => (code, Some(s(why))),
        };
        responses.push(
            alter_configs_response::AlterConfigsResourceResponse::default()
                .with_error_code(code)
                .with_error_message(why)
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name),
        );
    }
    reply(req, &AlterConfigsResponse::default().with_responses(responses))
}

/// IncrementalAlterConfigs: SET, DELETE, APPEND, SUBTRACT per key.
pub async fn incremental_alter_configs(k: &Kafka, req: &Request, r: IncrementalAlterConfigsRequest) -> Reply {
    let mut responses = Vec::with_capacity(r.resources.len());
    for res in r.resources {
        let a = Alteration {
            resource_type: res.resource_type,
            name: res.resource_name.to_string(),
            changes: res
                .configs
                .iter()
                .map(|c| (c.name.to_string(), c.config_operation, c.value.as_ref().map(|v| v.to_string())))
                .collect(),
            replace: false,
        };
        let (code, why) = match alter(k, req, a, r.validate_only).await {
            Ok(()) => (error::NONE, None),
            Err((code, why)) => (code, Some(s(why))),
        };
        responses.push(
            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_error_code(code)
                .with_error_message(why)
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name),
        );
    }
    reply(req, &IncrementalAlterConfigsResponse::default().with_responses(responses))
}
