//! Peeking (`PeekMessageProcessor`): the messages a pop would read next, without a checkpoint,
//! a commit or any other change of state. Also where a queue's next pop would read
//! ([`Core::pop_position`], Java's `getPopOffset`), which NOTIFICATION asks too (`notify.rs`).
//!
//! As Java: the POP retry topic is read first one time in five, else after the topic's queues;
//! a queue without a committed offset is read from its minimum; records are returned as stored
//! (a retry message keeps its retry topic and gets no handle: a peek cannot be acked).
//!
//! May import: `model`, `store`, `meta` (through `Core`).

use std::time::Duration;

use super::receive::PopRequest;
use super::state::QueueKey;
use super::{pop_retry_topic, MAX_POP_NUMS};
use crate::core::Core;
use crate::store::mapped_file::MappedSlice;
use crate::store::{AcceptAll, GetMessageStatus};

/// What a peek found.
#[derive(Default)]
pub struct Peeked {
    /// Messages left in the queues read after the pop position (`restNum`).
    pub rest: i64,
    /// Stored records, unchanged.
    pub records: Vec<MappedSlice>,
}

impl Core {
    /// Up to `max_nums` (at most [`MAX_POP_NUMS`]) messages of `topic` (queue -1: every readable
    /// queue) and its POP retry topic that a pop by `group` would read next.
    pub fn pop_peek(&self, group: &str, topic: &str, queue_id: i32, max_nums: usize, retry_v2: bool) -> Peeked {
        let max_nums = max_nums.min(MAX_POP_NUMS);
        let req = PopRequest {
            group,
            topic,
            queue_id,
            max_nums,
            invisible_ms: 0,
            poll: Duration::ZERO,
            init_from_min: true,
            retry_v2,
            filter: &AcceptAll,
            order: false,
            attempt: None,
        };
        let retry = pop_retry_topic(topic, group, retry_v2);
        let mut out = Peeked::default();
        for (t, q) in self.pop_queues(&req, &retry) {
            let key = QueueKey { group: group.to_owned(), topic: t, queue_id: q };
            let mut offset = self.pop_position(&key);
            out.rest += (self.store.max_offset_in_queue(&key.topic, q) - offset).max(0);
            let room = max_nums.saturating_sub(out.records.len());
            if room == 0 {
                continue;
            }
            let mut r = self.get_committed(&key.topic, q, offset, room, usize::MAX, &AcceptAll);
            if matches!(r.status, GetMessageStatus::OffsetTooSmall | GetMessageStatus::OffsetOverflowBadly) {
                offset = r.next_begin_offset;
                r = self.get_committed(&key.topic, q, offset, room, usize::MAX, &AcceptAll);
            }
            out.records.extend(r.messages.into_iter().take(room));
        }
        out
    }

    /// Where the next pop of `key` reads, changing nothing: the POP table's position, else the
    /// committed offset, else the queue's minimum (Java's `getPopOffset`).
    pub(super) fn pop_position(&self, key: &QueueKey) -> i64 {
        if let (Some(next), _) = self.pop.table().next_offset(key) {
            return next;
        }
        let committed = self.offsets.query(&key.group, &key.topic, key.queue_id);
        if committed >= 0 {
            committed
        } else {
            self.store.min_offset_in_queue(&key.topic, key.queue_id)
        }
    }
}
