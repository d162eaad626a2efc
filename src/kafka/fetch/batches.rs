//! The v2 batches a fetch hands out, rebuilt from stored messages (one stored message per
//! record): one batch per run of consecutive offsets of the same kind, so that a consumer can
//! judge each batch by its header alone, as Kafka's own batches allow; and of the same
//! compression codec (`KAFKA_CODEC`), compressed with it again (`kafka/deflate.rs`).
//!
//! ```text
//! stored message                              goes out as
//! no KAFKA_TXN / KAFKA_CONTROL               plain batch        producer id -1, attributes 0
//! KAFKA_TXN=true KAFKA_PID=p KAFKA_EPOCH=e   transactional      producer id p, epoch e, bit 4
//!                                            (a run breaks where (p, e) changes)
//! KAFKA_CONTROL=COMMIT|ABORT  (empty body)   control batch of its own, bits 4 + 5, producer p/e,
//!                                            key = i16 version 0, i16 type (0 abort, 1 commit),
//!                                            value = i16 version 0, i32 KAFKA_COORD_EPOCH
//! ```
//! The Java consumer and librdkafka skip a transactional batch whole when its producer is in the
//! fetch's aborted list and its ABORT marker is still ahead, and never show control batches: a
//! run must therefore never mix producers, transactional and plain records, or data and markers.
//! The properties are only read on queues that have held transactions ([`Kind::of`]).
//!
//! May import: `kafka::records` (the writer), `kafka::mapping` (the codec's property name),
//! `core::txn` (the property names), `model`.

use bytes::{Bytes, BytesMut};

use super::super::mapping::KAFKA_CODEC;
use super::super::records::{self, BatchHeader, Record};
use crate::core::txn::{KAFKA_CONTROL, KAFKA_COORD_EPOCH, KAFKA_EPOCH, KAFKA_PID, KAFKA_TXN};
use crate::model::message::property_value;

/// What kind of batch a stored message belongs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Plain,
    Transactional { producer_id: i64, epoch: i16 },
    Control { producer_id: i64, epoch: i16, commit: bool, coordinator_epoch: i32 },
}

impl Kind {
    /// Reads a stored message's transaction properties. A transactional flag without a producer
    /// id is plain (a committed reader sees such a record, too); unreadable numbers in a control
    /// record give -1 (consumers skip control batches whatever they hold).
    pub fn of(properties: &str) -> Self {
        let num = |name: &str| property_value(properties, name).and_then(|v| v.parse::<i64>().ok());
        let epoch = num(KAFKA_EPOCH).and_then(|e| i16::try_from(e).ok()).unwrap_or(-1);
        if let Some(control) = property_value(properties, KAFKA_CONTROL) {
            return Kind::Control {
                producer_id: num(KAFKA_PID).unwrap_or(-1),
                epoch,
                commit: control != "ABORT",
                coordinator_epoch: num(KAFKA_COORD_EPOCH).and_then(|e| i32::try_from(e).ok()).unwrap_or(-1),
            };
        }
        match num(KAFKA_PID) {
            Some(producer_id) if property_value(properties, KAFKA_TXN) == Some("true") => {
                Kind::Transactional { producer_id, epoch }
            }
            _ => Kind::Plain,
        }
    }

    fn header(self) -> BatchHeader {
        match self {
            Kind::Plain => BatchHeader::PLAIN,
            Kind::Transactional { producer_id, epoch } => BatchHeader::transactional(producer_id, epoch),
            Kind::Control { producer_id, epoch, .. } => BatchHeader::control(producer_id, epoch),
        }
    }

    /// The record a control message goes out as (its stored body is empty); `None` for data.
    pub fn control_record(self, timestamp: i64) -> Option<Record> {
        match self {
            Kind::Control { commit, coordinator_epoch, .. } => {
                Some(records::control_record(commit, coordinator_epoch, timestamp))
            }
            _ => None,
        }
    }
}

/// Batches written so far, and the run being gathered.
pub struct Batches {
    out: BytesMut,
    run: Vec<Record>,
    base: i64,
    kind: Kind,
    codec: i16,
    records: u64,
}

impl Default for Batches {
    fn default() -> Self {
        Self { out: BytesMut::new(), run: Vec::new(), base: 0, kind: Kind::Plain, codec: 0, records: 0 }
    }
}

/// The compression codec a stored record came with (`KAFKA_CODEC`, 1-4), else 0.
pub fn codec_of(properties: &str) -> i16 {
    property_value(properties, KAFKA_CODEC)
        .and_then(|c| c.parse::<i16>().ok())
        .filter(|c| (1..=4).contains(c))
        .unwrap_or(0)
}

impl Batches {
    /// Adds the record at `offset`, produced with compression `codec` (0 none): it joins the
    /// current run if it follows it and is of the same kind and codec (a control record always
    /// stands alone, uncompressed, as Kafka writes markers).
    pub fn push(&mut self, offset: i64, kind: Kind, codec: i16, record: Record) {
        let control = matches!(kind, Kind::Control { .. });
        let codec = if control { 0 } else { codec };
        let follows = offset == self.base + self.run.len() as i64;
        let joins = follows && kind == self.kind && codec == self.codec && !control;
        if !self.run.is_empty() && !joins {
            self.flush();
        }
        if self.run.is_empty() {
            self.base = offset;
            self.kind = kind;
            self.codec = codec;
        }
        self.run.push(record);
    }

    fn flush(&mut self) {
        let (out, base, run, header, codec) = (&mut self.out, self.base, &self.run, self.kind.header(), self.codec);
        if codec == 0 {
            records::write_batch_as(out, base, run, header);
        } else {
            cpu_work(|| records::write_batch_compressed(out, base, run, header, codec));
        }
        self.records += self.run.len() as u64;
        self.run.clear();
    }

    /// The batches, and how many records they hold.
    pub fn finish(mut self) -> (Bytes, u64) {
        if !self.run.is_empty() {
            self.flush();
        }
        (self.out.freeze(), self.records)
    }
}

/// Runs `f`, CPU work (compressing, inflating), so that on a multi-thread runtime the worker
/// first hands its other tasks to another thread (`block_in_place`); a current-thread runtime
/// (tests) runs it inline.
pub fn cpu_work<T>(f: impl FnOnce() -> T) -> T {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

#[cfg(test)]
#[path = "batches_tests.rs"]
mod tests;
