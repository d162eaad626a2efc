//! Record batches v2 (magic 2), read and written here rather than with the codec's record
//! types: those keep headers in a map, which drops repeated header keys Kafka allows.
//! Decompression is `inflate.rs`'s (capped), compression `deflate.rs`'s; CRC-32C the `crc32c` crate.
//!
//! ```text
//! baseOffset:i64 batchLength:i32 leaderEpoch:i32 magic:i8 crc:u32 | attributes:i16
//! lastOffsetDelta:i32 baseTimestamp:i64 maxTimestamp:i64 producerId:i64 producerEpoch:i16
//! baseSequence:i32 count:i32 records...        (CRC-32C covers from attributes to the end)
//! record: len:varint attrs:i8 tsDelta:varlong offDelta:varint key value headers[key value]
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Kafka error codes used by the front end (`Errors.java`).
pub use super::api::error;

pub const HEADER_LEN: usize = 61;
const ATTR_COMPRESSION: i16 = 0x07;
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
pub const ATTR_CONTROL: i16 = 0x20;

/// A batch's header and its records' bytes (inflated).
#[derive(Debug)]
pub struct Batch {
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub count: i32,
    pub records: Bytes,
}

/// One record, headers in order, duplicates kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

pub use super::api::Refusal;

fn refuse<T>(code: i16, why: impl Into<String>) -> Result<T, Refusal> {
    Err((code, why.into()))
}

/// Whether the batch's records are compressed (inflating them is blocking work).
pub fn is_compressed(data: &[u8]) -> bool {
    data.get(21..23).is_some_and(|a| i16::from_be_bytes([a[0], a[1]]) & ATTR_COMPRESSION != 0)
}

/// The single v2 batch of a produce partition (Produce v3+ carries exactly one), checked as
/// Kafka's `LogValidator` checks it, inflated up to `max_inflated` bytes.
pub fn parse_one_batch(mut data: Bytes, max_inflated: usize) -> Result<Batch, Refusal> {
    if data.len() < HEADER_LEN {
        return refuse(
            error::CORRUPT_MESSAGE,
            format!("record batch of {} bytes is shorter than its header", data.len()),
        );
    }
    let magic = data[16];
    if magic != 2 {
        return refuse(
            error::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            format!("record batch magic {magic}: only v2 is accepted"),
        );
    }
    let base_offset = (&data[0..8]).get_i64();
    let batch_len = (&data[8..12]).get_i32();
    let total = usize::try_from(batch_len).ok().map(|l| l + 12);
    match total {
        Some(t) if t == data.len() => {}
        Some(t) if t < data.len() => {
            return refuse(error::INVALID_RECORD, "a produce partition must hold exactly one record batch")
        }
        _ => return refuse(error::CORRUPT_MESSAGE, format!("record batch length {batch_len} exceeds the data")),
    }
    let crc = (&data[17..21]).get_u32();
    if crc32c::crc32c(&data[21..]) != crc {
        return refuse(error::CORRUPT_MESSAGE, "record batch CRC-32C mismatch");
    }
    if base_offset != 0 {
        return refuse(error::INVALID_RECORD, format!("record batch base offset {base_offset}, must be 0"));
    }
    let mut h = &data[21..HEADER_LEN];
    let attributes = h.get_i16();
    let last_offset_delta = h.get_i32();
    let base_timestamp = h.get_i64();
    let _max_timestamp = h.get_i64();
    let producer_id = h.get_i64();
    let producer_epoch = h.get_i16();
    let base_sequence = h.get_i32();
    let count = h.get_i32();
    if attributes & ATTR_CONTROL != 0 {
        return refuse(error::INVALID_RECORD, "control batches may not be produced by clients");
    }
    if attributes & ATTR_TRANSACTIONAL != 0 && producer_id < 0 {
        return refuse(error::INVALID_RECORD, "transactional batch without a producer id");
    }
    if count <= 0 || i64::from(last_offset_delta) + 1 != i64::from(count) {
        return refuse(
            error::INVALID_RECORD,
            format!("record count {count} does not match last offset delta {last_offset_delta}"),
        );
    }
    if producer_id >= 0 && base_sequence < 0 {
        return refuse(error::INVALID_RECORD, "idempotent batch without a base sequence");
    }
    let body = data.split_off(HEADER_LEN);
    let records = match attributes & ATTR_COMPRESSION {
        0 => body,
        codec => Bytes::from(super::inflate::inflate(codec, &body, max_inflated)?),
    };
    Ok(Batch {
        attributes,
        last_offset_delta,
        base_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
        records,
    })
}

/// The records of `batch`, in order.
pub fn records(batch: &Batch) -> Result<Vec<Record>, Refusal> {
    let mut r = batch.records.clone();
    let mut out = Vec::with_capacity(usize::try_from(batch.count).unwrap_or(0).min(1 << 16));
    let bad = |what: &str| (error::CORRUPT_MESSAGE, format!("record {what} does not decode"));
    for i in 0..batch.count {
        let len = varint(&mut r).ok_or_else(|| bad("length"))?;
        let len = usize::try_from(len).map_err(|_| bad("length"))?;
        if r.remaining() < len {
            return Err(bad("body"));
        }
        let mut rec = r.split_to(len);
        let parsed = (|| {
            rec.try_get_i8().ok()?;
            let ts_delta = varlong(&mut rec)?;
            let offset_delta = varint(&mut rec)?;
            let key = bytes_field(&mut rec)?;
            let value = bytes_field(&mut rec)?;
            let n = varint(&mut rec)?;
            let mut headers = Vec::with_capacity(usize::try_from(n).ok()?.min(256));
            for _ in 0..n {
                let k = bytes_field(&mut rec)??;
                headers.push((k, bytes_field(&mut rec)?));
            }
            Some((ts_delta, offset_delta, key, value, headers))
        })();
        let (ts_delta, offset_delta, key, value, headers) = parsed.ok_or_else(|| bad("fields"))?;
        if offset_delta != i {
            return Err((error::INVALID_RECORD, format!("record {i} has offset delta {offset_delta}")));
        }
        if headers.iter().any(|(k, _)| std::str::from_utf8(k).is_err()) {
            return Err((error::INVALID_RECORD, "a header key is not UTF-8".into()));
        }
        out.push(Record { timestamp: batch.base_timestamp.wrapping_add(ts_delta), key, value, headers });
    }
    Ok(out)
}

/// A nullable byte field: varint length (-1 = null), then the bytes.
fn bytes_field(r: &mut Bytes) -> Option<Option<Bytes>> {
    let len = varint(r)?;
    if len < 0 {
        return Some(None);
    }
    let len = usize::try_from(len).ok()?;
    (r.remaining() >= len).then(|| Some(r.split_to(len)))
}

fn varlong(r: &mut Bytes) -> Option<i64> {
    let mut v: u64 = 0;
    for shift in (0..70).step_by(7) {
        let b = r.try_get_u8().ok()?;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some((v >> 1) as i64 ^ -((v & 1) as i64));
        }
    }
    None
}

fn varint(r: &mut Bytes) -> Option<i32> {
    varlong(r).and_then(|v| i32::try_from(v).ok())
}

fn put_varlong(out: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    out.put_u8(z as u8);
}

fn put_bytes_field(out: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.put_slice(b);
        }
    }
}

/// What a written batch says about its producer: none (`-1`s, attributes 0), a transactional
/// producer's batch, or a control batch (an end-transaction marker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub attributes: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

impl BatchHeader {
    /// A batch of no producer (plain or idempotent records as ferrocket keeps them).
    pub const PLAIN: Self = Self { attributes: 0, producer_id: -1, producer_epoch: -1, base_sequence: -1 };

    /// A transactional producer's batch (the sequence is not kept: consumers do not read it).
    pub fn transactional(producer_id: i64, producer_epoch: i16) -> Self {
        Self { attributes: ATTR_TRANSACTIONAL, producer_id, producer_epoch, base_sequence: -1 }
    }

    /// A control batch: always transactional, as Kafka writes end-transaction markers.
    pub fn control(producer_id: i64, producer_epoch: i16) -> Self {
        Self { attributes: ATTR_TRANSACTIONAL | ATTR_CONTROL, producer_id, producer_epoch, base_sequence: -1 }
    }
}

/// Kafka's `ControlRecordType` ids.
pub const CONTROL_ABORT: i16 = 0;
pub const CONTROL_COMMIT: i16 = 1;

/// The record of an end-transaction marker (`EndTransactionMarker`): key = version 0 + type
/// (0 abort, 1 commit), value = version 0 + coordinator epoch, no headers.
pub fn control_record(commit: bool, coordinator_epoch: i32, timestamp: i64) -> Record {
    let mut key = BytesMut::with_capacity(4);
    key.put_i16(0);
    key.put_i16(if commit { CONTROL_COMMIT } else { CONTROL_ABORT });
    let mut value = BytesMut::with_capacity(6);
    value.put_i16(0);
    value.put_i32(coordinator_epoch);
    Record { timestamp, key: Some(key.freeze()), value: Some(value.freeze()), headers: Vec::new() }
}

/// Writes an uncompressed v2 batch of `records` taking offsets `base_offset..`, CreateTime.
pub fn write_batch(out: &mut BytesMut, base_offset: i64, records: &[Record]) {
    write_batch_as(out, base_offset, records, BatchHeader::PLAIN);
}

/// [`write_batch`] with the producer fields and attributes of `header`.
pub fn write_batch_as(out: &mut BytesMut, base_offset: i64, records: &[Record], header: BatchHeader) {
    let start = out.len();
    let base_ts = records.iter().map(|r| r.timestamp).min().unwrap_or(0);
    let max_ts = records.iter().map(|r| r.timestamp).max().unwrap_or(0);
    out.put_i64(base_offset);
    out.put_i32(0); // length, patched
    out.put_i32(0); // partition leader epoch
    out.put_i8(2);
    out.put_u32(0); // crc, patched
    out.put_i16(header.attributes);
    out.put_i32(records.len().saturating_sub(1) as i32);
    out.put_i64(base_ts);
    out.put_i64(max_ts);
    out.put_i64(header.producer_id);
    out.put_i16(header.producer_epoch);
    out.put_i32(header.base_sequence);
    out.put_i32(records.len() as i32);
    let mut rec = BytesMut::new();
    for (i, r) in records.iter().enumerate() {
        rec.clear();
        rec.put_i8(0);
        put_varlong(&mut rec, r.timestamp - base_ts);
        put_varlong(&mut rec, i as i64);
        put_bytes_field(&mut rec, r.key.as_deref());
        put_bytes_field(&mut rec, r.value.as_deref());
        put_varlong(&mut rec, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_bytes_field(&mut rec, Some(k));
            put_bytes_field(&mut rec, v.as_deref());
        }
        put_varlong(out, rec.len() as i64);
        out.put_slice(&rec);
    }
    let len = (out.len() - start - 12) as i32;
    out[start + 8..start + 12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&out[start + 21..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
}

/// [`write_batch_as`] with the records compressed by Kafka codec `codec` (1-4, the attributes
/// say which); uncompressed when `codec` is 0 or compressing fails.
pub fn write_batch_compressed(
    out: &mut BytesMut,
    base_offset: i64,
    records: &[Record],
    header: BatchHeader,
    codec: i16,
) {
    if codec == 0 {
        return write_batch_as(out, base_offset, records, header);
    }
    let mut plain = BytesMut::new();
    write_batch_as(&mut plain, base_offset, records, header);
    let Some(packed) = super::deflate::deflate(codec, &plain[HEADER_LEN..]) else {
        out.extend_from_slice(&plain);
        return;
    };
    let start = out.len();
    out.extend_from_slice(&plain[..HEADER_LEN]);
    out.extend_from_slice(&packed);
    let len = (out.len() - start - 12) as i32;
    out[start + 8..start + 12].copy_from_slice(&len.to_be_bytes());
    let attributes = (header.attributes & !ATTR_COMPRESSION) | (codec & ATTR_COMPRESSION);
    out[start + 21..start + 23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&out[start + 21..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
}

/// The compression codec of a batch's attributes (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
pub fn codec(attributes: i16) -> i16 {
    attributes & ATTR_COMPRESSION
}

/// Headers in Kafka's record encoding (count, then key/value pairs), for keeping a list that
/// properties cannot hold (duplicates, binary, null values) in one reserved property.
pub fn encode_headers(headers: &[(Bytes, Option<Bytes>)]) -> Bytes {
    let mut out = BytesMut::new();
    put_varlong(&mut out, headers.len() as i64);
    for (k, v) in headers {
        put_bytes_field(&mut out, Some(k));
        put_bytes_field(&mut out, v.as_deref());
    }
    out.freeze()
}

pub fn decode_headers(mut b: Bytes) -> Option<Vec<(Bytes, Option<Bytes>)>> {
    let n = varint(&mut b)?;
    let mut out = Vec::new();
    for _ in 0..n {
        let k = bytes_field(&mut b)??;
        out.push((k, bytes_field(&mut b)?));
    }
    Some(out)
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
