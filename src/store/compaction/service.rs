//! The compaction service (`CompactionService`, Kafka's `LogCleaner` threads) on the store's
//! shared state: the background round, a forced compaction, the floor retention must respect,
//! and reads below a compacted end.
//!
//! ```text
//! every compactionScheduleInternal: for each queue of a compacted topic
//!   dirty = clean point (the queue's end) - compacted end;  live = records in the generation
//!   dirty / (dirty + live) >= min.cleanable.dirty.ratio  ->  passes until the end reaches the clean point
//! retention: a CommitLog segment may go only if it ends at or below every compacted queue's
//!   first uncompacted record: the live set is in the compacted log or still in the CommitLog
//! ```
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::sync::Arc;
use std::time::Instant;

use tracing::{error, info};

use super::super::consume_queue::{ConsumeQueue, CQ_UNIT_SIZE};
use super::super::mapped_file::MappedSlice;
use super::super::state::{now_ms, Inner};
use super::super::StoreError;
use super::log::CompactedQueue;
use super::pass::{self, CompactionStats, PassLimits, MAP_SLOT_BYTES};
use super::policy::CompactionPolicy;

/// The background round.
pub fn run(inner: &Inner) {
    while inner.sleep_while_running(inner.live().compaction_interval) {
        for cq in inner.queues.all() {
            let Some(policy) = policy(inner, cq.topic()) else { continue };
            if let Err(e) = compact_queue(inner, &cq, &policy, now_ms(), false) {
                error!(topic = cq.topic(), queue = cq.queue_id(), error = %e, "compaction failed; the previous compacted log stays in force");
            }
            if !inner.is_running() {
                return;
            }
        }
    }
}

/// The topic's policy, if compaction is enabled and the topic is compacted.
pub fn policy(inner: &Inner, topic: &str) -> Option<CompactionPolicy> {
    inner.live().enable_compaction.then(|| inner.compaction.policy(topic)).flatten()
}

/// Compacts `cq` up to its current end: when `force`, whatever the dirty ratio (and even with
/// nothing dirty: expired tombstones go); otherwise only above `min.cleanable.dirty.ratio`.
/// `None` when no pass ran.
pub fn compact_queue(
    inner: &Inner,
    cq: &ConsumeQueue,
    policy: &CompactionPolicy,
    now_ms: i64,
    force: bool,
) -> Result<Option<CompactionStats>, StoreError> {
    let q = inner.compaction.get_or_create(cq.topic(), cq.queue_id())?;
    let txn = inner.compaction.txn();
    let end = cq.max_offset_in_queue();
    let clean_point = txn.as_ref().map_or(end, |t| t.clean_limit(cq.topic(), cq.queue_id(), end).min(end));
    let g = q.current();
    let dirty = clean_point - g.end.max(cq.min_offset_in_queue());
    let live = g.entries() as i64;
    let ratio = if dirty + live > 0 { dirty as f64 / (dirty + live) as f64 } else { 0.0 };
    if !force && (dirty <= 0 || ratio < policy.min_cleanable_dirty_ratio) {
        return Ok(None);
    }
    drop(g);
    let started = Instant::now();
    let limits = PassLimits {
        max_keys: (inner.live().max_offset_map_size / MAP_SLOT_BYTES).max(1),
        crash_before_install: false,
    };
    let mut stats = CompactionStats::default();
    loop {
        let limits = PassLimits { crash_before_install: inner.compaction.take_crash_fault(), ..limits };
        let input =
            pass::PassInput { commit_log: &inner.commit_log, clean_point, policy, limits, now_ms, txn: txn.as_deref() };
        let p = pass::run(&q, cq, &input)?;
        stats.passes += 1;
        stats.records_read += p.records_read;
        stats.records_kept = p.records_kept;
        stats.keyless += p.keyless;
        stats.uncommitted += p.uncommitted;
        stats.bytes_written += p.bytes_written;
        stats.end = p.end;
        if limits.crash_before_install {
            return Err(StoreError::NotWritable("compaction pass stopped before its commit (fault injected)".into()));
        }
        if p.end >= clean_point || !inner.is_running() {
            break;
        }
    }
    info!(
        topic = cq.topic(),
        queue = cq.queue_id(),
        passes = stats.passes,
        read = stats.records_read,
        kept = stats.records_kept,
        keyless = stats.keyless,
        end = stats.end,
        ms = started.elapsed().as_millis() as u64,
        "compacted queue"
    );
    Ok(Some(stats))
}

/// The lowest CommitLog offset a compacted queue still needs (its first record at or above the
/// compacted end); `None` if no compacted queue needs any.
pub fn retention_floor(inner: &Inner) -> Option<u64> {
    let mut floor: Option<u64> = None;
    for cq in inner.queues.all() {
        if policy(inner, cq.topic()).is_none() {
            continue;
        }
        let end = inner.compaction.get(cq.topic(), cq.queue_id()).map_or(0, |q| q.current().end);
        if let Some(at) = first_record_at_or_after(&cq, end.max(cq.min_offset_in_queue())) {
            floor = Some(floor.map_or(at, |f| f.min(at)));
        }
    }
    floor
}

fn first_record_at_or_after(cq: &ConsumeQueue, mut offset: i64) -> Option<u64> {
    let max = cq.max_offset_in_queue();
    while offset < max {
        let Some(units) = cq.units_from(offset) else {
            offset = cq.roll_next_file(offset);
            continue;
        };
        if units.len() < CQ_UNIT_SIZE {
            return None;
        }
        for chunk in units.chunks_exact(CQ_UNIT_SIZE) {
            let unit = super::super::consume_queue::CqUnit::decode(chunk);
            if let Some(u) = unit.filter(|u| !u.is_blank() && u.is_valid()) {
                return u64::try_from(u.commit_log_offset).ok();
            }
            offset += 1;
        }
    }
    None
}

/// What a read below a compacted end found.
pub struct CompactedRead {
    pub messages: Vec<MappedSlice>,
    pub bytes: usize,
    /// Where the next read goes (the compacted end once the generation is exhausted).
    pub next: i64,
    pub base: i64,
    pub end: i64,
}

/// Reads from the compacted log of `topic`/`queue_id` when `offset` is below its compacted end
/// (`None` otherwise). An offset in a gap reads the next kept record. `full(size, count, bytes)`
/// says whether a record of `size` would overfill the batch; `matches(tags_code, record)` is the
/// pull's filter; at most `max_scan` entries are looked at.
pub fn read(
    inner: &Inner,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max_scan: usize,
    full: impl Fn(usize, usize, usize) -> bool,
    matches: impl Fn(i64, &[u8]) -> bool,
) -> Option<CompactedRead> {
    let q: Arc<CompactedQueue> = inner.compaction.get(topic, queue_id)?;
    let g = q.current();
    if g.end == 0 || offset >= g.end || offset < g.base {
        return None;
    }
    let mut r = CompactedRead { messages: Vec::new(), bytes: 0, next: g.end, base: g.base, end: g.end };
    let mut i = g.search(offset);
    let mut scanned = 0usize;
    while let Some(e) = g.entry(i) {
        if e.queue_offset >= g.end {
            break;
        }
        if scanned >= max_scan || full(e.size.max(0) as usize, r.messages.len(), r.bytes) {
            r.next = e.queue_offset;
            break;
        }
        scanned += 1;
        i += 1;
        let Some(rec) = g.record(&e) else { continue };
        if !matches(e.tags_code, &rec) {
            continue;
        }
        r.bytes += rec.len();
        r.messages.push(rec);
    }
    Some(r)
}

/// The first offset a compacted queue still serves, if it has a compacted log.
pub fn min_offset(inner: &Inner, topic: &str, queue_id: i32) -> Option<i64> {
    let g = inner.compaction.get(topic, queue_id)?.current();
    (g.end > 0).then_some(g.base)
}
