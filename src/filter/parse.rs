//! The selector grammar of the Java broker (`SelectorParser.jj`), with nom. Lowest to highest
//! precedence, all left-associative:
//!
//! ```text
//! or    := and (OR and)*
//! and   := eq (AND eq)*
//! eq    := cmp ('=' cmp | '<>' cmp | IS [NOT] NULL)*
//! cmp   := unary ('>' unary | '>=' unary | '<' unary | '<=' unary
//!                | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) 'str'
//!                | [NOT] BETWEEN unary AND unary | [NOT] IN ('str', ...))*
//! unary := '+' unary | '-' unary | NOT unary | literal | property | '(' or ')'
//! ```
//! Keywords are case-insensitive; properties are `[A-Za-z_$][A-Za-z0-9_$]*`; strings are
//! single-quoted with `''` for a quote; integers are `0` or `[1-9][0-9]*[lL]?` (32 bits if they
//! fit, else 64); doubles need a `.` or an exponent and may not be 0; `--` comments run to a
//! newline, `/* */` comments may span lines. The checks Java makes while building the tree are
//! made here too (what AND, OR and NOT may combine, what `>` and `=` may compare).
//!
//! May import: nothing outside `filter/` (the area's rule: docs/architecture.md).

use std::cell::Cell;

use nom::branch::alt;
use nom::combinator::opt;
use nom::Err;

use super::ast::{CmpOp, Expr, Literal, StrOp};
use super::lex::{
    fail, failure, keyword, literal, maybe, operator, property, required, skip, string_literal, symbol, word, PErr, R,
};

/// A selector the broker cannot accept, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Invalid MessageSelector: {message} at line {line}, column {column}")]
pub struct SqlError {
    pub message: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
}

/// Nesting (parentheses, unary operators) and size limits: deeper input is refused rather than
/// allowed to exhaust the stack while parsing, evaluating or dropping the tree.
const MAX_DEPTH: usize = 40;
const MAX_NODES: usize = 2_000;

/// Parses a whole selector.
pub(super) fn parse(sql: &str) -> Result<Expr, SqlError> {
    let p = Parser { depth: Cell::new(0), nodes: Cell::new(0) };
    let result = p.or(sql).and_then(|(rest, e)| {
        let rest = skip(rest)?;
        if !rest.is_empty() {
            return Err(Err::Failure(PErr { at: rest, message: None }));
        }
        as_boolean(e, sql).map_err(Err::Failure)
    });
    result.map_err(|e| match e {
        Err::Error(e) | Err::Failure(e) => to_sql_error(sql, e),
        Err::Incomplete(_) => to_sql_error(sql, PErr { at: "", message: None }),
    })
}

fn to_sql_error(sql: &str, e: PErr<'_>) -> SqlError {
    let offset = sql.len() - e.at.len().min(sql.len());
    let before = &sql[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let message = e.message.unwrap_or_else(|| {
        let token: String = match operator(e.at).or_else(|_| word(e.at)) {
            Ok((_, t)) => t.to_owned(),
            Err(_) => e.at.chars().take_while(|c| !c.is_whitespace()).take(20).collect(),
        };
        if token.is_empty() {
            "Encountered \"<EOF>\"".to_owned()
        } else {
            format!("Encountered \"{token}\"")
        }
    });
    SqlError { message, line, column }
}

/// What may stand where a boolean is needed (`asBooleanExpression`): a boolean expression, or a
/// bare property (cast).
fn as_boolean<'a>(e: Expr, at: &'a str) -> Result<Expr, PErr<'a>> {
    match e {
        Expr::Property(_) => Ok(Expr::BooleanCast(Box::new(e))),
        e if e.is_boolean() => Ok(e),
        e => Err(PErr { at, message: Some(format!("Expression will not result in a boolean value: {e}")) }),
    }
}

/// `>` `>=` `<` `<=` and BETWEEN take numbers (as literals) and non-boolean expressions.
fn check_ordered<'a>(e: &Expr, at: &'a str) -> Result<(), Err<PErr<'a>>> {
    let bad = match e {
        Expr::Literal(l) => !matches!(l, Literal::Int(_) | Literal::Long(_) | Literal::Double(_)),
        e => e.is_boolean(),
    };
    match bad {
        true => Err(failure(at, format!("Value '{e}' cannot be compared."))),
        false => Ok(()),
    }
}

/// `=` and `<>`: never with the NULL literal (IS NULL is for that), and a boolean literal on the
/// left only with another boolean literal.
fn check_equal<'a>(l: &Expr, r: &Expr, at: &'a str) -> Result<(), Err<PErr<'a>>> {
    for e in [l, r] {
        if *e == Expr::Literal(Literal::Null) {
            return Err(failure(at, "'NULL' cannot be compared."));
        }
    }
    if let (Expr::Literal(Literal::Bool(_)), Expr::Literal(rl)) = (l, r) {
        if !matches!(rl, Literal::Bool(_)) {
            return Err(failure(at, format!("'{l}' cannot be compared with '{r}'")));
        }
    }
    Ok(())
}

fn literal_number(l: &Literal) -> Option<f64> {
    match l {
        Literal::Int(v) => Some(f64::from(*v)),
        Literal::Long(v) => Some(*v as f64),
        Literal::Double(v) => Some(*v),
        _ => None,
    }
}

struct Parser {
    depth: Cell<usize>,
    nodes: Cell<usize>,
}

impl Parser {
    fn node<'a>(&self, at: &'a str, e: Expr) -> Result<Expr, Err<PErr<'a>>> {
        self.nodes.set(self.nodes.get() + 1);
        if self.nodes.get() > MAX_NODES {
            return Err(Err::Failure(PErr { at, message: Some(format!("more than {MAX_NODES} operators")) }));
        }
        Ok(e)
    }

    fn or<'a>(&self, i: &'a str) -> R<'a, Expr> {
        self.logic(i, "OR", Self::and, Expr::Or)
    }

    fn and<'a>(&self, i: &'a str) -> R<'a, Expr> {
        self.logic(i, "AND", Self::eq, Expr::And)
    }

    /// `operand (kw operand)*`, left-associative; both sides must be boolean.
    fn logic<'a>(
        &self,
        i: &'a str,
        kw: &'static str,
        operand: fn(&Self, &'a str) -> R<'a, Expr>,
        make: fn(Box<Expr>, Box<Expr>) -> Expr,
    ) -> R<'a, Expr> {
        let (mut i, mut left) = operand(self, i)?;
        while let Some((rest, _)) = maybe(keyword(kw)(i))? {
            let (rest, right) = required(operand(self, rest))?;
            let l = as_boolean(left, i).map_err(Err::Failure)?;
            let r = as_boolean(right, rest).map_err(Err::Failure)?;
            left = self.node(i, make(Box::new(l), Box::new(r)))?;
            i = rest;
        }
        Ok((i, left))
    }

    fn eq<'a>(&self, i: &'a str) -> R<'a, Expr> {
        let (mut i, mut left) = self.cmp(i)?;
        loop {
            let at = i;
            if let Some((rest, op)) = maybe(alt((symbol("="), symbol("<>")))(i))? {
                let (rest, right) = required(self.cmp(rest))?;
                check_equal(&left, &right, at)?;
                let op = if op == "=" { CmpOp::Eq } else { CmpOp::Ne };
                left = self.node(at, Expr::Compare(op, Box::new(left), Box::new(right)))?;
                i = rest;
            } else if let Some((rest, _)) = maybe(keyword("IS")(i))? {
                let (rest, not) = opt(keyword("NOT"))(rest)?;
                let (rest, _) = required(keyword("NULL")(rest))?;
                left = self.node(at, Expr::IsNull { operand: Box::new(left), negated: not.is_some() })?;
                i = rest;
            } else {
                return Ok((i, left));
            }
        }
    }

    fn cmp<'a>(&self, i: &'a str) -> R<'a, Expr> {
        let (mut i, mut left) = self.unary(i)?;
        loop {
            let at = i;
            if let Some((rest, op)) = maybe(alt((symbol(">="), symbol(">"), symbol("<="), symbol("<")))(i))? {
                let (rest, right) = required(self.unary(rest))?;
                check_ordered(&left, at)?;
                check_ordered(&right, at)?;
                let op = match op {
                    ">=" => CmpOp::Ge,
                    ">" => CmpOp::Gt,
                    "<=" => CmpOp::Le,
                    _ => CmpOp::Lt,
                };
                left = self.node(at, Expr::Compare(op, Box::new(left), Box::new(right)))?;
                i = rest;
                continue;
            }
            let (j, negated) = match maybe(keyword("NOT")(i))? {
                Some((j, _)) => (j, true),
                None => (i, false),
            };
            let mut text_op = alt((keyword("CONTAINS"), keyword("STARTSWITH"), keyword("ENDSWITH")));
            if let Some((rest, kw)) = maybe(text_op(j))? {
                let (rest, pattern) = required(string_literal(rest))?;
                let op = match kw.to_ascii_uppercase().as_str() {
                    "CONTAINS" => StrOp::Contains,
                    "STARTSWITH" => StrOp::StartsWith,
                    _ => StrOp::EndsWith,
                };
                left = self.node(at, Expr::Text { op, operand: Box::new(left), pattern, negated })?;
                i = rest;
            } else if let Some((rest, _)) = maybe(keyword("BETWEEN")(j))? {
                let (rest, low) = required(self.unary(rest))?;
                let (rest, _) = required(keyword("AND")(rest))?;
                let (rest, high) = required(self.unary(rest))?;
                left = self.between(at, left, low, high, negated)?;
                i = rest;
            } else if let Some((rest, _)) = maybe(keyword("IN")(j))? {
                let (rest, _) = required(symbol("(")(rest))?;
                let (mut rest, first) = required(string_literal(rest))?;
                let mut list = vec![first];
                while let Some((r, _)) = maybe(symbol(",")(rest))? {
                    let (r, s) = required(string_literal(r))?;
                    list.push(s);
                    rest = r;
                }
                let (rest, _) = required(symbol(")")(rest))?;
                let Expr::Property(property) = left else {
                    return fail(at, format!("Expected a property for In expression, got: {left}"));
                };
                left = self.node(at, Expr::In { property, list, negated })?;
                i = rest;
            } else {
                // A NOT here that none of these follow is left for the caller to refuse.
                return Ok((i, left));
            }
        }
    }

    fn between<'a>(&self, at: &'a str, x: Expr, low: Expr, high: Expr, negated: bool) -> Result<Expr, Err<PErr<'a>>> {
        for e in [&x, &low, &high] {
            check_ordered(e, at)?;
        }
        if let (Expr::Literal(l), Expr::Literal(h)) = (&low, &high) {
            if let (Some(l), Some(h)) = (literal_number(l), literal_number(h)) {
                if l > h {
                    let m = format!(
                        "Illegal values of between, left value({low}) must less than or equal to right value({high})"
                    );
                    return Err(failure(at, m));
                }
            }
        }
        let b = |e: Expr| Box::new(e);
        let e = match negated {
            false => {
                Expr::And(b(Expr::Compare(CmpOp::Ge, b(x.clone()), b(low))), b(Expr::Compare(CmpOp::Le, b(x), b(high))))
            }
            true => {
                Expr::Or(b(Expr::Compare(CmpOp::Lt, b(x.clone()), b(low))), b(Expr::Compare(CmpOp::Gt, b(x), b(high))))
            }
        };
        self.node(at, e)
    }

    fn unary<'a>(&self, i: &'a str) -> R<'a, Expr> {
        let depth = self.depth.get() + 1;
        if depth > MAX_DEPTH {
            return fail(i, format!("nested more than {MAX_DEPTH} deep"));
        }
        self.depth.set(depth);
        let r = self.unary_inner(i);
        self.depth.set(depth - 1);
        r
    }

    fn unary_inner<'a>(&self, i: &'a str) -> R<'a, Expr> {
        if let Some((rest, op)) = maybe(alt((symbol("+"), symbol("-")))(i))? {
            let (rest, e) = required(self.unary(rest))?;
            return match op {
                "+" => Ok((rest, e)),
                _ => Ok((rest, self.node(i, Expr::Negate(Box::new(e)))?)),
            };
        }
        if let Some((rest, _)) = maybe(keyword("NOT")(i))? {
            let (rest, e) = required(self.unary(rest))?;
            let e = as_boolean(e, rest).map_err(Err::Failure)?;
            return Ok((rest, self.node(i, Expr::Not(Box::new(e)))?));
        }
        if let Some((rest, l)) = maybe(literal(i))? {
            return Ok((rest, Expr::Literal(l)));
        }
        if let Some((rest, name)) = maybe(property(i))? {
            return Ok((rest, Expr::Property(name.to_owned())));
        }
        let (rest, _) = symbol("(")(i)?;
        let (rest, e) = required(self.or(rest))?;
        let (rest, _) = required(symbol(")")(rest))?;
        Ok((rest, e))
    }
}
