//! JSON as fastjson 1.x reads and writes it.
//!
//! Java peers write maps keyed by numbers without quotes (`{0:"addr"}`) and maps keyed by
//! objects with the object literal as key (`{{"topic":"T","queueId":0}:5}`). Neither is JSON.
//! [`normalize`] rewrites such input into standard JSON (bare keys quoted, object keys turned
//! into strings holding their JSON text) so serde can parse it. [`JsonOut`] writes compact JSON
//! with a choice of quoted or bare numeric keys, for the legacy forms old clients parse.
//!
//! May import: nothing outside `model/` (the area's rule: docs/architecture.md).

use std::borrow::Cow;

/// Rewrites fastjson's non-standard object keys into standard JSON. Input that is already
/// standard is returned unchanged (borrowed). Malformed input is passed through for serde to
/// reject with a precise message.
pub fn normalize(input: &str) -> Cow<'_, str> {
    if !needs_normalizing(input) {
        return Cow::Borrowed(input);
    }
    let b = input.as_bytes();
    let mut out = String::with_capacity(input.len() + 16);
    let mut i = 0;
    // Whether the next token inside the innermost object is a key.
    let mut stack: Vec<bool> = Vec::new();
    let mut expect_key = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            out.push(c as char);
            i += 1;
            continue;
        }
        if expect_key && c != b'"' && c != b'}' {
            let end = if c == b'{' || c == b'[' { balanced_end(b, i) } else { bare_key_end(b, i) };
            let key = input[i..end].trim();
            out.push_str(&serde_json::Value::String(key.to_owned()).to_string());
            expect_key = false;
            i = end;
            continue;
        }
        match c {
            b'"' => {
                let end = string_end(b, i);
                out.push_str(&input[i..end]);
                expect_key = false;
                i = end;
                continue;
            }
            b'{' => {
                stack.push(true);
                expect_key = true;
            }
            b'[' => {
                stack.push(false);
                expect_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
            }
            b',' => expect_key = stack.last().copied().unwrap_or(false),
            _ => expect_key = false,
        }
        if c.is_ascii() {
            out.push(c as char);
            i += 1;
        } else {
            // Outside strings only malformed input has non-ASCII; copy the character whole.
            let end = (i + 1..=b.len()).find(|&e| input.is_char_boundary(e)).unwrap_or(b.len());
            out.push_str(&input[i..end]);
            i = end;
        }
    }
    Cow::Owned(out)
}

/// Cheap check: a `{` or `,` followed (after blanks) by something other than `"`, `}` inside an
/// object. Over-approximates (arrays), which only costs a rewrite that changes nothing.
fn needs_normalizing(input: &str) -> bool {
    let b = input.as_bytes();
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b'{' {
            let next = b[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
            if !matches!(next, Some(b'"') | Some(b'}') | None) {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// Index just past the string starting at `start` (a `"`).
fn string_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Index just past the object or array starting at `start`.
fn balanced_end(b: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_end(b, i);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

fn bare_key_end(b: &[u8], start: usize) -> usize {
    b[start..].iter().position(|&c| c == b':').map_or(b.len(), |p| start + p)
}

/// Parses fastjson-flavoured JSON into `T`.
pub fn from_slice<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(&normalize(text)),
        Err(_) => serde_json::from_slice(body),
    }
}

/// A small compact JSON writer for the bodies whose shape old clients parse by hand.
pub struct JsonOut {
    buf: String,
    /// Escape non-ASCII as `\uXXXX` (fastjson `BrowserCompatible`).
    ascii_only: bool,
    first: Vec<bool>,
}

impl JsonOut {
    pub fn new(ascii_only: bool) -> Self {
        Self { buf: String::with_capacity(256), ascii_only, first: Vec::new() }
    }

    pub fn finish(self) -> String {
        self.buf
    }

    fn sep(&mut self) {
        if let Some(first) = self.first.last_mut() {
            if *first {
                *first = false;
            } else {
                self.buf.push(',');
            }
        }
    }

    pub fn begin_object(&mut self) {
        self.sep();
        self.buf.push('{');
        self.first.push(true);
    }

    pub fn end_object(&mut self) {
        self.first.pop();
        self.buf.push('}');
    }

    pub fn begin_array(&mut self) {
        self.sep();
        self.buf.push('[');
        self.first.push(true);
    }

    pub fn end_array(&mut self) {
        self.first.pop();
        self.buf.push(']');
    }

    /// A quoted key; the value written next belongs to it.
    pub fn key(&mut self, k: &str) {
        self.sep();
        self.push_str(k);
        self.buf.push(':');
        // The value that follows must not write a separator.
        if let Some(first) = self.first.last_mut() {
            *first = true;
        }
    }

    /// A numeric key, bare (`{0:...}`, legacy fastjson) or quoted.
    pub fn num_key(&mut self, k: i64, quoted: bool) {
        if quoted {
            self.key(&k.to_string());
        } else {
            self.sep();
            self.buf.push_str(&k.to_string());
            self.buf.push(':');
            if let Some(first) = self.first.last_mut() {
                *first = true;
            }
        }
    }

    pub fn string(&mut self, s: &str) {
        self.sep();
        self.push_str(s);
    }

    pub fn raw(&mut self, text: &str) {
        self.sep();
        self.buf.push_str(text);
    }

    pub fn int(&mut self, v: i64) {
        self.raw(&v.to_string());
    }

    pub fn bool(&mut self, v: bool) {
        self.raw(if v { "true" } else { "false" });
    }

    fn push_str(&mut self, s: &str) {
        self.buf.push('"');
        for c in s.chars() {
            match c {
                '"' => self.buf.push_str("\\\""),
                '\\' => self.buf.push_str("\\\\"),
                '\n' => self.buf.push_str("\\n"),
                '\r' => self.buf.push_str("\\r"),
                '\t' => self.buf.push_str("\\t"),
                c if (c as u32) < 0x20 || (self.ascii_only && !c.is_ascii()) => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        self.buf.push_str(&format!("\\u{:04x}", u));
                    }
                }
                c => self.buf.push(c),
            }
        }
        self.buf.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn standard_json_is_borrowed() {
        assert!(matches!(normalize(r#"{"a":{"b":[1,{"c":2}]}}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn bare_numeric_keys_are_quoted() {
        let n = normalize(r#"{"brokerAddrs":{0:"127.0.0.1:10911", 1 :"h:1"},"s":"{x:1}"}"#);
        let v: serde_json::Value = serde_json::from_str(&n).unwrap();
        assert_eq!(v["brokerAddrs"]["0"], "127.0.0.1:10911");
        assert_eq!(v["brokerAddrs"]["1"], "h:1");
        assert_eq!(v["s"], "{x:1}");
    }

    #[test]
    fn object_keys_become_strings() {
        let text = r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:11110,{"brokerName":"b","queueId":1,"topic":"T"}:0}}"#;
        let v: BTreeMap<String, BTreeMap<String, i64>> = from_slice(text.as_bytes()).unwrap();
        let table = &v["offsetTable"];
        assert_eq!(table[r#"{"brokerName":"b","queueId":0,"topic":"T"}"#], 11110);
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn non_ascii_survives_normalizing() {
        let n = normalize("{0:\"主题\"}");
        let v: BTreeMap<String, String> = serde_json::from_str(&n).unwrap();
        assert_eq!(v["0"], "主题");
    }

    #[test]
    fn writer_forms() {
        let mut w = JsonOut::new(true);
        w.begin_object();
        w.key("m");
        w.begin_object();
        w.num_key(0, false);
        w.string("a\u{1}é");
        w.num_key(1, true);
        w.int(5);
        w.end_object();
        w.key("l");
        w.begin_array();
        w.bool(true);
        w.int(-1);
        w.end_array();
        w.end_object();
        assert_eq!(w.finish(), r#"{"m":{0:"a\u0001\u00e9","1":5},"l":[true,-1]}"#);
    }
}
