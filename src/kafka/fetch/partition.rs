//! One partition of a fetch: the queue's records from the fetch offset, as v2 batches
//! (`batches.rs`), up to the byte limits and, for `isolation_level=1` (read_committed), up to
//! the last stable offset, with the aborted transactions of the returned range (Kafka's
//! `LocalLog.read` with `FetchIsolation.TXN_COMMITTED`: the consumer filters, the broker only
//! bounds the read and lists the aborts). Both isolation levels are answered the LSO.
//!
//! ```text
//! offset:  log start ... [fetched ...)  LSO (first offset of the earliest open transaction)
//!                                        ... high watermark (read_uncommitted reads up to here)
//! ```
//! A queue that never held a transaction (`TxnMarkers::has_transactions`) costs one look-up:
//! its LSO is the high watermark and no property is read.
//!
//! May import: `kafka` (records, mapping, names, the door's state), `core::txn`, `store`, `model`.

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{AbortedTransaction, PartitionData};
use kafka_protocol::messages::ProducerId;

use super::super::api::error;
use super::super::{mapping, names, records, Kafka};
use super::batches::{codec_of, cpu_work, Batches, Kind};
use crate::model::message::{sys_flag, StoredMessage};
use crate::model::perm;
use crate::store::commit_log::record;
use crate::store::AcceptAll;

/// Kafka's `fetch.max.bytes`: the most a response carries, whatever the client asks.
pub const FETCH_MAX_BYTES: usize = 55 * 1024 * 1024;

/// One partition's answer: records from `offset`, at most `limit` bytes unless `first`; and how
/// many records it holds. `read_committed` stops at the LSO and lists the aborted transactions.
pub fn read_partition(
    k: &Kafka,
    topic: &str,
    partition: i32,
    offset: i64,
    limit: usize,
    first: bool,
    read_committed: bool,
) -> (PartitionData, u64) {
    let s = &k.shared;
    let mut out = PartitionData::default().with_partition_index(partition);
    if let Err((code, _)) = names::check_topic(&s.config, topic) {
        return (out.with_error_code(code).with_high_watermark(-1), 0);
    }
    let Some(view) = s.topics.view(topic).filter(|v| partition >= 0 && partition < v.read_queue_nums) else {
        return (out.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION).with_high_watermark(-1), 0);
    };
    if !perm::is_readable(view.perm) {
        return (out.with_error_code(error::TOPIC_AUTHORIZATION_FAILED).with_high_watermark(-1), 0);
    }
    let (min, max) = (s.store.min_offset_in_queue(topic, partition), s.store.max_offset_in_queue(topic, partition));
    let transactions = s.txn.has_transactions(topic, partition);
    let lso = if transactions { s.txn.last_stable_offset(topic, partition, max) } else { max };
    out = out.with_high_watermark(max).with_last_stable_offset(lso).with_log_start_offset(min);
    if offset < min || offset > max {
        return (out.with_error_code(error::OFFSET_OUT_OF_RANGE), 0);
    }
    let end = if read_committed { lso } else { max };
    let mut batches = Batches::default();
    let mut next = offset;
    let mut taken = 0usize;
    let mut last: Option<i64> = None;
    let inflate_cap = s.live.config().max_message_size;
    'read: while next < end {
        let room = if first && taken == 0 { usize::MAX } else { limit.saturating_sub(taken) };
        if room == 0 {
            break;
        }
        // The store always returns at least one message, however large.
        let got = s.store.get_message(topic, partition, next, 256, room.min(FETCH_MAX_BYTES), &AcceptAll);
        if got.messages.is_empty() {
            if got.next_begin_offset > next && got.next_begin_offset <= max {
                next = got.next_begin_offset; // a gap (deleted units): skip it
                continue;
            }
            break;
        }
        for slice in &got.messages {
            let Some(m) = record::decode(slice, false) else { continue };
            if m.queue_offset >= end {
                break 'read;
            }
            if (taken > 0 || !first) && taken + slice.len() > limit {
                break 'read;
            }
            let kind = if transactions {
                genuine(k, topic, partition, m.queue_offset, Kind::of(&m.properties))
            } else {
                Kind::Plain
            };
            // A body RocketMQ producers compressed goes out inflated (up to maxMessageSize): the
            // budget counts what is held, not what was stored, or small bombs fill a fetch.
            let rec = kind.control_record(m.born_timestamp).unwrap_or_else(|| out_record(&m, inflate_cap));
            taken += slice.len().max(rec.value.as_ref().map_or(0, Bytes::len));
            batches.push(m.queue_offset, kind, codec_of(&m.properties), rec);
            last = Some(m.queue_offset);
            next = m.queue_offset + 1;
        }
        next = next.max(got.next_begin_offset);
    }
    let (data, n_records) = batches.finish();
    if read_committed {
        // Kafka lists the aborted transactions overlapping what it returns (none if nothing).
        let aborted = match last {
            Some(last) if transactions => s.txn.aborted_between(topic, partition, offset, last + 1),
            _ => Vec::new(),
        };
        let aborted = aborted.into_iter().map(|a| {
            AbortedTransaction::default().with_producer_id(ProducerId(a.producer_id)).with_first_offset(a.first_offset)
        });
        out = out.with_aborted_transactions(Some(aborted.collect()));
    } else {
        out = out.with_aborted_transactions(None);
    }
    (out.with_records(Some(data)), n_records)
}

/// An ABORT marker the transaction state does not know goes out as a COMMIT marker, which
/// consumers ignore: anybody can store the marker properties through a RocketMQ send, and a
/// forged abort in the middle of an aborted transaction would make a read_committed consumer
/// drop that producer from its aborted set and show the rest of the transaction. A real abort
/// marker closes an aborted range before any read_committed fetch may read it (the LSO moves
/// in the same step).
fn genuine(k: &Kafka, topic: &str, partition: i32, offset: i64, kind: Kind) -> Kind {
    match kind {
        Kind::Control { producer_id, epoch, commit: false, coordinator_epoch } => {
            let known = k.shared.txn.aborted_between(topic, partition, offset, offset + 1);
            let real = known.iter().any(|a| a.producer_id == producer_id && a.last_offset == offset);
            Kind::Control { producer_id, epoch, commit: !real, coordinator_epoch }
        }
        other => other,
    }
}

/// The record a stored message goes out as. A body RocketMQ producers compressed is inflated
/// (up to `max`): CPU work ([`cpu_work`]).
fn out_record(m: &StoredMessage, max: usize) -> records::Record {
    if m.sys_flag & sys_flag::COMPRESSED != 0 {
        cpu_work(|| mapping::to_record(m, max))
    } else {
        mapping::to_record(m, max)
    }
}
