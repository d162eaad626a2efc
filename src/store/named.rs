//! Records a peer names by their CommitLog offset: a message id (VIEW_MESSAGE_BY_ID,
//! CONSUME_MESSAGE_DIRECTLY), END_TRANSACTION's `commitLogOffset` (and the gRPC transaction id),
//! CONSUMER_SEND_MSG_BACK's `offset`. The offset is the peer's, so only a genuine record that
//! starts exactly there is served:
//! - its size is no larger than a message can be (`maxMessageSize` + 1 MiB for the header, topic
//!   and properties): an offset inside a record would otherwise read a made-up size, up to a
//!   whole segment;
//! - the record says it is at that offset, and the ConsumeQueue unit its own header names (topic,
//!   queue id, queue offset) points back at it with the same size; a record not dispatched yet is
//!   reached from the dispatcher's position by record sizes. A record forged inside a message body
//!   is neither.
//!
//! Java's `lookMessageByOffset` reads whatever size it finds there. Internal offsets (ConsumeQueue
//! units, the timer log, index entries) use [`MessageStore::record_at`].
//!
//! May import: `model` and modules of `store/`.

use std::sync::atomic::Ordering;

use super::commit_log::record::{self, BLANK_MAGIC, MAGIC_V1, MAGIC_V2, PHYSICAL_OFFSET_POS};
use super::mapped_file::MappedSlice;
use super::message_store::{MessageStore, READ_AFTER_SEND_MAX_LAG};
use crate::model::message::StoredMessage;

/// Room above `maxMessageSize` for a record's header, topic and properties.
const RECORD_OVERHEAD: usize = 1 << 20;

impl MessageStore {
    /// The genuine record starting at `at`, as stored (see the module comment).
    pub fn named_record(&self, at: i64) -> Option<MappedSlice> {
        self.named(at).map(|(r, _)| r)
    }

    /// The genuine message starting at `at`, decoded.
    pub fn named_message(&self, at: i64) -> Option<StoredMessage> {
        self.named(at).map(|(_, m)| m)
    }

    fn named(&self, at: i64) -> Option<(MappedSlice, StoredMessage)> {
        let offset = u64::try_from(at).ok()?;
        let cl = &self.inner.commit_log;
        if offset < cl.min_offset() {
            return None;
        }
        // Read before the queues: a record below it was dispatched before this read.
        let dispatched_to = self.inner.reput_from.load(Ordering::Acquire);
        let head = cl.record(offset, PHYSICAL_OFFSET_POS + 8)?;
        let size = usize::try_from(i32::from_be_bytes(head[..4].try_into().ok()?)).ok()?;
        let magic = i32::from_be_bytes(head[4..8].try_into().ok()?);
        let said_at = i64::from_be_bytes(head[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8].try_into().ok()?);
        let limit = self.inner.live().max_message_size.saturating_add(RECORD_OVERHEAD);
        if (magic != MAGIC_V1 && magic != MAGIC_V2) || said_at != at || size > limit {
            return None;
        }
        let r = cl.record(offset, size)?;
        let m = record::decode(&r, false)?;
        let genuine = if offset < dispatched_to {
            self.queue(&m.topic, m.queue_id)
                .and_then(|q| q.unit(m.queue_offset))
                .is_some_and(|u| u.commit_log_offset == at && usize::try_from(u.size).ok() == Some(size))
        } else {
            self.reached_by_sizes(dispatched_to, offset)
        };
        genuine.then_some((r, m))
    }

    /// Whether stepping record by record (and over segment ends) from `from`, a record boundary,
    /// lands on `to`; at most [`READ_AFTER_SEND_MAX_LAG`] bytes are walked.
    fn reached_by_sizes(&self, from: u64, to: u64) -> bool {
        if to.saturating_sub(from) > READ_AFTER_SEND_MAX_LAG {
            return false;
        }
        let cl = &self.inner.commit_log;
        let mut at = from.max(cl.min_offset());
        while at < to {
            let Some(f) = cl.files().find(at) else { return false };
            let Some(head) = cl.record(at, 8) else { return false };
            let size = i32::from_be_bytes(head[..4].try_into().unwrap_or_default());
            let magic = i32::from_be_bytes(head[4..8].try_into().unwrap_or_default());
            at = match (magic, u64::try_from(size)) {
                (BLANK_MAGIC, _) => f.file_from_offset() + f.size() as u64,
                (MAGIC_V1 | MAGIC_V2, Ok(n)) if n > 0 => at + n,
                _ => return false,
            };
        }
        at == to
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use crate::model::message::properties_to_string;
    use crate::store::test_support::{message, small_config, wait_dispatched};
    use crate::store::MessageStore;

    async fn put(store: &MessageStore, body: Vec<u8>) -> i64 {
        let m = message("T", Bytes::from(body), properties_to_string([("WAIT", "true")]));
        store.put_messages(&[m], true).await.append.unwrap().offsets[0]
    }

    /// Records across a segment end; one carries in its body a copy of an earlier record with
    /// its offset field set to where it lies. The genuine records are named, by their queue
    /// units once dispatched and by record sizes from any earlier record; the forged copy and
    /// an offset inside a record are not, though `record_at` (which trusts its offset) reads both.
    #[tokio::test]
    async fn only_records_that_start_where_they_are_named_are_served() {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(small_config(dir.path())).unwrap();
        let mut offsets = Vec::new();
        for i in 0..80u8 {
            offsets.push(put(&store, vec![i; 1000]).await);
        }
        let copy = store.record_at(offsets[1]).unwrap().to_vec();
        let (mut forged_at, mut carrier) = (None, 0);
        let mut next = offsets[79] + store.record_at(offsets[79]).unwrap().len() as i64;
        for _ in 0..3 {
            let mut f = copy.clone();
            f[28..36].copy_from_slice(&(next + 88).to_be_bytes());
            carrier = put(&store, f).await;
            if carrier == next {
                forged_at = Some(next + 88);
                break;
            }
            next = carrier + store.record_at(carrier).unwrap().len() as i64;
        }
        let forged_at = forged_at.expect("no carrier landed where the previous record ended");
        assert!(store.record_at(forged_at).is_some(), "the forged copy is a record to record_at");
        wait_dispatched(&store).await;
        assert!(offsets[79] >= 64 * 1024, "the records cross a segment end");

        let first = offsets[0] as u64;
        for &o in offsets.iter().chain([&carrier]) {
            assert_eq!(store.named_message(o).unwrap().commit_log_offset, o);
            assert!(store.reached_by_sizes(first, o as u64), "{o} by record sizes");
        }
        assert!(store.named_record(forged_at).is_none(), "the forged copy");
        assert!(!store.reached_by_sizes(first, forged_at as u64));
        assert!(store.named_record(offsets[5] + 1).is_none(), "inside a record");
        assert!(!store.reached_by_sizes(first, offsets[5] as u64 + 1));
        assert!(store.named_record(-1).is_none() && store.named_record(i64::MAX).is_none());
        store.shutdown().unwrap();
    }
}
