//! Trust boundary: bytes read back from a CommitLog segment after a crash. The record checker
//! must never panic, and whatever it accepts must decode to the same fields.
#![no_main]

use ferrocket::store::commit_log::record::{check, decode, RecordCheck};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    while pos < data.len() {
        match check(&data[pos..], true) {
            RecordCheck::Record(d) => {
                let m = decode(&data[pos..], true).expect("checked record decodes");
                assert_eq!(m.topic, d.topic);
                assert_eq!(m.total_size, d.size);
                pos += d.size as usize;
            }
            RecordCheck::Blank | RecordCheck::Truncated { .. } | RecordCheck::Invalid(_) => break,
        }
    }
});
