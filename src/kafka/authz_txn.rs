//! The transaction half of [`super::authz`] (`aclEnable=true`). RocketMQ accounts have no
//! transactional-id resource, so Kafka's TransactionalId WRITE / DESCRIBE map onto what a
//! transaction touches:
//!
//! ```text
//! FindCoordinator(transaction), InitProducerId,
//! EndTxn                                   any authenticated account
//! AddPartitionsToTxn                       topic PUB for every partition (else the refused
//!                                          ones TOPIC_AUTHORIZATION_FAILED, the others
//!                                          OPERATION_NOT_ATTEMPTED, nothing added)
//! AddOffsetsToTxn                          group SUB
//! TxnOffsetCommit                          group SUB, then topic SUB (as OffsetCommit)
//! ListTransactions, DescribeTransactions   admin (others list nothing;
//!                                          TRANSACTIONAL_ID_AUTHORIZATION_FAILED per id)
//! DescribeProducers                        topic SUB (Kafka's READ)
//! ```
//! Produce of a transactional batch needs topic PUB as any produce.
//!
//! May import: what `authz.rs` may, but not `authz.rs` itself.

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_transactions_response::TransactionState;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;

use super::api::{error, reply, Request};
use super::authz_gate::{answer_or_patch, split, Gate};
use crate::acl::authority::Authority;
use crate::acl::perm::{PUB, SUB};

/// `Some(gate)` for the transaction APIs, `None` for any other.
pub fn gate(who: &Authority, req: &Request, body: &mut RequestKind, log: &dyn Fn(&str, &str)) -> Option<Gate> {
    Some(match body {
        RequestKind::EndTxn(_) => Gate::Pass,
        RequestKind::AddPartitionsToTxn(r) => add_partitions(who, req, r, log),
        RequestKind::AddOffsetsToTxn(r) => match who.group(&r.group_id, SUB) {
            Ok(()) => Gate::Pass,
            Err(why) => {
                log(&r.group_id, &why);
                let code = error::GROUP_AUTHORIZATION_FAILED;
                Gate::Answer(reply(req, &AddOffsetsToTxnResponse::default().with_error_code(code)))
            }
        },
        RequestKind::TxnOffsetCommit(r) => txn_offset_commit(who, req, r, log),
        RequestKind::ListTransactions(_) => match who.admin() {
            Ok(()) => Gate::Pass,
            Err(_) => Gate::Answer(reply(req, &ListTransactionsResponse::default())),
        },
        RequestKind::DescribeTransactions(r) => match who.admin() {
            Ok(()) => Gate::Pass,
            Err(why) => {
                log("DescribeTransactions", &why);
                let refused = r.transactional_ids.iter().map(|id| {
                    TransactionState::default()
                        .with_transactional_id(id.clone())
                        .with_error_code(error::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                        .with_producer_id(ProducerId(-1))
                });
                Gate::Answer(reply(
                    req,
                    &DescribeTransactionsResponse::default().with_transaction_states(refused.collect()),
                ))
            }
        },
        RequestKind::DescribeProducers(r) => {
            use kafka_protocol::messages::describe_producers_response::{PartitionResponse, TopicResponse};
            let (ok, no) = split(std::mem::take(&mut r.topics), |t| t.name.0.as_str(), |t| who.topic(t, SUB), log);
            r.topics = ok;
            if no.is_empty() {
                return Some(Gate::Pass);
            }
            let refused = no.into_iter().map(|t| {
                let parts = t.partition_indexes.iter().map(|q| {
                    PartitionResponse::default()
                        .with_partition_index(*q)
                        .with_error_code(error::TOPIC_AUTHORIZATION_FAILED)
                });
                TopicResponse::default().with_name(t.name).with_partitions(parts.collect())
            });
            answer_or_patch::<DescribeProducersResponse, _>(req, r.topics.is_empty(), refused.collect(), |r, e| {
                r.topics.extend(e)
            })
        }
        _ => return None,
    })
}

fn add_partitions(who: &Authority, req: &Request, r: &AddPartitionsToTxnRequest, log: &dyn Fn(&str, &str)) -> Gate {
    let refused: Vec<bool> = r
        .v3_and_below_topics
        .iter()
        .map(|t| who.topic(&t.name, PUB).inspect_err(|why| log(&t.name, why)).is_err())
        .collect();
    if !refused.contains(&true) {
        return Gate::Pass;
    }
    let topics = r.v3_and_below_topics.iter().zip(refused).map(|(t, no)| {
        let code = if no { error::TOPIC_AUTHORIZATION_FAILED } else { error::OPERATION_NOT_ATTEMPTED };
        let parts = t.partitions.iter().map(|p| {
            AddPartitionsToTxnPartitionResult::default().with_partition_index(*p).with_partition_error_code(code)
        });
        AddPartitionsToTxnTopicResult::default().with_name(t.name.clone()).with_results_by_partition(parts.collect())
    });
    Gate::Answer(reply(
        req,
        &AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics.collect()),
    ))
}

fn txn_offset_commit(who: &Authority, req: &Request, r: &mut TxnOffsetCommitRequest, log: &dyn Fn(&str, &str)) -> Gate {
    let entries = |topics: &[txn_offset_commit_request::TxnOffsetCommitRequestTopic], code: i16| {
        topics
            .iter()
            .map(|t| {
                let parts = t.partitions.iter().map(|p| {
                    TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                });
                TxnOffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(parts.collect())
            })
            .collect::<Vec<_>>()
    };
    if let Err(why) = who.group(&r.group_id, SUB) {
        log(&r.group_id, &why);
        let refused = entries(&r.topics, error::GROUP_AUTHORIZATION_FAILED);
        return Gate::Answer(reply(req, &TxnOffsetCommitResponse::default().with_topics(refused)));
    }
    let (ok, no) = split(std::mem::take(&mut r.topics), |t| t.name.0.as_str(), |t| who.topic(t, SUB), log);
    r.topics = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused = entries(&no, error::TOPIC_AUTHORIZATION_FAILED);
    answer_or_patch::<TxnOffsetCommitResponse, _>(req, r.topics.is_empty(), refused, |r, e| r.topics.extend(e))
}
