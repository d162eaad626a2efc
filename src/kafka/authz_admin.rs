//! The admin-tool half of [`super::authz`] (`aclEnable=true`): the APIs `kafka-topics`,
//! `kafka-log-dirs` and `kafka-consumer-groups` send beyond the client ones. RocketMQ accounts
//! have PUB/SUB per topic, SUB per group and the admin flag; Kafka's operations map onto them as
//! the existing admin APIs do (ALTER and DELETE are the admin's, DESCRIBE is any permission):
//!
//! ```text
//! CreatePartitions           Kafka ALTER on the topic      admin (TOPIC_AUTHORIZATION_FAILED per topic)
//! DescribeLogDirs            Kafka DESCRIBE on the cluster admin (v3+: CLUSTER_AUTHORIZATION_FAILED,
//!                                                          before: no log dirs, as Kafka)
//! OffsetDelete               Kafka DELETE on the group     admin (GROUP_AUTHORIZATION_FAILED), as
//!                                                          DeleteGroups
//! DescribeTopicPartitions    Kafka DESCRIBE on the topic   topic PUB or SUB (as Metadata); listing
//!                                                          all topics lists only those
//! ```
//!
//! May import: what `authz.rs` may, but not `authz.rs` itself.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::describe_topic_partitions_response::DescribeTopicPartitionsResponseTopic;
use kafka_protocol::messages::*;

use super::api::{error, reply, Request};
use super::authz_gate::{answer_or_patch, msg, patched, split, Gate};
use crate::acl::authority::Authority;
use crate::acl::perm::ANY;

/// `Some(gate)` for the admin-tool APIs, `None` for any other.
pub fn gate(who: &Authority, req: &Request, body: &mut RequestKind, log: &dyn Fn(&str, &str)) -> Option<Gate> {
    let refused = |log: &dyn Fn(&str, &str)| match who.admin() {
        Ok(()) => false,
        Err(why) => {
            log(&format!("{:?}", req.key), &why);
            true
        }
    };
    Some(match body {
        RequestKind::CreatePartitions(r) if refused(log) => {
            let why = "Authorization failed: adding partitions needs an admin account";
            let results = r.topics.iter().map(|t| {
                CreatePartitionsTopicResult::default()
                    .with_name(t.name.clone())
                    .with_error_code(error::TOPIC_AUTHORIZATION_FAILED)
                    .with_error_message(msg(why))
            });
            Gate::Answer(reply(req, &CreatePartitionsResponse::default().with_results(results.collect())))
        }
        RequestKind::DescribeLogDirs(_) if refused(log) => {
            let code = if req.version >= 3 { error::CLUSTER_AUTHORIZATION_FAILED } else { error::NONE };
            Gate::Answer(reply(req, &DescribeLogDirsResponse::default().with_error_code(code)))
        }
        RequestKind::OffsetDelete(_) if refused(log) => Gate::Answer(reply(
            req,
            &OffsetDeleteResponse::default().with_error_code(error::GROUP_AUTHORIZATION_FAILED),
        )),
        RequestKind::CreatePartitions(_) | RequestKind::DescribeLogDirs(_) | RequestKind::OffsetDelete(_) => Gate::Pass,
        RequestKind::DescribeTopicPartitions(r) => describe_topic_partitions(who, req, r, log),
        _ => return None,
    })
}

fn describe_topic_partitions(
    who: &Authority,
    req: &Request,
    r: &mut DescribeTopicPartitionsRequest,
    log: &dyn Fn(&str, &str),
) -> Gate {
    if who.admin().is_ok() {
        return Gate::Pass;
    }
    if r.topics.is_empty() {
        let who = who.clone();
        return Gate::Patch(Box::new(move |req: &Request, frame: bytes::BytesMut| {
            patched::<DescribeTopicPartitionsResponse>(req, frame, |d| {
                d.topics.retain(|t| t.name.as_ref().is_some_and(|n| who.topic(n.0.as_str(), ANY).is_ok()))
            })
        }));
    }
    let (ok, no) = split(std::mem::take(&mut r.topics), |t| t.name.0.as_str(), |t| who.topic(t, ANY), log);
    r.topics = ok;
    if no.is_empty() {
        return Gate::Pass;
    }
    let refused: Vec<DescribeTopicPartitionsResponseTopic> = no
        .into_iter()
        .map(|t| {
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(t.name))
                .with_error_code(error::TOPIC_AUTHORIZATION_FAILED)
                .with_topic_authorized_operations(i32::MIN)
        })
        .collect();
    answer_or_patch::<DescribeTopicPartitionsResponse, _>(req, r.topics.is_empty(), refused, |d, e| d.topics.extend(e))
}
