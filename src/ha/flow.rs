//! Bytes moved per second on a replication connection (`FlowMonitor`), and what `mqadmin
//! haStatus` reads of each side (`HARuntimeInfo`): plain values, the broker turns them into JSON.
//!
//! May import: nothing outside `ha/`.

use std::sync::Mutex;
use std::time::Instant;

/// Counts bytes per whole second; reads the last completed second, as Java's `FlowMonitor`
/// (which resets its counter every second) does.
pub struct FlowMonitor {
    origin: Instant,
    /// (second since `origin`, bytes in that second, bytes in the second before it)
    state: Mutex<(u64, u64, u64)>,
}

impl Default for FlowMonitor {
    fn default() -> Self {
        Self { origin: Instant::now(), state: Mutex::new((0, 0, 0)) }
    }
}

impl FlowMonitor {
    fn roll(&self) -> std::sync::MutexGuard<'_, (u64, u64, u64)> {
        let now = self.origin.elapsed().as_secs();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.0 != now {
            s.2 = if s.0 + 1 == now { s.1 } else { 0 };
            s.0 = now;
            s.1 = 0;
        }
        s
    }

    pub fn add(&self, bytes: u64) {
        let mut s = self.roll();
        s.1 = s.1.saturating_add(bytes);
    }

    /// Bytes moved in the last completed second.
    pub fn per_second(&self) -> u64 {
        self.roll().2
    }
}

/// A slave connected to this master (`HAConnectionRuntimeInfo`).
#[derive(Clone, Debug)]
pub struct SlaveInfo {
    pub addr: String,
    pub ack_offset: u64,
    pub bytes_per_second: u64,
    /// The CommitLog offset the next frame to this slave starts at (-1 before its first report).
    pub transfer_from: i64,
}

/// A slave's replication client (`HAClientRuntimeInfo`).
#[derive(Clone, Debug)]
pub struct ClientInfo {
    pub master_addr: Option<String>,
    pub bytes_per_second: u64,
    /// Milliseconds since the epoch of the last bytes read from / report written to the master.
    pub last_read_ms: i64,
    pub last_write_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_the_last_whole_second() {
        let f = FlowMonitor::default();
        f.add(100);
        assert_eq!(f.per_second(), 0, "the first second is not over");
        let ten_seconds_ago = Instant::now() - std::time::Duration::from_secs(10);
        let f = FlowMonitor { origin: ten_seconds_ago, state: Mutex::new((9, 300, 0)) };
        assert_eq!(f.per_second(), 300);
        let f = FlowMonitor { origin: ten_seconds_ago, state: Mutex::new((7, 300, 0)) };
        assert_eq!(f.per_second(), 0, "nothing moved in the second before this one");
    }
}
