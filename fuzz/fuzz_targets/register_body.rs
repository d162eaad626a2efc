//! Trust boundary: the body of a REGISTER_BROKER request, as any broker that can reach the
//! NameServer sends it: plain JSON (the whole RegisterBrokerBody, or before V3_0_11 the topic
//! wrapper alone) or the zlib-compressed form (`compressed=true`). Decoding must never panic, and
//! a body read from the compressed form must re-encode to a compressed body that decodes equal.
//!
//! The first byte picks how the rest is read, so one corpus covers every path:
//! bits 0-1 the sender's version (5.3.1, 4.9.8, before V3_0_11, none), bits 2-3 the form
//! (0 JSON, 1 compressed as sent, 2-3 the decompressed payload, which the harness compresses so
//! the fuzzer works on the length-prefixed layout inside rather than on zlib).
#![no_main]

use std::io::Write;

use ferrocket::protocol::body::register::RegisterBrokerBody;
use libfuzzer_sys::fuzz_target;

/// `MQVersion` ordinals: V5_3_1, V4_9_8, a broker before V3_0_11, a header without a version.
const VERSIONS: [i32; 4] = [475, 409, 30, 0];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let version = VERSIONS[usize::from(mode & 0b11)];
    let decoded = match (mode >> 2) & 0b11 {
        0 => {
            let _ = RegisterBrokerBody::decode(rest, false, version);
            return;
        }
        1 => RegisterBrokerBody::decode(rest, true, version),
        _ => {
            let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(rest).expect("compressing into a Vec");
            RegisterBrokerBody::decode(&enc.finish().expect("compressing into a Vec"), true, version)
        }
    };
    let Ok(body) = decoded else { return };
    let again = RegisterBrokerBody::decode(&body.encode_compressed(), true, VERSIONS[0])
        .expect("re-encoded compressed register body decodes");
    assert_eq!(again, body, "compressed register body changed in a round trip");
});
