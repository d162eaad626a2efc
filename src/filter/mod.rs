//! SQL92 message filters (`MessageSelector.bySql`): the grammar the Java broker accepts
//! (`SelectorParser.jj`), parsed with nom into an [`Expr`] once per subscription, and evaluated
//! over a message's properties with Java's three-valued logic and type conversions.
//!
//! ```text
//!   "a > 5 AND TAGS IN ('x')"  --parse-->  Expr  --eval(properties)-->  TRUE | FALSE | NULL | error
//! ```
//! A message matches only if the expression evaluates to TRUE; NULL (unknown), FALSE and an
//! evaluation error (a property that is not a number compared with a number) all mean "no match",
//! as in `ExpressionMessageFilter`.
//!
//! May import: nothing else of ferrocket (std and nom only), so the broker, the store and any
//! other front end can use it.

mod ast;
mod eval;
mod lex;
mod parse;

pub use ast::{CmpOp, Expr, StrOp, Value};
pub use eval::EvalError;
pub use parse::SqlError;

/// `ExpressionType.SQL92`: the only non-tag expression type the Java broker knows. Case-sensitive.
pub const SQL92: &str = "SQL92";

/// `ExpressionType.isTagType`: no type, an empty one, or "TAG".
pub fn is_tag_type(expression_type: Option<&str>) -> bool {
    matches!(expression_type, None | Some("") | Some("TAG"))
}

/// A compiled SQL92 selector.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlFilter {
    expr: Expr,
    source: String,
}

impl SqlFilter {
    /// Parses `sql` as the Java broker would; the error says what is wrong and where.
    pub fn compile(sql: &str) -> Result<Self, SqlError> {
        Ok(Self { expr: parse::parse(sql)?, source: sql.to_owned() })
    }

    /// The selector text it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Whether a message whose property `name` is `get(name)` matches: only TRUE does.
    pub fn matches<'a>(&'a self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        matches!(self.evaluate(get), Ok(Value::Bool(true)))
    }

    /// The value of the whole expression for one message.
    pub fn evaluate<'a>(&'a self, get: impl Fn(&str) -> Option<&'a str>) -> Result<Value<'a>, EvalError> {
        eval::eval(&self.expr, &get)
    }
}

#[cfg(test)]
mod tests;
