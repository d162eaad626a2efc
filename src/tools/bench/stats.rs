//! What a bench measured: counters and an HDR latency histogram that the workers record into,
//! rolled once a second into a [`Timeline`] of [`Point`]s, and the final [`Summary`] with its
//! table and one-line JSON forms.
//!
//! May import: nothing outside `tools/` (the area's rule: docs/architecture.md).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Latencies are kept in microseconds, from 1 µs to 10 minutes, to 3 significant digits.
const MAX_MICROS: u64 = 600_000_000;
const MIB: f64 = 1024.0 * 1024.0;
/// A last interval shorter than this gives no point of its own (its rate would be noise); its
/// counts still go into the totals.
const MIN_POINT_SECS: f64 = 0.25;

fn histogram() -> Histogram<u64> {
    // Constant bounds that the crate accepts (low >= 1, high >= 2 * low, sigfig <= 5).
    Histogram::new_with_bounds(1, MAX_MICROS, 3).unwrap_or_else(|_| unreachable!("constant histogram bounds"))
}

/// Counts over some span of time.
#[derive(Clone, Debug)]
pub struct Window {
    pub latency: Histogram<u64>,
    pub msgs: u64,
    /// Message body bytes.
    pub bytes: u64,
    pub failed: u64,
    /// Failed requests by cause (a response code's name, `timeout`, ...).
    pub failures: BTreeMap<String, u64>,
}

impl Default for Window {
    fn default() -> Self {
        Self { latency: histogram(), msgs: 0, bytes: 0, failed: 0, failures: BTreeMap::new() }
    }
}

impl Window {
    fn merge(&mut self, other: &Window) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        self.msgs += other.msgs;
        self.bytes += other.bytes;
        self.failed += other.failed;
        for (cause, n) in &other.failures {
            *self.failures.entry(cause.clone()).or_default() += n;
        }
    }

    fn quantile_ms(&self, q: f64) -> Option<f64> {
        (!self.latency.is_empty()).then(|| self.latency.value_at_quantile(q) as f64 / 1000.0)
    }

    fn latency(&self) -> Option<Latency> {
        Some(Latency {
            p50_ms: self.quantile_ms(0.50)?,
            p99_ms: self.quantile_ms(0.99)?,
            p999_ms: self.quantile_ms(0.999)?,
            max_ms: self.latency.max() as f64 / 1000.0,
        })
    }
}

/// Where the workers record; the timeline takes what accumulated once a second.
#[derive(Default)]
pub struct Recorder {
    window: Mutex<Window>,
}

impl Recorder {
    /// `msgs` messages of `bytes` body bytes done, with one latency (µs) per request or message.
    pub fn success(&self, msgs: u64, bytes: u64, latencies_us: &[u64]) {
        let mut w = self.lock();
        w.msgs += msgs;
        w.bytes += bytes;
        for l in latencies_us {
            w.latency.saturating_record((*l).max(1));
        }
    }

    /// A request that failed, carrying `msgs` messages.
    pub fn failure(&self, cause: &str, msgs: u64) {
        let mut w = self.lock();
        w.failed += msgs;
        match w.failures.get_mut(cause) {
            Some(n) => *n += 1,
            None => {
                w.failures.insert(cause.to_owned(), 1);
            }
        }
    }

    fn take(&self) -> Window {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Window> {
        // Counters stay meaningful even if a recording thread panicked.
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Latency percentiles in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

/// One interval (normally a second) of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Seconds from the start to the interval's end.
    pub at_secs: f64,
    pub msgs_per_sec: f64,
    pub mb_per_sec: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub failed: u64,
}

/// Everything recorded so far: the totals, one point per interval, and what the next progress
/// line will summarize.
#[derive(Default)]
pub struct Timeline {
    pub total: Window,
    pub points: Vec<Point>,
    pub end_secs: f64,
    print: Window,
    print_since: f64,
}

impl Timeline {
    /// Takes what `recorder` accumulated since the last roll as the interval ending `at_secs`.
    pub fn roll(&mut self, recorder: &Recorder, at_secs: f64) -> Option<&Point> {
        let w = recorder.take();
        let span = at_secs - self.end_secs;
        self.total.merge(&w);
        self.print.merge(&w);
        self.end_secs = at_secs;
        if span < MIN_POINT_SECS {
            return None;
        }
        self.points.push(Point {
            at_secs,
            msgs_per_sec: w.msgs as f64 / span,
            mb_per_sec: w.bytes as f64 / MIB / span,
            p50_ms: w.quantile_ms(0.50),
            p99_ms: w.quantile_ms(0.99),
            failed: w.failed,
        });
        self.points.last()
    }

    /// The progress line for everything since the previous line; starts the next span.
    pub fn progress_line(&mut self, at_secs: f64) -> String {
        let w = std::mem::take(&mut self.print);
        let span = (at_secs - self.print_since).max(f64::EPSILON);
        self.print_since = at_secs;
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
        format!(
            "{:>6.1}s  {:>10.0} msgs/s  {:>8.2} MB/s  p50 {:>7} ms  p99 {:>7} ms  failed {}",
            at_secs,
            w.msgs as f64 / span,
            w.bytes as f64 / MIB / span,
            ms(w.quantile_ms(0.50)),
            ms(w.quantile_ms(0.99)),
            w.failed
        )
    }

    /// The summary of the whole run.
    pub fn summary(self, role: Role, first_message: Option<Duration>) -> Summary {
        let seconds = self.end_secs.max(f64::EPSILON);
        Summary {
            role,
            msgs: self.total.msgs,
            failed: self.total.failed,
            bytes: self.total.bytes,
            seconds: self.end_secs,
            msgs_per_sec: self.total.msgs as f64 / seconds,
            mb_per_sec: self.total.bytes as f64 / MIB / seconds,
            latency: self.total.latency(),
            first_message_ms: first_message.map(|d| d.as_secs_f64() * 1000.0),
            failures: self.total.failures,
            points: self.points,
            timer_lateness: None,
        }
    }
}

/// What kind of run a summary is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sends; latency is the send round trip (none for oneway).
    Produce,
    /// Pulls; latency is store-to-consume (the broker's store timestamp to the pull's arrival).
    Consume,
}

/// The result of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub role: Role,
    /// Messages sent (acknowledged, or written for oneway) or received.
    pub msgs: u64,
    pub failed: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub msgs_per_sec: f64,
    pub mb_per_sec: f64,
    pub latency: Option<Latency>,
    /// Consume: from the start (route lookup included) to the first message.
    pub first_message_ms: Option<f64>,
    pub failures: BTreeMap<String, u64>,
    pub points: Vec<Point>,
    /// Consume of delivered timer messages: stored this late after the requested time.
    pub timer_lateness: Option<TimerLateness>,
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

impl Summary {
    /// The one-line JSON form (`--json`).
    pub fn to_json(&self) -> String {
        let lat = |f: fn(&Latency) -> f64| self.latency.as_ref().map(|l| round3(f(l)));
        let count_key = match self.role {
            Role::Produce => "sent",
            Role::Consume => "received",
        };
        let mut v = serde_json::json!({
            (count_key): self.msgs,
            "failed": self.failed,
            "msgs_per_sec": round3(self.msgs_per_sec),
            "mb_per_sec": round3(self.mb_per_sec),
            "p50_ms": lat(|l| l.p50_ms),
            "p99_ms": lat(|l| l.p99_ms),
            "p999_ms": lat(|l| l.p999_ms),
            "max_ms": lat(|l| l.max_ms),
            "seconds": round3(self.seconds),
            "failures": self.failures,
        });
        if self.role == Role::Consume {
            v["first_message_ms"] = self.first_message_ms.map(round3).into();
        }
        if let Some(t) = &self.timer_lateness {
            v["timer_messages"] = t.count.into();
            v["timer_early"] = t.early.into();
            v["timer_late_p50_ms"] = t.p50_ms.into();
            v["timer_late_p99_ms"] = t.p99_ms.into();
            v["timer_late_max_ms"] = t.max_ms.into();
        }
        v.to_string()
    }

    /// The final table, with the failure causes under it.
    pub fn table(&self) -> String {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
        let l = self.latency.as_ref();
        let mut header = vec![
            match self.role {
                Role::Produce => "sent",
                Role::Consume => "received",
            },
            "failed",
            "msgs/s",
            "MB/s",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "seconds",
        ];
        let mut row = vec![
            self.msgs.to_string(),
            self.failed.to_string(),
            format!("{:.0}", self.msgs_per_sec),
            format!("{:.2}", self.mb_per_sec),
            ms(l.map(|l| l.p50_ms)),
            ms(l.map(|l| l.p99_ms)),
            ms(l.map(|l| l.p999_ms)),
            ms(l.map(|l| l.max_ms)),
            format!("{:.2}", self.seconds),
        ];
        if self.role == Role::Consume {
            header.push("first msg ms");
            row.push(ms(self.first_message_ms));
        }
        let widths: Vec<usize> = header.iter().zip(&row).map(|(h, r)| h.len().max(r.len())).collect();
        let line = |cells: Vec<String>| {
            let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect();
            padded.join("  ") + "\n"
        };
        let mut out = line(header.iter().map(|h| h.to_string()).collect());
        out.push_str(&line(row));
        if self.role == Role::Consume && self.latency.is_some() {
            out.push_str("latency: broker store time to arrival here (the age of drained messages)\n");
        }
        if let Some(t) = &self.timer_lateness {
            out.push_str(&format!(
                "timer messages: {} stored after their requested time by p50 {} ms, p99 {} ms, max {} ms; {} early\n",
                t.count, t.p50_ms, t.p99_ms, t.max_ms, t.early
            ));
        }
        if !self.failures.is_empty() {
            out.push_str("failed requests by cause:\n");
            for (cause, n) in &self.failures {
                out.push_str(&format!("  {cause}: {n}\n"));
            }
        }
        out
    }
}

/// Percentiles of timer lateness (`bench consume` of delivered timer messages).
#[derive(Clone, Debug, PartialEq)]
pub struct TimerLateness {
    pub count: u64,
    /// Stored before the requested time (should be 0).
    pub early: u64,
    pub p50_ms: i64,
    pub p99_ms: i64,
    pub max_ms: i64,
}

impl TimerLateness {
    pub(super) fn of(mut late: Vec<i64>) -> Option<Self> {
        late.sort_unstable();
        let at = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize];
        (!late.is_empty()).then(|| Self {
            count: late.len() as u64,
            early: late.iter().filter(|l| **l < 0).count() as u64,
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: at(1.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let r = Recorder::default();
        // 1..=1000 ms, one request each.
        let lat: Vec<u64> = (1..=1000).map(|ms| ms * 1000).collect();
        r.success(1000, 2 * 1024 * 1024, &lat);
        let mut t = Timeline::default();
        t.roll(&r, 2.0);
        let s = t.summary(Role::Produce, None);
        let l = s.latency.unwrap();
        // Three significant digits: within 0.1 % of the exact value.
        assert!((l.p50_ms - 500.0).abs() <= 0.5, "{l:?}");
        assert!((l.p99_ms - 990.0).abs() <= 1.0, "{l:?}");
        assert!((l.p999_ms - 999.0).abs() <= 1.0, "{l:?}");
        assert!((l.max_ms - 1000.0).abs() <= 1.0, "{l:?}");
        assert_eq!(s.msgs_per_sec, 500.0);
        assert_eq!(s.mb_per_sec, 1.0);
    }

    #[test]
    fn rollover_starts_a_fresh_interval_and_keeps_the_totals() {
        let r = Recorder::default();
        let mut t = Timeline::default();
        r.success(100, 100, &[1000; 100]);
        r.failure("SYSTEM_BUSY(2)", 1);
        let p = t.roll(&r, 1.0).cloned().unwrap();
        assert_eq!((p.msgs_per_sec, p.failed, p.p50_ms), (100.0, 1, Some(1.0)));
        r.success(50, 50, &[8000; 50]);
        let p = t.roll(&r, 2.0).cloned().unwrap();
        // Only the second second's requests: none of the first interval's 1 ms latencies.
        assert_eq!((p.msgs_per_sec, p.failed), (50.0, 0));
        // Within the histogram's 3 significant digits.
        assert!((p.p50_ms.unwrap() - 8.0).abs() < 0.01, "{p:?}");
        // A quiet interval has no latency.
        let p = t.roll(&r, 3.0).cloned().unwrap();
        assert_eq!((p.msgs_per_sec, p.p99_ms), (0.0, None));
        // A short tail adds to the totals but makes no point.
        r.success(10, 10, &[2000; 10]);
        assert!(t.roll(&r, 3.1).is_none());
        assert_eq!(t.points.len(), 3);
        let s = t.summary(Role::Produce, None);
        assert_eq!((s.msgs, s.failed, s.bytes), (160, 1, 160));
        assert_eq!(s.failures.get("SYSTEM_BUSY(2)"), Some(&1));
        assert!((s.seconds - 3.1).abs() < 1e-9);
    }

    #[test]
    fn progress_lines_cover_the_span_since_the_last_line() {
        let r = Recorder::default();
        let mut t = Timeline::default();
        for at in 1..=5 {
            r.success(1000, 1024 * 1000, &[2000]);
            t.roll(&r, f64::from(at));
        }
        let line = t.progress_line(5.0);
        assert!(line.contains("1000 msgs/s"), "{line}");
        assert!(line.contains("p50    2.00 ms"), "{line}");
        r.success(10, 10, &[]);
        t.roll(&r, 6.0);
        let line = t.progress_line(6.0);
        assert!(line.contains("10 msgs/s") && line.contains("p50       - ms"), "{line}");
    }

    #[test]
    fn json_summary_is_one_line_with_the_documented_keys() {
        let r = Recorder::default();
        r.success(2000, 2000 * 1024, &[1500; 2000]);
        let mut t = Timeline::default();
        t.roll(&r, 2.0);
        let json = t.summary(Role::Produce, None).to_json();
        assert!(!json.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        for key in ["sent", "failed", "msgs_per_sec", "mb_per_sec", "p50_ms", "p99_ms", "p999_ms", "seconds"] {
            assert!(v.get(key).is_some(), "{key} missing from {json}");
        }
        assert_eq!(v["sent"], 2000);
        assert_eq!(v["failed"], 0);
        assert_eq!(v["msgs_per_sec"], 1000.0);
        assert_eq!(v["p50_ms"], 1.5);
        assert!(v.get("received").is_none());

        let mut t = Timeline::default();
        r.success(10, 10, &[]);
        t.roll(&r, 1.0);
        let v: serde_json::Value =
            serde_json::from_str(&t.summary(Role::Consume, Some(Duration::from_millis(12))).to_json()).unwrap();
        for key in ["received", "msgs_per_sec", "mb_per_sec", "first_message_ms", "seconds"] {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
        assert_eq!(v["first_message_ms"], 12.0);
        assert_eq!(v["p99_ms"], serde_json::Value::Null);
    }

    #[test]
    fn table_lists_failure_causes() {
        let r = Recorder::default();
        r.failure("timeout", 32);
        r.failure("timeout", 32);
        let mut t = Timeline::default();
        t.roll(&r, 1.0);
        let table = t.summary(Role::Produce, None).table();
        assert!(table.starts_with("sent  failed"), "{table}");
        assert!(table.contains("  timeout: 2\n"), "{table}");
        assert!(table.lines().nth(1).unwrap().contains("  64  "), "{table}");
    }
}
