//! Request codes the broker does not serve: answered REQUEST_CODE_NOT_SUPPORTED (as Java's
//! "request type N not supported"), and logged as one WARN line per code per minute naming the
//! code and the client, so an operator sees what a tool asked for without a client flooding
//! the log.
//!
//! May import: `protocol`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::protocol::{RemotingCommand, ResponseCode};

/// One WARN line per code in this interval.
const INTERVAL: Duration = Duration::from_secs(60);
/// Codes remembered at once: a client sending every i32 cannot grow the map.
const MAX_CODES: usize = 256;

#[derive(Default)]
pub struct UnsupportedCodes {
    last_logged: Mutex<HashMap<i32, Instant>>,
}

impl UnsupportedCodes {
    /// Whether a refusal of `code` at `now` gets a log line.
    fn should_log(&self, code: i32, now: Instant) -> bool {
        let mut m = self.last_logged.lock().unwrap_or_else(|e| e.into_inner());
        if m.get(&code).is_some_and(|t| now.saturating_duration_since(*t) < INTERVAL) {
            return false;
        }
        if m.len() >= MAX_CODES && !m.contains_key(&code) {
            m.retain(|_, t| now.saturating_duration_since(*t) < INTERVAL);
            if m.len() >= MAX_CODES {
                return false;
            }
        }
        m.insert(code, now);
        true
    }

    /// The answer to `req`, whose code nothing serves, from `peer`.
    pub fn refuse(&self, req: &RemotingCommand, peer: SocketAddr) -> RemotingCommand {
        let code = req.code;
        if self.should_log(code, Instant::now()) {
            tracing::warn!(code, peer = %peer, "request code not supported (logged once a minute per code)");
        }
        RemotingCommand::error_response(
            req,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            format!(" request type {code} not supported"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_is_logged_once_a_minute_and_the_map_is_bounded() {
        let u = UnsupportedCodes::default();
        let t0 = Instant::now();
        assert!(u.should_log(9999, t0));
        assert!(!u.should_log(9999, t0 + Duration::from_secs(59)));
        assert!(u.should_log(8888, t0), "another code has its own minute");
        assert!(u.should_log(9999, t0 + Duration::from_secs(61)));
        let u = UnsupportedCodes::default();
        for code in 0..MAX_CODES as i32 {
            assert!(u.should_log(code, t0));
        }
        assert!(!u.should_log(-1, t0), "full of codes logged this minute: no new entry");
        assert_eq!(u.last_logged.lock().unwrap().len(), MAX_CODES);
        assert!(u.should_log(-1, t0 + INTERVAL), "old entries make room");
        assert_eq!(u.last_logged.lock().unwrap().len(), 1);
    }
}
