//! Kafka SASL (`SaslHandshake` v1, `SaslAuthenticate` v0-2) against the ACL accounts
//! (`aclEnable=true`): username = accessKey, password = secretKey; one connection's state.
//!
//! May import: `crate::acl`, the Kafka codec, `super::api`, `super::sasl_scram`.
//!
//! ```text
//! connection opened ──ApiVersions*──> SaslHandshake(mech) ──> SaslAuthenticate ... ──> authenticated
//!   PLAIN            1 round: [authzid] \0 user \0 password       (RFC 4616)
//!   SCRAM-SHA-256/512  2 rounds (sasl_scram.rs)
//! before it (aclEnable=true): any other API closes the connection with a WARN (as Kafka's
//!   SaslServerAuthenticator), frames are capped at 64 KiB, one handshake per connection;
//!   a failure answers SASL_AUTHENTICATION_FAILED after 100 ms (Kafka's
//!   connection.failed.authentication.delay.ms), logs peer and user, and closes.
//! aclEnable=false: the SASL APIs answer ILLEGAL_SASL_STATE, every other API is served.
//! ```
//! Handshake v0 (raw tokens without SaslAuthenticate framing) is not served: every client we
//! test uses v1, so it is not advertised and a v0 request closes like any unserved version.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use tracing::{info, warn};

use super::api::{error, reply, Reply, Request};
use super::sasl_scram::{self, Mechanism};
use super::Kafka;
use crate::acl::authority::Authority;
use crate::acl::Acl;

/// The mechanisms offered, in SaslHandshake's answer order.
pub const MECHANISMS: [&str; 3] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// The largest frame before authentication (Kafka's `sasl.server.max.receive.size` is 512 KiB;
/// ApiVersions and the SASL messages are far smaller).
pub const MAX_FRAME_BEFORE_AUTH: usize = 64 * 1024;

/// Kafka's `connection.failed.authentication.delay.ms` default: a failure is answered this late.
const FAILURE_DELAY: Duration = Duration::from_millis(100);

/// `PlainSaslServer`'s and `SaslServerAuthenticator`'s messages.
pub const PLAIN_FAILED: &str = "Authentication failed: Invalid username or password";

enum State {
    /// Before the handshake.
    Initial,
    Plain,
    Scram(Box<sasl_scram::Exchange>),
    /// Authenticated as this access key.
    Done(String),
    /// A handshake that failed or a second one: nothing more.
    Spent,
}

/// One connection's authentication.
pub struct Session {
    acl: Option<Arc<Acl>>,
    host: String,
    state: State,
    /// The mechanism chosen by the handshake.
    mechanism: &'static str,
    /// The user a SCRAM client-first named, for the log line of the exchange's end.
    scram_user: String,
    /// Set when the answer being written is the connection's last.
    pub close_after_reply: bool,
}

impl Session {
    pub fn new(k: &Kafka, peer: std::net::SocketAddr) -> Self {
        Self {
            acl: k.shared.acl.clone(),
            host: crate::acl::address::host_of(peer.ip()),
            state: State::Initial,
            mechanism: "",
            scram_user: String::new(),
            close_after_reply: false,
        }
    }

    /// The largest request frame this connection may send now.
    pub fn max_frame(&self, authenticated_max: usize) -> usize {
        match (&self.acl, &self.state) {
            (Some(acl), s) if !matches!(s, State::Done(_)) && !acl.globally_white(&self.host) => MAX_FRAME_BEFORE_AUTH,
            _ => authenticated_max,
        }
    }

    /// What the connection may do now; `None` when it must authenticate first.
    pub fn authority(&self) -> Option<Authority> {
        let Some(acl) = &self.acl else { return Some(Authority::Unrestricted) };
        match &self.state {
            State::Done(user) => Some(acl.authority(Some(user), &self.host)),
            _ if acl.globally_white(&self.host) => Some(Authority::Unrestricted),
            _ => None,
        }
    }

    /// Whether this listener authenticates (`aclEnable=true`).
    pub fn sasl_enabled(&self) -> bool {
        self.acl.is_some()
    }

    /// The authenticated access key, for log lines.
    pub fn user(&self) -> &str {
        match &self.state {
            State::Done(u) => u,
            _ => "",
        }
    }
}

pub fn handshake(s: &mut Session, req: &Request, r: SaslHandshakeRequest) -> Reply {
    let offered = MECHANISMS.iter().map(|m| StrBytes::from_static_str(m)).collect();
    let answer = |code| reply(req, &SaslHandshakeResponse::default().with_error_code(code).with_mechanisms(offered));
    if s.acl.is_none() || !matches!(s.state, State::Initial) {
        warn!(peer = %req.peer, "Kafka SaslHandshake not expected (aclEnable=false or a second handshake); closing the connection");
        s.close_after_reply = true;
        return answer(error::ILLEGAL_SASL_STATE);
    }
    let Some(&mechanism) = MECHANISMS.iter().find(|m| **m == r.mechanism.as_str()) else {
        warn!(peer = %req.peer, mechanism = %r.mechanism.escape_debug(), "Kafka SASL mechanism not offered; closing the connection");
        s.state = State::Spent;
        s.close_after_reply = true;
        return answer(error::UNSUPPORTED_SASL_MECHANISM);
    };
    s.mechanism = mechanism;
    s.state = match mechanism {
        "PLAIN" => State::Plain,
        "SCRAM-SHA-256" => State::Scram(Box::new(sasl_scram::Exchange::new(Mechanism::Sha256))),
        "SCRAM-SHA-512" => State::Scram(Box::new(sasl_scram::Exchange::new(Mechanism::Sha512))),
        _ => State::Scram(Box::new(sasl_scram::Exchange::new(Mechanism::Sha512))),
    };
    answer(error::NONE)
}

pub async fn authenticate(k: &Kafka, s: &mut Session, req: &Request, r: SaslAuthenticateRequest) -> Reply {
    let answer = |code: i16, message: Option<&str>, token: Vec<u8>| {
        reply(
            req,
            &SaslAuthenticateResponse::default()
                .with_error_code(code)
                .with_error_message(message.map(|m| StrBytes::from_string(m.to_owned())))
                .with_auth_bytes(Bytes::from(token)),
        )
    };
    let Some(acl) = s.acl.clone() else {
        s.close_after_reply = true;
        return answer(
            error::ILLEGAL_SASL_STATE,
            Some("SASL is not enabled on this listener (aclEnable=false)"),
            vec![],
        );
    };
    let state = std::mem::replace(&mut s.state, State::Spent);
    let (user, outcome) = match state {
        State::Plain => plain(&acl, &r.auth_bytes),
        State::Scram(mut x) => match x.step(&k.scram, &r.auth_bytes, |u| acl.account(u)) {
            Ok(sasl_scram::Step::Continue { token, user }) => {
                s.state = State::Scram(x);
                s.scram_user = user;
                return answer(error::NONE, None, token);
            }
            Ok(sasl_scram::Step::Done(token)) => (std::mem::take(&mut s.scram_user), Ok(token)),
            Err(f) => (std::mem::take(&mut s.scram_user), Err(f.why)),
        },
        other => {
            let why = match other {
                State::Done(_) => "SaslAuthenticate request received after successful authentication",
                _ => "SaslAuthenticate request received without a SaslHandshake before it",
            };
            warn!(peer = %req.peer, why, "unexpected Kafka SaslAuthenticate; closing the connection");
            s.close_after_reply = true;
            return answer(error::ILLEGAL_SASL_STATE, Some(why), vec![]);
        }
    };
    match outcome {
        Ok(token) => {
            info!(peer = %req.peer, user = %shown(&user), client_id = %req.client_id.escape_debug(), "Kafka client authenticated");
            s.state = State::Done(user);
            answer(error::NONE, None, token)
        }
        Err(why) => {
            warn!(peer = %req.peer, user = %shown(&user), why, "Kafka SASL authentication failed; closing the connection");
            s.close_after_reply = true;
            tokio::time::sleep(FAILURE_DELAY).await;
            // PlainSaslServer's own message; ScramSaslServer's SaslException becomes
            // SaslServerAuthenticator's generic one.
            let message = match s.mechanism {
                "PLAIN" => why.to_owned(),
                m => format!(
                    "Authentication failed during authentication due to invalid credentials with SASL mechanism {m}"
                ),
            };
            answer(error::SASL_AUTHENTICATION_FAILED, Some(&message), vec![])
        }
    }
}

/// A user name as logged: escaped, at most 128 characters (an unauthenticated peer chose it).
fn shown(user: &str) -> String {
    user.chars().take(128).flat_map(char::escape_debug).collect()
}

/// RFC 4616: `[authzid] NUL authcid NUL passwd`; (user, outcome).
fn plain(acl: &Acl, token: &[u8]) -> (String, Result<Vec<u8>, &'static str>) {
    let parts: Vec<&[u8]> = token.split(|b| *b == 0).collect();
    let [authzid, user, password] = parts[..] else { return (String::new(), Err(PLAIN_FAILED)) };
    let user = String::from_utf8_lossy(user).into_owned();
    if !authzid.is_empty() && authzid != user.as_bytes() {
        return (
            user,
            Err("Authentication failed: Client requested an authorization id that is different from username"),
        );
    }
    let Some(account) = acl.account(&user) else { return (user, Err(PLAIN_FAILED)) };
    // Constant time: the comparison's duration says nothing about how close a guess was.
    if !bool::from(subtle::ConstantTimeEq::ct_eq(password, account.secret_key.as_bytes())) {
        return (user, Err(PLAIN_FAILED));
    }
    (user, Ok(Vec::new()))
}
