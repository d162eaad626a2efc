//! Receipt handles as the gRPC door hands them out: opaque to the client. The core's handle
//! (`core::pop::Handle`, the remoting `POP_CK` string) is sealed with an HMAC-SHA256 over the
//! consumer group and the handle, under a key drawn at random when the broker starts, and
//! encoded base64url:
//!
//! ```text
//!   base64url( handle-utf8 || HMAC-SHA256(key, group 0x00 handle-utf8) )
//! ```
//!
//! A forged or altered handle, one of another group or of an earlier broker process is refused
//! (INVALID_RECEIPT_HANDLE) before anything is looked up. Whether the sealed checkpoint still
//! exists is the core's question (a stale handle changes nothing).
//!
//! May import: `core` (the handle), `grpc`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::hmac;

use super::pb::Code;
use super::status::Refused;
use crate::core::pop::handle::MAX_HANDLE_LEN;
use crate::core::pop::Handle;

/// The HMAC tag's length.
const TAG_LEN: usize = 32;
/// Longest receipt handle accepted: a sealed `MAX_HANDLE_LEN` handle, base64url.
pub const MAX_RECEIPT_LEN: usize = (MAX_HANDLE_LEN + TAG_LEN).div_ceil(3) * 4;

/// The broker's sealing key.
pub struct Receipts {
    key: hmac::Key,
}

impl Default for Receipts {
    fn default() -> Self {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).unwrap_or_else(|_| {
            // No system randomness: a key that still differs per process and start.
            let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
            hmac::Key::new(hmac::HMAC_SHA256, seed.as_bytes())
        });
        Self { key }
    }
}

fn invalid(why: &str) -> Refused {
    Refused::new(Code::InvalidReceiptHandle, why)
}

impl Receipts {
    /// The receipt handle of `handle` for `group`.
    pub fn seal(&self, group: &str, handle: &Handle) -> String {
        let text = handle.to_string();
        let tag = hmac::sign(&self.key, &signed(group, text.as_bytes()));
        let mut out = Vec::with_capacity(text.len() + TAG_LEN);
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(tag.as_ref());
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The handle a receipt handle from the network seals for `group`; refused when it is not
    /// one this broker sealed for that group.
    pub fn open(&self, group: &str, receipt: &str) -> Result<Handle, Refused> {
        if receipt.is_empty() {
            return Err(invalid("receipt handle cannot be empty"));
        }
        if receipt.len() > MAX_RECEIPT_LEN {
            return Err(invalid("receipt handle is too long"));
        }
        let raw = URL_SAFE_NO_PAD.decode(receipt).map_err(|_| invalid("receipt handle is not valid"))?;
        let Some(split) = raw.len().checked_sub(TAG_LEN).filter(|n| *n > 0) else {
            return Err(invalid("receipt handle is not valid"));
        };
        let (text, tag) = raw.split_at(split);
        hmac::verify(&self.key, &signed(group, text), tag).map_err(|_| invalid("receipt handle is not valid"))?;
        let text = std::str::from_utf8(text).map_err(|_| invalid("receipt handle is not valid"))?;
        let handle = Handle::parse(text).map_err(|e| invalid(&e.to_string()))?;
        if handle.queue_offset.is_none() {
            return Err(invalid("receipt handle is not valid"));
        }
        Ok(handle)
    }
}

fn signed(group: &str, text: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(group.len() + 1 + text.len());
    m.extend_from_slice(group.as_bytes());
    m.push(0);
    m.extend_from_slice(text);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::pop::TopicMark;
    use proptest::prelude::*;

    fn handle() -> Handle {
        Handle {
            ck_offset: 3,
            pop_time: 1_700_000_000_000,
            invisible_time: 30_000,
            revive_qid: 0,
            mark: TopicMark::Normal,
            broker_name: "broker-a".into(),
            queue_id: 1,
            queue_offset: Some(4),
        }
    }

    #[test]
    fn sealed_opens_for_its_group_only() {
        let r = Receipts::default();
        let sealed = r.seal("G", &handle());
        assert_eq!(r.open("G", &sealed).unwrap(), handle());
        assert_eq!(r.open("G2", &sealed).unwrap_err().code, Code::InvalidReceiptHandle);
        assert_eq!(Receipts::default().open("G", &sealed).unwrap_err().code, Code::InvalidReceiptHandle);
        // The plain remoting handle is not a gRPC receipt handle.
        assert!(r.open("G", &handle().to_string()).is_err());
        let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        bytes[0] ^= 1;
        assert!(r.open("G", &URL_SAFE_NO_PAD.encode(bytes)).is_err());
        assert!(r.open("G", "").is_err());
        assert!(r.open("G", &"A".repeat(MAX_RECEIPT_LEN + 1)).is_err());
    }

    proptest! {
        #[test]
        fn any_input_is_refused_without_panic(s in ".{0,800}", bytes in proptest::collection::vec(any::<u8>(), 0..700)) {
            let r = Receipts::default();
            prop_assert!(r.open("G", &s).is_err());
            prop_assert!(r.open("G", &URL_SAFE_NO_PAD.encode(&bytes)).is_err());
        }

        #[test]
        fn any_bit_flip_is_refused(i in 0usize..1000, bit in 0u8..8) {
            let r = Receipts::default();
            let mut bytes = URL_SAFE_NO_PAD.decode(r.seal("G", &handle())).unwrap();
            let at = i % bytes.len();
            bytes[at] ^= 1 << bit;
            prop_assert!(r.open("G", &URL_SAFE_NO_PAD.encode(bytes)).is_err());
        }
    }
}
