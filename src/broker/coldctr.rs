//! Cold-read flow control (Java's `ColdDataCgCtrService`, RIP-62): per consumer group, the bytes
//! of cold messages (outside the part of the CommitLog assumed in memory) its pulls read since
//! the last clear; the admin's per-group thresholds; the broker-wide sum. Java's rules:
//!
//! ```text
//! flow-controlled  coldDataFlowControlEnable, not a system group, in the runtime table, and
//!                  (its acc >= its threshold: configTable entry, else cgColdReadThreshold
//!                   or the broker-wide acc >= globalColdReadThreshold)
//! clear            every 5 s (180 s while off): a group idle for 60 s leaves the runtime
//!                  table, every acc goes back to 0
//! ```
//!
//! Bounded: at most [`MAX_GROUPS`] groups in each table (a new group beyond that is counted in
//! the broker-wide sum only; an update that would pass it is refused). The adaptive strategy
//! (`coldCtrStrategyEnable`) is not implemented (the key is refused).
//!
//! Owns: [`ColdDataCtr`]. May import what `broker` may (its module doc).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Groups each table holds at most.
pub const MAX_GROUPS: usize = 10_000;
/// Java's `cgColdAccResideTimeoutMills`: a group reading nothing cold this long leaves the table.
const RESIDE_TIMEOUT_MS: i64 = 60_000;
/// Java's clear period, while the feature is on and while it is off.
pub const CLEAR_INTERVAL_ON: Duration = Duration::from_secs(5);
pub const CLEAR_INTERVAL_OFF: Duration = Duration::from_secs(180);
/// Java's `ColdDataPullRequestHoldService`: a pull consumer's cold pull waits this long (its
/// queue holds 10,000 pulls), then reads one message.
pub const COLD_HOLD: Duration = Duration::from_secs(3);
pub const MAX_HELD: usize = 10_000;
/// Java's answer to a push consumer's cold pull (SYSTEM_BUSY).
pub const FLOW_CTR_REMARK: &str = "This consumer group is reading cold data. It has been flow control";

/// Java's `AccAndTimeStamp`.
#[derive(Clone, Copy)]
struct Acc {
    cold_acc: i64,
    last_cold_read_time_mills: i64,
    create_time_mills: i64,
}

/// The tables and the broker-wide accumulator (see the module doc).
#[derive(Default)]
pub struct ColdDataCtr {
    runtime: Mutex<HashMap<String, Acc>>,
    config: Mutex<BTreeMap<String, i64>>,
    global_acc: AtomicI64,
    held: AtomicUsize,
}

/// `MixAll.isSysConsumerGroupPullMessage`: groups never counted nor held.
pub fn is_sys_pull_group(group: &str) -> bool {
    const GROUPS: [&str; 10] = [
        "DEFAULT_CONSUMER",
        "TOOLS_CONSUMER",
        "SCHEDULE_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
    ];
    GROUPS.contains(&group) || crate::meta::names::is_system_group(group)
}

/// Why an update of the config table was refused.
#[derive(Debug, thiserror::Error)]
#[error("the cold data flow control table holds at most {MAX_GROUPS} groups")]
pub struct TableFull;

impl ColdDataCtr {
    fn runtime(&self) -> std::sync::MutexGuard<'_, HashMap<String, Acc>> {
        self.runtime.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn config(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, i64>> {
        self.config.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `coldAcc`: `bytes` of cold messages `group` read at `now_ms`.
    pub fn cold_acc(&self, group: &str, bytes: i64, now_ms: i64) {
        if bytes <= 0 {
            return;
        }
        self.global_acc.fetch_add(bytes, Ordering::Relaxed);
        let mut runtime = self.runtime();
        if let Some(acc) = runtime.get_mut(group) {
            acc.cold_acc = acc.cold_acc.saturating_add(bytes);
            acc.last_cold_read_time_mills = now_ms;
        } else if runtime.len() < MAX_GROUPS {
            let acc = Acc { cold_acc: bytes, last_cold_read_time_mills: now_ms, create_time_mills: now_ms };
            runtime.insert(group.to_owned(), acc);
        }
    }

    /// `addOrUpdateGroupConfig` for every entry, all or nothing.
    pub fn update_config(&self, entries: &[(String, i64)]) -> Result<(), TableFull> {
        let mut config = self.config();
        let new = entries
            .iter()
            .filter(|(g, _)| !config.contains_key(g))
            .map(|(g, _)| g)
            .collect::<std::collections::HashSet<_>>();
        if config.len() + new.len() > MAX_GROUPS {
            return Err(TableFull);
        }
        for (group, threshold) in entries {
            config.insert(group.clone(), *threshold);
        }
        Ok(())
    }

    /// `removeGroupConfig`.
    pub fn remove_config(&self, group: &str) {
        self.config().remove(group);
    }

    /// `isCgNeedColdDataFlowCtr` (the caller checked `coldDataFlowControlEnable`).
    pub fn needs_flow_ctr(&self, group: &str, cg_threshold: i64, global_threshold: i64) -> bool {
        if is_sys_pull_group(group) {
            return false;
        }
        let Some(acc) = self.runtime().get(group).map(|a| a.cold_acc) else { return false };
        let threshold = self.config().get(group).copied().unwrap_or(cg_threshold);
        acc >= threshold || self.global_acc.load(Ordering::Relaxed) >= global_threshold
    }

    /// `clearDataAcc` at `now_ms` (the periodic clear; tests call it to move time).
    pub fn clear_data_acc(&self, now_ms: i64) {
        let mut runtime = self.runtime();
        runtime.retain(|_, acc| now_ms < acc.last_cold_read_time_mills.saturating_add(RESIDE_TIMEOUT_MS));
        for acc in runtime.values_mut() {
            acc.cold_acc = 0;
        }
        drop(runtime);
        self.global_acc.store(0, Ordering::Relaxed);
    }

    /// `getColdDataFlowCtrInfo`: the JSON mqadmin prints.
    pub fn info_json(&self, cg_threshold: i64, global_threshold: i64) -> String {
        let runtime: serde_json::Map<String, serde_json::Value> = self
            .runtime()
            .iter()
            .map(|(g, a)| {
                let v = serde_json::json!({
                    "coldAcc": a.cold_acc,
                    "lastColdReadTimeMills": a.last_cold_read_time_mills,
                    "createTimeMills": a.create_time_mills,
                });
                (g.clone(), v)
            })
            .collect();
        let config: serde_json::Map<String, serde_json::Value> =
            self.config().iter().map(|(g, t)| (g.clone(), (*t).into())).collect();
        serde_json::json!({
            "runtimeTable": runtime,
            "configTable": config,
            "cgColdReadThreshold": cg_threshold,
            "globalColdReadThreshold": global_threshold,
            "globalAcc": self.global_acc.load(Ordering::Relaxed),
        })
        .to_string()
    }

    /// A slot in the cold hold queue (Java's holds 10,000 pulls); `None` when it is full.
    pub fn hold_slot(&self) -> Option<HeldSlot<'_>> {
        let held = self.held.fetch_add(1, Ordering::AcqRel);
        let slot = HeldSlot(&self.held);
        (held < MAX_HELD).then_some(slot)
    }
}

/// A pull in the cold hold queue; leaves it when dropped.
pub struct HeldSlot<'a>(&'a AtomicUsize);

impl Drop for HeldSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Bytes of the records in `messages` that lie in the cold area (`is_cold` of the CommitLog
/// offset each record stores at byte 28, Java's `PHYSICALOFFSET`).
pub fn cold_bytes<M: AsRef<[u8]>>(messages: &[M], is_cold: impl Fn(i64) -> bool) -> i64 {
    messages
        .iter()
        .map(AsRef::as_ref)
        .filter(|m| m.get(28..36).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes).is_some_and(&is_cold))
        .map(|m| m.len() as i64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_capped_and_cleared_as_java_does() {
        let ctr = ColdDataCtr::default();
        ctr.cold_acc("g", 10, 1_000);
        assert!(ctr.needs_flow_ctr("g", 10, i64::MAX));
        assert!(!ctr.needs_flow_ctr("g", 11, i64::MAX));
        assert!(ctr.needs_flow_ctr("g", 11, 10), "the broker-wide sum over its threshold");
        assert!(!ctr.needs_flow_ctr("other", 0, 0), "not in the runtime table");
        ctr.cold_acc("TOOLS_CONSUMER", 10, 1_000);
        assert!(!ctr.needs_flow_ctr("TOOLS_CONSUMER", 0, 0));
        for i in 0..MAX_GROUPS + 5 {
            ctr.cold_acc(&format!("x{i}"), 1, 1_000);
        }
        assert_eq!(ctr.runtime().len(), MAX_GROUPS);
        ctr.clear_data_acc(60_999);
        assert_eq!(ctr.runtime().values().map(|a| a.cold_acc).sum::<i64>(), 0);
        assert_eq!(ctr.global_acc.load(Ordering::Relaxed), 0);
        ctr.clear_data_acc(61_000);
        assert!(ctr.runtime().is_empty(), "idle for 60 s");
        let many: Vec<_> = (0..=MAX_GROUPS).map(|i| (format!("c{i}"), 1)).collect();
        assert!(ctr.update_config(&many).is_err());
        assert!(ctr.config().is_empty(), "all or nothing");
        let slots: Vec<_> = (0..MAX_HELD).map(|_| ctr.hold_slot().unwrap()).collect();
        assert!(ctr.hold_slot().is_none());
        drop(slots);
        assert!(ctr.hold_slot().is_some());
    }

    #[test]
    fn cold_bytes_reads_the_stored_offset() {
        let mut rec = vec![0u8; 40];
        rec[28..36].copy_from_slice(&100i64.to_be_bytes());
        assert_eq!(cold_bytes(&[rec.clone(), vec![1, 2]], |off| off == 100), 40);
        assert_eq!(cold_bytes(&[rec], |off| off > 100), 0);
    }
}
