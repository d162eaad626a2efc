//! The CommitLog: every message of every topic, appended to one queue of segments
//! (`CommitLog.java`). One writer at a time; queue offsets are assigned under the same lock,
//! so records are in queue-offset order within each queue.
//!
//! An append may be *deferred*: its records get their offsets and wait in the writer's buffer,
//! and the next [`CommitLog::commit`] (or the next append that is not deferred) writes every
//! waiting record with one `pwrite`. Readers see records once written. The broker defers the
//! sends it answers from a connection's writer, which commits before it writes the answers:
//! one write per batch of answers instead of one per message, and no answer before its bytes
//! are in the page cache (what Java's store into the mapping gives, so a killed process loses
//! nothing it acknowledged).
//!
//! Whoever writes waiting records writes everybody's, under the writer lock. A commit that
//! finds records waiting *or being written* takes that lock, so it returns only once the write
//! that carries its records is over, and learns if that write failed: "nothing pending" is
//! announced only after the bytes are written (or marked lost).
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

pub mod record;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tracing::{info, warn};

use self::record::{RecordCheck, END_FILE_MIN_BLANK_LENGTH};
use super::mapped_file::{MappedFile, MappedSlice};
use super::mapped_file_queue::MappedFileQueue;
use super::StoreError;
use crate::model::message::{sys_flag, MessageToStore, StoredMessage};

/// Where an append landed.
#[derive(Clone, Debug, PartialEq)]
pub struct AppendResult {
    /// CommitLog offset of each record, in order.
    pub offsets: Vec<i64>,
    /// CommitLog offset just past the last record.
    pub end_offset: u64,
    /// Queue offset of the first record.
    pub queue_offset: i64,
    pub store_timestamp: i64,
    pub wrote_bytes: usize,
}

struct Writer {
    /// topic -> queue id -> next queue offset (`topicQueueTable`), looked up without allocating.
    queue_offsets: HashMap<String, HashMap<i32, i64>>,
    /// Deferred records, which continue `pending_file` at its write position.
    pending: Vec<u8>,
    pending_file: Option<Arc<MappedFile>>,
    /// Store time of the newest deferred record.
    pending_timestamp: i64,
}

/// Deferred bytes past which an append writes at once (a stream of deferred sends that nobody
/// commits, oneway sends, stays bounded).
const MAX_PENDING: usize = 256 << 10;

pub struct CommitLog {
    files: MappedFileQueue,
    writer: Mutex<Writer>,
    /// Whether deferred records wait or are being written (read without the lock by
    /// [`Self::commit`]); cleared only once their write is over.
    has_pending: AtomicBool,
    /// Writing deferred records failed once: they are lost, and [`Self::commit`] says so from
    /// then on (whoever deferred them must not acknowledge them). Set before `has_pending` is
    /// cleared.
    lost_deferred: AtomicBool,
    #[cfg(test)]
    hooks: tests::TestHooks,
}

impl CommitLog {
    /// `warm`: populate each new segment in the background (`warmMapedFileEnable`).
    pub fn load(dir: &Path, file_size: usize, warm: bool) -> Result<Self, StoreError> {
        Ok(Self {
            files: MappedFileQueue::load(dir, file_size, true)?.warm(warm),
            writer: Mutex::new(Writer {
                queue_offsets: HashMap::new(),
                pending: Vec::new(),
                pending_file: None,
                pending_timestamp: 0,
            }),
            has_pending: AtomicBool::new(false),
            lost_deferred: AtomicBool::new(false),
            #[cfg(test)]
            hooks: tests::TestHooks::default(),
        })
    }

    /// `commitLogAllocateAheadSize`: bytes ahead of the write end that get their disk blocks
    /// (at least the segment size: each whole segment at creation; 0: none, sparse).
    pub fn allocate_ahead(self, bytes: usize) -> Self {
        Self { files: self.files.allocate_ahead(bytes), ..self }
    }

    pub fn files(&self) -> &MappedFileQueue {
        &self.files
    }

    pub fn min_offset(&self) -> u64 {
        self.files.min_offset()
    }

    pub fn max_offset(&self) -> u64 {
        self.files.max_offset()
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The queue offset the next append to a queue gets: at or above every offset already
    /// assigned, written or not, dispatched or not (the ConsumeQueue's max lags behind it).
    pub fn next_queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.writer().queue_offsets.get(topic).and_then(|q| q.get(&queue_id)).copied().unwrap_or(0)
    }

    /// Sets the next queue offset of a queue (recovery, topic deletion).
    pub fn set_queue_offset(&self, topic: &str, queue_id: i32, next: i64) {
        self.writer().queue_offsets.entry(topic.to_owned()).or_default().insert(queue_id, next);
    }

    pub fn remove_topic_offsets(&self, topic: &str) {
        self.writer().queue_offsets.remove(topic);
    }

    /// Appends `msgs` (one message, or a batch for one topic/queue) as consecutive records.
    /// `now` gives the store timestamp, read inside the lock so store times follow file order.
    /// Records are encoded (body CRC included) before the lock is taken; under it only the queue
    /// offset, the position and the store time are filled in and the bytes copied.
    ///
    /// `defer`: leave the records in the writer's buffer until [`Self::commit`] (see the module
    /// doc); readers do not see them before.
    pub fn append(
        &self,
        msgs: &[MessageToStore],
        now: impl Fn() -> i64,
        defer: bool,
    ) -> Result<AppendResult, StoreError> {
        thread_local! {
            /// Encoding buffer of this thread (appends never await, so no task shares it).
            static ENCODED: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(64 * 1024));
        }
        ENCODED.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.clear();
            let mut patches = Vec::with_capacity(msgs.len());
            for m in msgs {
                let start = buf.len();
                patches.push((start, record::encode(m, &mut buf)));
            }
            let result = self.append_encoded(msgs, &mut buf, &patches, now, defer);
            if buf.capacity() > 4 << 20 {
                *buf = Vec::with_capacity(64 * 1024); // do not keep a huge batch's buffer
            }
            result
        })
    }

    /// The locked part of [`Self::append`]: `buf` holds the encoded records, `patches` where each
    /// starts and where its store time goes.
    fn append_encoded(
        &self,
        msgs: &[MessageToStore],
        buf: &mut [u8],
        patches: &[(usize, record::Patch)],
        now: impl Fn() -> i64,
        defer: bool,
    ) -> Result<AppendResult, StoreError> {
        let first = msgs.first().ok_or_else(|| StoreError::MessageIllegal("empty batch".into()))?;
        let tx = sys_flag::transaction_type(first.sys_flag);
        let takes_offset = tx != sys_flag::TRANSACTION_PREPARED && tx != sys_flag::TRANSACTION_ROLLBACK;
        let total = buf.len();
        let size = self.files.file_size();
        if total + END_FILE_MIN_BLANK_LENGTH > size {
            return Err(StoreError::MessageIllegal(format!(
                "{total} bytes do not fit in a {size}-byte CommitLog segment"
            )));
        }
        let mut w = self.writer();
        let w = &mut *w;
        let queue_offset = match takes_offset {
            true => {
                w.queue_offsets.get(first.topic.as_str()).and_then(|q| q.get(&first.queue_id)).copied().unwrap_or(0)
            }
            false => 0,
        };
        let store_timestamp = now();
        let mut file = match &w.pending_file {
            Some(f) => f.clone(),
            None => self.files.last_for_write(0)?,
        };
        let free = size - file.wrote_position() - w.pending.len();
        if total + END_FILE_MIN_BLANK_LENGTH > free {
            w.pending.extend_from_slice(&record::blank(free));
            self.write_pending(w, &file)?;
            file.mark_full();
            file = self.files.last_for_write(0)?;
        }
        let base = file.file_from_offset() + (file.wrote_position() + w.pending.len()) as u64;
        let mut offsets = Vec::with_capacity(msgs.len());
        for (i, (start, patch)) in patches.iter().enumerate() {
            let end = patches.get(i + 1).map_or(total, |p| p.0);
            let phys = (base + *start as u64) as i64;
            let qo = if takes_offset { queue_offset + i as i64 } else { 0 };
            record::patch(&mut buf[*start..end], *patch, qo, phys, store_timestamp);
            offsets.push(phys);
        }
        if w.pending.is_empty() && !defer {
            written(&file, file.append(buf, store_timestamp))?;
        } else {
            w.pending.extend_from_slice(buf);
            w.pending_timestamp = store_timestamp;
            if !defer || w.pending.len() >= MAX_PENDING {
                self.write_pending(w, &file)?;
            } else if w.pending_file.is_none() {
                w.pending_file = Some(file);
                self.has_pending.store(true, Ordering::Release);
            }
        }
        if takes_offset {
            let next = queue_offset + msgs.len() as i64;
            match w.queue_offsets.get_mut(first.topic.as_str()) {
                Some(q) => {
                    q.insert(first.queue_id, next);
                }
                None => {
                    w.queue_offsets.entry(first.topic.clone()).or_default().insert(first.queue_id, next);
                }
            }
        }
        Ok(AppendResult { offsets, end_offset: base + total as u64, queue_offset, store_timestamp, wrote_bytes: total })
    }

    /// Whether deferred records wait for a [`Self::commit`] (or are being written by one).
    pub fn has_pending(&self) -> bool {
        self.has_pending.load(Ordering::Acquire)
    }

    /// Writes the deferred records; `true` if this call wrote any. Returns only once every
    /// record deferred before the call is written: when another thread is writing them, it
    /// waits for that write. `Err` if that write failed, or an earlier write of deferred records
    /// did (by a commit, or by an append writing what waited before it): those records are
    /// lost, the CommitLog ends before them.
    pub fn commit(&self) -> Result<bool, StoreError> {
        let lost = || StoreError::NotWritable("a write of deferred CommitLog records failed; they are lost".into());
        // `has_pending` first: once it reads false, the write that cleared it is over and its
        // failure, if any, is visible in `lost_deferred`.
        if !self.has_pending.load(Ordering::Acquire) {
            return match self.lost_deferred.load(Ordering::Acquire) {
                true => Err(lost()),
                false => Ok(false),
            };
        }
        #[cfg(test)]
        tests::TestHooks::run(&self.hooks.commit_locks);
        // The writer lock is held for the whole of any write of waiting records.
        let mut w = self.writer();
        if self.lost_deferred.load(Ordering::Acquire) {
            return Err(lost());
        }
        let Some(file) = w.pending_file.clone() else { return Ok(false) };
        self.write_pending(&mut w, &file)?;
        Ok(true)
    }

    /// Writes `w.pending` at the write position of `file` (the segment it continues) and empties
    /// it, also when the write fails (then deferred records among them are marked lost). Called
    /// with the writer lock held; `has_pending` is cleared after the write, not before.
    fn write_pending(&self, w: &mut Writer, file: &MappedFile) -> Result<(), StoreError> {
        let had_deferred = w.pending_file.take().is_some();
        #[cfg(test)]
        tests::TestHooks::run(&self.hooks.in_write);
        #[cfg(test)]
        let injected = self.hooks.fail_next_write.swap(false, Ordering::AcqRel);
        #[cfg(not(test))]
        let injected = false;
        let result = if injected {
            Err(std::io::Error::other("injected write failure"))
        } else {
            file.append(&w.pending, std::mem::take(&mut w.pending_timestamp))
        };
        w.pending.clear();
        w.pending_timestamp = 0;
        if w.pending.capacity() > 4 * MAX_PENDING {
            w.pending = Vec::new();
        }
        let result = written(file, result);
        if result.is_err() && had_deferred {
            self.lost_deferred.store(true, Ordering::Release);
        }
        self.has_pending.store(false, Ordering::Release);
        result
    }

    /// The written bytes from `offset` to the end of its segment.
    pub fn data_from(&self, offset: u64) -> Option<MappedSlice> {
        let f = self.files.find(offset)?;
        f.slice_from((offset - f.file_from_offset()) as usize)
    }

    /// The record of `size` bytes at `offset`.
    pub fn record(&self, offset: u64, size: usize) -> Option<MappedSlice> {
        let f = self.files.find(offset)?;
        f.slice((offset - f.file_from_offset()) as usize, size)
    }

    /// Decodes the record at `offset` (its size read from the record itself).
    pub fn message(&self, offset: u64) -> Option<StoredMessage> {
        let head = self.record(offset, 4)?;
        let size = usize::try_from(i32::from_be_bytes(head[..4].try_into().ok()?)).ok()?;
        record::decode(&self.record(offset, size)?, false)
    }

    /// Recovery scan from the segment at `start`: checks records (with CRC if `check_crc`) until
    /// the first invalid one, calling `visit` for each; returns the end of valid data.
    pub fn scan_valid(&self, start: u64, check_crc: bool, mut visit: impl FnMut(&record::DispatchRequest)) -> u64 {
        let mut offset = start;
        while let Some(f) = self.files.find(offset) {
            let Some(data) = f.slice_from((offset - f.file_from_offset()) as usize) else { break };
            let mut pos = 0usize;
            let mut next_file = false;
            loop {
                match record::check(&data[pos..], check_crc) {
                    RecordCheck::Record(d) if d.commit_log_offset == (offset + pos as u64) as i64 => {
                        visit(&d);
                        pos += d.size as usize;
                    }
                    RecordCheck::Record(d) => {
                        warn!(
                            at = offset + pos as u64,
                            recorded = d.commit_log_offset,
                            "record's own offset disagrees with its position; end of valid data"
                        );
                        break;
                    }
                    RecordCheck::Blank => {
                        next_file = true;
                        break;
                    }
                    RecordCheck::Truncated { .. } => {
                        if data[pos..].iter().any(|b| *b != 0) {
                            info!(at = offset + pos as u64, "end of valid CommitLog data: a torn record");
                        }
                        break;
                    }
                    RecordCheck::Invalid(why) => {
                        if pos < data.len() && data[pos..].iter().take(8).any(|b| *b != 0) {
                            info!(at = offset + pos as u64, reason = why, "end of valid CommitLog data");
                        }
                        break;
                    }
                }
            }
            if !next_file {
                return offset + pos as u64;
            }
            offset = f.file_from_offset() + f.size() as u64;
        }
        offset
    }

    /// Recovery: cuts the CommitLog at `offset`.
    pub(in crate::store) fn truncate(&self, offset: u64) -> Result<(), StoreError> {
        self.files.truncate_dirty(offset)?;
        self.files.set_flushed_where(offset);
        Ok(())
    }

    pub fn segments(&self) -> Vec<Arc<super::mapped_file::MappedFile>> {
        self.files.files()
    }
}

/// The outcome of `MappedFile::append` of records into `file`, as the CommitLog reports it.
fn written(file: &MappedFile, appended: std::io::Result<Option<usize>>) -> Result<(), StoreError> {
    appended
        .map_err(|e| StoreError::io(format!("append to {}", file.path().display()))(e))?
        .map(|_| ())
        .ok_or_else(|| StoreError::NotWritable(format!("segment {} unexpectedly full", file.path().display())))
}

#[cfg(test)]
mod tests;

impl CommitLog {
    /// Replication (slave side): writes bytes the master stored at `offset`. They must continue
    /// the log exactly (an empty log starts at the segment holding `offset`) and stay inside
    /// one segment, as master frames do.
    pub fn append_replicated(&self, offset: u64, data: &[u8], store_timestamp: i64) -> Result<(), StoreError> {
        let mut w = self.writer();
        if let Some(file) = w.pending_file.clone() {
            self.write_pending(&mut w, &file)?;
        }
        let max = self.files.max_offset();
        if !self.files.is_empty() && offset != max {
            return Err(StoreError::NotWritable(format!(
                "replicated data at offset {offset} does not continue the CommitLog ending at {max}"
            )));
        }
        let file = self.files.last_for_write(offset)?;
        let pos = offset.checked_sub(file.file_from_offset()).map(|p| p as usize);
        if pos != Some(file.wrote_position()) {
            return Err(StoreError::NotWritable(format!(
                "replicated data at offset {offset} does not fit segment {}",
                file.path().display()
            )));
        }
        let appended = file
            .append(data, store_timestamp)
            .map_err(|e| StoreError::io(format!("append replicated data to {}", file.path().display()))(e))?;
        appended.map(|_| ()).ok_or_else(|| {
            StoreError::NotWritable(format!(
                "replicated data at offset {offset} crosses the end of segment {}",
                file.path().display()
            ))
        })
    }
}
