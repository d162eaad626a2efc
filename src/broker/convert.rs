//! The one bridge between wire types and store types: a send request becomes the
//! `MessageToStore` records the store appends; store statuses become response codes.
//!
//! May import: `model`, `protocol`, `store` and modules of `broker/`; the area's rule is its line
//! in docs/architecture.md.

use std::net::SocketAddr;

use bytes::Bytes;

use crate::model::message::{self, property, MessageToStore};
use crate::protocol::header::broker::SendMessageRequestHeader;
use crate::protocol::ResponseCode;
use crate::store::{GetMessageStatus, PutStatus};

/// What the broker itself writes into every message it takes from a producer, replacing a
/// client's value of the same name: `MSG_REGION` and `TRACE_ON` (Java's `buildMsgContext` puts
/// them into the request's properties; a consumer's trace hook reads them from the message) and
/// `CLUSTER` (`sendMessage` / `sendBatchMessage`).
#[derive(Clone, Copy, Debug)]
pub struct BrokerProperties<'a> {
    pub region: &'a str,
    pub trace_on: bool,
    pub cluster: &'a str,
}

impl BrokerProperties<'_> {
    fn entries(&self) -> [(&str, &str); 3] {
        [
            (property::MSG_REGION, self.region),
            (property::TRACE_ON, if self.trace_on { "true" } else { "false" }),
            (property::CLUSTER, self.cluster),
        ]
    }

    fn names(&self) -> [&'static str; 3] {
        [property::MSG_REGION, property::TRACE_ON, property::CLUSTER]
    }
}

/// Properties as stored: the client's, plus `UNIQ_KEY` if missing and the broker's own
/// ([`BrokerProperties`]) (Java parses them into a map and writes it back, which drops malformed
/// entries and keeps the last of a repeated name). One pass and one allocation when every name
/// is unique, the usual case.
pub fn stored_properties(client: &str, broker: BrokerProperties<'_>, uniq_key: impl FnOnce() -> String) -> String {
    let entries = || {
        client.split(message::PROPERTY_SEPARATOR).filter_map(|seg| {
            // A non-empty name and value make the segment at least 3 characters long.
            let (k, v) = seg.split_once(message::NAME_VALUE_SEPARATOR)?;
            (!k.is_empty() && !v.is_empty()).then_some((k, v))
        })
    };
    // The names seen so far, on the stack; more than it holds takes the map path below.
    let mut names = [""; 16];
    let mut seen = 0;
    let unique = entries().all(|(k, _)| {
        let new = seen < names.len() && !names[..seen].contains(&k);
        if new {
            names[seen] = k;
            seen += 1;
        }
        new
    });
    if !unique {
        let mut props = message::parse_properties(client);
        props.entry(property::UNIQ_KEY.to_owned()).or_insert_with(uniq_key);
        for (k, v) in broker.entries() {
            props.insert(k.to_owned(), v.to_owned());
        }
        return message::map_to_properties(&props);
    }
    let mut out = String::with_capacity(client.len() + broker.region.len() + broker.cluster.len() + 80);
    let mut push = |k: &str, v: &str| {
        out.push_str(k);
        out.push(message::NAME_VALUE_SEPARATOR);
        out.push_str(v);
        out.push(message::PROPERTY_SEPARATOR);
    };
    for (k, v) in entries().filter(|(k, _)| !broker.names().contains(k)) {
        push(k, v);
    }
    if !names[..seen].contains(&property::UNIQ_KEY) {
        push(property::UNIQ_KEY, &uniq_key());
    }
    for (k, v) in broker.entries() {
        push(k, v);
    }
    out
}

/// A single message from a send request.
#[allow(clippy::too_many_arguments)]
pub fn message_to_store(
    h: &SendMessageRequestHeader,
    topic: &str,
    queue_id: i32,
    body: Bytes,
    properties: String,
    flag: i32,
    sys_flag: i32,
    born_host: SocketAddr,
    store_host: SocketAddr,
) -> MessageToStore {
    let tags = message::property_value(&properties, property::TAGS);
    MessageToStore {
        topic: topic.to_owned(),
        queue_id,
        flag,
        body,
        tags_code: message::tags_code(tags),
        properties,
        born_timestamp: h.born_timestamp,
        born_host,
        store_host,
        sys_flag,
        reconsume_times: h.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
    }
}

/// Send response code for a store status (`SendMessageProcessor.handlePutMessageResult`).
pub fn put_status_code(status: &PutStatus) -> (ResponseCode, Option<String>) {
    match status {
        PutStatus::PutOk => (ResponseCode::SUCCESS, None),
        PutStatus::FlushDiskTimeout => (ResponseCode::FLUSH_DISK_TIMEOUT, Some("flush disk timeout".into())),
        PutStatus::ServiceNotAvailable(why) => {
            (ResponseCode::SERVICE_NOT_AVAILABLE, Some(format!("service not available now: {why}")))
        }
        PutStatus::MessageIllegal(why) => {
            (ResponseCode::MESSAGE_ILLEGAL, Some(format!("the message is illegal: {why}")))
        }
        PutStatus::PropertiesSizeExceeded => {
            (ResponseCode::MESSAGE_ILLEGAL, Some("the message properties exceed 32767 bytes".into()))
        }
        PutStatus::UnknownError(why) => (ResponseCode::SYSTEM_ERROR, Some(format!("store failed: {why}"))),
    }
}

/// Pull response code for a store status (`PullMessageProcessor`), given the requested offset.
pub fn pull_status_code(status: GetMessageStatus, requested_offset: i64) -> ResponseCode {
    use GetMessageStatus::*;
    match status {
        Found => ResponseCode::SUCCESS,
        NoMatchedMessage | MessageWasRemoving => ResponseCode::PULL_RETRY_IMMEDIATELY,
        NoMessageInQueue | NoMatchedLogicQueue if requested_offset != 0 => ResponseCode::PULL_OFFSET_MOVED,
        NoMessageInQueue | NoMatchedLogicQueue | OffsetOverflowOne | OffsetFoundNull => ResponseCode::PULL_NOT_FOUND,
        OffsetOverflowBadly | OffsetTooSmall => ResponseCode::PULL_OFFSET_MOVED,
    }
}

/// The status name Java puts in the pull response's remark.
pub fn status_name(status: GetMessageStatus) -> &'static str {
    use GetMessageStatus::*;
    match status {
        Found => "FOUND",
        NoMatchedMessage => "NO_MATCHED_MESSAGE",
        MessageWasRemoving => "MESSAGE_WAS_REMOVING",
        OffsetFoundNull => "OFFSET_FOUND_NULL",
        OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
        OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
        OffsetTooSmall => "OFFSET_TOO_SMALL",
        NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
        NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
    }
}

/// A client-style unique id (`MessageClientIDSetter.createUniqID`): uppercase hex of IP, pid,
/// a per-process value, milliseconds since the start of the month, and a counter.
pub fn new_uniq_id(host: SocketAddr) -> String {
    use std::fmt::Write;
    use std::sync::atomic::{AtomicU16, Ordering};
    static COUNTER: AtomicU16 = AtomicU16::new(0);
    let mut bytes = Vec::with_capacity(28);
    match host.ip() {
        std::net::IpAddr::V4(ip) => bytes.extend_from_slice(&ip.octets()),
        std::net::IpAddr::V6(ip) => bytes.extend_from_slice(&ip.octets()),
    }
    bytes.extend_from_slice(&(std::process::id() as u16).to_be_bytes());
    bytes.extend_from_slice(&0x4652_4B54u32.to_be_bytes());
    let month_ms = crate::store::now_ms() % (31 * 24 * 3600 * 1000);
    bytes.extend_from_slice(&(month_ms as i32).to_be_bytes());
    bytes.extend_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    bytes.iter().fold(String::with_capacity(56), |mut s, b| {
        let _ = write!(s, "{b:02X}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> std::collections::BTreeMap<String, String> {
        message::parse_properties(s)
    }

    #[test]
    fn stored_properties_are_the_clients_plus_uniq_key_and_the_brokers() {
        let broker = BrokerProperties { region: "R1", trace_on: true, cluster: "C1" };
        let client = "TAGS\u{1}A\u{2}KEYS\u{1}k1 k2\u{2}CLUSTER\u{1}other\u{2}x\u{2}\u{1}v\u{2}TRACE_ON\u{1}false\u{2}WAIT\u{1}true";
        let out = stored_properties(client, broker, || "U1".into());
        let want: std::collections::BTreeMap<String, String> = [
            ("TAGS", "A"),
            ("KEYS", "k1 k2"),
            ("WAIT", "true"),
            ("UNIQ_KEY", "U1"),
            ("MSG_REGION", "R1"),
            ("TRACE_ON", "true"),
            ("CLUSTER", "C1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(parsed(&out), want);
        assert!(out.ends_with("MSG_REGION\u{1}R1\u{2}TRACE_ON\u{1}true\u{2}CLUSTER\u{1}C1\u{2}"));
        let off = BrokerProperties { trace_on: false, ..broker };
        let kept = stored_properties("UNIQ_KEY\u{1}mine\u{2}", off, || unreachable!());
        assert_eq!(kept, "UNIQ_KEY\u{1}mine\u{2}MSG_REGION\u{1}R1\u{2}TRACE_ON\u{1}false\u{2}CLUSTER\u{1}C1\u{2}");
        // A repeated name keeps the last value, as Java's map does; the broker's still win.
        let dup = stored_properties("K\u{1}1\u{2}K\u{1}2\u{2}MSG_REGION\u{1}x\u{2}", broker, || "U".into());
        assert_eq!((parsed(&dup)["K"].as_str(), parsed(&dup)["MSG_REGION"].as_str()), ("2", "R1"));
        // More names than the fast path tracks: all kept all the same.
        let many: String = (0..20).map(|i| format!("P{i}\u{1}v{i}\u{2}")).collect();
        let out = parsed(&stored_properties(&many, broker, || "U".into()));
        assert_eq!(out.len(), 20 + 4);
        assert_eq!((out["P0"].as_str(), out["P19"].as_str(), out["UNIQ_KEY"].as_str()), ("v0", "v19", "U"));
    }
}
