//! GET_BROKER_RUNTIME_INFO (28, mqadmin `brokerStatus` and `clusterList`): Java 5.3.3's key set
//! (`AdminBrokerProcessor.prepareRuntimeInfo`, `DefaultMessageStore.getRuntimeInfo`,
//! `StoreStatsService.getRuntimeInfo`, `ScheduleMessageService.buildRunningStats`) in Java's
//! formats.
//!
//! Keys without a ferrocket counterpart read as Java reads them with the feature off or idle:
//! the thread-pool queues (requests run on their connection's task, nothing queues: size 0,
//! head wait 0, Java's default capacities), `pageCacheLockTimeMills` 0 (no put lock is held
//! across a page-cache write), `remainTransientStoreBufferNumbs` 2147483647 (no transient store
//! pool), `dispatchMaxBuffer` 0 (as Java, which never sets it), `timerCongestNum`, and the
//! timer rates.
//!
//! May import: `core`, `protocol`, `store` and modules of `broker/`; the area's rule is its
//! line in docs/architecture.md.

use std::collections::BTreeMap;
use std::path::Path;

use super::{ok, Handled};
use crate::broker::BrokerInner;
use crate::core::stats::format::{human_bytes, java_double};
use crate::protocol::body::{to_vec, KvTable};
use crate::protocol::RemotingCommand;

/// Java's default capacities of the pools whose queue sizes it reports.
const POOL_CAPACITIES: [(&str, u32); 5] = [
    ("sendThreadPoolQueueCapacity", 10_000),
    ("pullThreadPoolQueueCapacity", 100_000),
    ("litePullThreadPoolQueueCapacity", 100_000),
    ("queryThreadPoolQueueCapacity", 20_000),
    ("ackThreadPoolQueueCapacity", 100_000),
];

pub fn get_broker_runtime_info(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let mut t = BTreeMap::new();
    runtime_info(b, crate::core::stats::now_ms(), &mut |k, v| {
        t.insert(k.to_owned(), v);
    });
    Ok(Some(ok(req).with_body(to_vec(&KvTable { table: t }))))
}

fn runtime_info(b: &BrokerInner, now_ms: u64, put: &mut impl FnMut(&str, String)) {
    let store = &b.store;
    b.stats.runtime_info(now_ms, put);
    disk(b, put);
    put("commitLogMinOffset", store.commit_log_min_offset().to_string());
    put("commitLogMaxOffset", store.commit_log_max_offset().to_string());
    for (level, offset) in b.schedule.offsets() {
        let max = store.max_offset_in_queue(crate::store::SCHEDULE_TOPIC, level - 1);
        put(&format!("scheduleMessageOffset_{level}"), format!("{offset},{max}"));
    }
    put("brokerActive", (!b.config.is_slave()).to_string());
    put("brokerVersionDesc", "V5_3_3".into());
    put("brokerVersion", crate::protocol::command::CURRENT_VERSION.to_string());
    put("dispatchBehindBytes", store.commit_log_max_offset().saturating_sub(store.dispatched_offset()).to_string());
    put("pageCacheLockTimeMills", "0".into());
    put("earliestMessageTimeStamp", earliest_message_time(b).to_string());
    put("startAcceptSendRequestTimeStamp", "0".into());
    timer(b, put);
    put("remainTransientStoreBufferNumbs", i32::MAX.to_string());
    put("remainHowManyDataToFlush", human_bytes(store.commit_log_max_offset().saturating_sub(store.flushed_offset())));
    for (capacity, value) in POOL_CAPACITIES {
        let pool = capacity.trim_end_matches("Capacity");
        put(&format!("{pool}Size"), "0".into());
        put(capacity, value.to_string());
        put(&format!("{pool}HeadWaitTimeMills"), "0".into());
    }
    put("EndTransactionQueueSize", "0".into());
    put("EndTransactionThreadPoolQueueCapacity", "100000".into());
}

/// `getEarliestMessageTime`: store time of the first record in the CommitLog, -1 when empty.
fn earliest_message_time(b: &BrokerInner) -> i64 {
    let min = b.store.commit_log_min_offset();
    if min >= b.store.commit_log_max_offset() {
        return -1;
    }
    b.store.lookup_message(min as i64).map_or(-1, |m| m.store_timestamp)
}

fn timer(b: &BrokerInner, put: &mut impl FnMut(&str, String)) {
    let timer_max = b.store.max_offset_in_queue(crate::broker::timer::TIMER_TOPIC, 0);
    let (read_behind, offset_behind) = b.timer.behind(timer_max).unwrap_or((0, 0));
    put("timerReadBehind", read_behind.to_string());
    put("timerOffsetBehind", offset_behind.to_string());
    put("timerCongestNum", "0".into());
    put("timerEnqueueTps", "0.0".into());
    put("timerDequeueTps", "0.0".into());
}

/// The disk keys: used ratio of the CommitLog's and the ConsumeQueues' disks, the store root's
/// capacity.
fn disk(b: &BrokerInner, put: &mut impl FnMut(&str, String)) {
    let c = b.store.config();
    let commit_log = c.commit_log_dir();
    let ratio = used_ratio(b, &commit_log);
    put(&format!("commitLogDiskRatio_{}", commit_log.display()), java_double(ratio));
    put("commitLogDiskRatio", java_double(ratio));
    put("consumeQueueDiskRatio", java_double(used_ratio(b, &c.consume_queue_dir())));
    let root = &c.store_path_root_dir;
    if let (Ok(total), Ok(free)) = (fs4::total_space(root), fs4::free_space(root)) {
        put("commitLogDirCapacity", format!("Total : {}, Free : {}.", human_bytes(total), human_bytes(free)));
    }
}

/// `UtilAll.getDiskPartitionSpaceUsedPercent`: used over used + usable, rounded up to the
/// percent, as a fraction; the CommitLog's blocks allocated ahead of its write end count as
/// free (the store's `disk_used_percent`); -1 when the path cannot be measured.
fn used_ratio(b: &BrokerInner, path: &Path) -> f64 {
    b.store.disk_used_percent(path).map_or(-1.0, |p| f64::from(p) / 100.0)
}
