//! One Kafka connection: read a frame, answer it, read the next. Kafka mutes a channel while
//! a request is in flight, so answering one at a time keeps responses in request order (the
//! Java client checks each correlation id against its oldest request). Produce with acks=0
//! gets no answer.
//!
//! Bad input closes the connection with a warn line, as Kafka does: a frame over the size
//! limit, an unknown API, a version outside our range (other than ApiVersions, which KIP-511
//! answers), a body that does not decode.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::{fetch, groups, metadata, produce, producer_ids, versions, Kafka};

/// Kafka's `socket.request.max.bytes`.
pub const MAX_REQUEST: usize = 100 * 1024 * 1024;

/// What a handler hands back: a response frame, or nothing (acks=0).
pub type Reply = anyhow::Result<Option<BytesMut>>;

/// A decoded request header and who sent it.
pub struct Request {
    pub key: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
    pub client_id: String,
    pub peer: SocketAddr,
}

pub async fn serve(k: Arc<Kafka>, stream: TcpStream, peer: SocketAddr, shutdown: CancellationToken) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::with_capacity(64 * 1024, read);
    loop {
        let size = tokio::select! {
            _ = shutdown.cancelled() => return,
            s = read.read_i32() => match s {
                Ok(s) => s,
                Err(_) => return, // closed by the client
            },
        };
        let Some(size) = usize::try_from(size).ok().filter(|s| (8..=MAX_REQUEST).contains(s)) else {
            warn!(%peer, size, limit = MAX_REQUEST, "Kafka request frame size out of range; closing the connection");
            return;
        };
        let mut buf = BytesMut::zeroed(size);
        if read.read_exact(&mut buf).await.is_err() {
            return;
        }
        let reply = match handle(&k, buf.freeze(), peer).await {
            Ok(r) => r,
            Err(why) => {
                warn!(%peer, error = %why, "bad Kafka request; closing the connection");
                return;
            }
        };
        if let Some(frame) = reply {
            if write.write_all(&frame).await.is_err() {
                return;
            }
        }
    }
}

async fn handle(k: &Arc<Kafka>, mut body: Bytes, peer: SocketAddr) -> Reply {
    let api_key = (&body[..2]).get_i16();
    let version = (&body[2..4]).get_i16();
    let key = ApiKey::try_from(api_key).map_err(|_| anyhow::anyhow!("unknown API key {api_key}"))?;
    let Some((min, max)) = versions::range(key) else {
        anyhow::bail!("API {key:?} ({api_key}) is not served by this broker");
    };
    if key == ApiKey::ApiVersions && version > max {
        let correlation_id = (&body[4..8]).get_i32();
        debug!(%peer, version, "ApiVersions newer than ours: answering v0 (KIP-511)");
        return Ok(Some(versions::frame(key, 0, correlation_id, &versions::api_versions_too_new())?));
    }
    if version < min || version > max {
        anyhow::bail!("{key:?} version {version} outside the served range {min}-{max}");
    }
    if key == ApiKey::Produce && version < 3 {
        let correlation_id = (&body[4..8]).get_i32();
        let header_v1_len = 8 + 2 + usize::try_from((&body[8..10]).get_i16().max(0))?;
        let frame =
            versions::produce_v0_to_2_refusal(version, correlation_id, body.get(header_v1_len..).unwrap_or(&[]))
                .ok_or_else(|| anyhow::anyhow!("Produce v{version} body does not decode"))?;
        return Ok(Some(frame));
    }
    let header = RequestHeader::decode(&mut body, key.request_header_version(version))?;
    let req = Request {
        key,
        version,
        correlation_id: header.correlation_id,
        client_id: header.client_id.as_deref().unwrap_or("").to_owned(),
        peer,
    };
    let decoded = RequestKind::decode(key, &mut body, version)?;
    match decoded {
        RequestKind::ApiVersions(_) => reply(&req, &versions::api_versions(version)),
        RequestKind::Produce(r) => produce::handle(k, &req, r).await,
        RequestKind::Fetch(r) => fetch::handle(k, &req, r).await,
        RequestKind::ListOffsets(r) => fetch::list_offsets(k, &req, r),
        RequestKind::Metadata(r) => metadata::metadata(k, &req, r).await,
        RequestKind::CreateTopics(r) => metadata::create_topics(k, &req, r).await,
        RequestKind::DeleteTopics(r) => metadata::delete_topics(k, &req, r).await,
        RequestKind::DescribeConfigs(r) => metadata::describe_configs(k, &req, r),
        RequestKind::DescribeCluster(r) => metadata::describe_cluster(k, &req, r),
        RequestKind::InitProducerId(r) => producer_ids::init_producer_id(k, &req, r),
        RequestKind::FindCoordinator(r) => groups::find_coordinator(k, &req, r),
        RequestKind::JoinGroup(r) => groups::join(k, &req, r).await,
        RequestKind::SyncGroup(r) => groups::sync(k, &req, r).await,
        RequestKind::Heartbeat(r) => groups::heartbeat(k, &req, r),
        RequestKind::LeaveGroup(r) => groups::leave(k, &req, r),
        RequestKind::OffsetCommit(r) => groups::offset_commit(k, &req, r),
        RequestKind::OffsetFetch(r) => groups::offset_fetch(k, &req, r),
        RequestKind::ListGroups(r) => groups::list_groups(k, &req, r),
        RequestKind::DescribeGroups(r) => groups::describe_groups(k, &req, r),
        other => anyhow::bail!("no handler for {other:?}"),
    }
}

/// Encodes `body` as the answer to `req`.
pub fn reply<R>(req: &Request, body: &R) -> Reply
where
    R: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
{
    Ok(Some(versions::frame(req.key, req.version, req.correlation_id, body)?))
}
