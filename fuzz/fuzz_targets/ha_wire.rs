//! Trust boundary: the byte stream a slave reads from whatever answers on its master's HA port
//! (raw TCP, no remoting frames): `offset:i64 size:i32 body` transfers cut at any byte, whose
//! bodies the slave appends to its CommitLog for the dispatcher to scan. The socket loop is async
//! (`ha::slave`), so its pure pieces are fuzzed in the same order: `wire::decode_header` on each
//! header, the slave's size limit and continuity rule, then `record::check` without CRC (as the
//! dispatcher reads) over the bytes received so far after every transfer.
//!
//! Never a panic; a header that decodes re-encodes to the same bytes; a record split across
//! transfers is waited for (`Truncated`), never reported as damage: an `Invalid` verdict given
//! while the stream arrives is the verdict on the whole stream, and the records accepted piece by
//! piece are exactly those a scan of the whole stream accepts.
#![no_main]

use ferrocket::ha::wire::{decode_header, encode_header, HEADER_LEN};
use ferrocket::store::commit_log::record::{check, DispatchRequest, RecordCheck};
use libfuzzer_sys::fuzz_target;

/// `ha::slave::MAX_BODY`: a larger transfer is a protocol error.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Why a dispatch scan stopped.
#[derive(Debug, PartialEq)]
enum Stop {
    End,
    Blank,
    Truncated,
    Invalid(&'static str),
}

/// Dispatches from `pos` while whole records are there, like `store::dispatch::reput`.
fn scan(log: &[u8], pos: &mut usize, out: &mut Vec<DispatchRequest>) -> Stop {
    loop {
        let Some(rest) = log.get(*pos..).filter(|r| !r.is_empty()) else { return Stop::End };
        match check(rest, false) {
            RecordCheck::Record(d) => {
                *pos += usize::try_from(d.size).expect("accepted size is positive");
                out.push(d);
            }
            RecordCheck::Blank => return Stop::Blank,
            RecordCheck::Truncated { needed } => {
                assert!(needed > rest.len(), "Truncated, yet all {needed} bytes are there");
                return Stop::Truncated;
            }
            RecordCheck::Invalid(why) => return Stop::Invalid(why),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut stream = data;
    let mut log = Vec::new();
    let mut next_offset = None;
    let (mut pos, mut incremental) = (0usize, Vec::new());
    let mut damage = None;
    while let Some((header, rest)) = stream.split_first_chunk::<HEADER_LEN>() {
        let Some((offset, len)) = decode_header(header).filter(|(_, l)| *l <= MAX_BODY) else {
            // Only a negative offset or size, or an oversized body, is refused (the slave then
            // drops the connection).
            let (offset, size) = header.split_at(8);
            let offset = i64::from_be_bytes(offset.try_into().expect("8 bytes"));
            let size = i32::from_be_bytes(size.try_into().expect("4 bytes"));
            assert!(offset < 0 || usize::try_from(size).map_or(true, |s| s > MAX_BODY), "good header refused");
            break;
        };
        assert_eq!(&encode_header(offset, len), header, "transfer header does not round-trip");
        // A body cut short by the end of the stream: the slave is still waiting for it.
        let Some(body) = rest.get(..len) else { break };
        stream = &rest[len..];
        if len == 0 {
            continue; // heartbeat
        }
        // `append_replicated`: data must continue the CommitLog where it ends.
        if next_offset.is_some_and(|n| n != offset) {
            break;
        }
        next_offset = Some(offset + len as u64);
        log.extend_from_slice(body);
        if let Stop::Invalid(why) = scan(&log, &mut pos, &mut incremental) {
            damage.get_or_insert((pos, why));
        }
    }
    let (mut whole_pos, mut whole) = (0usize, Vec::new());
    let stop = scan(&log, &mut whole_pos, &mut whole);
    if let Some((at, why)) = damage {
        assert_eq!((whole_pos, stop), (at, Stop::Invalid(why)), "damage reported before the record was whole");
    }
    assert_eq!(incremental, whole, "records read piece by piece differ from the whole stream");
    assert_eq!(pos, whole_pos);
});
