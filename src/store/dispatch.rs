//! The dispatcher (`ReputMessageService`): follows the CommitLog up to the confirmed end (the
//! flushed end under SYNC_FLUSH, the written end otherwise), appends ConsumeQueue units, builds
//! the index, and tells the arrival listener (long polling) about the queues that got messages.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::{error, warn};

use super::commit_log::record::{self, DispatchRequest, RecordCheck};
use super::consume_queue::{ConsumeQueue, CqUnit};
use super::state::Inner;
use super::StoreError;
use crate::model::message::{self, sys_flag};
use crate::model::name::{is_path_component, shown};

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
    // A topic no queue can be made for (shipped by a master, or written by an older build): the
    // record stays in the CommitLog, reaches no queue and no index, and the dispatcher goes on.
    if !is_path_component(&d.topic) || d.queue_id < 0 {
        skip(inner, d, &StoreError::IllegalTopic(format!("{}/{}", shown(&d.topic), d.queue_id)));
        return Ok(());
    }
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

/// Counts a record the dispatcher leaves out of the queues and says so: each of the first
/// [`SKIPS_LOGGED`] in full, then every 1000th (a flood of them must not flood the log).
fn skip(inner: &Inner, d: &DispatchRequest, why: &StoreError) {
    let n = inner.skipped_records.fetch_add(1, Ordering::Relaxed) + 1;
    if n <= SKIPS_LOGGED || n.is_multiple_of(1000) {
        warn!(
            offset = d.commit_log_offset,
            size = d.size,
            skipped = n,
            error = %why,
            "CommitLog record left out of the consume queues; it stays in the CommitLog"
        );
    }
}

const SKIPS_LOGGED: u64 = 100;

/// How often the dispatcher tries one record whose dispatch fails (Java's
/// `putMessagePositionInfoWrapper` tries 30 times, a second apart) before it leaves it out.
const DISPATCH_TRIES: u32 = if cfg!(test) { 3 } else { 30 };

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
    // The offset whose dispatch failed last, and how often in a row.
    let mut failing = (u64::MAX, 0u32);
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
                let at = inner.reput_from.load(Ordering::Acquire);
                failing = if failing.0 == at { (at, failing.1 + 1) } else { (at, 1) };
                if failing.1 >= DISPATCH_TRIES && skip_record_at(inner, at, &e) {
                    failing = (u64::MAX, 0);
                    continue;
                }
                error!(error = %e, offset = at, tries = failing.1, "dispatch failed; retrying in 1 s");
                inner.sleep_while_running(Duration::from_secs(1));
            }
        }
    }
}

/// Leaves the whole record at `at` out of the queues after its dispatch failed
/// [`DISPATCH_TRIES`] times; false when there is no whole record there (damage is not skipped:
/// its size cannot be trusted).
fn skip_record_at(inner: &Inner, at: u64, why: &StoreError) -> bool {
    let Some(f) = inner.commit_log.files().find(at) else { return false };
    let Some(data) = f.slice_from((at - f.file_from_offset()) as usize) else { return false };
    match record::check(&data, false) {
        RecordCheck::Record(d) if d.size > 0 => {
            skip(inner, &d, why);
            inner.reput_from.store(at + d.size as u64, Ordering::Release);
            true
        }
        _ => false,
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::model::message::MessageToStore;
    use crate::store::test_support::{message, small_config};
    use crate::store::MessageStore;

    fn msg(topic: &str) -> MessageToStore {
        message(topic, bytes::Bytes::from_static(b"m"), String::new())
    }

    /// A record whose queue cannot be made (a file stands where its directory goes) is tried
    /// DISPATCH_TRIES times, then left out; the records after it reach their queues.
    #[tokio::test]
    async fn a_record_whose_queue_cannot_be_made_is_left_out_after_its_tries() {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(small_config(dir.path())).unwrap();
        std::fs::write(dir.path().join("consumequeue").join("CLASH"), b"not a directory").unwrap();
        assert!(store.put_messages(&[msg("CLASH")], true).await.is_ok());
        assert!(store.put_messages(&[msg("AFTER")], true).await.is_ok());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while store.max_offset_in_queue("AFTER", 0) < 1 {
            assert!(std::time::Instant::now() < deadline, "the dispatcher stayed on the failing record");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(store.skipped_records(), 1);
        assert_eq!(store.max_offset_in_queue("CLASH", 0), 0);
        store.shutdown().unwrap();
    }
}
