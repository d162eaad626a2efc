//! Trust boundary: the body of a batch send (SEND_BATCH_MESSAGE, or a send whose header says
//! `batch=true`) from any producer. Splitting must never panic; whatever splits must re-encode
//! to a batch that splits into the same entries and re-encodes to the same bytes.
#![no_main]

use bytes::Bytes;
use ferrocket::protocol::body::message::{decode_batch, encode_batch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(entries) = decode_batch(&Bytes::copy_from_slice(data)) else { return };
    let first = match encode_batch(&entries) {
        Ok(bytes) => bytes,
        // Only properties that grew past the 16-bit length (invalid UTF-8 read as U+FFFD) refuse.
        Err(_) => {
            assert!(entries.iter().any(|e| e.properties.len() > i16::MAX as usize), "encoding refused");
            return;
        }
    };
    let again = decode_batch(&Bytes::from(first.clone())).expect("re-encoded batch decodes");
    assert_eq!(again, entries, "batch changed in a round trip");
    assert_eq!(encode_batch(&again).expect("re-encodes"), first, "batch encoding is not stable");
});
