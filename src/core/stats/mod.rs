//! The broker's statistics (`BrokerStatsManager` and `StoreStatsService`), fed by both doors:
//! every append (`core::append`: a RocketMQ send, a Kafka produce) and every read (a RocketMQ
//! pull, a Kafka fetch). Read by VIEW_BROKER_STATS_DATA (mqadmin `statsAll`), the consume TPS
//! of GET_CONSUME_STATS and GET_BROKER_CONSUME_STATS, and GET_BROKER_RUNTIME_INFO
//! (`brokerStatus`, `clusterList`).
//!
//! ```text
//!   set (statsName)             key                   value, times per call
//!   TOPIC_PUT_NUMS              topic stored on       messages, 1 per append or delivery
//!   TOPIC_PUT_SIZE              topic                 bytes written, 1
//!   TOPIC_PUT_LATENCY           queueId@topic         milliseconds, 1
//!   GROUP_GET_NUMS              topic@group           messages, 1 per pull that found some
//!   GROUP_GET_SIZE              topic@group           bytes, 1
//!   SNDBCK_PUT_NUMS             topic@group           1, 1 per message sent back
//!   BROKER_PUT_NUMS             brokerClusterName     messages, 0
//!   BROKER_GET_NUMS             brokerClusterName     messages, 0
//!   each with a minute, hour and day window (item.rs); sampled by `sample` every 10 s
//! ```
//! A Kafka fetch names no consumer group: it counts in BROKER_GET_NUMS and the store's get
//! figures, not in GROUP_GET_NUMS.
//!
//! May import: `chrono` (local midnight); nothing else outside `core::stats`.

pub mod format;
pub mod item;
pub mod set;
pub mod store;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

pub use item::{Snapshot, Window};
use set::StatsItemSet;

pub const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
pub const TOPIC_PUT_SIZE: &str = "TOPIC_PUT_SIZE";
pub const TOPIC_PUT_LATENCY: &str = "TOPIC_PUT_LATENCY";
pub const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";
pub const GROUP_GET_SIZE: &str = "GROUP_GET_SIZE";
pub const SNDBCK_PUT_NUMS: &str = "SNDBCK_PUT_NUMS";
pub const BROKER_PUT_NUMS: &str = "BROKER_PUT_NUMS";
pub const BROKER_GET_NUMS: &str = "BROKER_GET_NUMS";

/// The sets, one field each.
struct Sets {
    topic_put_nums: StatsItemSet,
    topic_put_size: StatsItemSet,
    topic_put_latency: StatsItemSet,
    group_get_nums: StatsItemSet,
    group_get_size: StatsItemSet,
    sndbck_put_nums: StatsItemSet,
    broker_put_nums: StatsItemSet,
    broker_get_nums: StatsItemSet,
}

impl Sets {
    fn new() -> Self {
        Self {
            topic_put_nums: StatsItemSet::new(TOPIC_PUT_NUMS),
            topic_put_size: StatsItemSet::new(TOPIC_PUT_SIZE),
            topic_put_latency: StatsItemSet::new(TOPIC_PUT_LATENCY),
            group_get_nums: StatsItemSet::new(GROUP_GET_NUMS),
            group_get_size: StatsItemSet::new(GROUP_GET_SIZE),
            sndbck_put_nums: StatsItemSet::new(SNDBCK_PUT_NUMS),
            broker_put_nums: StatsItemSet::new(BROKER_PUT_NUMS),
            broker_get_nums: StatsItemSet::new(BROKER_GET_NUMS),
        }
    }

    fn all(&self) -> [&StatsItemSet; 8] {
        [
            &self.topic_put_nums,
            &self.topic_put_size,
            &self.topic_put_latency,
            &self.group_get_nums,
            &self.group_get_size,
            &self.sndbck_put_nums,
            &self.broker_put_nums,
            &self.broker_get_nums,
        ]
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// When each periodic task is next due.
struct Due {
    hour: u64,
    day: u64,
    latency: u64,
    morning: u64,
}

/// `BrokerStats`: the non-system totals at the last two local midnights.
#[derive(Clone, Copy, Default)]
struct Mornings {
    put_yesterday: u64,
    put_today: u64,
    get_yesterday: u64,
    get_today: u64,
}

pub struct BrokerStats {
    cluster: String,
    sets: Sets,
    pub store: store::StoreStats,
    put_no_system: AtomicU64,
    get_no_system: AtomicU64,
    due: Mutex<Due>,
    mornings: Mutex<Mornings>,
}

impl Default for BrokerStats {
    fn default() -> Self {
        Self::new("DefaultCluster", now_ms())
    }
}

impl BrokerStats {
    /// Statistics of a broker of `cluster` booted at `boot_ms`.
    pub fn new(cluster: &str, boot_ms: u64) -> Self {
        Self {
            cluster: cluster.to_owned(),
            sets: Sets::new(),
            store: store::StoreStats::new(boot_ms),
            put_no_system: AtomicU64::new(0),
            get_no_system: AtomicU64::new(0),
            // Java samples every window once at start.
            due: Mutex::new(Due { hour: 0, day: 0, latency: boot_ms + 60_000, morning: next_local_midnight(boot_ms) }),
            mornings: Mutex::new(Mornings::default()),
        }
    }

    /// The set named `name` (VIEW_BROKER_STATS_DATA's `statsName`).
    pub fn set(&self, name: &str) -> Option<&StatsItemSet> {
        self.sets.all().into_iter().find(|s| s.name() == name)
    }

    /// An append of `count` messages to `topic` queue `queue_id`, `bytes` written, that took
    /// `elapsed_ms` (send, produce, end of a transaction).
    pub fn put(&self, topic: &str, queue_id: i32, count: u64, bytes: u64, elapsed_ms: u64, system: bool) {
        let now = now_ms();
        self.sets.topic_put_nums.add(topic, count, 1, now);
        self.sets.topic_put_size.add(topic, bytes, 1, now);
        self.sets.topic_put_latency.add(&format!("{queue_id}@{topic}"), elapsed_ms, 1, now);
        self.sets.broker_put_nums.add(&self.cluster, count, 0, now);
        if !system {
            self.put_no_system.fetch_add(count, Ordering::Relaxed);
        }
        self.store.put(count, bytes, elapsed_ms);
    }

    /// An append the store refused.
    pub fn put_failed(&self) {
        self.store.put_failed();
    }

    /// A RocketMQ pull by `group` from `topic` that handed out `count` messages of `bytes`
    /// (0: nothing found).
    pub fn pulled(&self, group: &str, topic: &str, count: u64, bytes: u64, system: bool) {
        self.store.get(count);
        if count == 0 {
            return;
        }
        let now = now_ms();
        let key = format!("{topic}@{group}");
        self.sets.group_get_nums.add(&key, count, 1, now);
        self.sets.group_get_size.add(&key, bytes, 1, now);
        self.sets.broker_get_nums.add(&self.cluster, count, 0, now);
        if !system {
            self.get_no_system.fetch_add(count, Ordering::Relaxed);
        }
    }

    /// A Kafka fetch that handed out `n` records (no group to count them for).
    pub fn add_got(&self, n: u64) {
        self.store.get(n);
        if n > 0 {
            self.sets.broker_get_nums.add(&self.cluster, n, 0, now_ms());
            self.get_no_system.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A message of `topic` that `group` sent back for a retry.
    pub fn sent_back(&self, group: &str, topic: &str) {
        self.sets.sndbck_put_nums.add(&format!("{topic}@{group}"), 1, 1, now_ms());
    }

    /// Messages put since start, system topics left out (`msgPutTotalTodayNow`).
    pub fn put_total(&self) -> u64 {
        self.put_no_system.load(Ordering::Relaxed)
    }

    /// Messages handed out since start, system topics left out (`msgGetTotalTodayNow`).
    pub fn get_total(&self) -> u64 {
        self.get_no_system.load(Ordering::Relaxed)
    }

    /// `tpsGroupGetNums`: the messages per second `group` read from `topic` over the last minute.
    pub fn group_get_tps(&self, group: &str, topic: &str) -> f64 {
        self.sets.group_get_nums.snapshot(&format!("{topic}@{group}"), Window::Minute).tps
    }

    /// Forgets a deleted topic (`onTopicDeleted`).
    pub fn topic_deleted(&self, topic: &str) {
        let prefix = format!("{topic}@");
        let suffix = format!("@{topic}");
        for s in self.sets.all() {
            s.remove_where(|k| k == topic || k.starts_with(&prefix) || k.ends_with(&suffix));
        }
    }

    /// Forgets a deleted group (`onGroupDeleted`).
    pub fn group_deleted(&self, group: &str) {
        let suffix = format!("@{group}");
        for s in [&self.sets.group_get_nums, &self.sets.group_get_size, &self.sets.sndbck_put_nums] {
            s.remove_where(|k| k.ends_with(&suffix));
        }
    }

    /// Samples now (called every 10 s).
    pub fn sample(&self) {
        self.tick(now_ms());
    }

    /// Samples the minute windows and the store's rates, and whatever else is due at `now_ms`:
    /// the hour windows every 10 min, the day windows every hour (and drops idle keys), the
    /// latency minute every 60 s, the totals at local midnight.
    pub fn tick(&self, now_ms: u64) {
        for s in self.sets.all() {
            s.sample(Window::Minute, now_ms);
        }
        self.store.sample(now_ms);
        let mut due = self.due.lock().unwrap_or_else(|e| e.into_inner());
        if now_ms >= due.hour {
            self.sets.all().iter().for_each(|s| s.sample(Window::Hour, now_ms));
            due.hour = now_ms + Window::Hour.period_ms();
        }
        if now_ms >= due.day {
            for s in self.sets.all() {
                s.sample(Window::Day, now_ms);
                s.expire(now_ms, set::IDLE_EXPIRY_MS);
            }
            due.day = now_ms + Window::Day.period_ms();
        }
        if now_ms >= due.latency {
            self.store.rotate_latency();
            due.latency = now_ms + 60_000;
        }
        if now_ms >= due.morning {
            self.record_morning();
            due.morning = next_local_midnight(now_ms);
        }
    }

    /// `BrokerStats.record`: today's morning becomes yesterday's.
    fn record_morning(&self) {
        let mut m = self.mornings.lock().unwrap_or_else(|e| e.into_inner());
        m.put_yesterday = m.put_today;
        m.get_yesterday = m.get_today;
        m.put_today = self.put_total();
        m.get_today = self.get_total();
    }

    /// The runtime-info keys of the statistics (`StoreStatsService.getRuntimeInfo` and
    /// `BrokerStats`).
    pub fn runtime_info(&self, now_ms: u64, put: &mut impl FnMut(&str, String)) {
        self.store.runtime_info(now_ms, put);
        let m = *self.mornings.lock().unwrap_or_else(|e| e.into_inner());
        put("msgPutTotalYesterdayMorning", m.put_yesterday.to_string());
        put("msgPutTotalTodayMorning", m.put_today.to_string());
        put("msgPutTotalTodayNow", self.put_total().to_string());
        put("msgGetTotalYesterdayMorning", m.get_yesterday.to_string());
        put("msgGetTotalTodayMorning", m.get_today.to_string());
        put("msgGetTotalTodayNow", self.get_total().to_string());
    }
}

/// The next local midnight after `now_ms` (Java's `computeNextMorningTimeMillis`).
fn next_local_midnight(now_ms: u64) -> u64 {
    use chrono::{Local, TimeZone};
    let next = Local
        .timestamp_millis_opt(now_ms as i64)
        .single()
        .and_then(|t| t.date_naive().succ_opt())
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .and_then(|t| Local.from_local_datetime(&t).earliest())
        .map(|t| t.timestamp_millis() as u64);
    next.unwrap_or(now_ms + 86_400_000)
}

#[cfg(test)]
mod tests;
