//! Broker counters for GET_BROKER_RUNTIME_INFO: messages put and pulled since start, and their
//! rates over the last minute.
//!
//! May import: nothing outside `broker/` (the area's rule: docs/architecture.md).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub struct BrokerStats {
    put: AtomicU64,
    got: AtomicU64,
    /// (time, put total, get total) samples, one per 10 s, the last minute.
    samples: Mutex<Vec<(Instant, u64, u64)>>,
}

impl Default for BrokerStats {
    fn default() -> Self {
        Self { put: AtomicU64::new(0), got: AtomicU64::new(0), samples: Mutex::new(vec![(Instant::now(), 0, 0)]) }
    }
}

impl BrokerStats {
    pub fn add_put(&self, n: u64) {
        self.put.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_got(&self, n: u64) {
        self.got.fetch_add(n, Ordering::Relaxed);
    }

    pub fn put_total(&self) -> u64 {
        self.put.load(Ordering::Relaxed)
    }

    pub fn get_total(&self) -> u64 {
        self.got.load(Ordering::Relaxed)
    }

    /// Records a sample (called every 10 s).
    pub fn sample(&self) {
        let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        s.push((Instant::now(), self.put_total(), self.get_total()));
        if s.len() > 7 {
            s.remove(0);
        }
    }

    /// Rates as mqadmin reads them: "10s 1min 10min" (the last two are the minute rate).
    fn tps(&self, pick: impl Fn(&(Instant, u64, u64)) -> u64, now_total: u64) -> String {
        let s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let rate = |from: &(Instant, u64, u64)| {
            let secs = from.0.elapsed().as_secs_f64().max(1.0);
            (now_total.saturating_sub(pick(from))) as f64 / secs
        };
        let last = s.last().map_or(0.0, &rate);
        let first = s.first().map_or(0.0, &rate);
        format!("{last:.2} {first:.2} {first:.2}")
    }

    pub fn put_tps(&self) -> String {
        self.tps(|s| s.1, self.put_total())
    }

    pub fn get_tps(&self) -> String {
        self.tps(|s| s.2, self.get_total())
    }
}
