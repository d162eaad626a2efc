//! The compiled form of a selector and the values it computes with (Java's `Expression` tree:
//! `ConstantExpression`, `PropertyExpression`, `ComparisonExpression`, `LogicExpression`,
//! `UnaryExpression`). `Display` prints Java's `toString` shapes, used in error remarks.
//!
//! May import: nothing outside `filter/` (the area's rule: docs/architecture.md).

use std::fmt;

/// A value during evaluation. Properties are always strings; numbers come from literals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// A missing property or the NULL literal: "unknown" in three-valued logic.
    Null,
    Bool(bool),
    /// A decimal literal that fits in 32 bits (Java `Integer`).
    Int(i32),
    /// A larger decimal literal (Java `Long`).
    Long(i64),
    /// A floating point literal (Java `Double`).
    Double(f64),
    Str(&'a str),
}

impl Value<'_> {
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Long(_) | Value::Double(_))
    }
}

/// `>` `>=` `<` `<=` `=` `<>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
        }
    }
}

/// `CONTAINS` `STARTSWITH` `ENDSWITH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrOp {
    Contains,
    StartsWith,
    EndsWith,
}

impl StrOp {
    pub fn keyword(self) -> &'static str {
        match self {
            StrOp::Contains => "CONTAINS",
            StrOp::StartsWith => "STARTSWITH",
            StrOp::EndsWith => "ENDSWITH",
        }
    }
}

/// A literal as written in the selector.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(String),
}

/// One node of a compiled selector.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Literal),
    /// A message property by its exact (case-sensitive) name; `TAGS` is one like any other.
    Property(String),
    /// Unary minus (unary plus leaves its operand as it is).
    Negate(Box<Expr>),
    Not(Box<Expr>),
    /// A bare property where a boolean is needed: TRUE only if the value is a boolean TRUE, which
    /// a property (a string) never is.
    BooleanCast(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `x IS NULL` (`negated`: `IS NOT NULL`).
    IsNull {
        operand: Box<Expr>,
        negated: bool,
    },
    /// `prop [NOT] IN ('a', 'b')`: string literals only.
    In {
        property: String,
        list: Vec<String>,
        negated: bool,
    },
    /// `x [NOT] CONTAINS|STARTSWITH|ENDSWITH 'lit'`.
    Text {
        op: StrOp,
        operand: Box<Expr>,
        pattern: String,
        negated: bool,
    },
}

impl Expr {
    /// `BooleanExpression` in Java: what may stand where a boolean is needed.
    pub fn is_boolean(&self) -> bool {
        match self {
            Expr::Literal(l) => matches!(l, Literal::Bool(_) | Literal::Null),
            Expr::Property(_) | Expr::Negate(_) => false,
            _ => true,
        }
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("NULL"),
            Literal::Bool(true) => f.write_str("TRUE"),
            Literal::Bool(false) => f.write_str("FALSE"),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Long(v) => write!(f, "{v}"),
            Literal::Double(v) => write!(f, "{v:?}"),
            Literal::Str(s) => f.write_str(&quote(s)),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Property(p) => f.write_str(p),
            Expr::Negate(e) => write!(f, "(- {e})"),
            Expr::Not(e) => write!(f, "(NOT {e})"),
            Expr::BooleanCast(e) => write!(f, "{e}"),
            Expr::And(l, r) => write!(f, "({l} AND {r})"),
            Expr::Or(l, r) => write!(f, "({l} OR {r})"),
            Expr::Compare(op, l, r) => write!(f, "({l} {} {r})", op.symbol()),
            Expr::IsNull { operand, negated } => {
                write!(f, "({operand} IS {}NULL)", if *negated { "NOT " } else { "" })
            }
            Expr::In { property, list, negated } => {
                let items: Vec<String> = list.iter().map(|s| quote(s)).collect();
                write!(f, "{property} {}IN ({})", if *negated { "NOT " } else { "" }, items.join(", "))
            }
            Expr::Text { op, operand, pattern, negated } => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({operand} {not}{} {})", op.keyword(), quote(pattern))
            }
        }
    }
}
