//! Acks and invisible-time changes by receipt handle (`AckMessageProcessor`,
//! `ChangeInvisibleTimeProcessor`). A handle names a checkpoint (start offset, pop time) of a
//! queue; one that names none (forged, acked before, or revived since) is stale and changes
//! nothing, so an old handle never acks the redelivered copy (which lives in the retry topic
//! under a new checkpoint).
//!
//! May import: `model`, `store`, `meta` (through `Core`).

use super::handle::Handle;
use super::persist::Rec;
use super::state::{AckOutcome, NewCk, QueueKey};
use crate::core::Core;
use crate::store::now_ms;

/// A new handle's checkpoint after a change of invisible time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changed {
    /// The new checkpoint's start offset: the message's own offset.
    pub start_offset: i64,
    pub pop_time: i64,
    pub invisible_time: i64,
}

impl Core {
    /// Acks the message at `offset` of the stored `topic`'s queue, popped under `handle`.
    pub async fn pop_ack(&self, group: &str, topic: &str, queue_id: i32, handle: &Handle, offset: i64) -> AckOutcome {
        let acked = self.pop_ack_offsets(group, topic, queue_id, (handle.ck_offset, handle.pop_time), &[offset]).await;
        if acked == 0 {
            AckOutcome::Stale
        } else {
            AckOutcome::Acked
        }
    }

    /// Acks `offsets` of the checkpoint `ck` (start offset, pop time) of the stored `topic`'s
    /// queue (a BATCH_ACK_MESSAGE entry), under one lock and one state-log append; returns how
    /// many were pending (the others are stale and change nothing).
    pub async fn pop_ack_offsets(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        ck: (i64, i64),
        offsets: &[i64],
    ) -> usize {
        self.pop.restored().await;
        let key = QueueKey { group: group.to_owned(), topic: topic.to_owned(), queue_id };
        let (start, pop_time) = ck;
        let acked: Vec<i64> = {
            let mut table = self.pop.table();
            let order = table.is_order_ck(&key, ck);
            let acked: Vec<i64> =
                offsets.iter().copied().filter(|o| table.ack(&key, ck, *o) == AckOutcome::Acked).collect();
            if !acked.is_empty() {
                if order && !table.order_blocked(&key) {
                    // A pop held on the locked queue reads it again.
                    self.hold.message_arrived(topic, queue_id);
                }
                if let Some(c) = table.committed(&key) {
                    self.offsets.commit(group, topic, queue_id, c);
                }
                table.forget_if_idle(&key);
            }
            acked
        };
        let recs: Vec<Rec> =
            acked.iter().map(|&offset| Rec::Ack { key: key.clone(), start, pop_time, offset }).collect();
        self.pop_log(&recs).await;
        acked.len()
    }

    /// Hides the message for `invisible_ms` from now under a new checkpoint; `None` when the
    /// handle is stale (nothing changes then).
    pub async fn pop_change_invisible(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        handle: &Handle,
        offset: i64,
        invisible_ms: i64,
    ) -> Option<Changed> {
        self.pop.restored().await;
        let key = QueueKey { group: group.to_owned(), topic: topic.to_owned(), queue_id };
        let old = (handle.ck_offset, handle.pop_time);
        let (start, pop_time, next, order) = {
            let mut table = self.pop.table();
            if !table.is_pending(&key, old, offset) {
                return None;
            }
            // The new checkpoint first (while the old one exists, so their ids differ), so the
            // queue's committed offset never passes the message.
            let next = table.next_offset(&key).0?;
            let rec = self.pop_state_end();
            let order = table.is_order_ck(&key, old);
            let pop_time = now_ms();
            let ck = NewCk { start: offset, pop_time, invisible: invisible_ms, offsets: &[offset], next, rec, order };
            let (start, pop_time) = table.record(&key, ck, false);
            table.ack(&key, old, offset);
            (start, pop_time, next, order)
        };
        self.pop.wake.notify_one();
        let new =
            Rec::Ck { key: key.clone(), start, pop_time, invisible: invisible_ms, next, offsets: vec![offset], order };
        self.pop_log(&[new, Rec::Ack { key, start: old.0, pop_time: old.1, offset }]).await;
        Some(Changed { start_offset: start, pop_time, invisible_time: invisible_ms })
    }
}
