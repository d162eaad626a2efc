//! Per-queue operations beside the reads of `get.rs`: the queue ids, whether a message is in
//! memory, a unit's tag code, the log start (Kafka's DeleteRecords), unit sizes
//! (`retention.bytes`), and the compacted topics' hooks and passes on demand.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use super::compaction;
use super::consume_queue::CQ_UNIT_SIZE;
use super::message_store::MessageStore;

impl MessageStore {
    /// Every (topic, queue id) with a ConsumeQueue, sorted.
    pub fn queue_ids(&self) -> Vec<(String, i32)> {
        let mut ids: Vec<_> = self.inner.queues.all().iter().map(|q| (q.topic().to_owned(), q.queue_id())).collect();
        ids.sort();
        ids
    }
}

impl MessageStore {
    /// Whether the message at queue offset `offset` is within the part of the CommitLog assumed
    /// to be in memory (`checkInMemByConsumeOffset`); false if there is no such message.
    pub fn is_in_memory(&self, topic: &str, queue_id: i32, offset: i64) -> bool {
        let Some(unit) = self.queue(topic, queue_id).and_then(|q| q.unit(offset)).filter(|u| !u.is_blank()) else {
            return false;
        };
        !self.beyond_memory_share(unit.commit_log_offset, self.inner.live().access_message_in_memory_max_ratio)
    }

    /// Java's `checkInColdAreaByCommitOffset`: whether CommitLog offset `phy` lies further from
    /// the CommitLog's end than `hot_ratio` % of the machine's memory (cold-read flow control's
    /// cold area; `accessMessageInMemoryHotRatio`).
    pub fn is_cold_commit_offset(&self, phy: i64, hot_ratio: u32) -> bool {
        self.beyond_memory_share(phy, hot_ratio)
    }

    /// `ColdDataCheckService.isMsgInColdArea`: the message at queue offset `offset` is in the
    /// cold area ([`Self::is_cold_commit_offset`]); false if there is no such message.
    pub fn is_msg_in_cold_area(&self, topic: &str, queue_id: i32, offset: i64, hot_ratio: u32) -> bool {
        let unit = self.queue(topic, queue_id).and_then(|q| q.unit(offset)).filter(|u| !u.is_blank());
        unit.is_some_and(|u| self.beyond_memory_share(u.commit_log_offset, hot_ratio))
    }

    /// Whether `phy` is more than `ratio` % of the machine's memory behind the CommitLog's end.
    fn beyond_memory_share(&self, phy: i64, ratio: u32) -> bool {
        let memory = (self.inner.total_memory as f64 * f64::from(ratio) / 100.0) as i64;
        self.inner.commit_log.max_offset() as i64 - phy > memory
    }
}

impl MessageStore {
    /// The ConsumeQueue tag code of a message (the delivery time for scheduled messages).
    pub fn message_tags_code(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        self.queue(topic, queue_id)?.unit(offset).map(|u| u.tags_code)
    }
}

impl MessageStore {
    /// Raises the log start offset of a queue to `offset` (at most its end; never lower), on
    /// disk before the call returns (blocking: call it off the async workers). Returns the
    /// queue's min offset afterwards: Kafka's low watermark.
    pub fn advance_log_start(&self, topic: &str, queue_id: i32, offset: i64) -> Result<i64, super::StoreError> {
        self.inner.queues.advance_log_start(topic, queue_id, offset)
    }

    /// The record sizes of up to `max` ConsumeQueue units from queue offset `from` (a blank
    /// unit counts 0), for `retention.bytes`; fewer at the queue's end.
    pub fn unit_sizes(&self, topic: &str, queue_id: i32, from: i64, max: usize) -> Vec<i64> {
        let Some(q) = self.inner.queues.get(topic, queue_id) else { return Vec::new() };
        let end = q.max_offset_in_queue();
        let mut out = Vec::with_capacity(max.min(64 * 1024));
        let mut at = from.max(0);
        while out.len() < max && at < end {
            let Some(units) = q.units_from(at) else { break };
            let before = out.len();
            for chunk in units.chunks_exact(CQ_UNIT_SIZE).take(max - out.len()) {
                let unit = super::consume_queue::CqUnit::decode(chunk);
                out.push(unit.filter(|u| u.is_valid() && !u.is_blank()).map_or(0, |u| i64::from(u.size)));
            }
            if out.len() == before {
                break;
            }
            at += (out.len() - before) as i64;
        }
        out.truncate(usize::try_from(end - from.max(0)).unwrap_or(0).min(out.len()));
        out
    }
}

/// Compacted topics (`compaction/`): which topics are, passes on demand, where a queue stands.
impl MessageStore {
    /// Tells the store which topics are compacted (asked per queue by the compaction round and
    /// by retention, never on a read): the broker answers from the topics' `cleanup.policy`.
    pub fn set_compaction_lookup(&self, lookup: compaction::CompactionLookup) {
        self.inner.compaction.set_lookup(lookup);
    }

    /// Tells compaction about Kafka transactions: it stops at the last stable offset and drops
    /// records of aborted transactions and control records.
    pub fn set_compaction_txn(&self, txn: std::sync::Arc<dyn compaction::CompactionTxn>) {
        self.inner.compaction.set_txn(txn);
    }

    /// Compacts one queue now, whatever its dirty ratio (admin, tests, the benchmark): `None`
    /// if the topic is not compacted (or `enableCompaction=false`) or has no such queue.
    pub fn compact_now(
        &self,
        topic: &str,
        queue_id: i32,
        now_ms: i64,
    ) -> Result<Option<compaction::CompactionStats>, super::StoreError> {
        use super::compaction::service;
        let (Some(policy), Some(cq)) = (service::policy(&self.inner, topic), self.inner.queues.get(topic, queue_id))
        else {
            return Ok(None);
        };
        service::compact_queue(&self.inner, &cq, &policy, now_ms, true)
    }

    /// The compacted end of a queue: offsets below it are read from its compacted log (0: none).
    pub fn compacted_end(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.compaction.get(topic, queue_id).map_or(0, |q| q.current().end)
    }

    /// Makes the next compaction pass stop after writing its generation, before the commit, as
    /// a crash there would (tests).
    #[doc(hidden)]
    pub fn inject_compaction_crash(&self) {
        self.inner.compaction.crash_next_pass.store(true, std::sync::atomic::Ordering::Release);
    }
}
