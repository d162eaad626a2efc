//! What every Kafka handler shares, and nothing else: the decoded request header ([`Request`]),
//! the reply type and its encoder, and the error codes. A leaf module: handlers import it, the
//! connection (`conn.rs`) that calls them imports it too, so no handler imports its caller.
//!
//! May import: `kafka_protocol`. Nothing of ferrocket.

use std::net::SocketAddr;

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::{Encodable, HeaderVersion};

/// What a handler hands back: a response frame, or nothing (acks=0).
pub type Reply = anyhow::Result<Option<BytesMut>>;

/// Why a request (or one part of it) was refused: the Kafka error code and a message for the
/// client.
pub type Refusal = (i16, String);

/// A decoded request header and who sent it.
pub struct Request {
    pub key: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
    pub client_id: String,
    pub peer: SocketAddr,
}

/// Encodes `body` as the answer to `req`.
pub fn reply<R>(req: &Request, body: &R) -> Reply
where
    R: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
{
    Ok(Some(frame(req.key, req.version, req.correlation_id, body)?))
}

/// A whole response frame: size, header (the version `key` uses at `version`), body.
pub fn frame<R: Encodable + HeaderVersion>(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &R,
) -> anyhow::Result<BytesMut> {
    let header_version = if key == ApiKey::ApiVersions { 0 } else { key.response_header_version(version) };
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let size = header.compute_size(header_version)? + body.compute_size(version)?;
    let mut out = BytesMut::with_capacity(4 + size);
    out.put_i32(i32::try_from(size)?);
    header.encode(&mut out, header_version)?;
    body.encode(&mut out, version)?;
    Ok(out)
}

/// Kafka error codes as `kafka_protocol`'s [`ResponseError`](kafka_protocol::ResponseError)
/// numbers them (no number is written by hand here), as the `i16` the messages carry.
pub mod error {
    use kafka_protocol::ResponseError as E;

    pub const NONE: i16 = 0;
    pub const CLUSTER_AUTHORIZATION_FAILED: i16 = E::ClusterAuthorizationFailed.code();
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = E::CoordinatorLoadInProgress.code();
    pub const COORDINATOR_NOT_AVAILABLE: i16 = E::CoordinatorNotAvailable.code();
    pub const CORRUPT_MESSAGE: i16 = E::CorruptMessage.code();
    pub const FENCED_INSTANCE_ID: i16 = E::FencedInstanceId.code();
    pub const GROUP_AUTHORIZATION_FAILED: i16 = E::GroupAuthorizationFailed.code();
    pub const GROUP_ID_NOT_FOUND: i16 = E::GroupIdNotFound.code();
    pub const GROUP_MAX_SIZE_REACHED: i16 = E::GroupMaxSizeReached.code();
    pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = E::GroupSubscribedToTopic.code();
    pub const ILLEGAL_GENERATION: i16 = E::IllegalGeneration.code();
    pub const ILLEGAL_SASL_STATE: i16 = E::IllegalSaslState.code();
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = E::InconsistentGroupProtocol.code();
    pub const INVALID_CONFIG: i16 = E::InvalidConfig.code();
    pub const INVALID_GROUP_ID: i16 = E::InvalidGroupId.code();
    pub const INVALID_PARTITIONS: i16 = E::InvalidPartitions.code();
    pub const INVALID_PRODUCER_EPOCH: i16 = E::InvalidProducerEpoch.code();
    pub const INVALID_RECORD: i16 = E::InvalidRecord.code();
    pub const INVALID_REPLICATION_FACTOR: i16 = E::InvalidReplicationFactor.code();
    pub const INVALID_REPLICA_ASSIGNMENT: i16 = E::InvalidReplicaAssignment.code();
    pub const INVALID_REQUEST: i16 = E::InvalidRequest.code();
    pub const INVALID_REQUIRED_ACKS: i16 = E::InvalidRequiredAcks.code();
    pub const INVALID_SESSION_TIMEOUT: i16 = E::InvalidSessionTimeout.code();
    pub const INVALID_TOPIC_EXCEPTION: i16 = E::InvalidTopicException.code();
    pub const KAFKA_STORAGE_ERROR: i16 = E::KafkaStorageError.code();
    pub const MEMBER_ID_REQUIRED: i16 = E::MemberIdRequired.code();
    pub const MESSAGE_TOO_LARGE: i16 = E::MessageTooLarge.code();
    pub const NON_EMPTY_GROUP: i16 = E::NonEmptyGroup.code();
    pub const NOT_ENOUGH_REPLICAS: i16 = E::NotEnoughReplicas.code();
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = E::NotEnoughReplicasAfterAppend.code();
    pub const NOT_LEADER_OR_FOLLOWER: i16 = E::NotLeaderOrFollower.code();
    pub const OFFSET_OUT_OF_RANGE: i16 = E::OffsetOutOfRange.code();
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = E::OutOfOrderSequenceNumber.code();
    pub const POLICY_VIOLATION: i16 = E::PolicyViolation.code();
    pub const REBALANCE_IN_PROGRESS: i16 = E::RebalanceInProgress.code();
    pub const REQUEST_TIMED_OUT: i16 = E::RequestTimedOut.code();
    pub const SASL_AUTHENTICATION_FAILED: i16 = E::SaslAuthenticationFailed.code();
    pub const THROTTLING_QUOTA_EXCEEDED: i16 = E::ThrottlingQuotaExceeded.code();
    pub const TOPIC_ALREADY_EXISTS: i16 = E::TopicAlreadyExists.code();
    pub const TOPIC_AUTHORIZATION_FAILED: i16 = E::TopicAuthorizationFailed.code();
    pub const UNKNOWN_MEMBER_ID: i16 = E::UnknownMemberId.code();
    pub const UNKNOWN_SERVER_ERROR: i16 = E::UnknownServerError.code();
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = E::UnknownTopicOrPartition.code();
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = E::UnsupportedForMessageFormat.code();
    pub const UNSUPPORTED_SASL_MECHANISM: i16 = E::UnsupportedSaslMechanism.code();
    pub const UNSUPPORTED_VERSION: i16 = E::UnsupportedVersion.code();
    // Transactions (KIP-98, KIP-890).
    pub const CONCURRENT_TRANSACTIONS: i16 = E::ConcurrentTransactions.code();
    pub const INVALID_PRODUCER_ID_MAPPING: i16 = E::InvalidProducerIdMapping.code();
    pub const INVALID_TRANSACTION_TIMEOUT: i16 = E::InvalidTransactionTimeout.code();
    pub const INVALID_TXN_STATE: i16 = E::InvalidTxnState.code();
    pub const OPERATION_NOT_ATTEMPTED: i16 = E::OperationNotAttempted.code();
    pub const PRODUCER_FENCED: i16 = E::ProducerFenced.code();
    pub const TRANSACTION_ABORTABLE: i16 = E::TransactionAbortable.code();
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = E::TransactionalIdAuthorizationFailed.code();
    pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = E::TransactionalIdNotFound.code();
}

#[cfg(test)]
mod tests {
    use super::error;

    #[test]
    fn codes_are_kafkas() {
        // Spot checks against the numbers in Kafka's `Errors.java`.
        assert_eq!(error::UNKNOWN_SERVER_ERROR, -1);
        assert_eq!(error::OFFSET_OUT_OF_RANGE, 1);
        assert_eq!(error::TOPIC_AUTHORIZATION_FAILED, 29);
        assert_eq!(error::GROUP_AUTHORIZATION_FAILED, 30);
        assert_eq!(error::CLUSTER_AUTHORIZATION_FAILED, 31);
        assert_eq!(error::SASL_AUTHENTICATION_FAILED, 58);
        assert_eq!(error::INVALID_RECORD, 87);
    }
}
