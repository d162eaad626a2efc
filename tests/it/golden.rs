//! Frames captured from the official Java client's own encoder (testdata/frames/*.hex) decode.

use std::path::Path;

use bytes::BytesMut;
use ferrocket::protocol::{RemotingCodec, RemotingCommand};
use tokio_util::codec::Decoder;

/// Every golden frame as (file name, decoded command).
fn golden_frames() -> Vec<(String, RemotingCommand)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join("frames");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else { return out };
    let mut paths: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "hex")).collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let hex: String = text.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        let bytes: Vec<u8> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        let mut buf = BytesMut::from(&bytes[..]);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let cmd = RemotingCodec::default()
            .decode(&mut buf)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: incomplete frame"));
        assert!(buf.is_empty(), "{name}: {} trailing bytes", buf.len());
        out.push((name, cmd));
    }
    out
}

#[test]
fn golden_frames_decode() {
    let frames = golden_frames();
    assert!(frames.len() >= 6, "expected the golden frames in testdata/frames, found {}", frames.len());
}
