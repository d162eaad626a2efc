//! The tokens of the selector grammar (`SelectorParser.jj`'s lexer), as nom parsers over `&str`:
//! whitespace and comments, keywords, properties, operators, string and number literals. Each
//! skips what precedes its token; a failure records where the input stopped matching.
//!
//! May import: nothing outside `filter/` (the area's rule: docs/architecture.md).

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while};
use nom::character::complete::{char, digit0, digit1, one_of, satisfy};
use nom::combinator::{opt, recognize};
use nom::error::{ErrorKind, ParseError};
use nom::sequence::{pair, tuple};
use nom::{Err, IResult};

use super::ast::Literal;

#[derive(Debug)]
pub(super) struct PErr<'a> {
    pub(super) at: &'a str,
    /// A semantic error (Java's RuntimeException while building the tree); None: a syntax error.
    pub(super) message: Option<String>,
}

impl<'a> ParseError<&'a str> for PErr<'a> {
    fn from_error_kind(at: &'a str, _: ErrorKind) -> Self {
        PErr { at, message: None }
    }
    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }
    /// Of two alternatives that failed, report the one that got further.
    fn or(self, other: Self) -> Self {
        if other.at.len() <= self.at.len() {
            other
        } else {
            self
        }
    }
}

pub(super) type R<'a, T> = IResult<&'a str, T, PErr<'a>>;

pub(super) fn failure(at: &str, message: impl Into<String>) -> Err<PErr<'_>> {
    Err::Failure(PErr { at, message: Some(message.into()) })
}

pub(super) fn fail<'a, T>(at: &'a str, message: impl Into<String>) -> R<'a, T> {
    Err(failure(at, message))
}

/// `Ok(None)` where the parser did not match (so the caller tries something else); failures pass.
pub(super) fn maybe<'a, T>(r: R<'a, T>) -> Result<Option<(&'a str, T)>, Err<PErr<'a>>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(Err::Error(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A required part: not matching it is a syntax error here, not a reason to backtrack.
pub(super) fn required<'a, T>(r: R<'a, T>) -> R<'a, T> {
    r.map_err(|e| match e {
        Err::Error(e) => Err::Failure(e),
        e => e,
    })
}

/// Skips whitespace and comments. A `--` comment needs its newline (without one it is two
/// minus signs, as in Java's lexer).
pub(super) fn skip(mut i: &str) -> Result<&str, Err<PErr<'_>>> {
    loop {
        let t = i.trim_start_matches([' ', '\t', '\n', '\r', '\x0c']);
        if let Some(rest) = t.strip_prefix("--") {
            if let Some(nl) = rest.find(['\n', '\r']) {
                i = &rest[nl + 1..];
                continue;
            }
        }
        if let Some(rest) = t.strip_prefix("/*") {
            match rest.find("*/") {
                Some(end) => {
                    i = &rest[end + 2..];
                    continue;
                }
                None => return Err(Err::Failure(PErr { at: t, message: Some("unterminated comment".into()) })),
            }
        }
        return Ok(t);
    }
}

pub(super) const KEYWORDS: [&str; 12] =
    ["NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH"];

pub(super) fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

pub(super) fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// One identifier-shaped word (property or keyword).
pub(super) fn word(i: &str) -> R<'_, &str> {
    let i = skip(i)?;
    recognize(pair(satisfy(ident_start), take_while(ident_char)))(i)
}

pub(super) fn keyword<'a>(kw: &'static str) -> impl Fn(&'a str) -> R<'a, &'a str> {
    move |i| {
        let (rest, w) = word(i)?;
        if w.eq_ignore_ascii_case(kw) {
            Ok((rest, w))
        } else {
            Err(Err::Error(PErr { at: skip(i)?, message: None }))
        }
    }
}

pub(super) fn property(i: &str) -> R<'_, &str> {
    let (rest, w) = word(i)?;
    if KEYWORDS.iter().any(|k| w.eq_ignore_ascii_case(k)) {
        return Err(Err::Error(PErr { at: skip(i)?, message: None }));
    }
    Ok((rest, w))
}

/// The longest operator at the input: `<>` `<=` `>=` `<` `>` `=` `(` `)` `,` `+` `-`.
pub(super) fn operator(i: &str) -> R<'_, &str> {
    let i = skip(i)?;
    alt((
        tag("<>"),
        tag("<="),
        tag(">="),
        tag("<"),
        tag(">"),
        tag("="),
        tag("("),
        tag(")"),
        tag(","),
        tag("+"),
        tag("-"),
    ))(i)
}

pub(super) fn symbol<'a>(s: &'static str) -> impl Fn(&'a str) -> R<'a, &'a str> {
    move |i| match operator(i)? {
        (rest, op) if op == s => Ok((rest, op)),
        _ => Err(Err::Error(PErr { at: skip(i)?, message: None })),
    }
}

pub(super) fn string_literal(i: &str) -> R<'_, String> {
    let start = skip(i)?;
    let (mut rest, _) = char('\'')(start)?;
    let mut out = String::new();
    loop {
        let Some(q) = rest.find('\'') else { return fail(start, "unterminated string literal") };
        out.push_str(&rest[..q]);
        match rest[q + 1..].strip_prefix('\'') {
            Some(after) => {
                out.push('\'');
                rest = after;
            }
            None => return Ok((&rest[q + 1..], out)),
        }
    }
}

pub(super) fn number(i: &str) -> R<'_, Literal> {
    let i = skip(i)?;
    let exponent = || recognize(tuple((one_of("eE"), opt(one_of("+-")), digit1)));
    let mut float = alt((
        recognize(tuple((digit1, char('.'), digit0, opt(exponent())))),
        recognize(tuple((char('.'), digit1, opt(exponent())))),
        recognize(pair(digit1, exponent())),
    ));
    if let Some((rest, text)) = maybe(float(i))? {
        let v: f64 = text.parse().unwrap_or(f64::INFINITY);
        if v.is_infinite() {
            return fail(i, format!("{text} is greater than 1.7976931348623157E308"));
        }
        if v < f64::from_bits(1) {
            return fail(i, format!("{text} is less than 4.9E-324 (write 0 for zero)"));
        }
        return Ok((rest, Literal::Double(v)));
    }
    let (rest, text) = alt((recognize(tuple((one_of("123456789"), digit0, opt(one_of("lL"))))), tag("0")))(i)?;
    let digits = text.trim_end_matches(['l', 'L']);
    match digits.parse::<i64>() {
        Ok(v) => Ok((rest, i32::try_from(v).map_or(Literal::Long(v), Literal::Int))),
        Err(_) => fail(i, format!("{digits} does not fit in a long")),
    }
}

pub(super) fn literal(i: &str) -> R<'_, Literal> {
    if let Some((rest, s)) = maybe(string_literal(i))? {
        return Ok((rest, Literal::Str(s)));
    }
    if let Some(v) = maybe(number(i))? {
        return Ok(v);
    }
    let (rest, w) = word(i)?;
    let lit = match w.to_ascii_uppercase().as_str() {
        "TRUE" => Literal::Bool(true),
        "FALSE" => Literal::Bool(false),
        "NULL" => Literal::Null,
        _ => return Err(Err::Error(PErr { at: skip(i)?, message: None })),
    };
    Ok((rest, lit))
}
