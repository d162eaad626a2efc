//! A pop's subscription filter built from a door's expression (`FilterAPI.build`): `*` or empty
//! takes everything, a TAG expression `a || b` matches the ConsumeQueue's tag codes, a SQL92 one
//! is compiled (`crate::filter`) and run over each stored record's properties. Doors that may not
//! import `filter` themselves (gRPC) build their filter here.
//!
//! May import: `filter`, `model`, `store`.

use std::collections::HashSet;
use std::sync::Arc;

use crate::filter::SqlFilter;
use crate::model::message::{property_value, tags_code};
use crate::store::{record_properties, MessageFilter};

/// Longest expression accepted (a selector is a line or two in practice).
pub const MAX_EXPRESSION_LEN: usize = 16 * 1024;
/// Most tags in one TAG expression.
const MAX_TAGS: usize = 1024;

/// A compiled subscription filter.
#[derive(Debug, Clone)]
pub enum Subscription {
    All,
    Tags(HashSet<i64>),
    Sql(Arc<SqlFilter>),
}

impl Subscription {
    /// `expression` as a TAG (`sql` false) or SQL92 expression; `Err` says why it is refused.
    pub fn build(expression: &str, sql: bool) -> Result<Self, String> {
        if expression.len() > MAX_EXPRESSION_LEN {
            return Err(format!("the filter expression is longer than {MAX_EXPRESSION_LEN} bytes"));
        }
        if sql {
            return SqlFilter::compile(expression).map(|f| Subscription::Sql(Arc::new(f))).map_err(|e| e.to_string());
        }
        let e = expression.trim();
        if e.is_empty() || e == "*" {
            return Ok(Subscription::All);
        }
        let tags: HashSet<i64> = e
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .take(MAX_TAGS + 1)
            .map(|t| tags_code(Some(t)))
            .collect();
        if tags.len() > MAX_TAGS {
            return Err(format!("more than {MAX_TAGS} tags in the filter expression"));
        }
        Ok(Subscription::Tags(tags))
    }
}

impl MessageFilter for Subscription {
    fn matches_tags_code(&self, code: i64) -> bool {
        match self {
            Subscription::All | Subscription::Sql(_) => true,
            Subscription::Tags(codes) => codes.contains(&code),
        }
    }

    fn matches_record(&self, record: &[u8]) -> bool {
        let Subscription::Sql(sql) = self else { return true };
        let raw = record_properties(record).unwrap_or_default();
        let props = String::from_utf8_lossy(raw);
        sql.matches(|name| property_value(&props, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_all_and_sql() {
        assert!(matches!(Subscription::build("*", false), Ok(Subscription::All)));
        assert!(matches!(Subscription::build("", false), Ok(Subscription::All)));
        let t = Subscription::build("a || b", false).unwrap();
        assert!(t.matches_tags_code(tags_code(Some("a"))) && t.matches_tags_code(tags_code(Some("b"))));
        assert!(!t.matches_tags_code(tags_code(Some("c"))));
        assert!(Subscription::build("a > 1", true).is_ok());
        assert!(Subscription::build("a >", true).is_err());
        assert!(Subscription::build(&"x".repeat(MAX_EXPRESSION_LEN + 1), false).is_err());
    }
}
