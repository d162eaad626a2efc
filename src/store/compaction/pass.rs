//! One compaction pass over one queue (Kafka's `Cleaner.doClean`, Java's
//! `CompactionLog.doCompaction`):
//!
//! ```text
//! dirty range  [from, clean point)     from = the compacted end (the queue's minimum at first)
//! 1. offset map: key digest -> latest queue offset, over the dirty range, read from the
//!    CommitLog through the ConsumeQueue; bounded (maxOffsetMapSize): when a new key does not
//!    fit, the map stops there and this pass covers [from, map end); the next pass goes on
//! 2. generation N+1 = the kept records of generation N (key not in the map, tombstone not past
//!    its horizon) + the dirty records the map names as their key's latest (a tombstone kept gets
//!    its horizon: now + delete.retention.ms); records without a key are dropped
//! 3. fsync both files, install (the state file renamed over: the commit point)
//! ```
//! Memory: the map only (about [`MAP_SLOT_BYTES`] per key); records stream from disk to disk.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use super::super::commit_log::record::{self, RecordCheck};
use super::super::commit_log::CommitLog;
use super::super::consume_queue::{ConsumeQueue, CqUnit, CQ_UNIT_SIZE};
use super::super::StoreError;
use super::log::{CompactedQueue, Entry, BOUNDARY};
use super::policy::{is_tombstone, key_hash, key_of, CompactionPolicy};
use super::table::CompactionTxn;

/// What one map slot costs: a 16-byte digest, an 8-byte offset, the hash table's overhead
/// (Kafka's SkimpyOffsetMap needs 24 bytes a slot at a 0.9 load factor; a Rust HashMap ~1.5x).
pub const MAP_SLOT_BYTES: usize = 48;

/// What compacting one queue did (one or more passes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionStats {
    pub passes: u32,
    pub records_read: u64,
    pub records_kept: u64,
    pub keyless: u64,
    /// Records of aborted transactions and control records (dropped).
    pub uncommitted: u64,
    pub bytes_written: u64,
    /// The compacted end afterwards.
    pub end: i64,
}

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    /// Records read: the previous generation's and the dirty range's.
    pub records_read: u64,
    /// Records in the new generation.
    pub records_kept: u64,
    /// Dirty records without a key (dropped).
    pub keyless: u64,
    /// Dirty records of aborted transactions and control records (dropped).
    pub uncommitted: u64,
    pub bytes_written: u64,
    /// The compacted end after the pass.
    pub end: i64,
}

/// Limits of a pass.
#[derive(Clone, Copy, Debug)]
pub struct PassLimits {
    /// Keys the offset map may hold.
    pub max_keys: usize,
    /// Tests: write and sync the new generation, then stop as a crash would before the commit.
    pub crash_before_install: bool,
}

/// What a pass works on besides the queue.
pub struct PassInput<'a> {
    pub commit_log: &'a CommitLog,
    /// Where the dirty range ends (the queue's end, or its last stable offset).
    pub clean_point: i64,
    pub policy: &'a CompactionPolicy,
    pub limits: PassLimits,
    pub now_ms: i64,
    /// Kafka transactions: records a committed reader does not see are neither kept nor counted.
    pub txn: Option<&'a dyn CompactionTxn>,
}

/// Runs one pass of `q` over `[compacted end, clean_point)` of `cq`.
pub fn run(q: &CompactedQueue, cq: &ConsumeQueue, input: &PassInput<'_>) -> Result<PassStats, StoreError> {
    let PassInput { commit_log, clean_point, policy, limits, now_ms, txn } = *input;
    let committed =
        |offset: i64, properties: &str| txn.is_none_or(|t| t.committed(cq.topic(), cq.queue_id(), offset, properties));
    let _one_at_a_time = q.pass.lock().unwrap_or_else(|e| e.into_inner());
    let old = q.current();
    // What DeleteRecords or topic retention moved the log start past goes too.
    let log_start = cq.log_start();
    let base = if old.end == 0 && old.entries() == 0 { cq.min_offset_in_queue() } else { old.base.max(log_start) };
    let from = old.end.max(base);
    let clean_point = clean_point.max(from);
    let mut stats = PassStats::default();
    let (map, map_end) = offset_map(cq, commit_log, from, clean_point, limits.max_keys.max(1), &committed);
    std::fs::create_dir_all(q.dir()).map_err(StoreError::io(format!("create {}", q.dir().display())))?;
    let id = old.id + 1;
    let (log_path, idx_path) = q.paths(id);
    let create = |p: &std::path::Path| {
        std::fs::File::create(p).map(BufWriter::new).map_err(StoreError::io(format!("create {}", p.display())))
    };
    let mut out = Writer { log: create(&log_path)?, idx: create(&idx_path)?, position: 0 };
    let write_err = |e| StoreError::io(format!("write {}", log_path.display()))(e);
    for i in 0..old.entries() {
        let Some(e) = old.entry(i) else { break };
        if e.queue_offset < log_start {
            continue;
        }
        let Some(rec) = old.record(&e) else { continue };
        stats.records_read += 1;
        let superseded = match record::check(&rec, false) {
            RecordCheck::Record(d) => key_of(&d.properties).is_some_and(|k| map.contains_key(&key_hash(k))),
            _ => true,
        };
        let expired = if e.delete_horizon_ms == BOUNDARY {
            map_end > old.end
        } else {
            e.is_tombstone() && e.delete_horizon_ms <= now_ms
        };
        if superseded || expired {
            continue;
        }
        out.put(&rec, e).map_err(write_err)?;
        stats.records_kept += 1;
    }
    let last = map_end - 1;
    each_record(cq, commit_log, from, map_end, |offset, unit, rec| {
        stats.records_read += 1;
        let RecordCheck::Record(d) = record::check(rec, false) else { return Ok(true) };
        let dropped = if !committed(offset, &d.properties) {
            stats.uncommitted += 1;
            true
        } else if let Some(key) = key_of(&d.properties) {
            // Not its key's latest: never the last of the range (nothing later supersedes it).
            if map.get(&key_hash(key)) != Some(&offset) {
                return Ok(true);
            }
            false
        } else {
            stats.keyless += 1;
            true
        };
        if dropped && offset != last {
            return Ok(true);
        }
        let horizon = if dropped {
            BOUNDARY
        } else if is_tombstone(&d.properties) {
            now_ms.saturating_add(policy.delete_retention_ms).max(1)
        } else {
            0
        };
        let e = Entry {
            queue_offset: offset,
            position: 0,
            size: unit.size,
            tags_code: unit.tags_code,
            delete_horizon_ms: horizon,
        };
        out.put(rec, e).map_err(write_err)?;
        stats.records_kept += 1;
        Ok(true)
    })?;
    stats.bytes_written = out.position;
    out.finish().map_err(write_err)?;
    stats.end = map_end;
    if limits.crash_before_install {
        return Ok(stats);
    }
    q.install(id, base, map_end)?;
    Ok(stats)
}

/// The offset map of `[from, to)`, and where it stops: `to`, or the first record whose new key
/// did not fit.
fn offset_map(
    cq: &ConsumeQueue,
    commit_log: &CommitLog,
    from: i64,
    to: i64,
    max_keys: usize,
    committed: &dyn Fn(i64, &str) -> bool,
) -> (HashMap<u128, i64>, i64) {
    let mut map: HashMap<u128, i64> = HashMap::new();
    let mut end = to;
    let walked: Result<(), StoreError> = each_record(cq, commit_log, from, to, |offset, _, rec| {
        let RecordCheck::Record(d) = record::check(rec, false) else { return Ok(true) };
        if !committed(offset, &d.properties) {
            return Ok(true);
        }
        let Some(key) = key_of(&d.properties) else { return Ok(true) };
        let h = key_hash(key);
        if map.len() >= max_keys && !map.contains_key(&h) {
            end = offset;
            return Ok(false);
        }
        map.insert(h, offset);
        Ok(true)
    });
    debug_assert!(walked.is_ok(), "the map's visitor never fails");
    (map, end)
}

/// Calls `visit` with each record of the queue in `[from, to)` (blank units and records the
/// CommitLog no longer holds are skipped) until it answers `false` or fails.
fn each_record(
    cq: &ConsumeQueue,
    commit_log: &CommitLog,
    from: i64,
    to: i64,
    mut visit: impl FnMut(i64, &CqUnit, &[u8]) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut offset = from;
    while offset < to {
        let Some(units) = cq.units_from(offset) else {
            offset = cq.roll_next_file(offset);
            continue;
        };
        if units.len() < CQ_UNIT_SIZE {
            break;
        }
        for chunk in units.chunks_exact(CQ_UNIT_SIZE) {
            if offset >= to {
                return Ok(());
            }
            let unit = CqUnit::decode(chunk).filter(|u| !u.is_blank() && u.is_valid());
            let rec = unit.and_then(|u| commit_log.record(u.commit_log_offset as u64, u.size as usize));
            if let (Some(u), Some(rec)) = (unit, rec) {
                if !visit(offset, &u, &rec)? {
                    return Ok(());
                }
            }
            offset += 1;
        }
    }
    Ok(())
}

struct Writer {
    log: BufWriter<std::fs::File>,
    idx: BufWriter<std::fs::File>,
    position: u64,
}

impl Writer {
    fn put(&mut self, rec: &[u8], mut e: Entry) -> std::io::Result<()> {
        e.position = self.position as i64;
        e.size = rec.len() as i32;
        self.log.write_all(rec)?;
        self.idx.write_all(&e.encode())?;
        self.position += rec.len() as u64;
        Ok(())
    }

    /// Flushes and fsyncs both files.
    fn finish(self) -> std::io::Result<()> {
        for w in [self.log, self.idx] {
            let f = w.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
        }
        Ok(())
    }
}
