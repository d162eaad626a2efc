//! The v2 batches a fetch hands out, rebuilt from stored messages (one stored message per
//! record): one batch per run of consecutive offsets of the same kind, so that a consumer can
//! judge each batch by its header alone, as Kafka's own batches allow.
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
//! May import: `kafka::records` (the writer), `core::txn` (the property names), `model`.

use bytes::{Bytes, BytesMut};

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
    records: u64,
}

impl Default for Batches {
    fn default() -> Self {
        Self { out: BytesMut::new(), run: Vec::new(), base: 0, kind: Kind::Plain, records: 0 }
    }
}

impl Batches {
    /// Adds the record at `offset`: it joins the current run if it follows it and is of the
    /// same kind (a control record always stands alone).
    pub fn push(&mut self, offset: i64, kind: Kind, record: Record) {
        let follows = offset == self.base + self.run.len() as i64;
        let joins = follows && kind == self.kind && !matches!(kind, Kind::Control { .. });
        if !self.run.is_empty() && !joins {
            self.flush();
        }
        if self.run.is_empty() {
            self.base = offset;
            self.kind = kind;
        }
        self.run.push(record);
    }

    fn flush(&mut self) {
        records::write_batch_as(&mut self.out, self.base, &self.run, self.kind.header());
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

#[cfg(test)]
#[path = "batches_tests.rs"]
mod tests;
