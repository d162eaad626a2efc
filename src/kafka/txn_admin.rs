//! ListTransactions (v0-1), DescribeTransactions (v0) and DescribeProducers (v0), what
//! `kafka-transactions.sh list`, `describe` and `describe-producers` ask: the coordinator's table
//! (`txn_coordinator.rs`) as Kafka's `TransactionStateManager.listTransactionStates` and
//! `handleDescribeTransactions` show it, and a partition's producers (`producer_ids.rs`, with the
//! start of an open transaction from `core.txn`).
//!
//! May import: `super::txn_coordinator`, `super::names`, `crate::core` (txn), the Kafka codec.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState as Described};
use kafka_protocol::messages::list_transactions_response::TransactionState as Listed;
use kafka_protocol::messages::*;

use super::api::error;
use super::api::{reply, Reply, Request};
use super::metadata::s;
use super::txn_coordinator::{check_transactional_id, TxnState};
use super::{names, Kafka};

pub fn list_transactions(k: &Arc<Kafka>, req: &Request, r: ListTransactionsRequest) -> Reply {
    let mut states = Vec::new();
    let mut unknown = Vec::new();
    for f in &r.state_filters {
        match TxnState::ALL.iter().find(|st| st.name() == f.as_str()) {
            Some(st) => states.push(*st),
            None => unknown.push(f.clone()),
        }
    }
    let now = crate::store::now_ms();
    let listed = {
        let t = k.txns.lock();
        t.ids
            .iter()
            .filter(|(_, m)| {
                r.producer_id_filters.is_empty() || r.producer_id_filters.contains(&ProducerId(m.producer_id))
            })
            .filter(|(_, m)| r.state_filters.is_empty() || states.contains(&m.state))
            .filter(|(_, m)| r.duration_filter < 0 || now - m.start_ms > r.duration_filter)
            .map(|(id, m)| {
                Listed::default()
                    .with_transactional_id(TransactionalId(s(id.clone())))
                    .with_producer_id(ProducerId(m.producer_id))
                    .with_transaction_state(s(m.state.name()))
            })
            .collect()
    };
    let resp = ListTransactionsResponse::default().with_unknown_state_filters(unknown).with_transaction_states(listed);
    reply(req, &resp)
}

pub fn describe_transactions(k: &Arc<Kafka>, req: &Request, r: DescribeTransactionsRequest) -> Reply {
    let t = k.txns.lock();
    let described = r
        .transactional_ids
        .into_iter()
        .map(|id| {
            let d = Described::default().with_transactional_id(id.clone()).with_producer_id(ProducerId(-1));
            if let Err((code, _)) = check_transactional_id(&id.0) {
                return d.with_error_code(code);
            }
            let Some(m) = t.ids.get(id.0.as_str()) else {
                return d.with_error_code(error::TRANSACTIONAL_ID_NOT_FOUND);
            };
            let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for p in &m.partitions {
                topics.entry(&p.topic).or_default().push(p.partition);
            }
            let topics = topics
                .into_iter()
                .map(|(name, parts)| {
                    TopicData::default().with_topic(TopicName(s(name.to_owned()))).with_partitions(parts)
                })
                .collect();
            d.with_producer_id(ProducerId(m.producer_id))
                .with_producer_epoch(m.producer_epoch)
                .with_transaction_state(s(m.state.name()))
                .with_transaction_timeout_ms(m.timeout_ms)
                .with_transaction_start_time_ms(m.start_ms)
                .with_topics(topics)
        })
        .collect();
    drop(t);
    reply(req, &DescribeTransactionsResponse::default().with_transaction_states(described))
}

/// DescribeProducers: per partition, the producers whose idempotent state the broker keeps
/// (`kafkaProducerIdExpirationMs`), with the start of their open transaction there, if any.
pub fn describe_producers(k: &Arc<Kafka>, req: &Request, r: DescribeProducersRequest) -> Reply {
    use kafka_protocol::messages::describe_producers_response::{PartitionResponse, ProducerState, TopicResponse};
    let now = u64::try_from(crate::store::now_ms()).unwrap_or(0);
    let topics = r
        .topics
        .into_iter()
        .map(|t| {
            let named = names::check_topic(&k.shared.config, &t.name).err();
            let view = k.shared.topics.view(&t.name);
            let parts = t.partition_indexes.iter().map(|&q| {
                let p = PartitionResponse::default().with_partition_index(q);
                if let Some((code, why)) = &named {
                    return p.with_error_code(*code).with_error_message(Some(s(why.clone())));
                }
                if !view.as_ref().is_some_and(|v| q >= 0 && q < v.read_queue_nums) {
                    return p.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION);
                }
                let producers = k.producers.active(&t.name, q, now).into_iter().map(|(pid, epoch, seq, at)| {
                    ProducerState::default()
                        .with_producer_id(ProducerId(pid))
                        .with_producer_epoch(i32::from(epoch))
                        .with_last_sequence(seq)
                        .with_last_timestamp(i64::try_from(at).unwrap_or(-1))
                        .with_coordinator_epoch(-1)
                        .with_current_txn_start_offset(k.shared.txn.open_first_offset(&t.name, q, pid).unwrap_or(-1))
                });
                p.with_active_producers(producers.collect())
            });
            TopicResponse::default().with_name(t.name.clone()).with_partitions(parts.collect())
        })
        .collect();
    reply(req, &DescribeProducersResponse::default().with_topics(topics))
}
