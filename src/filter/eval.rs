//! Evaluating an [`Expr`] over one message's properties, with the Java broker's rules:
//! three-valued logic (`LogicExpression`, `UnaryExpression`), `=` treating a missing left side as
//! unknown and a missing right side as FALSE, and `ComparisonExpression.__compare`'s conversions
//! (a string compared with a number is parsed as that number's type; a failed parse is an error
//! that makes the whole expression fail, even under OR).
//!
//! May import: nothing outside `filter/` (the area's rule: docs/architecture.md).

use std::cmp::Ordering;

use super::ast::{CmpOp, Expr, Literal, StrOp, Value};

/// Why an expression could not be evaluated for a message (the message does not match).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("'{value}' is not a valid {ty}")]
    NotANumber { value: String, ty: &'static str },
    #[error("It's illegal to compare string by '>=', '>', '<', '<='. lv={lv}, rv={rv}")]
    StringOrder { lv: String, rv: String },
    #[error("a {0} where a boolean was expected")]
    NotBoolean(&'static str),
}

pub(super) fn eval<'a, F>(e: &'a Expr, get: &F) -> Result<Value<'a>, EvalError>
where
    F: Fn(&str) -> Option<&'a str>,
{
    Ok(match e {
        Expr::Literal(l) => literal(l),
        Expr::Property(name) => get(name).map_or(Value::Null, Value::Str),
        Expr::Negate(x) => match eval(x, get)? {
            Value::Int(v) => Value::Int(v.wrapping_neg()),
            Value::Long(v) => Value::Long(v.wrapping_neg()),
            Value::Double(v) => Value::Double(-v),
            _ => Value::Null,
        },
        Expr::Not(x) => match boolean(eval(x, get)?)? {
            Some(b) => Value::Bool(!b),
            None => Value::Null,
        },
        Expr::BooleanCast(x) => match eval(x, get)? {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            _ => Value::Bool(false),
        },
        Expr::And(l, r) => {
            let lv = boolean(eval(l, get)?)?;
            if lv == Some(false) {
                return Ok(Value::Bool(false));
            }
            match (lv, boolean(eval(r, get)?)?) {
                (_, Some(false)) => Value::Bool(false),
                (Some(true), Some(true)) => Value::Bool(true),
                _ => Value::Null,
            }
        }
        Expr::Or(l, r) => {
            let lv = boolean(eval(l, get)?)?;
            if lv == Some(true) {
                return Ok(Value::Bool(true));
            }
            match (lv, boolean(eval(r, get)?)?) {
                (_, Some(true)) => Value::Bool(true),
                (Some(false), Some(false)) => Value::Bool(false),
                _ => Value::Null,
            }
        }
        Expr::Compare(CmpOp::Eq, l, r) => equal(eval(l, get)?, eval(r, get)?)?,
        Expr::Compare(CmpOp::Ne, l, r) => match equal(eval(l, get)?, eval(r, get)?)? {
            Value::Bool(b) => Value::Bool(!b),
            other => other,
        },
        Expr::Compare(op, l, r) => {
            let lv = eval(l, get)?;
            if lv == Value::Null {
                return Ok(Value::Null);
            }
            let rv = eval(r, get)?;
            if rv == Value::Null {
                return Ok(Value::Null);
            }
            let ord = match (lv, rv) {
                // Two strings are never ordered as strings: both must read as doubles.
                (Value::Str(a), Value::Str(b)) => match (java_double(a), java_double(b)) {
                    (Some(x), Some(y)) => java_double_cmp(x, y),
                    _ => return Err(EvalError::StringOrder { lv: a.to_owned(), rv: b.to_owned() }),
                },
                (lv, rv) => compare(lv, rv)?,
            };
            Value::Bool(match op {
                CmpOp::Gt => ord == Ordering::Greater,
                CmpOp::Ge => ord != Ordering::Less,
                CmpOp::Lt => ord == Ordering::Less,
                _ => ord != Ordering::Greater,
            })
        }
        Expr::IsNull { operand, negated } => Value::Bool((eval(operand, get)? == Value::Null) != *negated),
        Expr::In { property, list, negated } => match get(property) {
            None => Value::Null,
            Some(v) => Value::Bool(list.iter().any(|s| s == v) != *negated),
        },
        Expr::Text { op, operand, pattern, negated } => {
            let Value::Str(v) = eval(operand, get)? else { return Ok(Value::Bool(false)) };
            if pattern.is_empty() {
                return Ok(Value::Bool(false));
            }
            let hit = match op {
                StrOp::Contains => v.contains(pattern.as_str()),
                StrOp::StartsWith => v.starts_with(pattern.as_str()),
                StrOp::EndsWith => v.ends_with(pattern.as_str()),
            };
            Value::Bool(hit != *negated)
        }
    })
}

fn literal(l: &Literal) -> Value<'_> {
    match l {
        Literal::Null => Value::Null,
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Int(v) => Value::Int(*v),
        Literal::Long(v) => Value::Long(*v),
        Literal::Double(v) => Value::Double(*v),
        Literal::Str(s) => Value::Str(s),
    }
}

/// An operand of AND, OR or NOT (Java casts it to `Boolean`).
fn boolean(v: Value<'_>) -> Result<Option<bool>, EvalError> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(b)),
        Value::Str(_) => Err(EvalError::NotBoolean("string")),
        _ => Err(EvalError::NotBoolean("number")),
    }
}

/// `=`: both unknown is TRUE, an unknown left side is unknown, an unknown right side FALSE.
fn equal<'a>(lv: Value<'a>, rv: Value<'a>) -> Result<Value<'a>, EvalError> {
    Ok(match (lv, rv) {
        (Value::Null, Value::Null) => Value::Bool(true),
        (Value::Null, _) => Value::Null,
        (_, Value::Null) => Value::Bool(false),
        (lv, rv) => Value::Bool(compare(lv, rv)? == Ordering::Equal),
    })
}

/// `ComparisonExpression.__compare` for two known values. Pairs with no conversion compare
/// as "less" (so `=` is FALSE).
fn compare(lv: Value<'_>, rv: Value<'_>) -> Result<Ordering, EvalError> {
    use Value::*;
    Ok(match (lv, rv) {
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Int(a), Int(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => java_double_cmp(a, b),
        (Str(a), Str(b)) => a.cmp(b),
        (Int(a), Long(b)) => i64::from(a).cmp(&b),
        (Long(a), Int(b)) => a.cmp(&i64::from(b)),
        (Int(a), Double(b)) => java_double_cmp(f64::from(a), b),
        (Long(a), Double(b)) => java_double_cmp(a as f64, b),
        (Double(a), Int(b)) => java_double_cmp(a, f64::from(b)),
        (Double(a), Long(b)) => java_double_cmp(a, b as f64),
        // A string meets a number: it is read as that number's type.
        (Int(a), Str(b)) => a.cmp(&parse_int(b)?),
        (Long(a), Str(b)) => a.cmp(&parse_long(b)?),
        (Double(a), Str(b)) => java_double_cmp(a, parse_double(b)?),
        (Str(a), Int(b)) => parse_int(a)?.cmp(&b),
        (Str(a), Long(b)) => parse_long(a)?.cmp(&b),
        (Str(a), Double(b)) => java_double_cmp(parse_double(a)?, b),
        (Str(a), Bool(b)) => a.eq_ignore_ascii_case("true").cmp(&b),
        // Java casts the boolean to a string here and fails.
        (Bool(_), Str(_)) => return Err(EvalError::NotBoolean("string")),
        _ => Ordering::Less,
    })
}

fn not_a_number(value: &str, ty: &'static str) -> EvalError {
    EvalError::NotANumber { value: value.to_owned(), ty }
}

/// `Integer.valueOf`: an optional sign and decimal digits, nothing else.
fn parse_int(s: &str) -> Result<i32, EvalError> {
    s.parse().map_err(|_| not_a_number(s, "int"))
}

/// `Long.valueOf`.
fn parse_long(s: &str) -> Result<i64, EvalError> {
    s.parse().map_err(|_| not_a_number(s, "long"))
}

fn parse_double(s: &str) -> Result<f64, EvalError> {
    java_double(s).ok_or_else(|| not_a_number(s, "double"))
}

/// `Double.valueOf` for decimal text: surrounding whitespace and control characters are
/// ignored, a sign, `NaN`, `Infinity` and a trailing `d`/`f` are allowed. (Hexadecimal floating
/// point text, which Java also reads, is refused.)
pub(super) fn java_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let magnitude = match body {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let digits = body.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(body);
            if !is_java_decimal(digits) {
                return None;
            }
            digits.parse::<f64>().ok()?
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `digits [. digits] [e [sign] digits]` or `. digits [...]`, with at least one mantissa digit.
fn is_java_decimal(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let mut dots = 0;
    let mut digits = 0;
    for c in mantissa.bytes() {
        match c {
            b'0'..=b'9' => digits += 1,
            b'.' => dots += 1,
            _ => return false,
        }
    }
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit())
    });
    digits > 0 && dots <= 1 && exponent_ok
}

/// `Double.compare`: -0.0 below 0.0, NaN equal to itself and above everything.
fn java_double_cmp(a: f64, b: f64) -> Ordering {
    match a.partial_cmp(&b) {
        Some(Ordering::Equal) | None => {
            let bits = |x: f64| if x.is_nan() { 0x7ff8_0000_0000_0000i64 } else { x.to_bits() as i64 };
            bits(a).cmp(&bits(b))
        }
        Some(o) => o,
    }
}
