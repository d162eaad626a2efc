//! What a committed reader reads from a queue: a RocketMQ consumer sees only committed records of
//! Kafka transactions, as a Kafka `read_committed` consumer does after its own filtering.
//!
//! ```text
//! queue offsets   ... c c [a a] A c c | o o o ... max       c committed or plain record
//!                                     ^ LSO (first offset   a record of an aborted transaction
//!                                       of the earliest     A / C its ABORT / COMMIT marker
//!                                       open transaction)   o record of an open transaction
//! returned        ... c c           c c |   never read past the LSO: the pull is answered as at the
//!                                           queue's end (OFFSET_OVERFLOW_ONE, held by long polling)
//! ```
//! Records a committed reader must not see (markers, aborted records) are filtered out like a tag
//! filter's misses: the next offset moves past them (NO_MATCHED_MESSAGE when nothing matched).
//! A queue that never held a transaction (`TxnMarkers::has_transactions`) is read exactly as
//! before: one look-up, no property read.
//!
//! May import: `store`, `core::txn`.

use super::txn::{RecordTxn, TxnMarkers};
use super::Core;
use crate::store::commit_log::record;
use crate::store::{GetMessageResult, MessageFilter};

impl Core {
    /// `getMessage` for a consumer that may only see committed records (every RocketMQ pull).
    pub fn get_committed(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: usize,
        max_total_bytes: usize,
        filter: &dyn MessageFilter,
    ) -> GetMessageResult {
        if !self.txn.has_transactions(topic, queue_id) {
            return self.store.get_message(topic, queue_id, offset, max_msg_nums, max_total_bytes, filter);
        }
        let lso = self.txn.last_stable_offset(topic, queue_id, self.store.max_offset_in_queue(topic, queue_id));
        let committed = Committed { inner: filter, txn: &self.txn, topic, queue_id };
        self.store.get_message_below(topic, queue_id, offset, lso, max_msg_nums, max_total_bytes, &committed)
    }
}

/// The pull's own filter, plus: no control record, no record of an aborted transaction.
struct Committed<'a> {
    inner: &'a dyn MessageFilter,
    txn: &'a TxnMarkers,
    topic: &'a str,
    queue_id: i32,
}

impl MessageFilter for Committed<'_> {
    fn matches_tags_code(&self, tags_code: i64) -> bool {
        self.inner.matches_tags_code(tags_code)
    }

    fn matches_record(&self, rec: &[u8]) -> bool {
        let (Some(props), Some((offset, _))) = (record::properties(rec), record::queue_offset_and_born_time(rec))
        else {
            return false;
        };
        let visible = match std::str::from_utf8(props) {
            Ok(props) => self.txn.visible_committed(self.topic, self.queue_id, offset, RecordTxn::of(props)),
            Err(_) => {
                let props = String::from_utf8_lossy(props);
                self.txn.visible_committed(self.topic, self.queue_id, offset, RecordTxn::of(&props))
            }
        };
        visible && self.inner.matches_record(rec)
    }
}

#[cfg(test)]
#[path = "committed_tests.rs"]
mod tests;
