//! Refusals are visible: every Kafka request this broker refuses (an API or version it does not
//! serve, a config it cannot honour, a feature it does not have) leaves one WARN line naming
//! the client (peer address and client id), the API and the reason. Never ERROR: the operator
//! has nothing to repair; the line tells them which application wants what.
//!
//! Rate-limited per (API, kind of refusal): the first refusal of a kind is logged, the next ones
//! within a minute are counted, and the next line logged for that kind says how many were left
//! out (`suppressed`). A hostile client cannot flood the log; the table is bounded (API keys
//! times a closed set of kinds, and at most [`MAX_KEYS`] entries).
//!
//! ```text
//! WARN Kafka request refused peer=10.0.0.7:53122 client_id="streams-app-1" api=DeleteRecords
//!      version=2 kind="unsupported config" reason="cleanup.policy=compact is not supported yet: ..." suppressed=3
//! ```
//!
//! May import: `super::api`, the Kafka codec (API names).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use tracing::warn;

use super::api::Request;
use super::Kafka;

/// At most one line per (API, kind) per window.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Entries kept; past it, every (API, kind) shares one entry.
pub const MAX_KEYS: usize = 1024;

/// The kinds of refusal (a closed set: they key the rate limit).
pub mod kind {
    pub const UNSUPPORTED_API: &str = "unsupported API or version";
    pub const BAD_REQUEST: &str = "undecodable request";
    pub const CONFIG: &str = "unsupported config";
    pub const REPLICATION: &str = "unsupported replication factor";
}

/// (API key, kind) -> (start of its window, refusals left out in it).
type Seen = HashMap<(i16, &'static str), (Instant, u64)>;

#[derive(Default)]
pub struct Refusals {
    seen: Mutex<Seen>,
}

impl Refusals {
    /// Whether a refusal of `kind` for `api` at `now` is logged, and how many of the same were
    /// left out before it.
    pub fn admit(&self, api: i16, kind: &'static str, now: Instant) -> Option<u64> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let key =
            if seen.len() >= MAX_KEYS && !seen.contains_key(&(api, kind)) { (i16::MIN, "other") } else { (api, kind) };
        match seen.get_mut(&key) {
            Some((since, suppressed)) if now.duration_since(*since) < WINDOW => {
                *suppressed += 1;
                None
            }
            Some((since, suppressed)) => {
                let left_out = std::mem::take(suppressed);
                *since = now;
                Some(left_out)
            }
            None => {
                seen.insert(key, (now, 0));
                Some(0)
            }
        }
    }
}

/// The API's name, or its number when it is not one Kafka defines.
fn api_name(api: i16) -> String {
    ApiKey::try_from(api).map_or_else(|_| format!("unknown API key {api}"), |k| format!("{k:?}"))
}

/// Logs a refusal (rate-limited) of a request whose header was read raw.
pub fn note(k: &Kafka, peer: SocketAddr, client_id: &str, api: i16, version: i16, kind: &'static str, reason: &str) {
    let Some(suppressed) = k.refusals.admit(api, kind, Instant::now()) else { return };
    warn!(
        %peer,
        client_id = %printable(client_id, 128),
        api = api_name(api),
        version,
        kind,
        reason = %printable(reason, 1024),
        suppressed,
        "Kafka request refused"
    );
}

/// At most `max` characters of text a client chose, control characters (a forged log line)
/// shown as `?`.
fn printable(text: &str, max: usize) -> String {
    text.chars().take(max).map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// Logs a refusal of a decoded request: a config it cannot honour, a feature it does not have.
pub fn warn(k: &Kafka, req: &Request, reason: &str) {
    warn_kind(k, req, kind::CONFIG, reason);
}

/// [`warn`] with another kind of refusal (each kind has its own rate limit).
pub fn warn_kind(k: &Kafka, req: &Request, kind: &'static str, reason: &str) {
    note(k, req.peer, &req.client_id, req.key as i16, req.version, kind, reason);
}

/// The client id of a raw request frame body (request header v1+: api key, version,
/// correlation id, then the client id as a nullable INT16-length string, also in flexible
/// headers); empty when it cannot be read.
pub fn raw_client_id(body: &[u8]) -> String {
    let Some(len) = body.get(8..10).map(|b| i16::from_be_bytes([b[0], b[1]])) else { return String::new() };
    let Ok(len) = usize::try_from(len) else { return String::new() };
    body.get(10..10 + len).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_api_and_kind_per_window_counting_the_rest() {
        let r = Refusals::default();
        let t0 = Instant::now();
        assert_eq!(r.admit(21, kind::CONFIG, t0), Some(0));
        assert_eq!(r.admit(21, kind::CONFIG, t0 + Duration::from_secs(1)), None);
        assert_eq!(r.admit(21, kind::CONFIG, t0 + Duration::from_secs(2)), None);
        assert_eq!(r.admit(44, kind::CONFIG, t0 + Duration::from_secs(2)), Some(0), "another API");
        assert_eq!(r.admit(21, kind::UNSUPPORTED_API, t0 + Duration::from_secs(2)), Some(0), "another kind");
        assert_eq!(r.admit(21, kind::CONFIG, t0 + WINDOW), Some(2), "the next window says how many were left out");
        for api in 0..(MAX_KEYS as i16 + 10) {
            r.admit(api + 1000, kind::BAD_REQUEST, t0);
        }
        assert!(r.seen.lock().unwrap().len() <= MAX_KEYS + 1, "bounded");
    }

    #[test]
    fn client_ids_of_raw_headers() {
        assert_eq!(raw_client_id(&[0, 68, 0, 1, 0, 0, 0, 1, 0, 2, b'i', b't']), "it");
        assert_eq!(raw_client_id(&[0, 68, 0, 1, 0, 0, 0, 1, 0xff, 0xff]), "");
        assert_eq!(raw_client_id(&[0, 68, 0, 1, 0, 0, 0, 1, 0, 9, b'i']), "");
        assert_eq!(raw_client_id(&[0, 1]), "");
        assert_eq!(printable("a\nWARN forged", 100), "a?WARN forged");
        assert_eq!(printable("abcdef", 3), "abc");
    }
}
