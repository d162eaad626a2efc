//! The dispatcher (`ReputMessageService`): follows the CommitLog up to the confirmed end (the
//! flushed end under SYNC_FLUSH, the written end otherwise), appends ConsumeQueue units, builds
//! the index, and tells the arrival listener (long polling) about the queues that got messages.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::error;

use super::commit_log::record::{self, DispatchRequest, RecordCheck};
use super::consume_queue::{ConsumeQueue, CqUnit};
use super::state::Inner;
use super::StoreError;
use crate::model::message::{self, sys_flag};

/// Applies one record to the ConsumeQueue and the index.
pub fn dispatch(inner: &Inner, d: &DispatchRequest) -> Result<(), StoreError> {
    dispatch_in(inner, d, &mut Round::default())
}

/// What a dispatch round remembers from record to record: each queue it reached, looked up once
/// per round instead of once per message, and woken once at the round's end. Kept for one round
/// only, so a deleted topic's queue is not held past it.
#[derive(Default)]
struct Round {
    queues: Vec<RoundQueue>,
    /// Records dispatched since the last wake-up.
    records: usize,
}

/// A long round (a backlog after a restart, a slave catching up) wakes waiting pulls every this
/// many records instead of only at its end.
const WAKE_EVERY: usize = 512;

struct RoundQueue {
    topic: String,
    queue_id: i32,
    /// Looked up on the first record that appends to it.
    cq: Option<Arc<ConsumeQueue>>,
}

impl Round {
    /// The entry of `topic`/`queue_id`, added if new. A round reaches a few queues: a linear
    /// search (queue id first) beats hashing the topic.
    fn entry(&mut self, topic: &str, queue_id: i32) -> &mut RoundQueue {
        let at = self.queues.iter().position(|q| q.queue_id == queue_id && q.topic == topic);
        let at = at.unwrap_or_else(|| {
            self.queues.push(RoundQueue { topic: topic.to_owned(), queue_id, cq: None });
            self.queues.len() - 1
        });
        &mut self.queues[at]
    }

    /// Wakes the pulls waiting on the queues this round reached (`notifyMessageArriving`).
    fn wake(&mut self, inner: &Inner) {
        self.records = 0;
        for q in self.queues.drain(..) {
            inner.notify_arrival(&q.topic, q.queue_id);
        }
    }
}

/// As [`dispatch`], within `round`: the record's queue is looked up there, and woken at the
/// round's end. A prepared or rolled-back transaction message reaches no queue but is announced
/// like the others (Java's listener filters nothing either).
fn dispatch_in(inner: &Inner, d: &DispatchRequest, round: &mut Round) -> Result<(), StoreError> {
    let entry = round.entry(&d.topic, d.queue_id);
    let tx = sys_flag::transaction_type(d.sys_flag);
    if tx == sys_flag::TRANSACTION_NOT_TYPE || tx == sys_flag::TRANSACTION_COMMIT {
        let cq = match &entry.cq {
            Some(cq) => cq,
            None => entry.cq.insert(inner.queues.get_or_create(&d.topic, d.queue_id)?),
        };
        let tags_code =
            if d.topic == SCHEDULE_TOPIC { deliver_time(inner, d).unwrap_or(d.tags_code) } else { d.tags_code };
        let unit = CqUnit { commit_log_offset: d.commit_log_offset, size: d.size, tags_code };
        cq.put(unit, d.queue_offset)?;
    }
    if inner.config.message_index_enable {
        inner.index.build_index(d)?;
    }
    inner.last_dispatched_timestamp.fetch_max(d.store_timestamp, Ordering::Relaxed);
    Ok(())
}

/// The topic holding delayed messages, one queue per delay level.
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

/// `computeDeliverTimestamp`: store time plus the delay of the message's level (clamped to the
/// last level); `None` for levels below 1.
fn deliver_time(inner: &Inner, d: &DispatchRequest) -> Option<i64> {
    let level: i64 = message::property_value(&d.properties, message::property::DELAY)?.parse().ok()?;
    // Level 0 or below is no delay: the tag code stays the tag hash, as in Java.
    let level = usize::try_from(level).ok().filter(|l| *l >= 1)?;
    let levels = &inner.config.delay_level_millis;
    let delay = level.min(levels.len()).checked_sub(1).and_then(|i| levels.get(i)).copied().unwrap_or(1000);
    Some(d.store_timestamp + delay)
}

/// How long the dispatcher naps after a round that found work.
const NAP: Duration = Duration::from_millis(1);

/// The dispatcher thread's body; returns when the store stops.
pub fn run(inner: &Inner) {
    let mut just_worked = false;
    while inner.is_running() {
        let end = inner.confirm_offset();
        let from = inner.reput_from.load(Ordering::Acquire);
        if from >= end {
            // Under load, a round that found work is followed by a nap of NAP (Java's reput
            // thread sleeps 1 ms between all its rounds): appends do not wake a napping
            // dispatcher, so a stream of sends costs no futex wake-up and context switch per
            // message, and the next round takes everything that came meanwhile. An idle
            // dispatcher is woken by the append that makes data dispatchable, so the first
            // message after a pause is dispatched at once. Reads that must see an acknowledged
            // message wait for the round that dispatches it (`await_dispatched`).
            if std::mem::take(&mut just_worked) {
                std::thread::sleep(NAP);
            } else {
                let has_work = || inner.reput_from.load(Ordering::Acquire) < inner.confirm_offset();
                inner.wait_for_dispatch_work(Duration::from_millis(10), has_work);
            }
            continue;
        }
        match reput(inner, from, end) {
            Ok(Reput::Done) => {
                just_worked = true;
                inner.dispatched.notify_waiters()
            }
            // The rest of a record is on its way (a slave receives the CommitLog in frames cut
            // at any byte): the append that brings it wakes this thread.
            Ok(Reput::AwaitingRestOfRecord) => {
                let end = inner.confirm_offset();
                inner.wait_for_dispatch_work(Duration::from_millis(10), || inner.confirm_offset() > end)
            }
            Err(e) => {
                error!(error = %e, offset = from, "dispatch failed; retrying in 1 s");
                inner.sleep_while_running(Duration::from_secs(1));
            }
        }
    }
}

/// How a dispatch round ended.
#[derive(Debug, PartialEq, Eq)]
enum Reput {
    /// Everything readable up to the end was dispatched (or the data moved away).
    Done,
    /// The readable data ends inside a record.
    AwaitingRestOfRecord,
}

/// Dispatches the records in `[from, end)`, then wakes the pulls waiting on the queues that got
/// messages (also when the round stops early: what it dispatched is readable).
fn reput(inner: &Inner, from: u64, end: u64) -> Result<Reput, StoreError> {
    let mut round = Round::default();
    let result = reput_in(inner, from, end, &mut round);
    round.wake(inner);
    result
}

fn reput_in(inner: &Inner, mut from: u64, end: u64, round: &mut Round) -> Result<Reput, StoreError> {
    let min = inner.commit_log.min_offset();
    if from < min {
        from = min;
        inner.reput_from.store(from, Ordering::Release);
    }
    while from < end {
        let Some(f) = inner.commit_log.files().find(from) else { break };
        let Some(data) = f.slice_from((from - f.file_from_offset()) as usize) else { break };
        let limit = ((end - from) as usize).min(data.len());
        let data = &data[..limit];
        let mut pos = 0usize;
        let mut next_file = false;
        while pos < data.len() {
            match record::check(&data[pos..], false) {
                RecordCheck::Record(d) => {
                    dispatch_in(inner, &d, round)?;
                    pos += d.size as usize;
                    inner.reput_from.store(from + pos as u64, Ordering::Release);
                    round.records += 1;
                    if round.records == WAKE_EVERY {
                        round.wake(inner);
                    }
                }
                RecordCheck::Blank => {
                    next_file = true;
                    break;
                }
                RecordCheck::Truncated { needed } => {
                    let at = from + pos as u64;
                    // A record never spans segments: one that would is damage, not a wait.
                    if at - f.file_from_offset() + needed as u64 > f.size() as u64 {
                        return Err(StoreError::NotWritable(format!(
                            "unreadable CommitLog record at offset {at} (its size {needed} runs past its segment)"
                        )));
                    }
                    return Ok(Reput::AwaitingRestOfRecord);
                }
                RecordCheck::Invalid(why) => {
                    // The writer publishes whole records, so this is damage, not a race.
                    return Err(StoreError::NotWritable(format!(
                        "unreadable CommitLog record at offset {} ({why})",
                        from + pos as u64
                    )));
                }
            }
        }
        if next_file {
            from = f.file_from_offset() + f.size() as u64;
            inner.reput_from.store(from, Ordering::Release);
        } else {
            from += pos as u64;
            if pos == 0 {
                break;
            }
        }
    }
    Ok(Reput::Done)
}
