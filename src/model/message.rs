//! Messages as the store keeps them, the properties string and Java's string hash.
//!
//! ```text
//! properties  *( name U+0001 value U+0002 )      (MessageDecoder.messageProperties2String)
//! ```
//!
//! May import: nothing outside `model/` (the area's rule: docs/architecture.md).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use bytes::Bytes;

/// Well-known property keys (`MessageConst`).
pub mod property {
    pub const KEYS: &str = "KEYS";
    pub const TAGS: &str = "TAGS";
    pub const WAIT: &str = "WAIT";
    pub const DELAY: &str = "DELAY";
    pub const UNIQ_KEY: &str = "UNIQ_KEY";
    pub const CLUSTER: &str = "CLUSTER";
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    pub const REAL_QID: &str = "REAL_QID";
    pub const TRAN_MSG: &str = "TRAN_MSG";
    pub const PGROUP: &str = "PGROUP";
    pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
    pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    pub const MSG_REGION: &str = "MSG_REGION";
    pub const TRACE_ON: &str = "TRACE_ON";
    pub const TRANSACTION_ID: &str = "__transactionId__";
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
    /// Timer messages (5.x `setDelayTimeSec` / `setDelayTimeMs` / `setDeliverTimeMs`).
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    /// The slot time the broker gave a timer message (it fires one precision step later).
    pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
    pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
    pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
    pub const TIMER_ROLL_TIMES: &str = "TIMER_ROLL_TIMES";
    pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
}

/// `MessageDecoder.NAME_VALUE_SEPARATOR`.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// `MessageDecoder.PROPERTY_SEPARATOR`.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// `MessageSysFlag` bits.
pub mod sys_flag {
    pub const COMPRESSED: i32 = 0x1;
    pub const MULTI_TAGS: i32 = 0x2;
    pub const TRANSACTION_NOT_TYPE: i32 = 0;
    pub const TRANSACTION_PREPARED: i32 = 0x4;
    pub const TRANSACTION_COMMIT: i32 = 0x8;
    pub const TRANSACTION_ROLLBACK: i32 = 0xC;
    pub const BORNHOST_V6: i32 = 0x10;
    pub const STOREHOST_V6: i32 = 0x20;

    pub fn transaction_type(flag: i32) -> i32 {
        flag & TRANSACTION_ROLLBACK
    }
}

/// Parses a properties string (`MessageDecoder.string2messageProperties`): segments shorter
/// than 3 characters and entries with an empty name or value are skipped.
pub fn parse_properties(s: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for seg in s.split(PROPERTY_SEPARATOR) {
        if seg.chars().count() < 3 {
            continue;
        }
        if let Some((k, v)) = seg.split_once(NAME_VALUE_SEPARATOR) {
            if !k.is_empty() && !v.is_empty() {
                map.insert(k.to_owned(), v.to_owned());
            }
        }
    }
    map
}

/// Looks one property up without building a map (the first entry of that name).
pub fn property_value<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    property_segments(s).find(|seg| is_entry_of(seg, name.as_bytes())).and_then(|seg| {
        // Both separators are ASCII, so every cut is on a char boundary.
        let from = seg.as_ptr() as usize - s.as_ptr() as usize + name.len() + 1;
        s.get(from..from + seg.len() - name.len() - 1)
    })
}

/// Whether any of `names` has a value, in one pass over the properties.
pub fn has_any_property(s: &str, names: &[&str]) -> bool {
    property_segments(s).any(|seg| names.iter().any(|n| is_entry_of(seg, n.as_bytes())))
}

/// The separator-delimited segments of a properties string, as bytes, the separators found
/// with `memchr`: this runs several times per message on the send and dispatch paths, mostly
/// for names that are absent, so through the whole string.
fn property_segments(s: &str) -> impl Iterator<Item = &[u8]> {
    let bytes = s.as_bytes();
    let ends = memchr::memchr_iter(PROPERTY_SEPARATOR as u8, bytes).chain(std::iter::once(bytes.len()));
    let mut start = 0;
    ends.map(move |end| {
        let seg = &bytes[start..end];
        start = end + 1;
        seg
    })
}

/// `seg` is `name` + the name-value separator + a non-empty value. The separator is looked at
/// first: most segments fail there without a comparison of the names.
fn is_entry_of(seg: &[u8], name: &[u8]) -> bool {
    seg.len() > name.len() + 1 && seg[name.len()] == NAME_VALUE_SEPARATOR as u8 && seg[..name.len()] == *name
}

/// Renders a map from [`parse_properties`] back into a properties string.
pub fn map_to_properties(props: &BTreeMap<String, String>) -> String {
    properties_to_string(props.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// Renders properties (`MessageDecoder.messageProperties2String`).
pub fn properties_to_string<'a>(props: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut s = String::new();
    for (k, v) in props {
        s.push_str(k);
        s.push(NAME_VALUE_SEPARATOR);
        s.push_str(v);
        s.push(PROPERTY_SEPARATOR);
    }
    s
}

/// `java.lang.String.hashCode()`: over UTF-16 code units, 32-bit wrapping.
pub fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// The ConsumeQueue tag code of a TAGS value (`MessageExtBrokerInner.tagsString2tagsCode`).
pub fn tags_code(tags: Option<&str>) -> i64 {
    tags.filter(|t| !t.is_empty()).map_or(0, |t| i64::from(java_hash(t)))
}

/// A message handed to the store for appending (`MessageExtBrokerInner`).
#[derive(Clone, Debug, PartialEq)]
pub struct MessageToStore {
    pub topic: String,
    pub queue_id: i32,
    pub flag: i32,
    pub body: Bytes,
    /// The properties string as it will be stored.
    pub properties: String,
    pub tags_code: i64,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_host: SocketAddr,
    pub sys_flag: i32,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
}

/// A message read back from the CommitLog (`MessageExt`).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredMessage {
    pub total_size: i32,
    pub magic: i32,
    pub body_crc: i32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub commit_log_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: Bytes,
    pub topic: String,
    pub properties: String,
}

impl StoredMessage {
    /// This message as a new record on `topic`/`queue_id` with `properties`: same body, flags,
    /// birth, hosts and reconsume count; the tag code from the properties' TAGS.
    pub fn to_store(&self, topic: String, queue_id: i32, properties: String) -> MessageToStore {
        let tags_code = tags_code(property_value(&properties, property::TAGS));
        MessageToStore {
            topic,
            queue_id,
            flag: self.flag,
            body: self.body.clone(),
            properties,
            tags_code,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_host: self.store_host,
            sys_flag: self.sys_flag,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: 0,
        }
    }
}

/// The offset message id (`MessageDecoder.createMessageId`): uppercase hex of the store host's
/// address, its port and the CommitLog offset.
pub fn offset_msg_id(store_host: SocketAddr, commit_log_offset: i64) -> String {
    let mut bytes = Vec::with_capacity(28);
    match store_host {
        SocketAddr::V4(a) => bytes.extend_from_slice(&a.ip().octets()),
        SocketAddr::V6(a) => bytes.extend_from_slice(&a.ip().octets()),
    }
    bytes.extend_from_slice(&i32::from(store_host.port()).to_be_bytes());
    bytes.extend_from_slice(&commit_log_offset.to_be_bytes());
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    s
}

/// Decodes an offset message id into the store host and CommitLog offset
/// (`MessageDecoder.decodeMessageId`): 32 hex characters are IPv4, 56 IPv6.
pub fn decode_offset_msg_id(id: &str) -> Option<(SocketAddr, i64)> {
    let bytes: Vec<u8> = (0..id.len())
        .step_by(2)
        .map(|i| id.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<_>>()?;
    let (ip, rest): (std::net::IpAddr, &[u8]) = match bytes.len() {
        16 => (<[u8; 4]>::try_from(&bytes[..4]).ok()?.into(), &bytes[4..]),
        28 => (<[u8; 16]>::try_from(&bytes[..16]).ok()?.into(), &bytes[16..]),
        _ => return None,
    };
    let port = u16::try_from(i32::from_be_bytes(rest[..4].try_into().ok()?)).ok()?;
    let offset = i64::from_be_bytes(rest[4..12].try_into().ok()?);
    Some((SocketAddr::new(ip, port), offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_matches_known_values() {
        assert_eq!(java_hash("TagA"), 2598919);
        assert_eq!(java_hash("TagB"), 2598920);
        assert_eq!(java_hash("*"), 42);
        assert_eq!(java_hash(""), 0);
        // Non-BMP characters count as two UTF-16 units.
        assert_eq!(java_hash("😀"), 0xD83D * 31 + 0xDE00);
        assert_eq!(tags_code(Some("TagA")), 2598919);
        assert_eq!(tags_code(None), 0);
    }

    #[test]
    fn properties_round_trip_and_skip_short_segments() {
        let s = properties_to_string([("TAGS", "TagA"), ("KEYS", "k1 k2")]);
        assert_eq!(s, "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}");
        let map = parse_properties(&format!("{s}ab\u{2}x\u{1}\u{2}"));
        assert_eq!(map.len(), 2);
        assert_eq!(map["KEYS"], "k1 k2");
        assert_eq!(property_value(&s, "TAGS"), Some("TagA"));
        assert_eq!(property_value(&s, "WAIT"), None);
    }

    #[test]
    fn property_value_matches_whole_names_and_skips_empty_values() {
        let s = "TAGSX\u{1}no\u{2}TAG\u{1}no\u{2}E\u{1}\u{2}\u{1}v\u{2}TAGS\u{1}Tag-é\u{1}x\u{2}K\u{1}last";
        assert_eq!(property_value(s, "TAGS"), Some("Tag-é\u{1}x"), "the first separator splits name from value");
        assert_eq!(property_value(s, "E"), None, "an empty value is no value");
        assert_eq!(property_value(s, "K"), Some("last"), "the last property needs no trailing separator");
        assert_eq!(property_value(s, ""), Some("v"));
        assert_eq!(property_value(s, "TA"), None);
        assert_eq!(property_value("", "TAGS"), None);
        assert!(has_any_property(s, &["X", "K"]));
        assert!(!has_any_property(s, &["E", "TA", "TAGSX\u{1}no"]), "names match whole, with a value");
    }

    #[test]
    fn offset_msg_id_matches_the_spec_example() {
        let addr: SocketAddr = "10.0.0.7:10911".parse().unwrap();
        assert_eq!(offset_msg_id(addr, 0x1A2B), "0A00000700002A9F0000000000001A2B");
        assert_eq!(decode_offset_msg_id("0A00000700002A9F0000000000001A2B"), Some((addr, 0x1A2B)));
        assert_eq!(decode_offset_msg_id("zz"), None);
        let v6: SocketAddr = "[::1]:10911".parse().unwrap();
        let id = offset_msg_id(v6, 7);
        assert_eq!(id.len(), 56);
        assert_eq!(decode_offset_msg_id(&id), Some((v6, 7)));
    }
}
