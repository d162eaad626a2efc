//! Reads: pull (`getMessage`), offsets, lookups by CommitLog offset, by key and by time.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use tracing::warn;

use super::commit_log::record;
use super::compaction;
use super::consume_queue::{ConsumeQueue, CQ_UNIT_SIZE};
use super::mapped_file::MappedSlice;
use super::message_store::MessageStore;
use super::StoreConfig;
use crate::model::message::{sys_flag, StoredMessage};

/// `GetMessageStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetMessageStatus {
    Found,
    NoMatchedMessage,
    MessageWasRemoving,
    OffsetFoundNull,
    OffsetOverflowBadly,
    OffsetOverflowOne,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    NoMessageInQueue,
}

/// What a pull gets back: the stored records, unchanged, and where to continue.
#[derive(Clone)]
pub struct GetMessageResult {
    pub status: GetMessageStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    pub messages: Vec<MappedSlice>,
    pub buffer_total_size: usize,
    pub suggest_pulling_from_slave: bool,
}

/// Decides which messages a pull returns.
pub trait MessageFilter {
    /// First pass, on the ConsumeQueue's tag code.
    fn matches_tags_code(&self, tags_code: i64) -> bool;
    /// Second pass, on the stored record (SQL92 filters read properties here).
    fn matches_record(&self, _record: &[u8]) -> bool {
        true
    }
}

/// Accepts everything.
pub struct AcceptAll;

impl MessageFilter for AcceptAll {
    fn matches_tags_code(&self, _: i64) -> bool {
        true
    }
}

/// Index lookups found for a key (`QueryMessageResult`).
pub struct QueryMessageResult {
    pub messages: Vec<MappedSlice>,
    pub index_last_update_timestamp: i64,
    pub index_last_update_phyoffset: i64,
}

impl MessageStore {
    pub(super) fn queue(&self, topic: &str, queue_id: i32) -> Option<std::sync::Arc<ConsumeQueue>> {
        self.inner.queues.get(topic, queue_id)
    }

    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.queue(topic, queue_id).map_or(0, |q| q.max_offset_in_queue())
    }

    /// The queue offset the next append to the queue gets: at or above every offset assigned so
    /// far, including records not yet dispatched to the ConsumeQueue (whose max lags behind).
    /// What a Kafka transaction's first offset is bounded below by.
    pub fn next_queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.commit_log.next_queue_offset(topic, queue_id).max(self.max_offset_in_queue(topic, queue_id))
    }

    /// The first offset still readable: a compacted queue's base (or its log start, if above)
    /// once it has a compacted log.
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        let Some(cq) = self.queue(topic, queue_id) else { return 0 };
        self.compacted_min(&cq).unwrap_or_else(|| cq.min_offset_in_queue())
    }

    /// The minimum of a queue with a compacted log: its base, raised by the log start
    /// (DeleteRecords, topic retention), never above the ConsumeQueue's own.
    fn compacted_min(&self, cq: &ConsumeQueue) -> Option<i64> {
        let base = compaction::service::min_offset(&self.inner, cq.topic(), cq.queue_id())?;
        Some(base.max(cq.log_start()).min(cq.min_offset_in_queue()))
    }

    /// Reads up to `max_msg_nums` messages from queue offset `offset` (`getMessage`).
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: usize,
        max_total_bytes: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        self.get_message_below(topic, queue_id, offset, i64::MAX, max_msg_nums, max_total_bytes, filter)
    }

    /// [`Self::get_message`] reading nothing at or past queue offset `end` (a committed reader's
    /// last stable offset): an offset in `[end, max]` is answered as the queue's end is
    /// (`OffsetOverflowOne`, the offset kept, so a pull is held), one past the max is moved to
    /// `end`. `max_offset` stays the queue's.
    #[allow(clippy::too_many_arguments)]
    pub fn get_message_below(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        end: i64,
        max_msg_nums: usize,
        max_total_bytes: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        let mut r = GetMessageResult {
            status: GetMessageStatus::NoMessageInQueue,
            next_begin_offset: offset,
            min_offset: 0,
            max_offset: 0,
            messages: Vec::new(),
            buffer_total_size: 0,
            suggest_pulling_from_slave: false,
        };
        let Some(cq) = self.queue(topic, queue_id) else {
            r.status = GetMessageStatus::NoMatchedLogicQueue;
            r.next_begin_offset = 0;
            return r;
        };
        r.min_offset = cq.min_offset_in_queue();
        r.max_offset = cq.max_offset_in_queue();
        let end = end.min(r.max_offset);
        if let Some(min) = self.compacted_min(&cq) {
            r.min_offset = min;
            if offset < min {
                r.status = GetMessageStatus::OffsetTooSmall;
                r.next_begin_offset = min;
                return r;
            }
            if let Some(got) =
                self.get_compacted(r.clone(), topic, queue_id, offset, max_msg_nums, max_total_bytes, filter)
            {
                return got;
            }
        }
        let (status, next) = if r.max_offset == 0 {
            (GetMessageStatus::NoMessageInQueue, 0)
        } else if offset < r.min_offset {
            (GetMessageStatus::OffsetTooSmall, r.min_offset)
        } else if offset > r.max_offset {
            (GetMessageStatus::OffsetOverflowBadly, end)
        } else if offset >= end {
            (GetMessageStatus::OffsetOverflowOne, offset)
        } else {
            match cq.units_from(offset) {
                // Java's roll to the next file, never past a bound below the max.
                None if end < r.max_offset => (GetMessageStatus::OffsetFoundNull, cq.roll_next_file(offset).min(end)),
                None => (GetMessageStatus::OffsetFoundNull, cq.roll_next_file(offset)),
                Some(units) => {
                    let readable = usize::try_from(end - offset).unwrap_or(0).saturating_mul(CQ_UNIT_SIZE);
                    let units = &units[..units.len().min(readable)];
                    return self.scan_units(r, units, offset, max_msg_nums, max_total_bytes, filter);
                }
            }
        };
        r.status = status;
        r.next_begin_offset = next;
        r
    }

    fn scan_units(
        &self,
        mut r: GetMessageResult,
        units: &[u8],
        offset: i64,
        max_msg_nums: usize,
        max_total_bytes: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        let c = self.inner.live();
        r.status = GetMessageStatus::NoMatchedMessage;
        let max_offset_py = self.inner.commit_log.max_offset() as i64;
        let memory = (self.inner.total_memory as f64 * f64::from(c.access_message_in_memory_max_ratio) / 100.0) as i64;
        let scan_limit = c.max_filter_message_size.max(max_msg_nums * CQ_UNIT_SIZE);
        let mut next_phy_file_start = i64::MIN;
        let mut max_phy_pulling = 0i64;
        let mut i = 0usize;
        let mut damaged = 0usize;
        while i + CQ_UNIT_SIZE <= units.len() && i < scan_limit {
            let unit = super::consume_queue::CqUnit::decode(&units[i..i + CQ_UNIT_SIZE]);
            let Some(unit) = unit.filter(|u| !u.is_blank()) else {
                i += CQ_UNIT_SIZE;
                continue;
            };
            // A damaged unit (negative offset or size, or a record past the CommitLog's end) is
            // skipped, never used for arithmetic or a read.
            if !unit.is_valid() || unit.end() > max_offset_py {
                damaged += 1;
                i += CQ_UNIT_SIZE;
                continue;
            }
            if next_phy_file_start != i64::MIN && unit.commit_log_offset < next_phy_file_start {
                i += CQ_UNIT_SIZE;
                continue;
            }
            max_phy_pulling = unit.commit_log_offset;
            let in_disk = max_offset_py - unit.commit_log_offset > memory;
            if Self::batch_full(&c, unit.size as usize, max_msg_nums, max_total_bytes, &r, in_disk) {
                break;
            }
            i += CQ_UNIT_SIZE;
            if !filter.matches_tags_code(unit.tags_code) {
                continue;
            }
            let Some(rec) = self.inner.commit_log.record(unit.commit_log_offset as u64, unit.size as usize) else {
                if r.buffer_total_size == 0 {
                    r.status = GetMessageStatus::MessageWasRemoving;
                }
                let size = self.inner.config.mapped_file_size_commit_log as i64;
                next_phy_file_start = unit.commit_log_offset + size - unit.commit_log_offset % size;
                continue;
            };
            if !filter.matches_record(&rec) {
                continue;
            }
            r.buffer_total_size += rec.len();
            r.messages.push(rec);
            r.status = GetMessageStatus::Found;
            next_phy_file_start = i64::MIN;
        }
        if damaged > 0 {
            warn!(damaged, from = offset, "skipped damaged ConsumeQueue units");
        }
        r.next_begin_offset = offset + (i / CQ_UNIT_SIZE) as i64;
        r.suggest_pulling_from_slave = max_offset_py - max_phy_pulling > memory;
        r
    }

    /// A read below a compacted end: from the compacted log, then (if it had nothing left to
    /// give) from the ConsumeQueue at the compacted end. `None` when `offset` is not below it.
    #[allow(clippy::too_many_arguments)]
    fn get_compacted(
        &self,
        r: GetMessageResult,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: usize,
        max_total_bytes: usize,
        filter: &dyn MessageFilter,
    ) -> Option<GetMessageResult> {
        let c = self.inner.live();
        let max_scan = c.max_filter_message_size.max(max_msg_nums * CQ_UNIT_SIZE) / CQ_UNIT_SIZE;
        // `isTheBatchFull` with the in-memory limits: a compacted log is small and read often.
        let full = |size: usize, count: usize, bytes: usize| {
            count > 0
                && (count + 1 > max_msg_nums.min(c.max_transfer_count_on_message_in_memory)
                    || bytes + size > max_total_bytes.min(c.max_transfer_bytes_on_message_in_memory))
        };
        let matches = |tags: i64, rec: &[u8]| filter.matches_tags_code(tags) && filter.matches_record(rec);
        let got = compaction::service::read(&self.inner, topic, queue_id, offset, max_scan.max(1), full, matches)?;
        if got.messages.is_empty() && got.next >= got.end {
            // Nothing kept from `offset` to the compacted end: the ConsumeQueue goes on from there.
            return (got.end > offset)
                .then(|| self.get_message(topic, queue_id, got.end, max_msg_nums, max_total_bytes, filter));
        }
        let mut r = r;
        r.status = if got.messages.is_empty() { GetMessageStatus::NoMatchedMessage } else { GetMessageStatus::Found };
        r.next_begin_offset = got.next;
        r.buffer_total_size = got.bytes;
        r.messages = got.messages;
        Some(r)
    }

    /// `isTheBatchFull`.
    fn batch_full(
        c: &StoreConfig,
        size: usize,
        max_nums: usize,
        max_bytes: usize,
        r: &GetMessageResult,
        in_disk: bool,
    ) -> bool {
        let (count, bytes) = (r.messages.len(), r.buffer_total_size);
        if bytes == 0 || count == 0 {
            return false;
        }
        if count + 1 > max_nums || bytes + size > max_bytes {
            return true;
        }
        let (max_b, max_n) = if in_disk {
            (c.max_transfer_bytes_on_message_in_disk, c.max_transfer_count_on_message_in_disk)
        } else {
            (c.max_transfer_bytes_on_message_in_memory, c.max_transfer_count_on_message_in_memory)
        };
        bytes + size > max_b || count + 1 > max_n
    }

    /// The record stored at a CommitLog offset the store itself recorded (a ConsumeQueue unit, an
    /// index entry, the timer log), as bytes (`lookMessageByOffset`). An offset from a peer goes to
    /// [`MessageStore::named_record`] instead.
    pub fn record_at(&self, commit_log_offset: i64) -> Option<MappedSlice> {
        let offset = u64::try_from(commit_log_offset).ok()?;
        let head = self.inner.commit_log.record(offset, 4)?;
        let size = usize::try_from(i32::from_be_bytes(head[..4].try_into().ok()?)).ok()?;
        self.inner.commit_log.record(offset, size)
    }

    /// The decoded message at a CommitLog offset the store itself recorded (a peer's offset:
    /// [`MessageStore::named_message`]).
    pub fn lookup_message(&self, commit_log_offset: i64) -> Option<StoredMessage> {
        record::decode(&self.record_at(commit_log_offset)?, false)
    }

    /// Store time of the message at queue offset `offset`.
    pub fn message_store_timestamp(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let unit = self.queue(topic, queue_id)?.unit(offset)?;
        self.store_timestamp_at(unit.commit_log_offset)
    }

    fn store_timestamp_at(&self, commit_log_offset: i64) -> Option<i64> {
        let head = self.inner.commit_log.record(u64::try_from(commit_log_offset).ok()?, 76)?;
        let flag = i32::from_be_bytes(head[36..40].try_into().ok()?);
        let at = if flag & sys_flag::BORNHOST_V6 != 0 { 68 } else { 56 };
        Some(i64::from_be_bytes(head[at..at + 8].try_into().ok()?))
    }

    /// Store time of the first message still in the queue.
    pub fn earliest_message_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let q = self.queue(topic, queue_id)?;
        self.message_store_timestamp(topic, queue_id, q.min_offset_in_queue())
    }

    /// The first queue offset whose message was stored at or after `timestamp`
    /// (`getOffsetInQueueByTime`, lower boundary); the max offset if none.
    pub fn offset_in_queue_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        let Some(q) = self.queue(topic, queue_id) else { return 0 };
        let (mut lo, mut hi) = (q.min_offset_in_queue(), q.max_offset_in_queue());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.message_store_timestamp(topic, queue_id, mid) {
                Some(ts) if ts < timestamp => lo = mid + 1,
                Some(_) => hi = mid,
                // Deleted data or a blank unit: treat as older.
                None => lo = mid + 1,
            }
        }
        lo
    }

    /// Messages indexed under `key` for `topic`, newest index file first (`queryMessage`).
    pub fn query_message(&self, topic: &str, key: &str, max_num: usize, begin: i64, end: i64) -> QueryMessageResult {
        let found = self.inner.index.query_offsets(topic, key, max_num, begin, end);
        let messages = found.phy_offsets.iter().filter_map(|o| self.record_at(*o)).collect();
        QueryMessageResult {
            messages,
            index_last_update_timestamp: found.index_last_update_timestamp,
            index_last_update_phyoffset: found.index_last_update_phyoffset,
        }
    }

    /// Deletes the ConsumeQueues of `topics` and forgets their queue offsets.
    pub fn delete_topics(&self, topics: &[String]) -> Result<(), super::StoreError> {
        for t in topics {
            self.inner.queues.remove_topic(t)?;
            self.inner.compaction.remove_topic(t)?;
            self.inner.commit_log.remove_topic_offsets(t);
        }
        Ok(())
    }
}
