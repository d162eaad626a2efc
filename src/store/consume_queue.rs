//! ConsumeQueue: per topic/queue index into the CommitLog (`ConsumeQueue.java`).
//!
//! ```text
//! unit (20 bytes) = commitLogOffset:i64 size:i32 tagsCode:i64
//! unit n sits at byte n*20; files are named by the byte offset of their first unit
//! blank unit      = 0:i64 0x7FFFFFFF:i32 0:i64   (pads a queue that starts past offset 0)
//! ```
//!
//! Only the dispatcher appends. Appending is idempotent: a unit whose data ends at or before
//! the queue's `max_physic_offset` is already there.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use tracing::{error, info, warn};

use super::log_start::LogStarts;
use super::mapped_file::MappedSlice;
use super::mapped_file_queue::MappedFileQueue;
use super::StoreError;
use crate::model::name::{is_path_component, shown};

pub const CQ_UNIT_SIZE: usize = 20;
const BLANK_SIZE: i32 = i32::MAX;

/// One 20-byte unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqUnit {
    pub commit_log_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

impl CqUnit {
    pub fn encode(&self) -> [u8; CQ_UNIT_SIZE] {
        let mut b = [0u8; CQ_UNIT_SIZE];
        b[..8].copy_from_slice(&self.commit_log_offset.to_be_bytes());
        b[8..12].copy_from_slice(&self.size.to_be_bytes());
        b[12..].copy_from_slice(&self.tags_code.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Self> {
        Some(Self {
            commit_log_offset: i64::from_be_bytes(b.get(..8)?.try_into().ok()?),
            size: i32::from_be_bytes(b.get(8..12)?.try_into().ok()?),
            tags_code: i64::from_be_bytes(b.get(12..20)?.try_into().ok()?),
        })
    }

    /// Recovery's validity rule: a real unit has a non-negative offset and a positive size.
    pub fn is_valid(&self) -> bool {
        self.commit_log_offset >= 0 && self.size > 0
    }

    pub fn is_blank(&self) -> bool {
        self.size == BLANK_SIZE
    }

    /// The CommitLog offset just past the record (saturating: units come from disk).
    pub fn end(&self) -> i64 {
        self.commit_log_offset.saturating_add(i64::from(self.size))
    }

    fn blank() -> Self {
        Self { commit_log_offset: 0, size: BLANK_SIZE, tags_code: 0 }
    }
}

pub struct ConsumeQueue {
    topic: String,
    queue_id: i32,
    files: MappedFileQueue,
    /// CommitLog offset just past the last unit's record.
    max_physic_offset: AtomicI64,
    /// Byte offset of the first real unit.
    min_logic_offset: AtomicU64,
    /// The log start offset (`log_start.rs`): readers see nothing below it.
    log_start: AtomicI64,
}

impl ConsumeQueue {
    pub fn dir(root: &Path, topic: &str, queue_id: i32) -> PathBuf {
        root.join(topic).join(queue_id.to_string())
    }

    pub fn load(root: &Path, topic: &str, queue_id: i32, file_size: usize) -> Result<Self, StoreError> {
        let files = MappedFileQueue::load(&Self::dir(root, topic, queue_id), file_size, false)?;
        Ok(Self {
            topic: topic.to_owned(),
            queue_id,
            files,
            max_physic_offset: AtomicI64::new(-1),
            min_logic_offset: AtomicU64::new(0),
            log_start: AtomicI64::new(0),
        })
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    pub fn max_physic_offset(&self) -> i64 {
        self.max_physic_offset.load(Ordering::Acquire)
    }

    /// Recovery (`ConsumeQueue.recover`): scan from the third-last file; the first invalid unit
    /// ends the queue. Returns `max_physic_offset` (-1 when empty).
    pub fn recover(&self) -> Result<i64, StoreError> {
        let files = self.files.files();
        let start = files.len().saturating_sub(3);
        let mut end = files.first().map_or(0, |f| f.file_from_offset());
        let mut max_phys = -1i64;
        for f in &files[start..] {
            let data = f.slice(0, f.size()).map(|s| s.to_vec()).unwrap_or_default();
            let mut pos = 0;
            while let Some(unit) = data.get(pos..pos + CQ_UNIT_SIZE).and_then(CqUnit::decode) {
                if !unit.is_valid() {
                    break;
                }
                if !unit.is_blank() {
                    max_phys = unit.end();
                }
                pos += CQ_UNIT_SIZE;
            }
            end = f.file_from_offset() + pos as u64;
            if pos < f.size() {
                break;
            }
        }
        drop(files); // truncating needs the only handle on the segment
        self.files.truncate_dirty(end)?;
        self.files.set_flushed_where(end);
        self.max_physic_offset.store(max_phys, Ordering::Release);
        self.correct_min_offset(0);
        Ok(max_phys)
    }

    /// Appends the unit for queue offset `queue_offset` (`putMessagePositionInfo`).
    pub fn put(&self, unit: CqUnit, queue_offset: i64) -> Result<(), StoreError> {
        if unit.end() <= self.max_physic_offset() {
            return Ok(());
        }
        let expected = u64::try_from(queue_offset).unwrap_or(0) * CQ_UNIT_SIZE as u64;
        if self.files.is_empty() && expected != 0 {
            self.start_at(expected)?;
        }
        let current = self.files.max_offset();
        if expected < current {
            // Already there (re-dispatch after recovery).
            return Ok(());
        }
        if expected > current {
            // A gap keeps queue offsets equal to the record's (and the master's), so it is padded,
            // but at most one file's worth: a bigger jump is a damaged queue offset, not a gap
            // worth gigabytes of blank units.
            let max_gap = self.files.file_size() as u64;
            if expected - current > max_gap {
                error!(
                    topic = self.topic,
                    queue = self.queue_id,
                    queue_offset,
                    units_past_end = (expected - current) / CQ_UNIT_SIZE as u64,
                    commit_log_offset = unit.commit_log_offset,
                    "damaged queue offset in a CommitLog record; the record is not indexed"
                );
                return Ok(());
            }
            warn!(
                topic = self.topic,
                queue = self.queue_id,
                expected,
                current,
                "gap in consume queue; padding with blank units"
            );
            self.pad_to(current, expected)?;
        }
        self.append_raw(&unit.encode())?;
        self.max_physic_offset.store(unit.end(), Ordering::Release);
        Ok(())
    }

    /// A queue whose first unit is not 0 (a slave started mid-stream, or rebuilt after
    /// deletion): the first file is padded with blank units up to `expected`.
    fn start_at(&self, expected: u64) -> Result<(), StoreError> {
        let size = self.files.file_size() as u64;
        let file_start = expected - expected % size;
        self.files.last_for_write(file_start)?;
        self.pad_to(file_start, expected)?;
        self.min_logic_offset.store(expected, Ordering::Release);
        Ok(())
    }

    fn pad_to(&self, from: u64, to: u64) -> Result<(), StoreError> {
        let blank = CqUnit::blank().encode();
        let mut pos = from;
        while pos < to {
            self.append_raw(&blank)?;
            pos += CQ_UNIT_SIZE as u64;
        }
        Ok(())
    }

    fn append_raw(&self, unit: &[u8; CQ_UNIT_SIZE]) -> Result<(), StoreError> {
        let f = self.files.last_for_write(0)?;
        f.append(unit, 0)
            .map_err(|e| StoreError::io(format!("append to {}", f.path().display()))(e))?
            .map(|_| ())
            .ok_or_else(|| StoreError::NotWritable(format!("consume queue file {} is full", f.path().display())))
    }

    /// Index of the next unit to be written.
    pub fn max_offset_in_queue(&self) -> i64 {
        (self.files.max_offset() / CQ_UNIT_SIZE as u64) as i64
    }

    /// Index of the first unit readers may see: the first unit still present, or the log start
    /// offset if that is further (never past the end: a start beyond a queue a crash cut short
    /// means the queue is empty up to its end).
    pub fn min_offset_in_queue(&self) -> i64 {
        let present = (self.min_logic_offset.load(Ordering::Acquire) / CQ_UNIT_SIZE as u64) as i64;
        present.max(self.log_start.load(Ordering::Acquire).min(self.max_offset_in_queue()))
    }

    /// The log start offset (0 if none was set).
    pub fn log_start(&self) -> i64 {
        self.log_start.load(Ordering::Acquire)
    }

    /// Raises the log start offset in memory (`LogStarts` persists it first).
    pub fn set_log_start(&self, offset: i64) {
        self.log_start.fetch_max(offset, Ordering::AcqRel);
    }

    /// The unit at `index`, if present.
    pub fn unit(&self, index: i64) -> Option<CqUnit> {
        let pos = u64::try_from(index).ok()? * CQ_UNIT_SIZE as u64;
        let f = self.files.find(pos)?;
        let slice = f.slice((pos - f.file_from_offset()) as usize, CQ_UNIT_SIZE)?;
        CqUnit::decode(&slice)
    }

    /// The written units from `index` to the end of the file holding it.
    pub fn units_from(&self, index: i64) -> Option<MappedSlice> {
        let pos = u64::try_from(index).ok()? * CQ_UNIT_SIZE as u64;
        let f = self.files.find(pos)?;
        f.slice_from((pos - f.file_from_offset()) as usize)
    }

    /// Byte offset where the file after the one holding `index` starts (for OFFSET_FOUND_NULL).
    pub fn roll_next_file(&self, index: i64) -> i64 {
        let per_file = (self.files.file_size() / CQ_UNIT_SIZE) as i64;
        index + per_file - index % per_file
    }

    /// Recovery: drops units pointing at or past `phy_offset` (`truncateDirtyLogicFiles`).
    pub(super) fn truncate_dirty(&self, phy_offset: i64) -> Result<(), StoreError> {
        let mut cut = None;
        for f in self.files.files().iter().rev() {
            let Some(data) = f.slice_from(0) else { continue };
            let first_bad = data
                .chunks_exact(CQ_UNIT_SIZE)
                .position(|c| CqUnit::decode(c).is_some_and(|u| !u.is_blank() && u.end() > phy_offset));
            match first_bad {
                Some(i) => cut = Some(f.file_from_offset() + (i * CQ_UNIT_SIZE) as u64),
                None => break,
            }
        }
        if let Some(cut) = cut {
            info!(topic = self.topic, queue = self.queue_id, cut, "truncating consume queue past the CommitLog end");
            self.files.truncate_dirty(cut)?;
        }
        let last = self.unit(self.max_offset_in_queue() - 1).filter(|u| !u.is_blank());
        self.max_physic_offset.store(last.map_or(-1, |u| u.end()), Ordering::Release);
        Ok(())
    }

    /// Retention: deletes files (never the last) whose last unit points below `min_phy_offset`,
    /// then moves the minimum to the first unit at or after it. Returns files deleted.
    pub fn delete_expired(&self, min_phy_offset: i64) -> Result<usize, StoreError> {
        let files = self.files.files();
        let mut n = 0;
        for f in files.iter().take(files.len().saturating_sub(1)) {
            let last = f.slice(f.size() - CQ_UNIT_SIZE, CQ_UNIT_SIZE).and_then(|s| CqUnit::decode(&s));
            if last.is_some_and(|u| u.commit_log_offset < min_phy_offset) {
                n += 1;
            } else {
                break;
            }
        }
        let deleted = self.files.delete_first(n)?;
        self.correct_min_offset(min_phy_offset);
        Ok(deleted)
    }

    /// Sets the minimum to the first real unit whose record starts at or after `min_phy_offset`.
    pub fn correct_min_offset(&self, min_phy_offset: i64) {
        let Some(first) = self.files.first() else {
            return;
        };
        let Some(data) = first.slice_from(0) else { return };
        let idx = data
            .chunks_exact(CQ_UNIT_SIZE)
            .position(|c| CqUnit::decode(c).is_some_and(|u| !u.is_blank() && u.commit_log_offset >= min_phy_offset));
        let pos = first.file_from_offset() + idx.map_or(data.len(), |i| i * CQ_UNIT_SIZE) as u64;
        self.min_logic_offset.store(pos, Ordering::Release);
    }

    pub fn flush(&self, least_pages: usize) -> std::io::Result<u64> {
        self.files.flush(least_pages)
    }

    pub fn destroy(&self) -> Result<(), StoreError> {
        self.files.destroy()?;
        self.max_physic_offset.store(-1, Ordering::Release);
        self.min_logic_offset.store(0, Ordering::Release);
        self.log_start.store(0, Ordering::Release);
        Ok(())
    }
}

/// topic -> queue id -> queue: looked up by `&str`, no allocation per message.
type Queues = std::collections::HashMap<String, std::collections::HashMap<i32, Arc<ConsumeQueue>>>;

/// All ConsumeQueues, created on first dispatch.
pub struct ConsumeQueueTable {
    root: PathBuf,
    file_size: usize,
    queues: std::sync::RwLock<Queues>,
    /// The persisted log start offsets, applied to each queue as it is loaded or created.
    starts: LogStarts,
}

impl ConsumeQueueTable {
    /// Loads every `<root>/<topic>/<queueId>/` directory, with the log start offsets `starts`.
    pub fn load(root: &Path, file_size: usize, starts: LogStarts) -> Result<Self, StoreError> {
        std::fs::create_dir_all(root).map_err(StoreError::io(format!("create {}", root.display())))?;
        let mut queues = Queues::new();
        for topic_dir in std::fs::read_dir(root).map_err(StoreError::io(format!("list {}", root.display())))?.flatten()
        {
            let topic = topic_dir.file_name().to_string_lossy().into_owned();
            let Ok(entries) = std::fs::read_dir(topic_dir.path()) else { continue };
            for q in entries.flatten() {
                if let Ok(queue_id) = q.file_name().to_string_lossy().parse::<i32>() {
                    let cq = ConsumeQueue::load(root, &topic, queue_id, file_size)?;
                    cq.set_log_start(starts.get(&topic, queue_id));
                    queues.entry(topic.clone()).or_default().insert(queue_id, Arc::new(cq));
                }
            }
        }
        Ok(Self { root: root.to_owned(), file_size, queues: std::sync::RwLock::new(queues), starts })
    }

    pub fn get(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.queues.read().unwrap_or_else(|e| e.into_inner()).get(topic)?.get(&queue_id).cloned()
    }

    pub fn get_or_create(&self, topic: &str, queue_id: i32) -> Result<Arc<ConsumeQueue>, StoreError> {
        if let Some(q) = self.get(topic, queue_id) {
            return Ok(q);
        }
        // The last line of defence: no name from a record becomes a path outside the root.
        if !is_path_component(topic) || queue_id < 0 {
            return Err(StoreError::IllegalTopic(format!("{}/{queue_id}", shown(topic))));
        }
        let mut map = self.queues.write().unwrap_or_else(|e| e.into_inner());
        let topic_queues = map.entry(topic.to_owned()).or_default();
        if let Some(q) = topic_queues.get(&queue_id) {
            return Ok(q.clone());
        }
        let q = Arc::new(ConsumeQueue::load(&self.root, topic, queue_id, self.file_size)?);
        q.set_log_start(self.starts.get(topic, queue_id));
        topic_queues.insert(queue_id, q.clone());
        Ok(q)
    }

    /// Raises a queue's log start to `offset` (at most the queue's end), on disk before any
    /// reader sees it. Returns the queue's min offset afterwards (0 for a queue never written).
    pub fn advance_log_start(&self, topic: &str, queue_id: i32, offset: i64) -> Result<i64, StoreError> {
        let Some(q) = self.get(topic, queue_id) else { return Ok(0) };
        let target = offset.min(q.max_offset_in_queue());
        if target > q.min_offset_in_queue() {
            self.starts.advance(topic, queue_id, target, |o| q.set_log_start(o))?;
        }
        Ok(q.min_offset_in_queue())
    }

    pub fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        self.queues.read().unwrap_or_else(|e| e.into_inner()).values().flat_map(|q| q.values().cloned()).collect()
    }

    /// Removes a topic's queues and their files (topic deletion).
    pub fn remove_topic(&self, topic: &str) -> Result<(), StoreError> {
        if !is_path_component(topic) {
            return Err(StoreError::IllegalTopic(shown(topic)));
        }
        self.starts.remove_topic(topic)?;
        let removed = self.queues.write().unwrap_or_else(|e| e.into_inner()).remove(topic).unwrap_or_default();
        for q in removed.into_values() {
            q.destroy()?;
        }
        let dir = self.root.join(topic);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(StoreError::io(format!("delete {}", dir.display())))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
