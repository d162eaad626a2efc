//! Trust boundary: the ROCKETMQ binary header (serialize type 1) of a frame from any peer, once
//! the frame splitter has cut it out. Decoding must never panic; whatever decodes must re-encode
//! to a header that decodes to the same command and re-encodes to the same bytes. The one
//! documented loss: an ext key longer than an i16 length can carry is not written.
#![no_main]

use ferrocket::protocol::header_binary::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = decode(data) else { return };
    let mut first = Vec::new();
    encode(&cmd, &mut first);
    let again = decode(&first).expect("re-encoded binary header decodes");
    let mut expected = cmd;
    // Invalid UTF-8 in a key becomes U+FFFD (3 bytes), so a decoded key can outgrow an i16.
    expected.ext_fields.retain(|k, _| i16::try_from(k.len()).is_ok());
    assert_eq!(again, expected, "binary header changed in a round trip");
    let mut second = Vec::new();
    encode(&again, &mut second);
    assert_eq!(first, second, "binary header encoding is not stable");
});
