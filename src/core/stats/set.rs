//! A named family of statistics keyed by topic, `topic@group` or the cluster name
//! (`StatsItemSet`): created on first use, sampled together, bounded.
//!
//! Keys come from clients (every topic and group a client uses makes one), so a set holds at
//! most [`MAX_KEYS`]: a new key past that replaces the one updated longest ago, and keys idle
//! for longer than the day window ([`IDLE_EXPIRY_MS`]: nothing left to show) are dropped by
//! [`StatsItemSet::expire`]. Java keeps every key until `maxStatsIdleTimeInMinutes` (off by
//! default).
//!
//! May import: nothing outside `core::stats`.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::item::{Snapshot, StatsItem, Window};

/// Keys one set holds at most.
pub const MAX_KEYS: usize = 4096;

/// A key not updated for this long shows zero in every window: it is dropped.
pub const IDLE_EXPIRY_MS: u64 = 25 * 3_600_000;

pub struct StatsItemSet {
    name: &'static str,
    items: RwLock<HashMap<String, Arc<StatsItem>>>,
    max_keys: usize,
}

impl StatsItemSet {
    pub fn new(name: &'static str) -> Self {
        Self::with_capacity(name, MAX_KEYS)
    }

    pub fn with_capacity(name: &'static str, max_keys: usize) -> Self {
        Self { name, items: RwLock::new(HashMap::new()), max_keys: max_keys.max(1) }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `addValue`: `value` over `times` calls to `key`.
    pub fn add(&self, key: &str, value: u64, times: u64, now_ms: u64) {
        self.item(key, now_ms).add(value, times, now_ms);
    }

    fn item(&self, key: &str, now_ms: u64) -> Arc<StatsItem> {
        if let Some(item) = self.items.read().unwrap_or_else(|e| e.into_inner()).get(key) {
            return item.clone();
        }
        let mut items = self.items.write().unwrap_or_else(|e| e.into_inner());
        if let Some(item) = items.get(key) {
            return item.clone();
        }
        if items.len() >= self.max_keys {
            let oldest = items.iter().min_by_key(|(_, i)| i.last_update_ms()).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                items.remove(&k);
            }
        }
        let item = Arc::new(StatsItem::new(now_ms));
        items.insert(key.to_owned(), item.clone());
        item
    }

    /// The item of `key`, if any (VIEW_BROKER_STATS_DATA answers SYSTEM_ERROR without one).
    pub fn get(&self, key: &str) -> Option<Arc<StatsItem>> {
        self.items.read().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    /// `getStatsDataInMinute/Hour/Day`: zero for an unknown key.
    pub fn snapshot(&self, key: &str, window: Window) -> Snapshot {
        self.get(key).map(|i| i.snapshot(window)).unwrap_or_default()
    }

    /// Samples `window` of every key.
    pub fn sample(&self, window: Window, now_ms: u64) {
        let items: Vec<Arc<StatsItem>> =
            self.items.read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        for item in items {
            item.sample(window, now_ms);
        }
    }

    /// Drops keys idle for longer than `idle_ms`.
    pub fn expire(&self, now_ms: u64, idle_ms: u64) {
        let mut items = self.items.write().unwrap_or_else(|e| e.into_inner());
        items.retain(|_, i| now_ms.saturating_sub(i.last_update_ms()) <= idle_ms);
    }

    /// Drops the keys `pick` selects (a deleted topic or group: `delValueByPrefixKey` ...).
    pub fn remove_where(&self, pick: impl Fn(&str) -> bool) {
        self.items.write().unwrap_or_else(|e| e.into_inner()).retain(|k, _| !pick(k));
    }

    pub fn len(&self) -> usize {
        self.items.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    #[test]
    fn keys_are_bounded_and_the_idlest_goes_first() {
        let set = StatsItemSet::with_capacity("TOPIC_PUT_NUMS", 3);
        for (i, k) in ["a", "b", "c"].iter().enumerate() {
            set.add(k, 1, 1, T0 + i as u64);
        }
        set.add("a", 1, 1, T0 + 10);
        set.add("d", 1, 1, T0 + 11);
        assert_eq!(set.len(), 3);
        assert!(set.get("b").is_none(), "b was updated longest ago");
        assert!(set.get("a").is_some() && set.get("c").is_some() && set.get("d").is_some());
    }

    #[test]
    fn idle_keys_expire() {
        let set = StatsItemSet::new("GROUP_GET_NUMS");
        set.add("t@g1", 1, 1, T0);
        set.add("t@g2", 1, 1, T0 + IDLE_EXPIRY_MS);
        set.expire(T0 + IDLE_EXPIRY_MS + 1, IDLE_EXPIRY_MS);
        assert!(set.get("t@g1").is_none());
        assert!(set.get("t@g2").is_some());
    }

    #[test]
    fn unknown_key_reads_zero_and_sampling_reaches_every_key() {
        let set = StatsItemSet::new("TOPIC_PUT_NUMS");
        assert_eq!(set.snapshot("nope", Window::Minute), Snapshot::default());
        set.add("t1", 20, 2, T0);
        set.add("t2", 40, 1, T0);
        set.sample(Window::Minute, T0 + 1);
        assert_eq!(set.snapshot("t1", Window::Minute).sum, 20);
        assert_eq!(set.snapshot("t2", Window::Minute).sum, 40);
        set.remove_where(|k| k == "t1");
        assert!(set.get("t1").is_none());
    }
}
