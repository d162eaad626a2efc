//! What the broker's admin requests read from and do to the ConsumeQueues directly:
//! QUERY_CONSUME_QUEUE's raw units, CLEAN_EXPIRED_CONSUMEQUEUE's and CLEAN_UNUSED_TOPIC's view
//! of which queues exist and what they still point at; RESET_MASTER_FLUSH_OFFSET's value in the
//! checkpoint.
//!
//! May import: nothing outside `store/` but `model` (the area's rule: docs/architecture.md).

use super::consume_queue::{CqUnit, CQ_UNIT_SIZE};
use super::MessageStore;

/// One ConsumeQueue's units from an index, as QUERY_CONSUME_QUEUE shows them.
pub struct QueueUnits {
    /// The queue's first readable index (`getMinOffsetInQueue`).
    pub min: i64,
    /// The index the next unit gets (`getMaxOffsetInQueue`).
    pub max: i64,
    /// The units from the requested index on; `None` when the index is outside `[min, max)`
    /// (Java's `iterateFrom` answers null there).
    pub units: Option<Vec<CqUnit>>,
}

impl MessageStore {
    /// Up to `count` units of `topic`/`queue_id` from `index` (only up to the end of the file
    /// holding `index`, as Java's `iterateFrom`); `None` when the store has no such queue.
    pub fn consume_queue_units(&self, topic: &str, queue_id: i32, index: i64, count: usize) -> Option<QueueUnits> {
        let q = self.inner.queues.get(topic, queue_id)?;
        let (min, max) = (self.min_offset_in_queue(topic, queue_id), q.max_offset_in_queue());
        if index < min || index >= max {
            return Some(QueueUnits { min, max, units: None });
        }
        let limit = usize::try_from(max - index).unwrap_or(0).min(count);
        let slice = q.units_from(index);
        let units = slice
            .as_deref()
            .unwrap_or_default()
            .chunks_exact(CQ_UNIT_SIZE)
            .take(limit)
            .filter_map(CqUnit::decode)
            .collect();
        Some(QueueUnits { min, max, units: Some(units) })
    }

    /// The topics that have ConsumeQueues, each with the CommitLog offset just past the last
    /// record any of its queues points at (-1 for a topic whose queues are all empty): what
    /// Java's `cleanExpired` compares with the CommitLog's minimum.
    pub fn queue_topics(&self) -> Vec<(String, i64)> {
        let mut out: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
        for q in self.inner.queues.all() {
            let end = out.entry(q.topic().to_owned()).or_insert(-1);
            *end = (*end).max(q.max_physic_offset());
        }
        out.into_iter().collect()
    }
}

impl MessageStore {
    /// The master's flushed CommitLog offset a slave keeps in its checkpoint
    /// (`getMasterFlushedOffset`); outside controller mode only RESET_MASTER_FLUSH_OFFSET sets it.
    pub fn master_flushed_offset(&self) -> i64 {
        self.inner.checkpoint.master_flushed_offset()
    }

    /// `setMasterFlushedOffset`: kept in the checkpoint, on disk from its next flush.
    pub fn set_master_flushed_offset(&self, offset: i64) {
        self.inner.checkpoint.set_master_flushed_offset(offset);
    }
}
