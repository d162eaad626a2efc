//! Trust boundary: the JSON header (serialize type 0) of a frame from any peer — client, broker
//! or NameServer — once the frame splitter has cut it out. Decoding must never panic; whatever
//! decodes must re-encode to a header that decodes to the same command (a language ordinal Java
//! has no name for is written as OTHER) and re-encodes to the same bytes.
#![no_main]

use ferrocket::protocol::command::LanguageCode;
use ferrocket::protocol::header_json::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cmd) = decode(data) else { return };
    let mut first = Vec::new();
    encode(&cmd, &mut first);
    let again = decode(&first).expect("re-encoded JSON header decodes");
    let mut expected = cmd;
    expected.language = LanguageCode::from_name(expected.language.name());
    assert_eq!(again, expected, "JSON header changed in a round trip");
    let mut second = Vec::new();
    encode(&again, &mut second);
    assert_eq!(first, second, "JSON header encoding is not stable");
});
