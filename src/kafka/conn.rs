//! One Kafka connection: read a frame, answer it, read the next. Kafka mutes a channel while
//! a request is in flight, so answering one at a time keeps responses in request order (the
//! Java client checks each correlation id against its oldest request). Produce with acks=0
//! gets no answer.
//!
//! A connection silent for `kafkaConnectionsMaxIdleMs` (Kafka's connections.max.idle.ms) is
//! closed, also in the middle of a frame; a frame's buffer grows with the bytes that arrive.
//!
//! With `aclEnable=true` a connection authenticates first (`sasl.rs`) and every request is
//! checked against its account (`authz.rs`) before its handler runs.
//!
//! Bad input closes the connection with a warn line, as Kafka does: a frame over the size
//! limit, an unknown API, a version outside our range (other than ApiVersions, which KIP-511
//! answers), a body that does not decode. Refused requests are logged through `refusals.rs`
//! (one WARN per API and kind of refusal per minute, naming the peer and client id).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::api::{reply, Reply, Request};
use super::authz::{self, Gate};
use super::sasl::{self, Session};
use super::{
    configs, create_partitions, delete_records, describe_topic_partitions, fetch, groups, log_dirs, metadata,
    offset_delete, offsets, produce, refusals, txn, txn_admin, versions, Kafka,
};

/// Kafka's `socket.request.max.bytes`.
pub const MAX_REQUEST: usize = 100 * 1024 * 1024;

/// Serves one connection, plaintext or TLS: one request at a time, so reads and writes never
/// overlap and the stream is not split.
pub async fn serve<S>(k: Arc<Kafka>, stream: S, peer: SocketAddr, shutdown: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut read = BufReader::with_capacity(64 * 1024, stream);
    let idle = match k.shared.config.kafka_connections_max_idle_ms {
        0 => Duration::MAX,
        ms => Duration::from_millis(ms),
    };
    let mut session = Session::new(&k, peer);
    loop {
        let size = tokio::select! {
            _ = shutdown.cancelled() => return,
            s = tokio::time::timeout(idle, read.read_i32()) => match s {
                Ok(Ok(s)) => s,
                Ok(Err(_)) => return, // closed by the client
                Err(_) => {
                    debug!(%peer, idle_ms = k.shared.config.kafka_connections_max_idle_ms, "closing an idle Kafka connection");
                    return;
                }
            },
        };
        let limit = session.max_frame(MAX_REQUEST);
        let Some(size) = usize::try_from(size).ok().filter(|s| (8..=limit).contains(s)) else {
            warn!(%peer, size, limit, "Kafka request frame size out of range; closing the connection");
            return;
        };
        let Some(buf) = read_body(&mut read, size, idle).await else {
            debug!(%peer, size, "Kafka connection closed or silent in the middle of a request; closing");
            return;
        };
        // The API key of a decodable request (a closed set) labels its latency.
        let raw_api = buf.get(..2).map_or(-1, |b| i16::from_be_bytes([b[0], b[1]]));
        let raw_version = buf.get(2..4).map_or(-1, |b| i16::from_be_bytes([b[0], b[1]]));
        let api = Some(raw_api).filter(|a| ApiKey::try_from(*a).is_ok());
        let client_id = refusals::raw_client_id(&buf);
        let started = std::time::Instant::now();
        let reply = match handle(&k, buf.freeze(), peer, &mut session).await {
            Ok(r) => {
                if let (Some(node), Some(api)) = (k.shared.metrics.as_deref(), api) {
                    let millis = started.elapsed().as_secs_f64() * 1000.0;
                    let protocol = crate::telemetry::Protocol::Kafka;
                    crate::telemetry::rpc_latency(
                        node,
                        protocol,
                        Some(i32::from(api)),
                        None,
                        false,
                        r.is_none(),
                        millis,
                    );
                }
                r
            }
            Err(why) => {
                let served = ApiKey::try_from(raw_api)
                    .ok()
                    .and_then(versions::range)
                    .is_some_and(|(min, max)| (min..=max).contains(&raw_version));
                let kind = if served { refusals::kind::BAD_REQUEST } else { refusals::kind::UNSUPPORTED_API };
                let reason = format!("{why:#}; closing the connection");
                refusals::note(&k, peer, &client_id, raw_api, raw_version, kind, &reason);
                return;
            }
        };
        if let Some(frame) = reply {
            // TLS buffers what it writes: flush (a no-op on a plain socket).
            if read.write_all(&frame).await.is_err() || read.flush().await.is_err() {
                return;
            }
        }
        if session.close_after_reply {
            return;
        }
    }
}

/// Reads a `size`-byte frame body. The buffer grows with the bytes that actually arrive (a
/// declared size never sizes an allocation up front), and each read must come within `idle`:
/// a client that announces a frame and stalls is closed like an idle one (`None`).
async fn read_body<R: AsyncRead + Unpin>(read: &mut R, size: usize, idle: Duration) -> Option<BytesMut> {
    const STEP: usize = 64 * 1024;
    let mut buf = BytesMut::with_capacity(size.min(STEP));
    while buf.len() < size {
        let left = size - buf.len();
        buf.reserve(left.min(buf.len().max(STEP)));
        let mut limited = read.take(left as u64);
        match tokio::time::timeout(idle, limited.read_buf(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return None,
        }
    }
    Some(buf)
}

/// A request frame's body after decoding: what the handlers get, or an answer made without
/// decoding (KIP-511 ApiVersions, Produce v0-2).
pub enum Decoded {
    Answer(BytesMut),
    Request { key: ApiKey, version: i16, header: Box<RequestHeader>, body: Box<RequestKind> },
}

/// Decodes one request frame body (the bytes after the size). An error closes the connection.
pub fn decode(mut body: Bytes) -> anyhow::Result<Decoded> {
    if body.len() < 8 {
        anyhow::bail!("request of {} bytes is shorter than a header", body.len());
    }
    let api_key = (&body[..2]).get_i16();
    let version = (&body[2..4]).get_i16();
    let correlation_id = (&body[4..8]).get_i32();
    let key = ApiKey::try_from(api_key).map_err(|_| anyhow::anyhow!("unknown API key {api_key}"))?;
    let Some((min, max)) = versions::range(key) else {
        anyhow::bail!("API {key:?} ({api_key}) is not served by this broker");
    };
    if key == ApiKey::ApiVersions && version > max {
        return Ok(Decoded::Answer(super::api::frame(key, 0, correlation_id, &versions::api_versions_too_new())?));
    }
    if version < min || version > max {
        anyhow::bail!("{key:?} version {version} outside the served range {min}-{max}");
    }
    if key == ApiKey::Produce && version < 3 {
        let client_id_len = body.get(8..10).map_or(0, |b| i16::from_be_bytes([b[0], b[1]]).max(0) as usize);
        let frame =
            versions::produce_v0_to_2_refusal(version, correlation_id, body.get(10 + client_id_len..).unwrap_or(&[]))
                .ok_or_else(|| anyhow::anyhow!("Produce v{version} body does not decode"))?;
        return Ok(Decoded::Answer(frame));
    }
    let header = RequestHeader::decode(&mut body, key.request_header_version(version))?;
    let body = RequestKind::decode(key, &mut body, version)?;
    Ok(Decoded::Request { key, version, header: Box::new(header), body: Box::new(body) })
}

async fn handle(k: &Arc<Kafka>, body: Bytes, peer: SocketAddr, session: &mut Session) -> Reply {
    let raw = body.clone();
    let (key, version, header, decoded) = match decode(body)? {
        Decoded::Answer(frame) => {
            let (api, version) = (raw.get(..2), raw.get(2..4));
            let api = api.map_or(-1, |b| i16::from_be_bytes([b[0], b[1]]));
            let version = version.map_or(-1, |b| i16::from_be_bytes([b[0], b[1]]));
            let reason = if api == ApiKey::Produce as i16 {
                "Produce v0-2 (message format v0/v1): answered UNSUPPORTED_VERSION for every partition"
            } else {
                "ApiVersions newer than ours: answered v0 UNSUPPORTED_VERSION with our range (KIP-511)"
            };
            let client_id = refusals::raw_client_id(&raw);
            refusals::note(k, peer, &client_id, api, version, refusals::kind::UNSUPPORTED_API, reason);
            return Ok(Some(frame));
        }
        Decoded::Request { key, version, header, body } => (key, version, header, body),
    };
    let req = Request {
        key,
        version,
        correlation_id: header.correlation_id,
        client_id: header.client_id.as_deref().unwrap_or("").to_owned(),
        peer,
    };
    let mut decoded = *decoded;
    match decoded {
        RequestKind::ApiVersions(_) => return reply(&req, &versions::api_versions(session.sasl_enabled())),
        RequestKind::SaslHandshake(r) => return sasl::handshake(session, &req, r),
        RequestKind::SaslAuthenticate(r) => return sasl::authenticate(k, session, &req, r).await,
        _ => {}
    }
    let Some(who) = session.authority() else {
        anyhow::bail!("{key:?} before SASL authentication (aclEnable=true): only ApiVersions, SaslHandshake and SaslAuthenticate are served");
    };
    match authz::gate(k, &who, session.user(), &req, &mut decoded) {
        Gate::Pass => dispatch(k, &req, decoded).await,
        Gate::Answer(answer) => answer,
        Gate::Patch(patch) => match dispatch(k, &req, decoded).await? {
            Some(frame) => Ok(Some(patch(&req, frame)?)),
            None => Ok(None),
        },
        Gate::Close(why) => anyhow::bail!("{why}"),
    }
}

/// Calls the handler of `decoded`.
async fn dispatch(k: &Arc<Kafka>, req: &Request, decoded: RequestKind) -> Reply {
    match decoded {
        RequestKind::Produce(r) => produce::handle(k, req, r).await,
        RequestKind::Fetch(r) => fetch::handle(k, req, r).await,
        RequestKind::ListOffsets(r) => fetch::list_offsets(k, req, r).await,
        RequestKind::Metadata(r) => metadata::metadata(k, req, r).await,
        RequestKind::CreateTopics(r) => metadata::create_topics(k, req, r).await,
        RequestKind::DeleteTopics(r) => metadata::delete_topics(k, req, r).await,
        RequestKind::DescribeConfigs(r) => configs::describe_configs(k, req, r),
        RequestKind::AlterConfigs(r) => configs::alter_configs(k, req, r).await,
        RequestKind::IncrementalAlterConfigs(r) => configs::incremental_alter_configs(k, req, r).await,
        RequestKind::DeleteRecords(r) => delete_records::handle(k, req, r).await,
        RequestKind::DescribeCluster(r) => metadata::describe_cluster(k, req, r),
        RequestKind::CreatePartitions(r) => create_partitions::handle(k, req, r).await,
        RequestKind::DescribeTopicPartitions(r) => describe_topic_partitions::handle(k, req, r),
        RequestKind::DescribeLogDirs(r) => log_dirs::handle(k, req, r).await,
        RequestKind::OffsetDelete(r) => offset_delete::handle(k, req, r).await,
        RequestKind::InitProducerId(r) => txn::init_producer_id(k, req, r).await,
        RequestKind::AddPartitionsToTxn(r) => txn::add_partitions(k, req, r).await,
        RequestKind::AddOffsetsToTxn(r) => txn::add_offsets(k, req, r).await,
        RequestKind::TxnOffsetCommit(r) => txn::txn_offset_commit(k, req, r).await,
        RequestKind::EndTxn(r) => txn::end_txn(k, req, r).await,
        RequestKind::ListTransactions(r) => txn_admin::list_transactions(k, req, r),
        RequestKind::DescribeTransactions(r) => txn_admin::describe_transactions(k, req, r),
        RequestKind::DescribeProducers(r) => txn_admin::describe_producers(k, req, r),
        RequestKind::FindCoordinator(r) => groups::find_coordinator(k, req, r),
        RequestKind::JoinGroup(r) => groups::join(k, req, r).await,
        RequestKind::SyncGroup(r) => groups::sync(k, req, r).await,
        RequestKind::Heartbeat(r) => groups::heartbeat(k, req, r),
        RequestKind::LeaveGroup(r) => groups::leave(k, req, r),
        RequestKind::OffsetCommit(r) => offsets::offset_commit(k, req, r).await,
        RequestKind::OffsetFetch(r) => offsets::offset_fetch(k, req, r),
        RequestKind::ListGroups(r) => groups::list_groups(k, req, r),
        RequestKind::DescribeGroups(r) => groups::describe_groups(k, req, r),
        RequestKind::DeleteGroups(r) => groups::delete_groups(k, req, r).await,
        _ => anyhow::bail!("no handler for {:?}", req.key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(name: &str) -> Bytes {
        let path = format!("{}/fuzz/seeds/kafka_request/{name}.hex", env!("CARGO_MANIFEST_DIR"));
        let hex = std::fs::read_to_string(&path).unwrap();
        let bytes: Vec<u8> =
            (0..hex.trim().len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        Bytes::from(bytes)
    }

    /// The fuzz seeds are real requests: they decode, and their batch parses with its duplicate
    /// header intact.
    #[test]
    fn fuzz_seeds_decode() {
        for name in ["produce_v9", "produce_v3"] {
            let Decoded::Request { key, body, .. } = decode(seed(name)).unwrap() else {
                panic!("{name}: not a request")
            };
            assert_eq!(key, ApiKey::Produce);
            let RequestKind::Produce(p) = *body else { panic!("{name}: not a produce") };
            let batch = p.topic_data[0].partition_data[0].records.clone().unwrap();
            let recs = super::super::records::records(&super::super::records::parse_one_batch(batch, 1 << 20).unwrap());
            assert_eq!(recs.unwrap()[0].headers.len(), 2, "{name}");
        }
        assert!(matches!(decode(seed("api_versions_v3")).unwrap(), Decoded::Request { key: ApiKey::ApiVersions, .. }));
        assert!(matches!(decode(seed("produce_v2")).unwrap(), Decoded::Answer(_)));
        assert!(decode(Bytes::from_static(&[0, 68, 0, 1, 0, 0, 0, 1])).is_err(), "unknown API");
        assert!(decode(Bytes::from_static(&[0, 1])).is_err(), "short");
        // A 2^31-ish array count in a tiny frame: an error, not an allocation that aborts the
        // process (vendor/kafka-protocol/FERROCKET-PATCH.md).
        assert!(decode(seed("oom_array_count")).is_err());
    }
}
