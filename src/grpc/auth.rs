//! ACL 1.0 on the gRPC door (`aclEnable=true`): who sent a request, from the 5.x SDKs' signed
//! headers, and what it may do, from the same accounts and addresses as the remoting door
//! ([`crate::acl::Acl::validate`] authenticates, [`Authority`] holds the permissions).
//!
//! ```text
//! authorization:  MQv2-HMAC-SHA1 Credential=<ak>[/...], SignedHeaders=x-mq-date-time, Signature=<hex>
//! x-mq-date-time: 20261205T024000Z          (the SDKs' yyyyMMdd'T'HHmmss'Z', signed as sent)
//! Signature:      hex(HmacSHA1(secretKey, x-mq-date-time)), compared as Base64 (Java's
//!                 AuthorizationHeader.hexToBase64 + AclUtils.calSignature), in constant time
//!
//! caller(headers, peer):  no ACL or a global white address    -> Unrestricted
//!                         no/bad header, unknown key, bad sig  -> UNAUTHORIZED (in the Status)
//!                         the account's white address, admin   -> Unrestricted
//! Guarded::check(request, authority), as Java's PlainAccessResource.parse(GeneratedMessageV3):
//!   SendMessage                     PUB on each message's topic
//!   EndTransaction                  PUB on the topic
//!   QueryRoute                      PUB or SUB on the topic
//!   ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue,
//!   QueryAssignment                 SUB on the group and on the topic
//!   Heartbeat (consumers), NotifyClientTermination      SUB on the group, when one is named
//!   Telemetry Settings              PUB on each publishing topic; SUB on the subscription's
//!                                   group and each of its topics
//!   a resource the account lacks    -> FORBIDDEN (in the Status)
//! ```
//! Telemetry is authenticated once, by the headers that open the stream. Resource names are the
//! names this door acts on (it ignores `resource_namespace`). The signature covers only the
//! date-time, which Java does not bound either: a captured header can be replayed, so TLS
//! (`tls.server.mode=enforcing`) is what keeps it secret on the wire. No secret key is logged.
//!
//! May import: `acl` (validation, authority, permission bits), `grpc`.

use std::net::SocketAddr;

use base64::Engine;
use tonic::metadata::MetadataMap;
use tracing::warn;

use super::pb::settings::PubSub;
use super::pb::*;
use super::status::Refused;
use super::Grpc;
use crate::acl::authority::Authority;
use crate::acl::perm::{ANY, PUB, SUB};
use crate::acl::{address, AccessRequest, Acl};

/// The header holding the SDK's credential and signature.
pub const AUTHORIZATION_HEADER: &str = "authorization";
/// The signed header: the client's clock when it signed.
pub const DATE_TIME_HEADER: &str = "x-mq-date-time";

fn unauthorized(why: impl Into<String>) -> Refused {
    Refused::new(Code::Unauthorized, why)
}

fn forbidden(why: String) -> Refused {
    Refused::new(Code::Forbidden, why)
}

/// Who sent a request with `headers` from `peer`: [`Authority::Unrestricted`] without ACL.
/// A refusal is logged (`warn`, as the remoting door's), with the reason and never a secret.
pub fn caller(g: &Grpc, headers: &MetadataMap, peer: Option<SocketAddr>) -> Result<Authority, Refused> {
    let Some(acl) = &g.core.acl else { return Ok(Authority::Unrestricted) };
    authenticate(acl, headers, peer).inspect_err(|r| warn!(?peer, why = %r.why, "gRPC request refused by the ACL"))
}

fn authenticate(acl: &Acl, headers: &MetadataMap, peer: Option<SocketAddr>) -> Result<Authority, Refused> {
    let host = peer.map(|p| address::host_of(p.ip())).unwrap_or_default();
    if acl.globally_white(&host) {
        return Ok(Authority::Unrestricted);
    }
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(header) = text(AUTHORIZATION_HEADER) else { return Err(unauthorized("No accessKey is configured")) };
    let (access_key, signature) = parse_authorization(header).map_err(unauthorized)?;
    let date_time = text(DATE_TIME_HEADER).ok_or_else(|| unauthorized("x-mq-date-time is required"))?;
    let req = AccessRequest {
        host: host.clone(),
        access_key: Some(access_key),
        signature: Some(&signature),
        signed_values: vec![date_time],
        ..AccessRequest::default()
    };
    acl.validate(&req).map_err(unauthorized)?;
    match acl.authority(Some(access_key), &host) {
        Authority::Refused(why) => Err(unauthorized(why)),
        who => Ok(who),
    }
}

/// Java's `AuthorizationHeader`: the access key (the credential up to its first `/`) and the
/// signature, from hex to Base64 (as [`crate::acl::signature`] writes it).
fn parse_authorization(header: &str) -> Result<(&str, String), String> {
    let (_method, rest) = header.split_once(' ').ok_or("authorization header is incorrect")?;
    let (mut access_key, mut signature) = (None, None);
    for item in rest.split(',') {
        let (name, value) = item.trim().split_once('=').ok_or("authorization keyValues length is incorrect")?;
        match name {
            "Credential" => access_key = value.split('/').next(),
            "Signature" => signature = Some(hex_to_base64(value).ok_or("the signature is not hex")?),
            _ => {}
        }
    }
    match (access_key.filter(|a| !a.is_empty()), signature) {
        (Some(ak), Some(sig)) => Ok((ak, sig)),
        (None, _) => Err("No accessKey is configured".into()),
        (Some(_), None) => Err("authorization header has no Signature".into()),
    }
}

fn hex_to_base64(hex: &str) -> Option<String> {
    let digits = hex.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes: Option<Vec<u8>> = digits.chunks(2).map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?)).collect();
    Some(base64::engine::general_purpose::STANDARD.encode(bytes?))
}

fn name(r: Option<&Resource>) -> &str {
    r.map_or("", |r| r.name.as_str())
}

fn topic(who: &Authority, r: Option<&Resource>, need: u8) -> Result<(), Refused> {
    who.topic(name(r), need).map_err(forbidden)
}

fn group(who: &Authority, r: Option<&Resource>) -> Result<(), Refused> {
    who.group(name(r), SUB).map_err(forbidden)
}

/// The group, then the topic, a consumer RPC needs SUB on.
fn consumer(who: &Authority, g: Option<&Resource>, t: Option<&Resource>) -> Result<(), Refused> {
    group(who, g)?;
    topic(who, t, SUB)
}

/// What a request needs of its sender's [`Authority`].
pub trait Guarded {
    fn check(&self, who: &Authority) -> Result<(), Refused>;
}

impl Guarded for SendMessageRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        self.messages.iter().try_for_each(|m| topic(who, m.topic.as_ref(), PUB))
    }
}

impl Guarded for EndTransactionRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        topic(who, self.topic.as_ref(), PUB)
    }
}

impl Guarded for QueryRouteRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        topic(who, self.topic.as_ref(), ANY)
    }
}

impl Guarded for ReceiveMessageRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        consumer(who, self.group.as_ref(), self.message_queue.as_ref().and_then(|q| q.topic.as_ref()))
    }
}

impl Guarded for AckMessageRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        consumer(who, self.group.as_ref(), self.topic.as_ref())
    }
}

impl Guarded for ChangeInvisibleDurationRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        consumer(who, self.group.as_ref(), self.topic.as_ref())
    }
}

impl Guarded for ForwardMessageToDeadLetterQueueRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        consumer(who, self.group.as_ref(), self.topic.as_ref())
    }
}

impl Guarded for QueryAssignmentRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        consumer(who, self.group.as_ref(), self.topic.as_ref())
    }
}

impl Guarded for HeartbeatRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        let consumer = [ClientType::PushConsumer as i32, ClientType::SimpleConsumer as i32].contains(&self.client_type);
        match &self.group {
            // A consumer without a group is refused by the heartbeat itself.
            Some(g) if consumer => group(who, Some(g)),
            _ => Ok(()),
        }
    }
}

impl Guarded for NotifyClientTerminationRequest {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        // Producers name no group (Java then checks the group "", which no account owns).
        self.group.as_ref().map_or(Ok(()), |g| group(who, Some(g)))
    }
}

impl Guarded for Settings {
    fn check(&self, who: &Authority) -> Result<(), Refused> {
        match &self.pub_sub {
            Some(PubSub::Publishing(p)) => p.topics.iter().try_for_each(|t| topic(who, Some(t), PUB)),
            Some(PubSub::Subscription(s)) => {
                group(who, s.group.as_ref())?;
                s.subscriptions.iter().try_for_each(|e| topic(who, e.topic.as_ref(), SUB))
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_header_parses_and_bad_ones_do_not() {
        let h = "MQv2-HMAC-SHA1 Credential=ak1/x, SignedHeaders=x-mq-date-time, Signature=0aFF";
        assert_eq!(parse_authorization(h).unwrap(), ("ak1", "Cv8=".to_owned()));
        // The Go SDK: `Credential=<ak>//Rocketmq` and lower-case hex.
        let go = "MQv2-HMAC-SHA1 Credential=ak1//Rocketmq, SignedHeaders=x-mq-date-time, Signature=0aff";
        assert_eq!(parse_authorization(go).unwrap(), ("ak1", "Cv8=".to_owned()));
        for bad in
            ["", "MQv2-HMAC-SHA1", "M Credential=a, Signature=0g", "M Credential=a, Signature=abc", "M Signature=00"]
        {
            assert!(parse_authorization(bad).is_err(), "{bad}");
        }
        assert!(parse_authorization("M Credential=a, Odd").is_err());
        assert!(parse_authorization("M Credential=a").is_err(), "no signature");
    }
}
