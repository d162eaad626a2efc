//! Idempotent producers: InitProducerId hands out producer ids from a persisted counter
//! (`config/kafkaProducerId.json`, advanced a block of 1000 at a time, so ids are never reused
//! across restarts), and each (producer id, partition) keeps its last 5 batches' sequence
//! ranges: a replayed batch gets its original offset, a gap OUT_OF_ORDER_SEQUENCE_NUMBER
//! (Kafka's `ProducerStateEntry` / `ProducerAppendInfo`). Sequence state lives in memory: after
//! a restart a producer is unknown, and Kafka accepts any sequence from an unknown producer.
//!
//! Bounded: a (producer, partition) entry is forgotten `kafkaProducerIdExpirationMs` after its
//! last write (Kafka's producer.id.expiration.ms, 1 day), swept at most once a minute; and a
//! batch may only carry an id this broker handed out (below the counter), else
//! UNKNOWN_PRODUCER_ID, so a client cannot grow the state with made-up ids. The methods take
//! `now` (ms) so that tests drive the clock.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use serde::{Deserialize, Serialize};
use tracing::warn;

use super::api::error;
use super::api::{reply, Reply, Request};
use super::Kafka;

const BLOCK: i64 = 1000;
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`.
const RETAINED: usize = 5;
/// How often expired entries are swept (at most).
const SWEEP_EVERY_MS: u64 = 60_000;
/// Errors.UNKNOWN_PRODUCER_ID.
pub const UNKNOWN_PRODUCER_ID: i16 = 59;

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct IdFile {
    next_block: i64,
}

#[derive(Default)]
struct Entry {
    /// When the producer last wrote to this partition (ms).
    last_write: u64,
    epoch: i16,
    /// (first sequence, last sequence, base offset, CommitLog end offset), oldest first.
    batches: VecDeque<(i32, i32, i64, u64)>,
}

struct State {
    next: i64,
    block_end: i64,
    entries: HashMap<(i64, String, i32), Entry>,
    last_sweep: u64,
}

pub struct ProducerIds {
    path: PathBuf,
    expiration_ms: u64,
    state: Mutex<State>,
}

/// An idempotent batch's identity: producer id, epoch and its sequence range.
#[derive(Clone, Copy, Debug)]
pub struct BatchSeq {
    pub pid: i64,
    pub epoch: i16,
    pub first: i32,
    pub last: i32,
}

/// What to do with an idempotent batch.
#[derive(Debug, PartialEq)]
pub enum SeqCheck {
    Append,
    /// Already stored: answer with its base offset once the bytes up to `end` (its CommitLog end
    /// offset) meet the request's flush and replica conditions; store nothing.
    Duplicate {
        offset: i64,
        end: u64,
    },
    Refuse(i16, String),
}

impl ProducerIds {
    pub fn open(path: &Path, expiration_ms: u64) -> Result<Self, String> {
        let file = crate::persist::load(path, |b| serde_json::from_slice::<IdFile>(b).map_err(|e| e.to_string()))?
            .unwrap_or_default();
        let next = file.next_block.max(0);
        let state = State { next, block_end: next, entries: HashMap::new(), last_sweep: 0 };
        Ok(Self { path: path.to_owned(), expiration_ms, state: Mutex::new(state) })
    }

    /// A new producer id; `None` when the counter cannot be persisted.
    pub fn allocate(&self) -> Option<i64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.next >= s.block_end {
            let end = s.next + BLOCK;
            let bytes = serde_json::to_vec(&IdFile { next_block: end }).ok()?;
            if let Err(e) = crate::persist::write_atomically(&self.path, &bytes) {
                warn!(file = %self.path.display(), error = %e, "cannot persist the Kafka producer id counter");
                return None;
            }
            s.block_end = end;
        }
        s.next += 1;
        Some(s.next - 1)
    }

    /// An id this broker handed out, then Kafka's duplicate check, then the epoch and sequence
    /// checks. An expired entry counts as absent.
    pub fn check(&self, seq: BatchSeq, topic: &str, partition: i32, now: u64) -> SeqCheck {
        let BatchSeq { pid, epoch, first, last } = seq;
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if pid >= s.next {
            return SeqCheck::Refuse(
                UNKNOWN_PRODUCER_ID,
                format!("producer id {pid} was not handed out by InitProducerId on this broker"),
            );
        }
        let live = |e: &&Entry| now.saturating_sub(e.last_write) <= self.expiration_ms;
        let Some(e) = s.entries.get(&(pid, topic.to_owned(), partition)).filter(live) else {
            return SeqCheck::Append;
        };
        if e.epoch == epoch {
            if let Some((_, _, offset, end)) = e.batches.iter().find(|(f, l, _, _)| *f == first && *l == last) {
                return SeqCheck::Duplicate { offset: *offset, end: *end };
            }
        }
        if epoch < e.epoch {
            return SeqCheck::Refuse(
                error::INVALID_PRODUCER_EPOCH,
                format!("producer {pid} epoch {epoch} is older than {}", e.epoch),
            );
        }
        if epoch > e.epoch {
            return if first == 0 {
                SeqCheck::Append
            } else {
                SeqCheck::Refuse(
                    error::OUT_OF_ORDER_SEQUENCE_NUMBER,
                    format!("new epoch {epoch} of producer {pid} starts at sequence {first}, not 0"),
                )
            };
        }
        let last_seq = e.batches.back().map_or(-1, |b| b.1);
        let expected = if last_seq == i32::MAX { 0 } else { last_seq + 1 };
        if first == expected {
            SeqCheck::Append
        } else {
            SeqCheck::Refuse(
                error::OUT_OF_ORDER_SEQUENCE_NUMBER,
                format!("producer {pid} sent sequence {first} on {topic}-{partition}, expected {expected}"),
            )
        }
    }

    /// Remembers an appended batch: its base queue offset and CommitLog end offset.
    pub fn appended(&self, seq: BatchSeq, topic: &str, partition: i32, offset: i64, end: u64, now: u64) {
        let BatchSeq { pid, epoch, first, last } = seq;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if now.saturating_sub(s.last_sweep) >= SWEEP_EVERY_MS.min(self.expiration_ms) {
            let expiration = self.expiration_ms;
            s.entries.retain(|_, e| now.saturating_sub(e.last_write) <= expiration);
            s.last_sweep = now;
        }
        let e = s.entries.entry((pid, topic.to_owned(), partition)).or_default();
        let expired = now.saturating_sub(e.last_write) > self.expiration_ms;
        e.last_write = now;
        if e.epoch != epoch || expired {
            e.epoch = epoch;
            e.batches.clear();
        }
        if e.batches.len() == RETAINED {
            e.batches.pop_front();
        }
        e.batches.push_back((first, last, offset, end));
    }

    /// The producers with live state on (topic, partition), by id: (producer id, epoch, last
    /// sequence, last write ms), for DescribeProducers.
    pub fn active(&self, topic: &str, partition: i32, now: u64) -> Vec<(i64, i16, i32, u64)> {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<_> = s
            .entries
            .iter()
            .filter(|((_, t, p), e)| {
                t == topic && *p == partition && now.saturating_sub(e.last_write) <= self.expiration_ms
            })
            .map(|((pid, _, _), e)| (*pid, e.epoch, e.batches.back().map_or(-1, |b| b.1), e.last_write))
            .collect();
        out.sort_unstable();
        out
    }

    /// (producer, partition) entries held: what a client's writes have made the broker keep.
    pub fn tracked(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).entries.len()
    }
}

/// A null transactional id always gets a new producer id with epoch 0 (a transactional one is
/// `txn.rs`'s).
pub fn init_producer_id(k: &Kafka, req: &Request, r: InitProducerIdRequest) -> Reply {
    let mut resp = InitProducerIdResponse::default().with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
    if (r.producer_id.0 == -1) != (r.producer_epoch == -1) {
        return reply(req, &resp.with_error_code(error::INVALID_REQUEST));
    }
    match k.producers.allocate() {
        Some(id) => {
            resp = resp.with_producer_id(ProducerId(id)).with_producer_epoch(0);
            reply(req, &resp.with_error_code(error::NONE))
        }
        None => reply(req, &resp.with_error_code(error::COORDINATOR_NOT_AVAILABLE)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400_000;

    fn b(pid: i64, epoch: i16, first: i32, last: i32) -> BatchSeq {
        BatchSeq { pid, epoch, first, last }
    }

    #[test]
    fn ids_survive_a_restart_without_reuse_and_sequences_follow_kafka() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kafkaProducerId.json");
        let p = ProducerIds::open(&path, DAY).unwrap();
        assert_eq!((p.allocate(), p.allocate()), (Some(0), Some(1)));
        let again = ProducerIds::open(&path, DAY).unwrap();
        assert_eq!(again.allocate(), Some(BLOCK), "a restart starts past the persisted block");

        assert_eq!(p.check(b(0, 0, 0, 4), "T", 0, 0), SeqCheck::Append);
        p.appended(b(0, 0, 0, 4), "T", 0, 100, 0, 0);
        assert_eq!(
            p.check(b(0, 0, 0, 4), "T", 0, 0),
            SeqCheck::Duplicate { offset: 100, end: 0 },
            "a replay returns the first offset"
        );
        assert_eq!(p.check(b(0, 0, 5, 9), "T", 0, 0), SeqCheck::Append);
        assert!(matches!(p.check(b(0, 0, 7, 9), "T", 0, 0), SeqCheck::Refuse(error::OUT_OF_ORDER_SEQUENCE_NUMBER, _)));
        assert!(matches!(p.check(b(0, 1, 3, 9), "T", 0, 0), SeqCheck::Refuse(error::OUT_OF_ORDER_SEQUENCE_NUMBER, _)));
        assert_eq!(p.check(b(0, 1, 0, 0), "T", 0, 0), SeqCheck::Append, "a new epoch starts at 0");
        p.appended(b(0, 1, 0, 0), "T", 0, 105, 0, 0);
        assert!(matches!(p.check(b(0, 0, 1, 1), "T", 0, 0), SeqCheck::Refuse(error::INVALID_PRODUCER_EPOCH, _)));
        assert_eq!(p.check(b(0, 0, 42, 42), "T", 1, 0), SeqCheck::Append, "unknown partition: any sequence");
        for i in 1..=6 {
            p.appended(b(0, 1, i, i), "T", 0, 105 + i64::from(i), 0, 0);
        }
        assert_eq!(p.check(b(0, 1, 2, 2), "T", 0, 0), SeqCheck::Duplicate { offset: 107, end: 0 });
        assert_eq!(
            p.check(b(0, 1, 1, 1), "T", 0, 0),
            SeqCheck::Refuse(
                error::OUT_OF_ORDER_SEQUENCE_NUMBER,
                "producer 0 sent sequence 1 on T-0, expected 7".into()
            ),
            "only the last 5 batches are remembered"
        );
    }

    /// Before the fix: any producer id was accepted and its state kept for ever, so fresh ids
    /// grew the map without bound.
    #[test]
    fn made_up_ids_are_refused_and_state_expires_after_its_last_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = ProducerIds::open(&dir.path().join("kafkaProducerId.json"), DAY).unwrap();
        let refused = p.check(b(7, 0, 0, 0), "T", 0, 0);
        assert!(matches!(refused, SeqCheck::Refuse(UNKNOWN_PRODUCER_ID, _)), "{refused:?}");
        assert!(matches!(p.check(b(i64::MAX, 0, 0, 0), "T", 0, 0), SeqCheck::Refuse(UNKNOWN_PRODUCER_ID, _)));
        let ids: Vec<i64> = (0..3000).map(|_| p.allocate().unwrap()).collect();
        for (i, pid) in ids.iter().enumerate() {
            let now = i as u64 * 60_000; // one new producer a minute, each writing once
            assert_eq!(p.check(b(*pid, 0, 0, 0), "T", 0, now), SeqCheck::Append);
            p.appended(b(*pid, 0, 0, 0), "T", 0, i as i64, 0, now);
        }
        assert!((1440..=1442).contains(&p.tracked()), "only the last day's producers are kept: {}", p.tracked());
        // A producer silent for more than a day is unknown again: any sequence is accepted.
        let late = 3000 * 60_000 + DAY + 1;
        assert_eq!(p.check(b(ids[2999], 0, 5, 5), "T", 0, late), SeqCheck::Append);
        p.appended(b(ids[2999], 0, 5, 5), "T", 0, 2000, 0, late);
        assert_eq!(p.tracked(), 1, "the sweep after a day's silence leaves only the writer");
        assert_eq!(p.check(b(ids[2999], 0, 5, 5), "T", 0, late), SeqCheck::Duplicate { offset: 2000, end: 0 });
    }
}
