//! Compressing a fetched batch's records with the codec its producer used (the way Apache Kafka
//! hands out what it stored), so a compressed topic costs the consumer's network what it cost
//! the producer's. The inverse of `inflate.rs`, with the crates kafka-protocol uses and the
//! framing the Java client writes:
//!
//! ```text
//! codec 1 gzip    one RFC 1952 member, level 6 (Java's Deflater default)
//! codec 2 snappy  xerial framing: "\x82SNAPPY\0" version 1 compatible 1, then [len:u32][raw block]*
//!                 of at most 32 KiB input each (xerial's SnappyOutputStream default)
//! codec 3 lz4     LZ4 frame, independent 64 KiB blocks, no checksums (Kafka's Lz4BlockInputStream
//!                 decompresses each block on its own)
//! codec 4 zstd    one zstd frame, level 3 (Kafka's default)
//! ```
//! Only our own bytes come here (records rebuilt from the store), never a peer's.
//!
//! May import: nothing of ours.

use std::io::Write;

const XERIAL_HEADER: &[u8] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
const SNAPPY_BLOCK: usize = 32 * 1024;

/// `data` compressed with Kafka codec `codec` (1-4); `None` for any other codec or a failure
/// (the caller then sends the records uncompressed).
pub fn deflate(codec: i16, data: &[u8]) -> Option<Vec<u8>> {
    match codec {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2), flate2::Compression::new(6));
            e.write_all(data).ok()?;
            e.finish().ok()
        }
        2 => {
            let mut out = Vec::with_capacity(XERIAL_HEADER.len() + data.len() / 2);
            out.extend_from_slice(XERIAL_HEADER);
            let mut enc = snap::raw::Encoder::new();
            for block in data.chunks(SNAPPY_BLOCK) {
                let raw = enc.compress_vec(block).ok()?;
                out.extend_from_slice(&u32::try_from(raw.len()).ok()?.to_be_bytes());
                out.extend_from_slice(&raw);
            }
            Some(out)
        }
        3 => {
            let mut e = lz4::EncoderBuilder::new()
                .block_size(lz4::BlockSize::Max64KB)
                .block_mode(lz4::BlockMode::Independent)
                .checksum(lz4::ContentChecksum::NoChecksum)
                .build(Vec::with_capacity(data.len() / 2))
                .ok()?;
            e.write_all(data).ok()?;
            let (out, done) = e.finish();
            done.ok().map(|()| out)
        }
        4 => zstd::bulk::compress(data, 3).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_inflates_back_through_the_capped_reader() {
        let data: Vec<u8> = (0..200_000u32).flat_map(|i| format!("record {} ", i % 97).into_bytes()).collect();
        for codec in 1..=4 {
            let packed = deflate(codec, &data).unwrap();
            assert!(packed.len() < data.len() / 4, "codec {codec}: {} of {}", packed.len(), data.len());
            let back = super::super::inflate::inflate(codec, &packed, data.len()).unwrap();
            assert!(back == data, "codec {codec} round trip");
        }
        assert!(deflate(0, &data).is_none() && deflate(5, &data).is_none());
    }
}
