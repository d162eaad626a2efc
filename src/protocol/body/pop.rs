//! BATCH_ACK_MESSAGE (200151)'s body, `BatchAckMessageRequestBody`: the acks of several popped
//! messages, one entry (`BatchAck`) per checkpoint, as fastjson writes it (`@JSONField` short
//! names; the long names are accepted too, as fastjson's `alternateNames`):
//!
//! ```text
//! {"acks":[{"b":"Aw==","c":"G","it":60000,"pt":1700000000000,"q":0,"r":"0","rq":0,"so":10,"t":"T"}],
//!  "brokerName":"broker-a"}
//!   c consumerGroup  t topic (as asked)  r retry ("0" normal, "1" %RETRY%g_t, "2" %RETRY%g+t)
//!   so startOffset (the checkpoint's)  q queueId  rq reviveQueueId  pt popTime  it invisibleTime
//!   b bitSet: java.util.BitSet.toByteArray() in base64 (fastjson writeByteArray), little-endian:
//!     bit i (byte i/8, bit i%8) set = offset startOffset+i acked.  "Aw==" = bits 0,1 = so, so+1
//! ```
//!
//! Hostile bodies: [`BatchAckMessageRequestBody::parse`] refuses, with a message naming the
//! rule, a body over [`MAX_BODY`], more than [`MAX_ACKS`] entries, a bitSet over
//! [`MAX_BITSET_BYTES`] (base64 checked on its length before decoding) and more than
//! [`MAX_ACKED`] set bits in all; entries without a group, a topic or a known retry mark.
//! Nothing it allocates is sized by a number in the body.
//!
//! May import: `model` and modules of `protocol/`; the area's rule is its line in
//! docs/architecture.md.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;

use super::client::{i64_of, str_of};

/// Longest body accepted.
pub const MAX_BODY: usize = 1 << 20;
/// Most entries (checkpoints) in one body.
pub const MAX_ACKS: usize = 1024;
/// Longest bitSet: 65,536 offsets past an entry's start offset.
pub const MAX_BITSET_BYTES: usize = 8 * 1024;
/// Most offsets acked by one body (set bits of every entry).
pub const MAX_ACKED: usize = 8 * 1024;

/// One entry: offsets `start_offset + i` for each `i` in `bits`, of the checkpoint
/// (`start_offset`, `pop_time`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchAck {
    pub consumer_group: String,
    pub topic: String,
    /// "0", "1" or "2": which topic the offsets are of (`ExtraInfoUtil.getRealTopic`).
    pub retry: String,
    pub start_offset: i64,
    pub queue_id: i32,
    pub revive_queue_id: i32,
    pub pop_time: i64,
    pub invisible_time: i64,
    /// The set bits, ascending.
    pub bits: Vec<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchAckMessageRequestBody {
    pub broker_name: Option<String>,
    pub acks: Vec<BatchAck>,
}

impl BatchAckMessageRequestBody {
    /// Parses and bounds a body (see the module doc); an empty body has no acks.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        if body.is_empty() {
            return Ok(Self::default());
        }
        if body.len() > MAX_BODY {
            return Err(format!("the batch ack body has {} bytes, more than {MAX_BODY}", body.len()));
        }
        let v: Value = super::json::from_slice(body).map_err(|e| format!("the batch ack body is not JSON: {e}"))?;
        let Value::Object(obj) = &v else { return Err("the batch ack body is not a JSON object".into()) };
        let broker_name = obj.get("brokerName").and_then(str_of);
        let entries = match obj.get("acks") {
            None | Some(Value::Null) => return Ok(Self { broker_name, acks: Vec::new() }),
            Some(Value::Array(a)) => a,
            Some(_) => return Err("acks is not a JSON array".into()),
        };
        if entries.len() > MAX_ACKS {
            return Err(format!("the batch ack body has {} entries, more than {MAX_ACKS}", entries.len()));
        }
        let mut acks = Vec::with_capacity(entries.len());
        let mut acked = 0usize;
        for (i, e) in entries.iter().enumerate() {
            let ack = BatchAck::from_value(e).map_err(|why| format!("acks[{i}]: {why}"))?;
            acked += ack.bits.len();
            if acked > MAX_ACKED {
                return Err(format!("the batch ack body acks more than {MAX_ACKED} offsets"));
            }
            acks.push(ack);
        }
        Ok(Self { broker_name, acks })
    }
}

impl BatchAck {
    fn from_value(v: &Value) -> Result<Self, String> {
        if !v.is_object() {
            return Err("not a JSON object".into());
        }
        // The short name first, then fastjson's alternate name.
        let get = |short: &str, long: &str| v.get(short).filter(|x| !x.is_null()).or_else(|| v.get(long));
        let text = |short: &str, long: &str| {
            get(short, long).and_then(str_of).filter(|s| !s.is_empty()).ok_or(format!("no {long}"))
        };
        // Java primitives: absent is 0; present must be a number that fits.
        let int = |short: &str, long: &str| match get(short, long) {
            None | Some(Value::Null) => Ok(0),
            Some(x) => i64_of(x).ok_or(format!("{long} is not a number")),
        };
        let int32 = |short: &str, long: &str| {
            int(short, long).and_then(|n| i32::try_from(n).map_err(|_| format!("{long} {n} is out of range")))
        };
        let retry = text("r", "retry")?;
        if !matches!(retry.as_str(), "0" | "1" | "2") {
            return Err(format!("retry {retry:.8} is not 0, 1 or 2"));
        }
        Ok(Self {
            consumer_group: text("c", "consumerGroup")?,
            topic: text("t", "topic")?,
            retry,
            start_offset: int("so", "startOffset")?,
            queue_id: int32("q", "queueId")?,
            revive_queue_id: int32("rq", "reviveQueueId")?,
            pop_time: int("pt", "popTime")?,
            invisible_time: int("it", "invisibleTime")?,
            bits: set_bits(&bitset_bytes(get("b", "bitSet"))?),
        })
    }
}

/// `BitSetSerializerDeserializer`: fastjson's byte[] (a base64 string, or an array of bytes).
fn bitset_bytes(v: Option<&Value>) -> Result<Vec<u8>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => {
            if s.len() > MAX_BITSET_BYTES.div_ceil(3) * 4 {
                return Err(format!("bitSet is longer than {MAX_BITSET_BYTES} bytes"));
            }
            let bytes = STANDARD.decode(s.trim()).map_err(|e| format!("bitSet is not base64: {e}"))?;
            if bytes.len() > MAX_BITSET_BYTES {
                return Err(format!("bitSet is longer than {MAX_BITSET_BYTES} bytes"));
            }
            Ok(bytes)
        }
        Some(Value::Array(a)) => {
            if a.len() > MAX_BITSET_BYTES {
                return Err(format!("bitSet is longer than {MAX_BITSET_BYTES} bytes"));
            }
            a.iter()
                .map(|x| match x.as_i64() {
                    Some(n @ -128..=255) => Ok(n as u8),
                    _ => Err("bitSet holds a value that is not a byte".to_owned()),
                })
                .collect()
        }
        Some(_) => Err("bitSet is neither base64 nor an array of bytes".into()),
    }
}

/// The set bits of `BitSet.valueOf(bytes)`, ascending.
fn set_bits(bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, byte) in bytes.iter().enumerate() {
        for bit in 0..8u32 {
            if byte & (1 << bit) != 0 {
                out.push(i as u32 * 8 + bit);
            }
        }
        if out.len() > MAX_ACKED {
            break; // the caller refuses it; no need to look further
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fastjson_body_parses() {
        let body = br#"{"acks":[{"b":"BQE=","c":"G","it":60000,"pt":1700000000000,"q":2,"r":"1","rq":0,"so":10,"t":"T"}],"brokerName":"broker-a"}"#;
        let b = BatchAckMessageRequestBody::parse(body).unwrap();
        assert_eq!(b.broker_name.as_deref(), Some("broker-a"));
        let a = &b.acks[0];
        assert_eq!((a.consumer_group.as_str(), a.topic.as_str(), a.retry.as_str()), ("G", "T", "1"));
        assert_eq!((a.start_offset, a.queue_id, a.pop_time, a.invisible_time), (10, 2, 1_700_000_000_000, 60_000));
        // 0x05 0x01: bits 0, 2 and 8.
        assert_eq!(a.bits, vec![0, 2, 8]);
    }

    #[test]
    fn long_names_and_byte_arrays_are_accepted() {
        let body = br#"{"acks":[{"consumerGroup":"G","topic":"T","retry":0,"startOffset":"3","bitSet":[-128]}]}"#;
        let a = &BatchAckMessageRequestBody::parse(body).unwrap().acks[0];
        assert_eq!((a.retry.as_str(), a.start_offset, a.bits.as_slice()), ("0", 3, [7u32].as_slice()));
    }

    #[test]
    fn hostile_bodies_are_refused_with_a_reason() {
        let big_bits = STANDARD.encode(vec![0u8; MAX_BITSET_BYTES + 1]);
        let many_bits = STANDARD.encode(vec![0xffu8; MAX_BITSET_BYTES]);
        let entry = r#"{"c":"G","t":"T","r":"0","b":"AQ=="}"#;
        let many = format!(r#"{{"acks":[{}]}}"#, vec![entry; MAX_ACKS + 1].join(","));
        for (body, why) in [
            ("garbage".to_owned(), "not JSON"),
            ("[1,2]".to_owned(), "not a JSON object"),
            (r#"{"acks":{}}"#.to_owned(), "not a JSON array"),
            (r#"{"acks":[1]}"#.to_owned(), "acks[0]: not a JSON object"),
            (r#"{"acks":[{"t":"T","r":"0"}]}"#.to_owned(), "no consumerGroup"),
            (r#"{"acks":[{"c":"G","t":"T","r":"x"}]}"#.to_owned(), "not 0, 1 or 2"),
            (r#"{"acks":[{"c":"G","t":"T","r":"0","q":99999999999}]}"#.to_owned(), "out of range"),
            (r#"{"acks":[{"c":"G","t":"T","r":"0","so":"x"}]}"#.to_owned(), "not a number"),
            (r#"{"acks":[{"c":"G","t":"T","r":"0","b":"!!"}]}"#.to_owned(), "not base64"),
            (r#"{"acks":[{"c":"G","t":"T","r":"0","b":[999]}]}"#.to_owned(), "not a byte"),
            (format!(r#"{{"acks":[{{"c":"G","t":"T","r":"0","b":"{big_bits}"}}]}}"#), "longer than"),
            (format!(r#"{{"acks":[{{"c":"G","t":"T","r":"0","b":"{many_bits}"}}]}}"#), "more than 8192 offsets"),
            (many, "entries, more than"),
        ] {
            let err = BatchAckMessageRequestBody::parse(body.as_bytes()).expect_err(&body[..body.len().min(80)]);
            assert!(err.contains(why), "{body:.60}: {err}");
        }
        let huge = vec![b' '; MAX_BODY + 1];
        assert!(BatchAckMessageRequestBody::parse(&huge).unwrap_err().contains("bytes"));
    }

    proptest::proptest! {
        #[test]
        fn any_body_parses_or_is_refused(s in ".{0,300}") {
            let _ = BatchAckMessageRequestBody::parse(s.as_bytes());
        }
    }
}
