//! Trust boundary: a Kafka request frame body from a socket. Decoding must never panic (an
//! error closes the connection), and a Produce request's record batches, the only bytes the
//! front end parses itself, must parse or be refused without panicking either.
#![no_main]

use bytes::Bytes;
use ferrocket::kafka::conn::{decode, Decoded};
use ferrocket::kafka::records;
use kafka_protocol::messages::RequestKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(Decoded::Request { body, .. }) = decode(Bytes::copy_from_slice(data)) else { return };
    if let RequestKind::Produce(p) = *body {
        for t in p.topic_data {
            for part in t.partition_data {
                if let Some(batch) = part.records {
                    if let Ok(b) = records::parse_one_batch(batch, 1 << 20) {
                        let _ = records::records(&b);
                    }
                }
            }
        }
    }
});
