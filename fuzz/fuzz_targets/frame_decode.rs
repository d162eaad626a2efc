//! Trust boundary: bytes from a socket. Decoding must never panic, and whatever decodes must
//! re-encode to a frame that decodes and re-encodes to the same bytes.
#![no_main]

use bytes::BytesMut;
use ferrocket::protocol::frame::encode_frame;
use ferrocket::protocol::{FrameLimits, RemotingCodec};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let mut codec = RemotingCodec::new(FrameLimits { max_frame: 1 << 20 });
    let mut buf = BytesMut::from(data);
    while let Ok(Some(cmd)) = codec.decode(&mut buf) {
        let mut first = BytesMut::new();
        encode_frame(&cmd, &mut first);
        // Escaping may grow a header, so the re-decode gets a roomier limit.
        let mut roomy = RemotingCodec::new(FrameLimits { max_frame: 1 << 26 });
        let again = roomy.decode(&mut first.clone()).expect("re-encoded frame decodes").expect("whole frame");
        let mut second = BytesMut::new();
        encode_frame(&again, &mut second);
        assert_eq!(first, second, "encoding is not stable");
    }
});
