//! Unique message ids (the `UNIQ_KEY` property) as the Java client makes them.
//!
//! May import: nothing outside `tools/` (the area's rule: docs/architecture.md).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};

use super::now_ms;

/// Unique message ids as the Java client makes them (`MessageClientIDSetter.createUniqID`):
/// 32 hex digits = ip:4 pid:2 random:4 (Java: the class loader's hash), then milliseconds since
/// the start of the month:4 and a counter:2.
pub(super) struct UniqId {
    prefix: String,
    month_start_ms: i64,
    counter: AtomicU32,
}

impl UniqId {
    pub(super) fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let random = std::collections::hash_map::RandomState::new().build_hasher().finish() as u32;
        let mut bytes = vec![127, 0, 0, 1];
        bytes.extend_from_slice(&(std::process::id() as u16).to_be_bytes());
        bytes.extend_from_slice(&random.to_be_bytes());
        let prefix = bytes.iter().fold(String::with_capacity(20), |mut s, b| {
            let _ = write!(s, "{b:02X}");
            s
        });
        Self { prefix, month_start_ms: month_start_ms().unwrap_or_else(now_ms), counter: AtomicU32::new(0) }
    }

    pub(super) fn next(&self, now_ms: i64) -> String {
        let since = (now_ms - self.month_start_ms) as u32;
        let n = self.counter.fetch_add(1, Ordering::Relaxed) as u16;
        let mut s = String::with_capacity(32);
        s.push_str(&self.prefix);
        let _ = write!(s, "{since:08X}{n:04X}");
        s
    }
}

/// The first millisecond of this month, local time (`MessageClientIDSetter.setStartTime`).
fn month_start_ms() -> Option<i64> {
    use chrono::{Datelike, TimeZone};
    let start = chrono::Local::now().date_naive().with_day(1)?.and_hms_opt(0, 0, 0)?;
    chrono::Local.from_local_datetime(&start).earliest().map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniq_ids_are_32_hex_digits_and_distinct() {
        let u = UniqId::new();
        let (a, b) = (u.next(now_ms()), u.next(now_ms()));
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()), "{a}");
        assert!(a.starts_with("7F000001"), "{a}");
        assert_ne!(a, b);
    }
}
