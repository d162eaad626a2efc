//! The CommitLog record, byte for byte as the Java broker writes it (`MessageExtEncoder`,
//! `CommitLog.checkMessageAndReturnSize`, `MessageDecoder.decode`).
//!
//! ```text
//!  0 totalSize:i32   4 magic:i32   8 bodyCrc:i32   12 queueId:i32   16 flag:i32
//! 20 queueOffset:i64 28 physicalOffset:i64         36 sysFlag:i32
//! 40 bornTimestamp:i64  48 bornHost (ip:4|16, port:i32)
//! .. storeTimestamp:i64    storeHost (ip:4|16, port:i32)
//! .. reconsumeTimes:i32    preparedTransactionOffset:i64
//! .. bodyLen:i32 body   topicLen:i8 (v1) | i16 (v2) topic   propertiesLen:i16 properties
//! blank (end of segment): size:i32  0xCBD43194:i32
//! ```
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;

use crate::model::message::{self, sys_flag, MessageToStore, StoredMessage};

pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;
pub const BLANK_MAGIC: i32 = 0xCBD4_3194_u32 as i32;
/// Room always left at a segment's end for the blank record.
pub const END_FILE_MIN_BLANK_LENGTH: usize = 8;

pub const QUEUE_OFFSET_POS: usize = 20;
pub const PHYSICAL_OFFSET_POS: usize = 28;
pub const SYSFLAG_POS: usize = 36;

/// What the dispatcher needs of one record (`DispatchRequest`); topic and properties borrowed
/// from the record's bytes (copied only if not UTF-8).
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchRequest<'a> {
    pub topic: Cow<'a, str>,
    pub queue_id: i32,
    pub commit_log_offset: i64,
    pub size: i32,
    pub tags_code: i64,
    pub store_timestamp: i64,
    pub queue_offset: i64,
    pub sys_flag: i32,
    pub prepared_transaction_offset: i64,
    pub properties: Cow<'a, str>,
}

impl DispatchRequest<'_> {
    pub fn keys(&self) -> Option<&str> {
        message::property_value(&self.properties, message::property::KEYS)
    }

    pub fn uniq_key(&self) -> Option<&str> {
        message::property_value(&self.properties, message::property::UNIQ_KEY)
    }
}

/// The result of checking the bytes at one position.
#[derive(Debug, PartialEq)]
pub enum RecordCheck<'a> {
    Record(DispatchRequest<'a>),
    /// The END_OF_FILE blank: continue at the next segment.
    Blank,
    /// The readable data ends inside the record (`needed` bytes from its start would hold it):
    /// a slave between two replication frames, or a torn tail after a crash.
    Truncated {
        needed: usize,
    },
    Invalid(&'static str),
}

fn host_len(v6: bool) -> usize {
    if v6 {
        20
    } else {
        8
    }
}

fn topic_is_v2(topic: &str) -> bool {
    topic.len() > 127
}

/// Bytes the record of `msg` will take.
pub fn record_len(msg: &MessageToStore) -> usize {
    let v2 = topic_is_v2(&msg.topic);
    4 + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + host_len(msg.born_host.is_ipv6())
        + 8
        + host_len(msg.store_host.is_ipv6())
        + 4
        + 8
        + 4
        + msg.body.len()
        + if v2 { 2 } else { 1 }
        + msg.topic.len()
        + 2
        + msg.properties.len()
}

/// Offsets, relative to the record's start, of fields filled in at append time.
#[derive(Clone, Copy, Debug)]
pub struct Patch {
    pub store_timestamp_pos: usize,
}

/// Encodes `msg` with queue offset, physical offset and store time left as zero; returns where
/// the store time goes. The caller checks limits first (topic ≤ 255 bytes, properties ≤ 32767).
pub fn encode(msg: &MessageToStore, out: &mut Vec<u8>) -> Patch {
    let total = record_len(msg);
    let v2 = topic_is_v2(&msg.topic);
    let mut flag = msg.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
    if msg.born_host.is_ipv6() {
        flag |= sys_flag::BORNHOST_V6;
    }
    if msg.store_host.is_ipv6() {
        flag |= sys_flag::STOREHOST_V6;
    }
    out.reserve(total);
    let start = out.len();
    out.extend_from_slice(&(total as i32).to_be_bytes());
    out.extend_from_slice(&(if v2 { MAGIC_V2 } else { MAGIC_V1 }).to_be_bytes());
    out.extend_from_slice(&((crc32fast::hash(&msg.body) & 0x7FFF_FFFF) as i32).to_be_bytes());
    out.extend_from_slice(&msg.queue_id.to_be_bytes());
    out.extend_from_slice(&msg.flag.to_be_bytes());
    out.extend_from_slice(&0i64.to_be_bytes());
    out.extend_from_slice(&0i64.to_be_bytes());
    out.extend_from_slice(&flag.to_be_bytes());
    out.extend_from_slice(&msg.born_timestamp.to_be_bytes());
    put_host(out, msg.born_host);
    let store_timestamp_pos = out.len() - start;
    out.extend_from_slice(&0i64.to_be_bytes());
    put_host(out, msg.store_host);
    out.extend_from_slice(&msg.reconsume_times.to_be_bytes());
    out.extend_from_slice(&msg.prepared_transaction_offset.to_be_bytes());
    out.extend_from_slice(&(msg.body.len() as i32).to_be_bytes());
    out.extend_from_slice(&msg.body);
    if v2 {
        out.extend_from_slice(&(msg.topic.len() as i16).to_be_bytes());
    } else {
        out.push(msg.topic.len() as u8);
    }
    out.extend_from_slice(msg.topic.as_bytes());
    out.extend_from_slice(&(msg.properties.len() as i16).to_be_bytes());
    out.extend_from_slice(msg.properties.as_bytes());
    Patch { store_timestamp_pos }
}

/// Fills in the fields known only at append time.
pub fn patch(record: &mut [u8], p: Patch, queue_offset: i64, physical_offset: i64, store_timestamp: i64) {
    record[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8].copy_from_slice(&queue_offset.to_be_bytes());
    record[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8].copy_from_slice(&physical_offset.to_be_bytes());
    record[p.store_timestamp_pos..p.store_timestamp_pos + 8].copy_from_slice(&store_timestamp.to_be_bytes());
}

/// The END_OF_FILE blank for a segment with `remaining` bytes left.
pub fn blank(remaining: usize) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(remaining as i32).to_be_bytes());
    b[4..].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
    b
}

fn put_host(out: &mut Vec<u8>, addr: SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => out.extend_from_slice(&ip.octets()),
        IpAddr::V6(ip) => out.extend_from_slice(&ip.octets()),
    }
    out.extend_from_slice(&i32::from(addr.port()).to_be_bytes());
}

/// A bounds-checked big-endian reader.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn i8(&mut self) -> Option<i8> {
        self.take(1).map(|b| b[0] as i8)
    }
    fn i16(&mut self) -> Option<i16> {
        self.take(2)?.try_into().ok().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.take(4)?.try_into().ok().map(i32::from_be_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take(8)?.try_into().ok().map(i64::from_be_bytes)
    }
    fn host(&mut self, v6: bool) -> Option<SocketAddr> {
        let ip: IpAddr = if v6 {
            <[u8; 16]>::try_from(self.take(16)?).ok()?.into()
        } else {
            <[u8; 4]>::try_from(self.take(4)?).ok()?.into()
        };
        let port = self.i32()?;
        Some(SocketAddr::new(ip, port as u16))
    }
}

/// The fields of a record, borrowed from the bytes it was read from (no copy of the body).
struct View<'a> {
    total_size: i32,
    magic: i32,
    body_crc: i32,
    queue_id: i32,
    flag: i32,
    queue_offset: i64,
    commit_log_offset: i64,
    sys_flag: i32,
    born_timestamp: i64,
    born_host: SocketAddr,
    store_timestamp: i64,
    store_host: SocketAddr,
    reconsume_times: i32,
    prepared_transaction_offset: i64,
    body: &'a [u8],
    topic: &'a [u8],
    properties: &'a [u8],
}

/// Parses the record at the start of `buf`. `None` if it is not a whole, valid record (blank
/// included); the body CRC is checked when `check_crc`.
fn view(buf: &[u8], check_crc: bool) -> Option<View<'_>> {
    let mut c = Cursor { buf, pos: 0 };
    let total_size = c.i32()?;
    let magic = c.i32()?;
    if magic != MAGIC_V1 && magic != MAGIC_V2 {
        return None;
    }
    let end = usize::try_from(total_size).ok().filter(|n| *n <= buf.len())?;
    let mut c = Cursor { buf: &buf[..end], pos: 8 };
    let body_crc = c.i32()?;
    let queue_id = c.i32()?;
    let flag = c.i32()?;
    let queue_offset = c.i64()?;
    let commit_log_offset = c.i64()?;
    let sys_flag_value = c.i32()?;
    let born_timestamp = c.i64()?;
    let born_host = c.host(sys_flag_value & sys_flag::BORNHOST_V6 != 0)?;
    let store_timestamp = c.i64()?;
    let store_host = c.host(sys_flag_value & sys_flag::STOREHOST_V6 != 0)?;
    let reconsume_times = c.i32()?;
    let prepared_transaction_offset = c.i64()?;
    let body_len = usize::try_from(c.i32()?).ok()?;
    let body = c.take(body_len)?;
    if check_crc && (crc32fast::hash(body) & 0x7FFF_FFFF) as i32 != body_crc {
        return None;
    }
    let topic_len = if magic == MAGIC_V2 { usize::try_from(c.i16()?).ok()? } else { c.i8()? as u8 as usize };
    let topic = c.take(topic_len)?;
    let props_len = usize::try_from(c.i16()?).ok()?;
    let properties = c.take(props_len)?;
    if c.pos != end {
        return None;
    }
    Some(View {
        total_size,
        magic,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        commit_log_offset,
        sys_flag: sys_flag_value,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body,
        topic,
        properties,
    })
}

/// Decodes the record at the start of `buf` completely. `None` if it is not a whole, valid
/// record (blank included).
pub fn decode(buf: &[u8], check_crc: bool) -> Option<StoredMessage> {
    let v = view(buf, check_crc)?;
    Some(StoredMessage {
        total_size: v.total_size,
        magic: v.magic,
        body_crc: v.body_crc,
        queue_id: v.queue_id,
        flag: v.flag,
        queue_offset: v.queue_offset,
        commit_log_offset: v.commit_log_offset,
        sys_flag: v.sys_flag,
        born_timestamp: v.born_timestamp,
        born_host: v.born_host,
        store_timestamp: v.store_timestamp,
        store_host: v.store_host,
        reconsume_times: v.reconsume_times,
        prepared_transaction_offset: v.prepared_transaction_offset,
        body: Bytes::copy_from_slice(v.body),
        topic: String::from_utf8_lossy(v.topic).into_owned(),
        properties: String::from_utf8_lossy(v.properties).into_owned(),
    })
}

/// A record's queue offset and born timestamp, read in place (fixed positions in both magics).
pub fn queue_offset_and_born_time(buf: &[u8]) -> Option<(i64, i64)> {
    let at = |r: std::ops::Range<usize>| buf.get(r).and_then(|b| <[u8; 8]>::try_from(b).ok()).map(i64::from_be_bytes);
    Some((at(20..28)?, at(40..48)?))
}

/// The properties string of the record at the start of `buf` (no copy); `None` if it is not a
/// whole, valid record.
pub fn properties(buf: &[u8]) -> Option<&[u8]> {
    view(buf, false).map(|v| v.properties)
}

/// Validates the record at the start of `buf` and extracts what dispatch needs
/// (`checkMessageAndReturnSize`) without copying the body. `buf` runs to the end of the
/// readable data.
pub fn check(buf: &[u8], check_crc: bool) -> RecordCheck<'_> {
    let mut c = Cursor { buf, pos: 0 };
    let (Some(total), Some(magic)) = (c.i32(), c.i32()) else {
        return RecordCheck::Truncated { needed: 8 };
    };
    if magic == BLANK_MAGIC {
        return RecordCheck::Blank;
    }
    if magic != MAGIC_V1 && magic != MAGIC_V2 {
        return RecordCheck::Invalid("unknown magic code");
    }
    let Some(end) = usize::try_from(total).ok().filter(|n| *n >= 91) else {
        return RecordCheck::Invalid("total size below the smallest record");
    };
    if end > buf.len() {
        return RecordCheck::Truncated { needed: end };
    }
    match view(&buf[..end], check_crc) {
        Some(v) => {
            let properties = String::from_utf8_lossy(v.properties);
            let tags = message::property_value(&properties, message::property::TAGS);
            RecordCheck::Record(DispatchRequest {
                tags_code: message::tags_code(tags),
                topic: String::from_utf8_lossy(v.topic),
                queue_id: v.queue_id,
                commit_log_offset: v.commit_log_offset,
                size: total,
                store_timestamp: v.store_timestamp,
                queue_offset: v.queue_offset,
                sys_flag: v.sys_flag,
                prepared_transaction_offset: v.prepared_transaction_offset,
                properties,
            })
        }
        None if check_crc && view(&buf[..end], false).is_some() => RecordCheck::Invalid("body CRC mismatch"),
        None => RecordCheck::Invalid("record fields disagree with its total size"),
    }
}

#[cfg(test)]
mod tests;
