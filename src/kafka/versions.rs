//! The advertised API ranges and ApiVersions (KIP-511: a newer request than ours is answered
//! as v0 with UNSUPPORTED_VERSION and our list, so the client can retry lower).
//!
//! Transactions are served as transactions V1 (KIP-98 with KIP-890 part 1's server-side checks):
//! the `transaction.version` feature is not advertised, so clients stay on the V1 request
//! versions (AddPartitionsToTxn v0-3, the client ones; EndTxn, AddOffsetsToTxn and
//! TxnOffsetCommit up to v4; InitProducerId up to v4, without KIP-939's 2PC).
//!
//! Not advertised (a client that needs them fails fast): KIP-848 ConsumerGroupHeartbeat; SaslHandshake and
//! SaslAuthenticate only with `aclEnable=true` (`sasl.rs`); SaslHandshake v0
//! (raw SASL tokens: every client we test uses v1 and SaslAuthenticate).

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use super::api::error;

/// (api, min, max). Produce starts at 0 although v0-2 are refused: librdkafka before 2.11.1
/// turns compression off against a broker whose Produce minimum is above 0 (KAFKA-18659).
pub const ADVERTISED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 0, 11),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 5),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 4),
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::SaslHandshake, 1, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// The advertised range of `key`, if it is served at all.
pub fn range(key: ApiKey) -> Option<(i16, i16)> {
    ADVERTISED.iter().find(|(k, _, _)| *k == key).map(|(_, min, max)| (*min, *max))
}

/// The SASL APIs: advertised only where `aclEnable=true` makes clients authenticate (elsewhere
/// they answer ILLEGAL_SASL_STATE, as Kafka's on a listener without SASL).
const SASL: [ApiKey; 2] = [ApiKey::SaslHandshake, ApiKey::SaslAuthenticate];

/// The ApiVersions body: every advertised range (the same list for every version served), the
/// SASL ones when `sasl`.
pub fn api_versions(sasl: bool) -> ApiVersionsResponse {
    let api_keys = ADVERTISED
        .iter()
        .filter(|(k, _, _)| sasl || !SASL.contains(k))
        .map(|(k, min, max)| {
            ApiVersion::default().with_api_key(*k as i16).with_min_version(*min).with_max_version(*max)
        })
        .collect();
    ApiVersionsResponse::default().with_error_code(error::NONE).with_api_keys(api_keys)
}

/// KIP-511: a version above ours is answered as v0, UNSUPPORTED_VERSION, with only the
/// ApiVersions entry (as Kafka does), whatever the body held.
pub fn api_versions_too_new() -> ApiVersionsResponse {
    let (min, max) = range(ApiKey::ApiVersions).unwrap_or((0, 4));
    ApiVersionsResponse::default().with_error_code(error::UNSUPPORTED_VERSION).with_api_keys(vec![ApiVersion::default(
    )
    .with_api_key(ApiKey::ApiVersions as i16)
    .with_min_version(min)
    .with_max_version(max)])
}

/// Produce v0-2 cannot be decoded with the codec: every partition gets UNSUPPORTED_VERSION,
/// encoded by hand from the request's topic and partition lists (response header v0).
pub fn produce_v0_to_2_refusal(version: i16, correlation_id: i32, body: &[u8]) -> Option<BytesMut> {
    let mut r = body;
    let take = |r: &mut &[u8], n: usize| -> Option<Vec<u8>> {
        let (a, b) = (r.get(..n)?.to_vec(), r.get(n..)?);
        *r = b;
        Some(a)
    };
    let i16_at = |v: &[u8]| i16::from_be_bytes([v[0], v[1]]);
    let i32_at = |v: &[u8]| i32::from_be_bytes([v[0], v[1], v[2], v[3]]);
    take(&mut r, 2 + 4)?; // acks, timeout
    let topics = i32_at(&take(&mut r, 4)?);
    let mut out = BytesMut::new();
    out.put_i32(0); // size, patched below
    out.put_i32(correlation_id);
    out.put_i32(topics.max(0));
    for _ in 0..topics.max(0) {
        let len = i16_at(&take(&mut r, 2)?);
        let name = take(&mut r, usize::try_from(len).ok()?)?;
        out.put_i16(len);
        out.put_slice(&name);
        let parts = i32_at(&take(&mut r, 4)?);
        out.put_i32(parts.max(0));
        for _ in 0..parts.max(0) {
            let index = i32_at(&take(&mut r, 4)?);
            let size = i32_at(&take(&mut r, 4)?);
            take(&mut r, usize::try_from(size.max(0)).ok()?)?;
            out.put_i32(index);
            out.put_i16(error::UNSUPPORTED_VERSION);
            out.put_i64(-1);
            if version >= 2 {
                out.put_i64(-1);
            }
        }
    }
    if version >= 1 {
        out.put_i32(0); // throttle_time_ms
    }
    let size = i32::try_from(out.len() - 4).ok()?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Some(out)
}
