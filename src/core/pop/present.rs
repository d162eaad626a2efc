//! A popped record as a client sees it: a message read from the POP retry topic is handed out
//! under the topic the client asked for, with its handle in the `POP_CK` property
//! (`PopMessageProcessor`, `popResponseReturnActualRetryTopic=false`): the record is decoded,
//! renamed and encoded again with its stored offsets and store time.
//!
//! May import: `model`, `store`.

use crate::model::message;
use crate::store::commit_log::record;

/// `MessageConst.PROPERTY_POP_CK`.
pub const POP_CK: &str = "POP_CK";

/// The record under `topic` with `POP_CK` = `handle` (kept if the record has one); `None` if the
/// stored record cannot be read.
pub fn renamed_with_handle(stored: &[u8], topic: &str, handle: &str) -> Option<Vec<u8>> {
    let msg = record::decode(stored, false)?;
    let mut props = message::parse_properties(&msg.properties);
    props.entry(POP_CK.to_owned()).or_insert_with(|| handle.to_owned());
    let m = msg.to_store(topic.to_owned(), msg.queue_id, message::map_to_properties(&props));
    let mut out = Vec::with_capacity(record::record_len(&m));
    let patch = record::encode(&m, &mut out);
    record::patch(&mut out, patch, msg.queue_offset, msg.commit_log_offset, msg.store_timestamp);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::message::MessageToStore;

    #[test]
    fn a_retry_record_is_renamed_and_keeps_its_offsets() {
        let m = MessageToStore {
            topic: "%RETRY%g_T".into(),
            queue_id: 0,
            flag: 0,
            body: bytes::Bytes::from_static(b"x"),
            properties: message::map_to_properties(&[("TAGS".to_owned(), "a".to_owned())].into()),
            tags_code: 0,
            born_timestamp: 1,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_host: "127.0.0.1:2".parse().unwrap(),
            sys_flag: 0,
            reconsume_times: 1,
            prepared_transaction_offset: 0,
        };
        let mut stored = Vec::new();
        let p = record::encode(&m, &mut stored);
        record::patch(&mut stored, p, 7, 1234, 99);
        let out = renamed_with_handle(&stored, "T", "7 1 2 0 1 b 0 7").unwrap();
        let back = record::decode(&out, true).unwrap();
        assert_eq!((back.topic.as_str(), back.queue_offset, back.commit_log_offset), ("T", 7, 1234));
        assert_eq!((back.store_timestamp, back.reconsume_times), (99, 1));
        assert_eq!(message::property_value(&back.properties, POP_CK), Some("7 1 2 0 1 b 0 7"));
        assert_eq!(message::property_value(&back.properties, "TAGS"), Some("a"));
        assert!(renamed_with_handle(b"garbage", "T", "h").is_none());
    }
}
