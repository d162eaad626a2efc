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

use serde_json::{Map, Value};

use super::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
use super::ProtocolError;

/// Decodes a JSON header into a command with an empty body.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, ProtocolError> {
    let value: Value = serde_json::from_slice(header).map_err(|e| ProtocolError::BadJsonHeader(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(ProtocolError::BadJsonHeader("header is not a JSON object".into()));
    };
    Ok(RemotingCommand {
        code: int_member(&obj, "code")?.unwrap_or(0),
        language: language(obj.get("language")),
        version: int_member(&obj, "version")?.unwrap_or(0),
        opaque: int_member(&obj, "opaque")?.unwrap_or(0),
        flag: int_member(&obj, "flag")?.unwrap_or(0),
        remark: match obj.get("remark") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Null) | None => None,
            Some(Value::String(_)) => None,
            Some(other) => Some(other.to_string()),
        },
        ext_fields: ext_fields(obj.get("extFields"))?,
        body: Default::default(),
        body_parts: Vec::new(),
        serialize_type: SerializeType::Json,
    })
}

/// An integer member: a JSON number, or a string holding one (fastjson converts both).
fn int_member(obj: &Map<String, Value>, key: &'static str) -> Result<Option<i32>, ProtocolError> {
    let bad = || ProtocolError::BadJsonHeader(format!("member '{key}' is not a 32-bit integer"));
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let v = n.as_i64().ok_or_else(bad)?;
            i32::try_from(v).map(Some).map_err(|_| bad())
        }
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

fn language(v: Option<&Value>) -> LanguageCode {
    match v {
        Some(Value::String(s)) => LanguageCode::from_name(s),
        Some(Value::Number(n)) => {
            n.as_u64().and_then(|n| u8::try_from(n).ok()).map_or(LanguageCode::OTHER, LanguageCode)
        }
        _ => LanguageCode::JAVA,
    }
}

fn ext_fields(v: Option<&Value>) -> Result<ExtFields, ProtocolError> {
    let mut out = ExtFields::new();
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let s = match v {
                    Value::Null => continue,
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.insert(k.clone(), s);
            }
        }
        Some(_) => return Err(ProtocolError::BadJsonHeader("member 'extFields' is not an object".into())),
    }
    Ok(out)
}

/// Encodes the header of `cmd` as compact JSON with sorted keys.
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"code\":");
    out.extend_from_slice(cmd.code.to_string().as_bytes());
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
    out.extend_from_slice(cmd.flag.to_string().as_bytes());
    out.extend_from_slice(b",\"language\":");
    write_str(out, cmd.language.name());
    out.extend_from_slice(b",\"opaque\":");
    out.extend_from_slice(cmd.opaque.to_string().as_bytes());
    if let Some(remark) = &cmd.remark {
        out.extend_from_slice(b",\"remark\":");
        write_str(out, remark);
    }
    out.extend_from_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    out.extend_from_slice(cmd.version.to_string().as_bytes());
    out.push(b'}');
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    // serde_json escapes control characters (\u0001, \u0002 in properties) as \u00XX.
    if serde_json::to_writer(&mut *out, s).is_err() {
        out.extend_from_slice(b"\"\"");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let h = br#"{"opaque":"7","extFields":{"d":4,"k":false,"z":null},"language":9,"code":105,"remark":"","unknown":[1]}"#;
        let cmd = decode(h).unwrap();
        assert_eq!(cmd.code, 105);
        assert_eq!(cmd.opaque, 7);
        assert_eq!(cmd.language, LanguageCode::GO);
        assert_eq!(cmd.ext_fields["d"], "4");
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

    #[test]
    fn encodes_sorted_and_round_trips() {
        let cmd = RemotingCommand {
            code: 17,
            opaque: -3,
            flag: 1,
            version: 479,
            remark: Some("No topic route info in name server for the topic: T".into()),
            ext_fields: [("value".to_string(), "v\u{1}".to_string())].into(),
            ..Default::default()
        };
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("{\"code\":17,\"extFields\":{\"value\":\"v\\u0001\"},\"flag\":1,"));
        assert_eq!(decode(&out).unwrap(), cmd);
    }
}
