//! JSON header (serialize type 0), as fastjson 1.x writes `RemotingCommand`.
//!
//! ```text
//! {"code":310,"extFields":{"a":"PG",...},"flag":0,"language":"JAVA","opaque":5,
//!  "remark":"...","serializeTypeCurrentRPC":"JSON","version":479}
//! ```
//!
//! Reading is as forgiving as the Java broker (spec §9): members in any order, unknown members
//! ignored, `remark`/`extFields`/`serializeTypeCurrentRPC` optional, `language` as a name or an
//! ordinal, ext values as numbers or booleans (taken in their string form).
//! Writing is compact, keys sorted, null members omitted.
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
use super::ProtocolError;

/// Decodes a JSON header into a command with an empty body: the usual shape in one pass
/// ([`super::header_json_scan`]), anything else with serde_json, straight into the command
/// rather than through a `serde_json::Value` tree.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, ProtocolError> {
    if let Some(cmd) = super::header_json_scan::decode(header) {
        return Ok(cmd);
    }
    decode_serde(header)
}

fn decode_serde(header: &[u8]) -> Result<RemotingCommand, ProtocolError> {
    let mut de = serde_json::Deserializer::from_slice(header);
    let cmd = de.deserialize_any(HeaderVisitor).map_err(|e| ProtocolError::BadJsonHeader(e.to_string()))?;
    de.end().map_err(|e| ProtocolError::BadJsonHeader(e.to_string()))?;
    Ok(cmd)
}

struct HeaderVisitor;

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = RemotingCommand;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("header is not a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RemotingCommand, A::Error> {
        let mut cmd =
            RemotingCommand { language: LanguageCode::JAVA, serialize_type: SerializeType::Json, ..Default::default() };
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Code => cmd.code = map.next_value::<Int>()?.0.unwrap_or(0),
                Key::Version => cmd.version = map.next_value::<Int>()?.0.unwrap_or(0),
                Key::Opaque => cmd.opaque = map.next_value::<Int>()?.0.unwrap_or(0),
                Key::Flag => cmd.flag = map.next_value::<Int>()?.0.unwrap_or(0),
                Key::Language => cmd.language = language(&map.next_value::<Value>()?),
                Key::Remark => {
                    cmd.remark = match map.next_value::<Value>()? {
                        Value::String(s) if !s.is_empty() => Some(s),
                        Value::Null | Value::String(_) => None,
                        other => Some(other.to_string()),
                    }
                }
                Key::ExtFields => cmd.ext_fields = map.next_value::<Ext>()?.0,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(cmd)
    }
}

/// The members of a header that mean something; the rest are skipped.
enum Key {
    Code,
    Version,
    Opaque,
    Flag,
    Language,
    Remark,
    ExtFields,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "code" => Key::Code,
                    "version" => Key::Version,
                    "opaque" => Key::Opaque,
                    "flag" => Key::Flag,
                    "language" => Key::Language,
                    "remark" => Key::Remark,
                    "extFields" => Key::ExtFields,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A 32-bit integer member, as a number or a numeric string; `null` is absent.
struct Int(Option<i32>);

impl<'de> de::Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IntVisitor;
        impl Visitor<'_> for IntVisitor {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a 32-bit integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                i32::try_from(v).map(|v| Int(Some(v))).map_err(|_| E::custom("member is not a 32-bit integer"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                i32::try_from(v).map(|v| Int(Some(v))).map_err(|_| E::custom("member is not a 32-bit integer"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
                v.trim().parse().map(|v| Int(Some(v))).map_err(|_| E::custom("member is not a 32-bit integer"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Int, E> {
                Ok(Int(None))
            }
        }
        d.deserialize_any(IntVisitor)
    }
}

/// `extFields`: string values as they are, numbers and booleans in their string form, `null`
/// values skipped, nested JSON as its text; `null` for the whole member is no fields.
struct Ext(ExtFields);

impl<'de> de::Deserialize<'de> for Ext {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ExtVisitor;
        impl<'de> Visitor<'de> for ExtVisitor {
            type Value = Ext;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("member 'extFields' as an object")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Ext, E> {
                Ok(Ext(ExtFields::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ext, A::Error> {
                // Collected, then built in one pass (a repeated key keeps its last value, as
                // inserting would): cheaper than an insert per member.
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(k) = map.next_key::<String>()? {
                    if let Some(v) = map.next_value::<ExtValue>()?.0 {
                        pairs.push((super::command::ext_key_owned(k), v));
                    }
                }
                Ok(Ext(pairs.into_iter().collect()))
            }
        }
        d.deserialize_any(ExtVisitor)
    }
}

struct ExtValue(Option<String>);

impl<'de> de::Deserialize<'de> for ExtValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ExtValue(match <Value as de::Deserialize>::deserialize(d)? {
            Value::Null => None,
            Value::String(s) => Some(s),
            other => Some(other.to_string()),
        }))
    }
}

fn language(v: &Value) -> LanguageCode {
    match v {
        Value::String(s) => LanguageCode::from_name(s),
        Value::Number(n) => n.as_u64().and_then(|n| u8::try_from(n).ok()).map_or(LanguageCode::OTHER, LanguageCode),
        _ => LanguageCode::JAVA,
    }
}

pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"code\":");
    write_int(out, cmd.code);
    if !cmd.ext_fields.is_empty() {
        out.extend_from_slice(b",\"extFields\":{");
        for (i, (k, v)) in cmd.ext_fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(out, k);
            out.push(b':');
            write_str(out, v);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b",\"flag\":");
    write_int(out, cmd.flag);
    out.extend_from_slice(b",\"language\":");
    write_str(out, cmd.language.name());
    out.extend_from_slice(b",\"opaque\":");
    write_int(out, cmd.opaque);
    if let Some(remark) = &cmd.remark {
        out.extend_from_slice(b",\"remark\":");
        write_str(out, remark);
    }
    out.extend_from_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    write_int(out, cmd.version);
    out.push(b'}');
}

fn write_int(out: &mut Vec<u8>, v: i32) {
    use std::io::Write as _;
    let _ = write!(out, "{v}");
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    // Most values need no escape: copied as they are.
    if !s.bytes().any(|c| c < 0x20 || c == b'"' || c == b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // serde_json escapes control characters (\u0001, \u0002 in properties) as \u00XX.
    if serde_json::to_writer(&mut *out, s).is_err() {
        out.extend_from_slice(b"\"\"");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::command::ExtKey;

    #[test]
    fn decodes_java_send_header() {
        let h = br#"{"code":310,"extFields":{"a":"PG","b":"TopicTest","i":"UNIQ_KEY\u0001AC\u0002"},"flag":0,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#;
        let cmd = decode(h).unwrap();
        assert_eq!(cmd.code, 310);
        assert_eq!(cmd.opaque, 5);
        assert_eq!(cmd.version, 479);
        assert_eq!(cmd.ext_fields["b"], "TopicTest");
        assert_eq!(cmd.ext_fields["i"], "UNIQ_KEY\u{1}AC\u{2}");
        assert_eq!(cmd.remark, None);
    }

    #[test]
    fn lenient_like_the_java_broker() {
        let h = br#"{"opaque":"7","extFields":{"d":4,"k":false,"z":null,"a":"1","d":"5"},"language":9,"code":105,"remark":"","unknown":[1]}"#;
        let cmd = decode(h).unwrap();
        assert_eq!(cmd.code, 105);
        assert_eq!(cmd.opaque, 7);
        assert_eq!(cmd.language, LanguageCode::GO);
        assert_eq!(cmd.ext_fields["d"], "5", "a repeated member keeps its last value, as fastjson's map does");
        assert_eq!(cmd.ext_fields["a"], "1");
        assert_eq!(cmd.ext_fields["k"], "false");
        assert!(!cmd.ext_fields.contains_key("z"));
        assert_eq!(cmd.remark, None);
    }

    #[test]
    fn rejects_non_objects_and_bad_numbers() {
        assert!(decode(b"[1,2]").is_err());
        assert!(decode(b"{\"code\":").is_err());
        assert!(decode(b"{\"code\":99999999999}").is_err());
        assert!(decode(b"{\"code\":{}}").is_err());
    }

    /// The one-pass reader either declines or agrees with serde_json.
    #[test]
    fn fast_path_agrees_with_serde_or_declines() {
        let headers: &[&[u8]] = &[
            br#"{"code":310,"extFields":{"a":"PG","b":"TopicTest","i":"UNIQ_KEY\u0001AC\u0002"},"flag":0,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            br#" { "opaque" : "7" , "extFields":{"d":4,"k":false,"z":null,"a":"1","d":"5"},"language":9,"code":105,"remark":"","unknown":[1]} "#,
            br#"{"code":1,"remark":"x\"y\\z\/\b\f\n\r\t\u00e9\ud83d\ude00","extFields":null,"language":null}"#,
            br#"{"code":-0}"#,
            br#"{"code":01}"#,
            br#"{"code":1.5}"#,
            br#"{"code":2,"extFields":{"a":-0,"b":1e3,"c":12345678901234567890,"d":-12}}"#,
            br#"{"code":2,"extFields":{"a":{"n":[1,2]}}}"#,
            br#"{"code":3,"remark":true,"language":-1}"#,
            br#"{"code":3,"language":300,"flag":"  2 "}"#,
            br#"{"code":3,"remark":"\ud800"}"#,
            br#"{"code":3,"remark":"\udc00x"}"#,
            br#"{"code":3,"remark":"\u+abc"}"#,
            br#"{"code":3,}"#,
            br#"{"code":3} x"#,
            br#"{"code":3,"extFields":{"a":"1",}}"#,
            b"{\"code\":3,\"remark\":\"a\x01b\"}",
            b"{\"code\":3,\"remark\":\"\xff\"}",
            br#"{"code":2,"extFields":{"d":4,"k":false,"z":null,"t":true,"n":-12,"d":"5"},"language":"GO"}"#,
            br#"{}"#,
            br#"{"extFields":{}}"#,
            br#"{"code":99999999999}"#,
            br#"{"code":"x"}"#,
            br#"[1]"#,
            br#""#,
        ];
        for h in headers {
            let serde = decode_serde(h).ok();
            if let Some(fast) = super::super::header_json_scan::decode(h) {
                assert_eq!(Some(fast), serde, "{}", String::from_utf8_lossy(h));
            }
        }
        assert!(super::super::header_json_scan::decode(headers[0]).is_some(), "the usual shape takes the fast path");
        assert!(super::super::header_json_scan::decode(headers[1]).is_none(), "an array member is serde's");
        assert!(super::super::header_json_scan::decode(headers[2]).is_some());
        assert!(super::super::header_json_scan::decode(headers[18]).is_some(), "scalars of every kind");
    }

    /// What we (and fastjson) write, the fast path reads back, whatever the characters.
    #[test]
    fn fast_path_reads_every_encoded_string() {
        let alphabet: Vec<char> = "aZ09 \"\\/\u{1}\u{2}\u{1f}\u{7f}é€😀\n\t".chars().collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let text = |rnd: &mut dyn FnMut(usize) -> usize| {
            let len = rnd(12);
            (0..len).map(|_| alphabet[rnd(alphabet.len())]).collect::<String>()
        };
        for _ in 0..500 {
            let remark = Some(text(&mut rnd)).filter(|r| !r.is_empty());
            let ext_fields = (0..rnd(6)).map(|_| (ExtKey::from(text(&mut rnd)), text(&mut rnd))).collect();
            let cmd = RemotingCommand {
                code: rnd(400) as i32 - 50,
                opaque: rnd(1 << 30) as i32,
                remark,
                ext_fields,
                ..Default::default()
            };
            let mut out = Vec::new();
            encode(&cmd, &mut out);
            let fast = super::super::header_json_scan::decode(&out);
            assert_eq!(fast.as_ref(), Some(&cmd), "{}", String::from_utf8_lossy(&out));
        }
    }

    #[test]
    fn encodes_sorted_and_round_trips() {
        let cmd = RemotingCommand {
            code: 17,
            opaque: -3,
            flag: 1,
            version: 479,
            remark: Some("No topic route info in name server for the topic: T".into()),
            ext_fields: [(ExtKey::from("value"), "v\u{1}".to_string())].into(),
            ..Default::default()
        };
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("{\"code\":17,\"extFields\":{\"value\":\"v\\u0001\"},\"flag\":1,"));
        assert_eq!(decode(&out).unwrap(), cmd);
    }
}
