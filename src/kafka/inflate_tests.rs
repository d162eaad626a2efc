use std::io::{Read, Write};

use super::*;

/// Counts what a decoder hands out: the proof that inflating stops at the cap.
struct Counting<R> {
    inner: R,
    produced: usize,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.produced += n;
        Ok(n)
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn lz4(data: &[u8]) -> Vec<u8> {
    let mut e = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
    e.write_all(data).unwrap();
    let (out, done) = e.finish();
    done.unwrap();
    out
}

/// Xerial framing, blocks of 32 KiB, as the Java client's SnappyOutputStream.
fn xerial(data: &[u8]) -> Vec<u8> {
    let mut out = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
    for block in data.chunks(32 * 1024) {
        let c = snap::raw::Encoder::new().compress_vec(block).unwrap();
        out.extend_from_slice(&(c.len() as u32).to_be_bytes());
        out.extend_from_slice(&c);
    }
    out
}

/// A zstd frame of RLE blocks: `mib` MiB of zeros in 4 bytes per 128 KiB.
fn zstd_zeros(mib: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    let blocks = mib * 8;
    for i in 0..blocks {
        let header = (128 * 1024u32) << 3 | 1 << 1 | u32::from(i + 1 == blocks);
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

#[test]
fn every_codec_round_trips() {
    let data: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    let raw_snappy = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    let zstd = zstd::encode_all(&data[..], 3).unwrap();
    for (codec, compressed) in [(1, gzip(&data)), (2, xerial(&data)), (2, raw_snappy), (3, lz4(&data)), (4, zstd)] {
        assert_eq!(inflate(codec, &compressed, data.len()).unwrap(), data, "codec {codec}");
        let over = inflate(codec, &compressed, data.len() - 1).unwrap_err();
        assert_eq!(over.0, error::MESSAGE_TOO_LARGE, "codec {codec}: one byte over the cap");
    }
    assert_eq!(zstd_zeros(1).len(), 6 + 8 * 4);
    assert_eq!(inflate(4, &zstd_zeros(1), 1 << 20).unwrap(), vec![0; 1 << 20]);
}

/// The strong form of "RSS unchanged": the decoder is asked for no more than the cap plus one
/// chunk, and the output never reserves past the cap.
#[test]
fn bombs_stop_at_the_cap() {
    let max = 256 * 1024;
    let zeros = vec![0u8; 4 << 20];
    let bombs = [(1, gzip(&zeros)), (3, lz4(&zeros)), (4, zstd_zeros(512))];
    for (codec, bomb) in &bombs {
        let mut counting = Counting { inner: decoder(*codec, bomb).unwrap(), produced: 0 };
        let mut out = Vec::new();
        let refused = read_capped(&mut counting, max, &mut out).unwrap_err();
        assert_eq!(refused.0, error::MESSAGE_TOO_LARGE, "codec {codec}");
        assert!(counting.produced <= max + CHUNK, "codec {codec}: {} bytes inflated", counting.produced);
        assert!(out.capacity() <= max, "codec {codec}: {} bytes reserved", out.capacity());
    }
    assert_eq!(bombs[2].1.len(), 6 + 4096 * 4, "512 MiB in 16 KiB");
    // Snappy declares its length: refused before anything is allocated.
    let mut out = Vec::new();
    let huge = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
    assert_eq!(snappy(&huge, max, &mut out).unwrap_err().0, error::MESSAGE_TOO_LARGE);
    assert_eq!(out.capacity(), 0);
    let mut out = Vec::new();
    assert_eq!(snappy(&xerial(&zeros), max, &mut out).unwrap_err().0, error::MESSAGE_TOO_LARGE);
    assert!(out.capacity() <= max);
}

#[test]
fn garbage_is_corrupt_not_a_panic() {
    for codec in 1..=4 {
        for junk in
            [&b""[..], b"\x00", b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x10\x00ab", b"junk junk junk"]
        {
            if let Err((code, _)) = inflate(codec, junk, 1 << 20) {
                assert_eq!(code, error::CORRUPT_MESSAGE, "codec {codec} {junk:?}");
            }
        }
    }
    assert_eq!(inflate(5, b"x", 10).unwrap_err().0, error::CORRUPT_MESSAGE);
}
