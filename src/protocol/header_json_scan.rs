//! The fast path of the JSON header reader: one pass over the bytes for the shape every client
//! sends (one object of scalars, `extFields` one object of scalars), strings borrowed from the
//! input until they are stored.
//!
//! It answers `None` for anything else (a nested array, a float, a bad escape, invalid UTF-8,
//! trailing bytes, a number that does not fit), and [`super::header_json::decode`] then reads
//! the header with serde_json, which decides, leniently, or names the error. So this path only
//! has to be right about what it accepts; the differential tests in `header_json` check that it
//! agrees with serde_json there. Hand-written because serde's visitor plumbing (a `Value` per ext
//! value, a `String` per key before the map is built) was 14 % of the broker's CPU per send.
//!
//! May import: `super::command`.

use std::borrow::Cow;

use super::command::{ext_key_cow, ExtFields, ExtKey, LanguageCode, RemotingCommand, SerializeType};

/// Reads `header` if it has the usual shape; `None` leaves it to serde_json.
pub fn decode(header: &[u8]) -> Option<RemotingCommand> {
    // Checked once as a whole (JSON text is UTF-8; serde_json names the error otherwise), so
    // the strings are slices of it at ASCII boundaries.
    let text = std::str::from_utf8(header).ok()?;
    let mut s = Scan { text, b: header, i: 0 };
    let mut cmd =
        RemotingCommand { language: LanguageCode::JAVA, serialize_type: SerializeType::Json, ..Default::default() };
    s.ws();
    s.eat(b'{')?;
    s.ws();
    if s.peek()? == b'}' {
        s.i += 1;
    } else {
        loop {
            let key = s.string()?;
            s.ws();
            s.eat(b':')?;
            s.ws();
            match key.as_ref() {
                "code" => cmd.code = s.int()?.unwrap_or(0),
                "version" => cmd.version = s.int()?.unwrap_or(0),
                "opaque" => cmd.opaque = s.int()?.unwrap_or(0),
                "flag" => cmd.flag = s.int()?.unwrap_or(0),
                "language" => cmd.language = s.language()?,
                "remark" => {
                    cmd.remark = match s.scalar()? {
                        Scalar::Str(r) if !r.is_empty() => Some(r.into_owned()),
                        Scalar::Str(_) | Scalar::Null => None,
                        Scalar::Literal(_) => return None,
                    }
                }
                "extFields" => cmd.ext_fields = s.ext()?,
                _ => {
                    s.scalar()?;
                }
            }
            s.ws();
            match s.next()? {
                b',' => s.ws(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    s.ws();
    (s.i == s.b.len()).then_some(cmd)
}

/// The bytes that end a run of plain string bytes: quote, backslash, control characters.
const STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = c < 0x20 || c == b'"' as usize || c == b'\\' as usize;
        c += 1;
    }
    t
};

struct Scan<'a> {
    text: &'a str,
    /// `text`'s bytes.
    b: &'a [u8],
    i: usize,
}

/// A scalar member value.
enum Scalar<'a> {
    Str(Cow<'a, str>),
    /// An integer, `true` or `false`, as written.
    Literal(&'a str),
    Null,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &'static str) -> Option<&'a str> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word.as_bytes()).then(|| {
            self.i = end;
            word
        })
    }

    /// The run of plain bytes (no quote, backslash or control character) from the cursor, as
    /// text; the cursor moves past it. A byte loop: header strings are short (one-letter keys,
    /// values of a few bytes), where a vectorised search costs more to start than it saves.
    fn plain_run(&mut self) -> Option<&'a str> {
        let start = self.i;
        while !STOP[usize::from(*self.b.get(self.i)?)] {
            self.i += 1;
        }
        self.text.get(start..self.i)
    }

    /// A string; borrowed when it has no escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let plain = self.plain_run()?;
        match self.next()? {
            b'"' => return Some(Cow::Borrowed(plain)),
            b'\\' => {}
            _ => return None, // a control character
        }
        let mut out = String::with_capacity(plain.len() + 32);
        out.push_str(plain);
        // After a backslash: the escape, then the plain run up to the next quote or backslash.
        loop {
            self.escape(&mut out)?;
            out.push_str(self.plain_run()?);
            match self.next()? {
                b'"' => return Some(Cow::Owned(out)),
                b'\\' => {}
                _ => return None,
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Option<()> {
        let c = match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    self.literal("\\u")?;
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return None;
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                char::from_u32(code)?
            }
            _ => return None,
        };
        out.push(c);
        Some(())
    }

    /// Four hex digits.
    fn hex4(&mut self) -> Option<u32> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let mut v = 0;
        for &d in digits {
            v = v << 4 | char::from(d).to_digit(16)?;
        }
        self.i += 4;
        Some(v)
    }

    /// A string, an integer of up to 18 digits, a boolean or null; `None` for anything else.
    fn scalar(&mut self) -> Option<Scalar<'a>> {
        Some(match self.peek()? {
            b'"' => Scalar::Str(self.string()?),
            b'n' => {
                self.literal("null")?;
                Scalar::Null
            }
            b't' => Scalar::Literal(self.literal("true")?),
            b'f' => Scalar::Literal(self.literal("false")?),
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                self.i += usize::from(self.b[start] == b'-');
                let digits = self.b[self.i..].iter().take_while(|c| c.is_ascii_digit()).count();
                self.i += digits;
                // serde_json reads `-0` as a float and refuses leading zeros: its business.
                let zero_first = self.b[self.i - digits..].first() == Some(&b'0');
                let odd = zero_first && (digits > 1 || self.b[start] == b'-');
                if digits == 0 || digits > 18 || odd || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
                    return None;
                }
                Scalar::Literal(self.text.get(start..self.i)?)
            }
            _ => return None,
        })
    }

    /// A 32-bit integer member (a number or a numeric string; null is absent).
    fn int(&mut self) -> Option<Option<i32>> {
        match self.scalar()? {
            Scalar::Null => Some(None),
            Scalar::Str(s) => s.trim().parse().ok().map(Some),
            Scalar::Literal(l) => l.parse().ok().map(Some),
        }
    }

    fn language(&mut self) -> Option<LanguageCode> {
        Some(match self.scalar()? {
            Scalar::Str(s) => LanguageCode::from_name(&s),
            Scalar::Literal("true" | "false") | Scalar::Null => LanguageCode::JAVA,
            Scalar::Literal(n) => n.parse::<u8>().map_or(LanguageCode::OTHER, LanguageCode),
        })
    }

    /// `extFields`: an object of scalars (`null` values skipped), or `null`.
    fn ext(&mut self) -> Option<ExtFields> {
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(ExtFields::new());
        }
        self.eat(b'{')?;
        self.ws();
        let mut pairs: Vec<(ExtKey, String)> = Vec::with_capacity(16);
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(ExtFields::new());
        }
        loop {
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            match self.scalar()? {
                Scalar::Str(v) => pairs.push((ext_key_cow(key), v.into_owned())),
                Scalar::Literal(v) => pairs.push((ext_key_cow(key), v.to_owned())),
                Scalar::Null => {}
            }
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => break,
                _ => return None,
            }
        }
        // Clients send them sorted: taken as they are; a repeated name keeps its last value.
        Some(ExtFields::from_pairs(pairs))
    }
}
