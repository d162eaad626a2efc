//! Popping: reads from a group's queues (and its POP retry topic), records a checkpoint per
//! queue read, and holds the request for long polling when nothing is found
//! (`PopMessageProcessor`).
//!
//! Where a queue starts (`getInitOffset`): the committed offset; a group without one starts at
//! the queue's minimum with init mode MIN or on a retry topic, else at 0 when the queue still
//! holds offset 0 in memory (`initPopOffsetByCheckMsgInMem`), else at maxOffset-1 (the last
//! message); the start is committed at once.
//!
//! May import: `model`, `store`, `meta` (through `Core`).

use std::time::Duration;

use super::persist::Rec;
use super::pop_retry_topic;
use super::state::{NewCk, QueueKey};
use crate::core::Core;
use crate::model::group::RETRY_GROUP_TOPIC_PREFIX;
use crate::store::mapped_file::MappedSlice;
use crate::store::{now_ms, AcceptAll, GetMessageStatus, MessageFilter};

/// A pop, as every door asks it.
pub struct PopRequest<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    /// A queue of `topic`, or -1 for all its readable queues.
    pub queue_id: i32,
    pub max_nums: usize,
    pub invisible_ms: i64,
    /// How long to hold the request when nothing is found (0: answer at once).
    pub poll: Duration,
    /// `ConsumeInitMode.MIN` (1): a new group starts at the queue's minimum.
    pub init_from_min: bool,
    /// `enableRetryTopicV2`: the retry topic is `%RETRY%{group}+{topic}`.
    pub retry_v2: bool,
    pub filter: &'a (dyn MessageFilter + Sync),
    /// An orderly (FIFO) pop: each queue stays locked until its messages are acked or expire
    /// (`order.rs`); the retry topic is not read.
    pub order: bool,
    /// An orderly pop's attempt id (Java's `attemptId`, the 5.x SDKs' `attempt_id`): a client
    /// that lost a pop's answer pops again with the same id and gets the same messages.
    pub attempt: Option<&'a str>,
}

/// What a pop found.
#[derive(Default)]
pub struct Popped {
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    /// Messages left in the queues read (`restNum`).
    pub rest: i64,
    pub queues: Vec<PoppedQueue>,
}

impl Popped {
    pub fn count(&self) -> usize {
        self.queues.iter().map(|q| q.messages.len()).sum()
    }
}

/// The messages popped from one queue: one checkpoint.
pub struct PoppedQueue {
    /// The stored topic: the asked topic or its POP retry topic.
    pub topic: String,
    pub queue_id: i32,
    /// The checkpoint's start offset (the handle's first field).
    pub start_offset: i64,
    /// The checkpoint's pop time (the handle's second field; unique per queue and start).
    pub pop_time: i64,
    /// Where the next pop of the queue reads.
    pub next_offset: i64,
    pub messages: Vec<PoppedMessage>,
}

pub struct PoppedMessage {
    pub queue_offset: i64,
    /// Orderly pops: deliveries of this message before this one (`orderCountInfo`).
    pub order_count: i32,
    /// The stored record, unchanged.
    pub record: MappedSlice,
}

/// Why a pop was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PopError {
    #[error("too many pop requests of this group and topic are held")]
    PollingFull,
}

impl Core {
    /// Pops up to `max_nums` messages; waits up to `poll` for arrivals when none are found.
    pub async fn pop(&self, req: &PopRequest<'_>) -> Result<Popped, PopError> {
        self.pop.restored().await;
        let retry = pop_retry_topic(req.topic, req.group, req.retry_v2);
        let queues = self.pop_queues(req, &retry);
        if let Some(attempt) = req.attempt.filter(|_| req.order) {
            self.pop_retried(req.group, &queues, attempt).await;
        }
        let first = self.pop_once(req, &queues);
        if first.count() > 0 || req.poll.is_zero() || queues.is_empty() {
            self.log_popped(req, &first).await;
            return Ok(first);
        }
        let Some(_held) =
            self.pop.enter_polling(req.group, req.topic, req.queue_id, super::Hold::Pop, self.config.pop_polling_size)
        else {
            return Err(PopError::PollingFull);
        };
        let deadline = tokio::time::Instant::now() + req.poll;
        // A message revived meanwhile wakes the pop too, even on a retry topic created since.
        let mut waits = queues.clone();
        if !waits.iter().any(|(t, _)| *t == retry) {
            waits.push((retry.clone(), 0));
        }
        let found = self
            .wait_for_arrivals(waits.iter().map(|(t, q)| (t.as_str(), *q)), deadline, || {
                let p = self.pop_once(req, &self.pop_queues(req, &retry));
                std::future::ready((p.count() > 0).then_some(p))
            })
            .await;
        let popped = found.unwrap_or(first);
        self.log_popped(req, &popped).await;
        Ok(popped)
    }

    /// Appends the pop's checkpoints to the state log.
    async fn log_popped(&self, req: &PopRequest<'_>, p: &Popped) {
        let recs: Vec<Rec> = p
            .queues
            .iter()
            .map(|q| Rec::Ck {
                order: req.order,
                key: QueueKey { group: req.group.to_owned(), topic: q.topic.clone(), queue_id: q.queue_id },
                start: q.start_offset,
                pop_time: q.pop_time,
                invisible: p.invisible_time,
                next: q.next_offset,
                offsets: q.messages.iter().map(|m| m.queue_offset).collect(),
            })
            .collect();
        self.pop_log(&recs).await;
    }

    /// The queues to read, in order: the topic's from a random one, the retry topic's before
    /// them one time in five, else after them.
    pub(super) fn pop_queues(&self, req: &PopRequest<'_>, retry: &str) -> Vec<(String, i32)> {
        let seed = now_nanos();
        let mut normal = Vec::new();
        if let Some(tc) = self.topics.view(req.topic) {
            if req.queue_id >= 0 {
                normal.push((req.topic.to_owned(), req.queue_id));
            } else if tc.read_queue_nums > 0 {
                let n = tc.read_queue_nums;
                let start = (seed % n as u64) as i32;
                normal.extend((0..n).map(|i| (req.topic.to_owned(), (start + i) % n)));
            }
        }
        let retry_queues: Vec<(String, i32)> = match self.topics.view(retry).filter(|_| !req.order) {
            Some(tc) => (0..tc.read_queue_nums.max(0)).map(|q| (retry.to_owned(), q)).collect(),
            None => Vec::new(),
        };
        if (seed / 7).is_multiple_of(5) {
            retry_queues.into_iter().chain(normal).collect()
        } else {
            normal.into_iter().chain(retry_queues).collect()
        }
    }

    fn pop_once(&self, req: &PopRequest<'_>, queues: &[(String, i32)]) -> Popped {
        let pop_time = now_ms();
        let mut out = Popped { pop_time, invisible_time: req.invisible_ms, ..Popped::default() };
        let mut room = req.max_nums;
        for (topic, queue_id) in queues {
            let key = QueueKey { group: req.group.to_owned(), topic: topic.clone(), queue_id: *queue_id };
            let filter: &dyn MessageFilter = if topic == req.topic { req.filter } else { &AcceptAll };
            let (found, rest) = self.pop_queue(&key, req, filter, room, pop_time);
            out.rest += rest;
            if let Some(q) = found {
                room -= q.messages.len();
                out.queues.push(q);
            }
            if room == 0 {
                break;
            }
        }
        out
    }

    /// Pops up to `room` messages from one queue under the table's lock (one pop of a queue at
    /// a time, as Java's queue lock); returns them and the messages left behind.
    fn pop_queue(
        &self,
        key: &QueueKey,
        req: &PopRequest<'_>,
        filter: &dyn MessageFilter,
        room: usize,
        pop_time: i64,
    ) -> (Option<PoppedQueue>, i64) {
        let mut table = self.pop.table();
        let (next, allowed) = table.next_offset(key);
        let mut offset = next.unwrap_or_else(|| self.pop_start(key, req.init_from_min));
        let max = self.store.max_offset_in_queue(&key.topic, key.queue_id);
        if !allowed || room == 0 || (req.order && table.order_blocked(key)) {
            return (None, (max - offset).max(0));
        }
        let mut r = self.get_committed(&key.topic, key.queue_id, offset, room, usize::MAX, filter);
        if matches!(
            r.status,
            GetMessageStatus::OffsetTooSmall
                | GetMessageStatus::OffsetOverflowBadly
                | GetMessageStatus::OffsetFoundNull
        ) {
            offset = r.next_begin_offset;
            r = self.get_committed(&key.topic, key.queue_id, offset, room, usize::MAX, filter);
        }
        let moved = matches!(
            r.status,
            GetMessageStatus::Found
                | GetMessageStatus::NoMatchedMessage
                | GetMessageStatus::OffsetFoundNull
                | GetMessageStatus::MessageWasRemoving
        );
        let next = if moved { r.next_begin_offset.max(offset) } else { offset };
        let messages: Vec<PoppedMessage> = r
            .messages
            .into_iter()
            .filter_map(|record| {
                let (queue_offset, _) = crate::store::commit_log::record::queue_offset_and_born_time(&record[..])?;
                if req.order && table.take_acked_ahead(key, queue_offset) {
                    return None; // acked before a rewind
                }
                let order_count = if req.order { table.order_count(key, queue_offset) } else { 0 };
                Some(PoppedMessage { queue_offset, order_count, record })
            })
            .collect();
        let offsets: Vec<i64> = messages.iter().map(|m| m.queue_offset).collect();
        let rec = self.pop_state_end();
        let ck = NewCk {
            start: offset,
            pop_time,
            invisible: req.invisible_ms,
            offsets: &offsets,
            next,
            rec,
            order: req.order,
        };
        let (start, pop_time) = table.record(key, ck, false);
        if let Some(attempt) = req.attempt.filter(|_| req.order && !offsets.is_empty()) {
            table.set_order_attempt(key, (start, pop_time), attempt);
        }
        if let Some(c) = table.committed(key) {
            self.offsets.commit(&key.group, &key.topic, key.queue_id, c);
        }
        table.forget_if_idle(key);
        drop(table);
        if !offsets.is_empty() {
            self.pop.wake.notify_one();
        }
        let rest = (r.max_offset - next).max(0);
        let found = (!messages.is_empty()).then(|| PoppedQueue {
            topic: key.topic.clone(),
            queue_id: key.queue_id,
            start_offset: start,
            pop_time,
            next_offset: next,
            messages,
        });
        (found, rest)
    }

    /// Where a queue without POP state starts (see the module doc); committed at once.
    fn pop_start(&self, key: &QueueKey, init_from_min: bool) -> i64 {
        let committed = self.offsets.query(&key.group, &key.topic, key.queue_id);
        if committed >= 0 {
            return committed;
        }
        let min = self.store.min_offset_in_queue(&key.topic, key.queue_id);
        let offset = if init_from_min || key.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            min
        } else if min <= 0 && self.first_message_in_memory(key) {
            0
        } else {
            (self.store.max_offset_in_queue(&key.topic, key.queue_id) - 1).max(0)
        };
        self.offsets.commit(&key.group, &key.topic, key.queue_id, offset);
        offset
    }

    /// Java's `checkInMemByConsumeOffset(topic, queue, 0, 1)`: offset 0 is still within the
    /// in-memory part of the CommitLog.
    fn first_message_in_memory(&self, key: &QueueKey) -> bool {
        let r = self.store.get_message(&key.topic, key.queue_id, 0, 1, usize::MAX, &AcceptAll);
        r.status == GetMessageStatus::Found && !r.suggest_pulling_from_slave
    }
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos() as u64)
}
