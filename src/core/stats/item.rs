//! One statistic (`StatsItem`): a running total (`value`) and call count (`times`), and three
//! windows of snapshots of both from which the sum, TPS and average per call over the last
//! minute, hour and day are computed, as Java 5.3.3 computes them.
//!
//! ```text
//!   window  sampled every  snapshots kept  spans
//!   minute  10 s           7               60 s
//!   hour    10 min         7               60 min
//!   day     1 h            25              24 h
//!   the first sample of a window also puts (now - period, 0, 0) before it, so a key created
//!   between two samples counts everything it got since it was created
//!   sum = last.value - first.value   tps = sum * 1000 / (last.ts - first.ts)
//!   avgpt = sum / (last.times - first.times)   (0 when no call)
//! ```
//! Pure: every function takes the time (`now_ms`, milliseconds since the epoch), so tests give
//! it a clock. Counting is two relaxed atomic adds and a store; the windows are behind a mutex
//! only the sampler and the readers take.
//!
//! May import: nothing outside `core::stats`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The three windows of a [`StatsItem`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    Minute,
    Hour,
    Day,
}

impl Window {
    pub const ALL: [Window; 3] = [Window::Minute, Window::Hour, Window::Day];

    /// How often the window is sampled, in milliseconds.
    pub const fn period_ms(self) -> u64 {
        match self {
            Window::Minute => 10_000,
            Window::Hour => 600_000,
            Window::Day => 3_600_000,
        }
    }

    /// Snapshots kept (Java: 7, 7, 25).
    const fn keep(self) -> usize {
        match self {
            Window::Minute | Window::Hour => 7,
            Window::Day => 25,
        }
    }

    const fn index(self) -> usize {
        match self {
            Window::Minute => 0,
            Window::Hour => 1,
            Window::Day => 2,
        }
    }
}

/// What a window shows (`StatsSnapshot`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub sum: u64,
    pub tps: f64,
    pub avgpt: f64,
    pub times: u64,
}

#[derive(Clone, Copy, Debug)]
struct CallSnapshot {
    at_ms: u64,
    times: u64,
    value: u64,
}

/// One key's statistic.
pub struct StatsItem {
    value: AtomicU64,
    times: AtomicU64,
    last_update_ms: AtomicU64,
    windows: Mutex<[VecDeque<CallSnapshot>; 3]>,
}

impl StatsItem {
    pub fn new(now_ms: u64) -> Self {
        Self {
            value: AtomicU64::new(0),
            times: AtomicU64::new(0),
            last_update_ms: AtomicU64::new(now_ms),
            windows: Mutex::new(Default::default()),
        }
    }

    /// Adds `value` over `times` calls (`StatsItemSet.addValue`).
    pub fn add(&self, value: u64, times: u64, now_ms: u64) {
        self.value.fetch_add(value, Ordering::Relaxed);
        self.times.fetch_add(times, Ordering::Relaxed);
        self.last_update_ms.store(now_ms, Ordering::Relaxed);
    }

    /// The running total since the item was created.
    pub fn value(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }

    pub fn last_update_ms(&self) -> u64 {
        self.last_update_ms.load(Ordering::Relaxed)
    }

    /// Takes one snapshot for `window` (`samplingInSeconds`, `samplingInMinutes`,
    /// `samplingInHour`).
    pub fn sample(&self, window: Window, now_ms: u64) {
        let snap = CallSnapshot {
            at_ms: now_ms,
            times: self.times.load(Ordering::Relaxed),
            value: self.value.load(Ordering::Relaxed),
        };
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let list = &mut windows[window.index()];
        if list.is_empty() {
            list.push_back(CallSnapshot { at_ms: now_ms.saturating_sub(window.period_ms()), times: 0, value: 0 });
        }
        list.push_back(snap);
        while list.len() > window.keep() {
            list.pop_front();
        }
    }

    /// `computeStatsData` over `window`: all zero before the first sample.
    pub fn snapshot(&self, window: Window) -> Snapshot {
        let windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let list = &windows[window.index()];
        let (Some(first), Some(last)) = (list.front(), list.back()) else { return Snapshot::default() };
        let sum = last.value.saturating_sub(first.value);
        let times = last.times.saturating_sub(first.times);
        let span_ms = last.at_ms.saturating_sub(first.at_ms);
        // Java divides by zero here (NaN in the JSON); a window always spans a period.
        let tps = if span_ms == 0 { 0.0 } else { sum as f64 * 1000.0 / span_ms as f64 };
        let avgpt = if times == 0 { 0.0 } else { sum as f64 / times as f64 };
        Snapshot { sum, tps, avgpt, times }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    /// Adds `per_step` over one call at every step of `window` for `steps` steps, sampling
    /// after each; returns the time of the last sample.
    fn drive(item: &StatsItem, window: Window, steps: u64, per_step: u64) -> u64 {
        let mut now = T0;
        item.sample(window, now);
        for _ in 0..steps {
            now += window.period_ms();
            item.add(per_step, 1, now);
            item.sample(window, now);
        }
        now
    }

    #[test]
    fn empty_window_reads_zero() {
        let item = StatsItem::new(T0);
        item.add(5, 1, T0);
        assert_eq!(item.snapshot(Window::Minute), Snapshot::default(), "no sample yet");
    }

    #[test]
    fn minute_window_covers_the_last_six_periods() {
        let item = StatsItem::new(T0);
        // 10 messages every 10 s over 2 minutes: the window keeps 7 snapshots = 60 s.
        drive(&item, Window::Minute, 12, 10);
        let s = item.snapshot(Window::Minute);
        assert_eq!(s.sum, 60);
        assert!((s.tps - 1.0).abs() < 1e-9, "{s:?}");
        assert!((s.avgpt - 10.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s.times, 6);
    }

    #[test]
    fn hour_window_covers_the_last_hour() {
        let item = StatsItem::new(T0);
        // 600 messages in 3 calls every 10 minutes over 3 hours.
        let mut now = T0;
        item.sample(Window::Hour, now);
        for _ in 0..18 {
            now += Window::Hour.period_ms();
            item.add(600, 3, now);
            item.sample(Window::Hour, now);
        }
        let s = item.snapshot(Window::Hour);
        assert_eq!(s.sum, 3600);
        assert!((s.tps - 1.0).abs() < 1e-9, "{s:?}");
        assert!((s.avgpt - 200.0).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn day_window_covers_the_last_24_hours() {
        let item = StatsItem::new(T0);
        // 7,200 messages an hour (2/s) for two days.
        drive(&item, Window::Day, 48, 7_200);
        let s = item.snapshot(Window::Day);
        assert_eq!(s.sum, 24 * 7_200);
        assert!((s.tps - 2.0).abs() < 1e-9, "{s:?}");
        assert!((s.avgpt - 7_200.0).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn first_sample_counts_what_came_before_it() {
        // Java's first sample puts (now - period, 0, 0) first: a key created between two
        // samples shows its traffic at the next one.
        let item = StatsItem::new(T0);
        item.add(30, 3, T0 + 1_000);
        item.sample(Window::Minute, T0 + 5_000);
        let s = item.snapshot(Window::Minute);
        assert_eq!(s.sum, 30);
        assert!((s.tps - 3.0).abs() < 1e-9, "30 over the 10 s period: {s:?}");
        assert!((s.avgpt - 10.0).abs() < 1e-9);
    }

    #[test]
    fn idle_item_falls_to_zero() {
        let item = StatsItem::new(T0);
        let mut now = drive(&item, Window::Minute, 3, 10);
        for _ in 0..6 {
            now += Window::Minute.period_ms();
            item.sample(Window::Minute, now);
        }
        assert_eq!(item.snapshot(Window::Minute).sum, 0);
        assert_eq!(item.snapshot(Window::Minute).tps, 0.0);
        assert_eq!(item.value(), 30, "the running total stays");
    }
}
