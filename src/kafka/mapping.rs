//! One Kafka record = one stored message, readable by RocketMQ consumers, and back.
//!
//! ```text
//! Kafka record                         stored message
//! key: UTF-8, no blanks          <->   KEYS (indexed: queryMsgByKey finds it)
//! key: anything else             <->   KAFKA_KEY = base64(key)
//! value                          <->   body (null: empty body + KAFKA_NULL_VALUE); zlib-compressed
//!                                      RocketMQ bodies are inflated on the way out
//! headers, unique UTF-8 names    <->   properties, in order; header TAGS is the tag
//!   and values, no system names
//! any other header list          <->   KAFKA_HEADERS = base64(Kafka's header encoding), and still
//!                                      TAGS = the first text TAGS header (the tag),
//!                                      KEYS = text key + text KEYS headers, space-separated
//!                                      (the key itself then also as KAFKA_KEY)
//! timestamp                      <->   born timestamp (CreateTime)
//! the batch's compression codec   ->   KAFKA_CODEC = 1-4 (absent: none); a fetch compresses
//!                                      with it again
//! ```
//! On the way out, RocketMQ tags and user properties (not the system ones) become headers; the
//! Kafka transaction properties (`core::txn`) are batch fields, never headers, and a header of
//! one of those names is kept in the header list, so no record can pose as a transaction's.

use std::net::SocketAddr;

use base64::Engine;
use bytes::Bytes;

use super::records::{decode_headers, encode_headers, Record};
use crate::core::properties::{new_uniq_id, stored_properties, BrokerProperties};
use crate::core::txn;
use crate::model::message::{self, property, sys_flag, MessageToStore, StoredMessage};

pub const KAFKA_KEY: &str = "KAFKA_KEY";
pub const KAFKA_HEADERS: &str = "KAFKA_HEADERS";
pub const KAFKA_NULL_VALUE: &str = "KAFKA_NULL_VALUE";
/// The compression codec (1-4) of the batch a record came in; absent: uncompressed. A fetch
/// compresses the record's batch with it again (`fetch/batches.rs`).
pub const KAFKA_CODEC: &str = "KAFKA_CODEC";

/// RocketMQ's system property names (`MessageConst.STRING_HASH_SET`, plus the 5.x timer and
/// transaction ones): not user properties, so never headers, and a header with one of these
/// names is kept in the header list instead.
const SYSTEM: &[&str] = &[
    "KEYS",
    "WAIT",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "BUYER_ID",
    "ORIGIN_MESSAGE_ID",
    "TRANSFER_FLAG",
    "CORRECTION_FLAG",
    "MQ2_FLAG",
    "RECONSUME_TIME",
    "MSG_REGION",
    "TRACE_ON",
    "UNIQ_KEY",
    "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME",
    "POP_CK",
    "POP_CK_OFFSET",
    "1ST_POP_TIME",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "DUP_INFO",
    "EXTEND_UNIQ_INFO",
    "INSTANCE_ID",
    "CORRELATION_ID",
    "REPLY_TO_CLIENT",
    "TTL",
    "ARRIVE_TIME",
    "PUSH_REPLY_TIME",
    "CLUSTER",
    "MSG_TYPE",
    "__transactionId__",
    "CHECK_IMMUNITY_TIME_IN_SECONDS",
    "TRANSACTION_CHECK_TIMES",
    "SHARDING_KEY",
    "__STARTDELIVERTIME",
    "TIMER_DELAY_SEC",
    "TIMER_DELAY_MS",
    "TIMER_DELIVER_MS",
    "TIMER_OUT_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES",
    "TIMER_DEL_UNIQKEY",
    "TIMER_ENGINE_TYPE",
    "INNER_BASE",
    "INNER_NUM",
    "INNER_MULTI_DISPATCH",
    "INNER_MULTI_QUEUE_OFFSET",
    "TRACE_CONTEXT",
    "KAFKA_KEY",
    "KAFKA_HEADERS",
    "KAFKA_NULL_VALUE",
    KAFKA_CODEC,
    "PROPERTY_PUT_TIME",
    // Kafka transactions (`core::txn`): batch and marker fields, never headers.
    txn::KAFKA_PID,
    txn::KAFKA_EPOCH,
    txn::KAFKA_TXN,
    txn::KAFKA_CONTROL,
    txn::KAFKA_COORD_EPOCH,
];

fn is_system(name: &str) -> bool {
    SYSTEM.contains(&name)
}

/// Text a properties string can hold (its separators are \u{1} and \u{2}).
fn plain(s: &str) -> bool {
    !s.contains([message::NAME_VALUE_SEPARATOR, message::PROPERTY_SEPARATOR])
}

/// The message to store for `record` on `topic`/`queue_id`.
pub fn to_store(
    record: &Record,
    topic: &str,
    queue_id: i32,
    born_host: SocketAddr,
    store_host: SocketAddr,
    broker: BrokerProperties<'_>,
) -> MessageToStore {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut props: Vec<(String, String)> = Vec::with_capacity(record.headers.len() + 2);
    let as_properties: Option<Vec<(&str, &str)>> = record
        .headers
        .iter()
        .map(|(k, v)| {
            let k = std::str::from_utf8(k).ok().filter(|k| !k.is_empty() && plain(k) && !is_system(k))?;
            let v = std::str::from_utf8(v.as_deref()?).ok().filter(|v| plain(v))?;
            Some((k, v))
        })
        .collect();
    let unique = |h: &[(&str, &str)]| h.iter().enumerate().all(|(i, (k, _))| h[..i].iter().all(|(k2, _)| k2 != k));
    match as_properties {
        Some(h) if unique(&h) => props.extend(h.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned()))),
        _ => props.push((KAFKA_HEADERS.into(), b64.encode(encode_headers(&record.headers)))),
    }
    let in_list = props.iter().any(|(k, _)| k == KAFKA_HEADERS);
    if let Some(tag) = header_text(record, property::TAGS).next().filter(|_| in_list) {
        // Unique headers already hold their TAGS; a header list still gives its first one.
        props.push((property::TAGS.into(), tag.to_owned()));
    }
    // A KEYS header (always kept in the list: KEYS is a system name) adds to the keys; the record
    // key then goes to KAFKA_KEY too, since KEYS is no longer the key alone ([`to_record`]).
    let keys_header = has_keys_header(&record.headers);
    let mut keys: Vec<&str> = Vec::new();
    if let Some(key) = &record.key {
        match std::str::from_utf8(key) {
            Ok(k) if !k.is_empty() && plain(k) && !k.chars().any(char::is_whitespace) => {
                keys.push(k);
                if keys_header {
                    props.push((KAFKA_KEY.into(), b64.encode(key)));
                }
            }
            _ => props.push((KAFKA_KEY.into(), b64.encode(key))),
        }
    }
    keys.extend(header_text(record, property::KEYS));
    if !keys.is_empty() {
        props.push((property::KEYS.into(), keys.join(" ")));
    }
    if record.value.is_none() {
        props.push((KAFKA_NULL_VALUE.into(), "true".into()));
    }
    let properties = message::properties_to_string(props.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    // The properties every broker writes, whichever door a message came through: a RocketMQ
    // consumer sees a Kafka record with a message id (UNIQ_KEY), region, trace flag and cluster.
    let properties = stored_properties(&properties, broker, || new_uniq_id(store_host));
    let tags = props.iter().find(|(k, _)| k == property::TAGS).map(|(_, v)| v.as_str());
    MessageToStore {
        topic: topic.to_owned(),
        queue_id,
        flag: 0,
        body: record.value.clone().unwrap_or_default(),
        tags_code: message::tags_code(tags),
        properties,
        born_timestamp: record.timestamp,
        born_host,
        store_host,
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// The text values of `record`'s headers named `name`, in order (binary, empty and
/// separator-holding values left out).
fn header_text<'a>(record: &'a Record, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    record
        .headers
        .iter()
        .filter(move |(k, _)| k.as_ref() == name.as_bytes())
        .filter_map(|(_, v)| std::str::from_utf8(v.as_deref()?).ok().filter(|v| !v.is_empty() && plain(v)))
}

fn has_keys_header(headers: &[(Bytes, Option<Bytes>)]) -> bool {
    headers.iter().any(|(k, _)| k.as_ref() == property::KEYS.as_bytes())
}

/// The Kafka record for a stored message; a compressed body is inflated up to `max_body` bytes
/// (a body that would inflate further is handed out as stored).
pub fn to_record(m: &StoredMessage, max_body: usize) -> Record {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut key = None;
    let mut keys = None;
    let mut headers = Vec::new();
    let mut header_list = None;
    let mut null_value = false;
    for (k, v) in property_pairs(&m.properties) {
        match k {
            KAFKA_KEY => key = b64.decode(v).ok().map(Bytes::from),
            property::KEYS => keys = Some(v),
            KAFKA_HEADERS => header_list = b64.decode(v).ok().and_then(|h| decode_headers(Bytes::from(h))),
            KAFKA_NULL_VALUE => null_value = true,
            k if !is_system(k) => {
                headers.push((Bytes::copy_from_slice(k.as_bytes()), Some(Bytes::copy_from_slice(v.as_bytes()))))
            }
            _ => {}
        }
    }
    // KEYS is the key unless a KEYS header contributed to it (then the key, if any, is KAFKA_KEY).
    if key.is_none() && !header_list.as_deref().is_some_and(has_keys_header) {
        key = keys.map(|k| Bytes::copy_from_slice(k.as_bytes()));
    }
    let value = if null_value {
        None
    } else if m.sys_flag & sys_flag::COMPRESSED != 0 {
        Some(inflate(&m.body, max_body).unwrap_or_else(|| m.body.clone()))
    } else {
        Some(m.body.clone())
    };
    Record { timestamp: m.born_timestamp, key, value, headers: header_list.unwrap_or(headers) }
}

/// Properties in stored order (the RocketMQ path writes them sorted; the Kafka path in header order).
fn property_pairs(s: &str) -> impl Iterator<Item = (&str, &str)> {
    s.split(message::PROPERTY_SEPARATOR).filter_map(|p| p.split_once(message::NAME_VALUE_SEPARATOR))
}

/// A body RocketMQ producers zlib-compressed (`sysFlag` COMPRESSED), through the same cap as
/// Kafka batches: a stored zlib bomb must not inflate without bound on a Fetch.
fn inflate(body: &[u8], max: usize) -> Option<Bytes> {
    let mut out = Vec::new();
    super::inflate::read_capped(flate2::read::ZlibDecoder::new(body), max, &mut out).ok()?;
    Some(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    fn broker() -> BrokerProperties<'static> {
        BrokerProperties { region: "R", trace_on: true, cluster: "C" }
    }

    fn round_trip(r: &Record) -> Record {
        let m = to_store(r, "T", 0, addr(), addr(), broker());
        let stored = StoredMessage {
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            body: m.body.clone(),
            properties: m.properties.clone(),
            ..sample()
        };
        to_record(&stored, 1 << 20)
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn unique_text_headers_become_properties_and_come_back_in_order() {
        let r = Record {
            timestamp: 42,
            key: Some(b("order-1")),
            value: Some(b("v")),
            headers: vec![(b("z"), Some(b("1"))), (b("TAGS"), Some(b("TagA"))), (b("a"), Some(b("2")))],
        };
        let m = to_store(&r, "T", 0, addr(), addr(), broker());
        assert_eq!(message::property_value(&m.properties, "KEYS"), Some("order-1"));
        assert_eq!(message::property_value(&m.properties, "z"), Some("1"));
        assert_eq!(m.tags_code, message::tags_code(Some("TagA")));
        assert_eq!(round_trip(&r), r);
    }

    #[test]
    fn duplicate_binary_and_null_headers_and_odd_keys_survive_exactly() {
        let r = Record {
            timestamp: 7,
            key: Some(Bytes::from_static(&[0, 159, 255])),
            value: None,
            headers: vec![(b("h"), Some(b("1"))), (b("h"), None), (b("KEYS"), Some(Bytes::from_static(&[0xff])))],
        };
        let m = to_store(&r, "T", 0, addr(), addr(), broker());
        assert!(message::property_value(&m.properties, KAFKA_HEADERS).is_some());
        assert_eq!(round_trip(&r), r);
        let spaced = Record { key: Some(b("two words")), value: Some(Bytes::new()), headers: vec![], timestamp: 1 };
        assert_eq!(round_trip(&spaced), spaced);
    }

    #[test]
    fn rocketmq_tags_and_user_properties_become_headers() {
        let props =
            message::properties_to_string([("KEYS", "k1"), ("TAGS", "TagB"), ("UNIQ_KEY", "X"), ("color", "red")]);
        let mut s = StoredMessage { properties: props, body: b("hello"), born_timestamp: 5, ..sample() };
        let r = to_record(&s, 1 << 20);
        assert_eq!(r.key, Some(b("k1")));
        assert_eq!(r.headers, vec![(b("TAGS"), Some(b("TagB"))), (b("color"), Some(b("red")))]);
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"hello").unwrap();
        s.body = Bytes::from(z.finish().unwrap());
        s.sys_flag = sys_flag::COMPRESSED;
        assert_eq!(to_record(&s, 1 << 20).value, Some(b("hello")));
    }

    /// Before the fix: the transaction properties went out as headers, and a producer's header
    /// named KAFKA_CONTROL became the property that marks a control record.
    #[test]
    fn transaction_properties_are_never_headers_and_headers_never_transaction_properties() {
        let props = message::properties_to_string([
            (txn::KAFKA_PID, "7"),
            (txn::KAFKA_EPOCH, "0"),
            (txn::KAFKA_TXN, "true"),
            (txn::KAFKA_CONTROL, "COMMIT"),
            (txn::KAFKA_COORD_EPOCH, "1"),
            ("color", "red"),
        ]);
        let s = StoredMessage { properties: props, ..sample() };
        assert_eq!(to_record(&s, 1 << 20).headers, vec![(b("color"), Some(b("red")))]);
        let forged = Record {
            timestamp: 1,
            key: None,
            value: Some(b("v")),
            headers: vec![(b("KAFKA_CONTROL"), Some(b("ABORT"))), (b("KAFKA_PID"), Some(b("7")))],
        };
        let m = to_store(&forged, "T", 0, addr(), addr(), broker());
        assert_eq!(message::property_value(&m.properties, txn::KAFKA_CONTROL), None);
        assert_eq!(message::property_value(&m.properties, txn::KAFKA_PID), None);
        assert_eq!(round_trip(&forged), forged, "still the producer's headers, exactly");
    }

    /// Before the fix: a record whose headers went whole into KAFKA_HEADERS (a duplicate, a
    /// binary value) had no tag and no keys, so tag filters and queryMsgByKey never saw it.
    #[test]
    fn tags_and_keys_headers_still_tag_and_key_a_header_list() {
        let r = Record {
            timestamp: 3,
            key: None,
            value: Some(b("v")),
            headers: vec![
                (b("h"), Some(b("1"))),
                (b("h"), Some(Bytes::from_static(&[0xff, 0]))),
                (b("TAGS"), Some(b("TagA"))),
                (b("KEYS"), Some(b("order-9"))),
                (b("TAGS"), Some(b("second"))),
            ],
        };
        let m = to_store(&r, "T", 0, addr(), addr(), broker());
        assert!(message::property_value(&m.properties, KAFKA_HEADERS).is_some());
        assert_eq!(message::property_value(&m.properties, "TAGS"), Some("TagA"));
        assert_eq!(m.tags_code, message::tags_code(Some("TagA")));
        assert_eq!(message::property_value(&m.properties, "KEYS"), Some("order-9"));
        assert_eq!(round_trip(&r), r, "the key stays null, the headers exact");
        // A text key and a KEYS header: both are keys; the record key survives as itself.
        let both = Record { key: Some(b("k1")), headers: vec![(b("KEYS"), Some(b("k2 k3")))], ..r.clone() };
        let m = to_store(&both, "T", 0, addr(), addr(), broker());
        assert_eq!(message::property_value(&m.properties, "KEYS"), Some("k1 k2 k3"));
        assert_eq!(round_trip(&both), both);
    }

    #[test]
    fn a_stored_zlib_bomb_is_handed_out_as_stored() {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&vec![0u8; 4 << 20]).unwrap();
        let body = Bytes::from(z.finish().unwrap());
        let s = StoredMessage { body: body.clone(), sys_flag: sys_flag::COMPRESSED, ..sample() };
        assert_eq!(to_record(&s, 1 << 20).value, Some(body), "over the cap: not inflated");
        assert_eq!(to_record(&s, 4 << 20).value.map(|v| v.len()), Some(4 << 20));
    }

    fn sample() -> StoredMessage {
        StoredMessage {
            total_size: 0,
            magic: 0,
            body_crc: 0,
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            commit_log_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: addr(),
            store_timestamp: 0,
            store_host: addr(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: Bytes::new(),
            topic: "T".into(),
            properties: String::new(),
        }
    }
}
