//! Inflating a record batch's records (gzip, snappy, lz4, zstd) through a cap: the output never
//! grows past `max` bytes, whatever the batch claims or holds, so a 16 KiB zstd batch of 512 MiB
//! of zeros costs at most `max` (the broker's `maxMessageSize`) plus one chunk before it is
//! refused with MESSAGE_TOO_LARGE. The codecs are the crates kafka-protocol uses, driven as
//! streaming readers (kafka-protocol's own decompressors inflate without a bound). Callers run
//! this off the async workers (`spawn_blocking`): it is CPU work on up to `max` bytes.
//!
//! ```text
//! codec 1 gzip    RFC 1952 members, concatenated (Java's GZIPInputStream)
//! codec 2 snappy  xerial framing: "\x82SNAPPY\0" version:i32 compatible:i32 then [len:u32][raw block]*,
//!                 or one raw block; each block's declared length is checked before allocating
//! codec 3 lz4     LZ4 frame format (KafkaLZ4BlockInputStream, magic v2 batches)
//! codec 4 zstd    zstd frames
//! ```

use std::io::{ErrorKind, Read};

use super::api::error;
use super::api::Refusal;

/// How much one read of a streaming decoder may add.
pub const CHUNK: usize = 64 * 1024;
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER_LEN: usize = 16;

/// The records of a batch compressed with `codec`, at most `max` bytes.
pub fn inflate(codec: i16, body: &[u8], max: usize) -> Result<Vec<u8>, Refusal> {
    let mut out = Vec::new();
    match codec {
        2 => snappy(body, max, &mut out)?,
        _ => read_capped(decoder(codec, body)?, max, &mut out)?,
    }
    Ok(out)
}

/// A streaming decoder for the codecs that have one.
fn decoder<'a>(codec: i16, body: &'a [u8]) -> Result<Box<dyn Read + 'a>, Refusal> {
    let corrupt = |e: std::io::Error| (error::CORRUPT_MESSAGE, format!("cannot decompress the records: {e}"));
    Ok(match codec {
        1 => Box::new(flate2::read::MultiGzDecoder::new(body)),
        3 => Box::new(lz4::Decoder::new(body).map_err(corrupt)?),
        4 => Box::new(zstd::stream::read::Decoder::with_buffer(body).map_err(corrupt)?),
        c => return Err((error::CORRUPT_MESSAGE, format!("unknown compression codec {c}"))),
    })
}

fn too_large(max: usize) -> Refusal {
    (error::MESSAGE_TOO_LARGE, format!("the records inflate to more than maxMessageSize {max} bytes"))
}

/// Reads `r` to its end into `out`, refusing once more than `max` bytes came out: `r` is asked
/// for at most `max` + [`CHUNK`] bytes and `out` never holds (nor reserves) more than `max`.
pub fn read_capped(mut r: impl Read, max: usize, out: &mut Vec<u8>) -> Result<(), Refusal> {
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err((error::CORRUPT_MESSAGE, format!("cannot decompress the records: {e}"))),
        };
        if out.len() + n > max {
            return Err(too_large(max));
        }
        reserve_within(out, n, max);
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Grows `out` by at least `n` (doubling, as `Vec` does) but never past `max` in total.
fn reserve_within(out: &mut Vec<u8>, n: usize, max: usize) {
    if out.capacity() - out.len() < n {
        let more = out.len().max(n).max(CHUNK).min(max - out.len());
        out.reserve_exact(more);
    }
}

/// Kafka's snappy: xerial-framed blocks (what the Java client writes) or one raw block.
fn snappy(body: &[u8], max: usize, out: &mut Vec<u8>) -> Result<(), Refusal> {
    let corrupt = |what: &str| (error::CORRUPT_MESSAGE, format!("snappy records: {what}"));
    if !body.starts_with(XERIAL_MAGIC) {
        return snappy_block(body, max, out);
    }
    let mut rest = body.get(XERIAL_HEADER_LEN..).ok_or_else(|| corrupt("short xerial header"))?;
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(|| corrupt("short block length"))?;
        let len = usize::try_from(u32::from_be_bytes(*len)).map_err(|_| corrupt("block length"))?;
        let block = tail.get(..len).ok_or_else(|| corrupt("block longer than the batch"))?;
        snappy_block(block, max, out)?;
        rest = &tail[len..];
    }
    Ok(())
}

/// One raw snappy block appended to `out`; its declared length is checked before allocating.
fn snappy_block(block: &[u8], max: usize, out: &mut Vec<u8>) -> Result<(), Refusal> {
    let corrupt = |e: snap::Error| (error::CORRUPT_MESSAGE, format!("snappy records: {e}"));
    let len = snap::raw::decompress_len(block).map_err(corrupt)?;
    if len > max - out.len() {
        return Err(too_large(max));
    }
    let start = out.len();
    reserve_within(out, len, max);
    out.resize(start + len, 0);
    let written = snap::raw::Decoder::new().decompress(block, &mut out[start..]).map_err(corrupt)?;
    out.truncate(start + written);
    Ok(())
}

#[cfg(test)]
#[path = "inflate_tests.rs"]
mod tests;
