//! The store-wide figures of GET_BROKER_RUNTIME_INFO (`StoreStatsService`): puts and gets
//! since boot, their rates over the last 10 s, 1 min and 10 min, and the put latency of the
//! last minute (max, distribution, 99th and 99.9th percentiles).
//!
//! ```text
//!   rates: a snapshot (put, found, miss, transferred) at every sample (10 s; Java: 1 s),
//!   61 kept; "<10 s> <60 s> <600 s>", each empty until enough snapshots exist (as Java)
//!   latency: Java's buckets (1 ms steps to 20, 2 to 50, 5 to 100, 10 to 200, 50 to 500,
//!   100 to 1000, 1000 to 10000, then the rest); read from the minute before the last rotation
//! ```
//! May import: nothing outside `core::stats`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::format::java_double;

/// Snapshots of the rates, one per sample.
const RATE_SNAPSHOTS: usize = 61;

/// `PUT_MESSAGE_ENTIRE_TIME_MAX_DESC`.
const DISTRIBUTION: [&str; 13] = [
    "[<=0ms]",
    "[0~10ms]",
    "[10~50ms]",
    "[50~100ms]",
    "[100~200ms]",
    "[200~500ms]",
    "[500ms~1s]",
    "[1~2s]",
    "[2~3s]",
    "[3~4s]",
    "[4~5s]",
    "[5~10s]",
    "[10s~]",
];

/// `PUT_MESSAGE_ENTIRE_TIME_BUCKETS`: (step, count).
const BUCKET_STEPS: [(u64, usize); 7] = [(1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9)];
const BUCKETS: usize = 20 + 15 + 10 + 10 + 6 + 5 + 9 + 1;

/// Each bucket's upper bound in milliseconds (`ceilingEntry`: a latency goes to the first bucket
/// whose bound is at least it); the last takes everything above 10 s.
const BOUNDS: [u64; BUCKETS] = bucket_bounds();

const fn bucket_bounds() -> [u64; BUCKETS] {
    let mut bounds = [u64::MAX; BUCKETS];
    let (mut at, mut i, mut step) = (0, 0, 0);
    while step < BUCKET_STEPS.len() {
        let (width, count) = BUCKET_STEPS[step];
        let mut n = 0;
        while n < count {
            at += width;
            bounds[i] = at;
            i += 1;
            n += 1;
        }
        step += 1;
    }
    bounds
}

#[derive(Clone, Copy, Default)]
struct Rates {
    at_ms: u64,
    put: u64,
    found: u64,
    miss: u64,
    transferred: u64,
}

pub struct StoreStats {
    boot_ms: u64,
    pub(super) put_times: AtomicU64,
    pub(super) put_bytes: AtomicU64,
    pub(super) put_failed: AtomicU64,
    pub(super) get_found: AtomicU64,
    pub(super) get_miss: AtomicU64,
    pub(super) transferred: AtomicU64,
    put_time_max: AtomicU64,
    get_time_max: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
    distribution: [AtomicU64; 13],
    /// The last full minute: latency buckets, distribution.
    last_minute: Mutex<([u64; BUCKETS], [u64; 13])>,
    rates: Mutex<VecDeque<Rates>>,
}

impl StoreStats {
    pub fn new(boot_ms: u64) -> Self {
        Self {
            boot_ms,
            put_times: AtomicU64::new(0),
            put_bytes: AtomicU64::new(0),
            put_failed: AtomicU64::new(0),
            get_found: AtomicU64::new(0),
            get_miss: AtomicU64::new(0),
            transferred: AtomicU64::new(0),
            put_time_max: AtomicU64::new(0),
            get_time_max: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            distribution: std::array::from_fn(|_| AtomicU64::new(0)),
            last_minute: Mutex::new(([0; BUCKETS], [0; 13])),
            rates: Mutex::new(VecDeque::with_capacity(RATE_SNAPSHOTS)),
        }
    }

    pub fn boot_ms(&self) -> u64 {
        self.boot_ms
    }

    /// A put of `count` messages, `bytes` written, that took `elapsed_ms`
    /// (`setPutMessageEntireTimeMax`).
    pub fn put(&self, count: u64, bytes: u64, elapsed_ms: u64) {
        self.put_times.fetch_add(count, Ordering::Relaxed);
        self.put_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.put_latency(elapsed_ms);
    }

    fn put_latency(&self, ms: u64) {
        let i = BOUNDS.partition_point(|b| *b < ms).min(BUCKETS - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        let d = match ms {
            0 => 0,
            1..10 => 1,
            10..50 => 2,
            50..100 => 3,
            100..200 => 4,
            200..500 => 5,
            500..1000 => 6,
            1000..2000 => 7,
            2000..3000 => 8,
            3000..4000 => 9,
            4000..5000 => 10,
            5000..10000 => 11,
            _ => 12,
        };
        self.distribution[d].fetch_add(1, Ordering::Relaxed);
        self.put_time_max.fetch_max(ms, Ordering::Relaxed);
    }

    /// One read of the store: `count` messages handed out (0: a miss).
    pub fn get(&self, count: u64) {
        if count > 0 {
            self.get_found.fetch_add(1, Ordering::Relaxed);
            self.transferred.fetch_add(count, Ordering::Relaxed);
        } else {
            self.get_miss.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How long one read of the store took (`getMessageEntireTimeMax`).
    pub fn get_elapsed(&self, ms: u64) {
        self.get_time_max.fetch_max(ms, Ordering::Relaxed);
    }

    pub fn put_failed(&self) {
        self.put_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// One snapshot of the rates (every sample).
    pub fn sample(&self, now_ms: u64) {
        let r = Rates {
            at_ms: now_ms,
            put: self.put_times.load(Ordering::Relaxed),
            found: self.get_found.load(Ordering::Relaxed),
            miss: self.get_miss.load(Ordering::Relaxed),
            transferred: self.transferred.load(Ordering::Relaxed),
        };
        let mut rates = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        rates.push_back(r);
        while rates.len() > RATE_SNAPSHOTS {
            rates.pop_front();
        }
    }

    /// Starts a new minute of latency figures (Java: every 60 s, in `printTps`).
    pub fn rotate_latency(&self) {
        let mut last = self.last_minute.lock().unwrap_or_else(|e| e.into_inner());
        for (slot, b) in last.0.iter_mut().zip(&self.buckets) {
            *slot = b.swap(0, Ordering::Relaxed);
        }
        for (slot, d) in last.1.iter_mut().zip(&self.distribution) {
            *slot = d.swap(0, Ordering::Relaxed);
        }
    }

    /// The rate of `pick` over the last `steps` snapshots, if there are that many.
    fn rate(&self, steps: usize, pick: impl Fn(&Rates) -> u64) -> Option<f64> {
        let rates = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        let last = rates.back()?;
        let first = rates.get(rates.len().checked_sub(steps + 1)?)?;
        let span = last.at_ms.saturating_sub(first.at_ms);
        (span > 0).then(|| pick(last).saturating_sub(pick(first)) as f64 * 1000.0 / span as f64)
    }

    /// `"<10 s> <60 s> <600 s>"`, a part empty while there are too few snapshots.
    fn rates(&self, pick: impl Fn(&Rates) -> u64 + Copy) -> String {
        [1, 6, 60].map(|steps| self.rate(steps, pick).map(java_double).unwrap_or_default()).join(" ")
    }

    /// The runtime-info keys `StoreStatsService.getRuntimeInfo` gives, at `now_ms`.
    pub fn runtime_info(&self, now_ms: u64, put: &mut impl FnMut(&str, String)) {
        let total = self.put_times.load(Ordering::Relaxed).max(1);
        let bytes = self.put_bytes.load(Ordering::Relaxed);
        put("bootTimestamp", self.boot_ms.to_string());
        put("runtime", super::format::runtime(now_ms.saturating_sub(self.boot_ms)));
        put("putMessageEntireTimeMax", self.put_time_max.load(Ordering::Relaxed).to_string());
        put("putMessageTimesTotal", total.to_string());
        put("putMessageFailedTimes", self.put_failed.load(Ordering::Relaxed).to_string());
        put("putMessageSizeTotal", bytes.to_string());
        put("putMessageAverageSize", java_double(bytes as f64 / total as f64));
        put("dispatchMaxBuffer", "0".into());
        put("getMessageEntireTimeMax", self.get_time_max.load(Ordering::Relaxed).to_string());
        put("putTps", self.rates(|r| r.put));
        put("getFoundTps", self.rates(|r| r.found));
        put("getMissTps", self.rates(|r| r.miss));
        put("getTransferredTps", self.rates(|r| r.transferred));
        let total_tps = [1, 6, 60].map(|s| {
            let both = self.rate(s, |r| r.found).unwrap_or(0.0) + self.rate(s, |r| r.miss).unwrap_or(0.0);
            java_double(both)
        });
        put("getTotalTps", total_tps.join(" "));
        let last = *self.last_minute.lock().unwrap_or_else(|e| e.into_inner());
        let dist: String = DISTRIBUTION.iter().zip(last.1).map(|(d, n)| format!("{d}:{n} ")).collect();
        put("putMessageDistributeTime", dist);
        put("putLatency99", format!("{:.2}", percentile(&last.0, 0.99)));
        put("putLatency999", format!("{:.2}", percentile(&last.0, 0.999)));
    }
}

/// `findPutMessageEntireTimePX`: linear within the bucket the `px` request falls in.
fn percentile(counts: &[u64; BUCKETS], px: f64) -> f64 {
    let total: u64 = counts.iter().sum();
    let index = (total as f64 * px) as u64;
    let mut passed = 0u64;
    for (i, (&count, &bound)) in counts.iter().zip(&BOUNDS).enumerate() {
        if index <= passed + count {
            let relative = (index - passed) as f64;
            let low = if i == 0 { 0 } else { BOUNDS[i - 1] };
            let width = bound.saturating_sub(low) as f64;
            return low as f64 + if count == 0 { 0.0 } else { width * relative / count as f64 };
        }
        passed += count;
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    fn info(s: &StoreStats, now: u64) -> std::collections::BTreeMap<String, String> {
        let mut m = std::collections::BTreeMap::new();
        s.runtime_info(now, &mut |k, v| {
            m.insert(k.to_owned(), v);
        });
        m
    }

    #[test]
    fn rates_appear_as_snapshots_accumulate() {
        let s = StoreStats::new(T0);
        let mut now = T0;
        s.sample(now);
        assert_eq!(info(&s, now)["putTps"], "  ", "one snapshot: no rate yet");
        for _ in 0..6 {
            now += 10_000;
            s.put(50, 5_000, 1);
            s.get(20);
            s.get(0);
            s.sample(now);
        }
        let m = info(&s, now);
        assert_eq!(m["putTps"], "5.0 5.0 ");
        assert_eq!(m["getTransferredTps"], "2.0 2.0 ");
        assert_eq!(m["getFoundTps"], "0.1 0.1 ");
        assert_eq!(m["getTotalTps"], "0.2 0.2 0.0");
        assert_eq!(m["putMessageTimesTotal"], "300");
        assert_eq!(m["putMessageAverageSize"], "100.0");
    }

    #[test]
    fn latency_percentiles_come_from_the_last_minute() {
        let s = StoreStats::new(T0);
        for _ in 0..98 {
            s.put(1, 100, 1);
        }
        s.put(1, 100, 300);
        s.put(1, 100, 300);
        assert_eq!(info(&s, T0)["putLatency99"], "0.00", "nothing rotated yet");
        s.rotate_latency();
        let m = info(&s, T0 + 60_000);
        // The 99th put is the first of the two in the 250..300 ms bucket: halfway through it.
        assert_eq!(m["putLatency99"], "275.00");
        assert_eq!(m["putLatency999"], "275.00");
        assert_eq!(m["putMessageEntireTimeMax"], "300");
        assert!(m["putMessageDistributeTime"].starts_with("[<=0ms]:0 [0~10ms]:98 "), "{m:?}");
        assert_eq!(m["runtime"], "[ 0 days, 0 hours, 1 minutes, 0 seconds ]");
    }
}
