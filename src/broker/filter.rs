//! SQL92 subscriptions on the broker (`ConsumerFilterManager`, `ExpressionMessageFilter`): each
//! (group, topic, expression) is compiled once and shared by every pull of that subscription,
//! and [`PullFilter`] is what a pull hands the store: tag codes for TAG subscriptions, the
//! stored message's properties for SQL92 ones (also on long-poll wake-ups, which re-run the
//! read, and on slaves, which read the same way).
//!
//! May import: `filter`, `model`, `protocol::body::client` (the subscription) and `store`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::filter::{SqlError, SqlFilter};
use crate::model::message::property_value;
use crate::protocol::body::client::SubscriptionData;
use crate::store::{record_properties, MessageFilter};

/// How many (group, topic) subscriptions keep a compiled filter; past it the table starts over
/// (everything is recompiled on demand).
const MAX_ENTRIES: usize = 100_000;

struct Compiled {
    expression: String,
    filter: Result<Arc<SqlFilter>, SqlError>,
}

/// Compiled SQL92 subscriptions by group, then topic.
#[derive(Default)]
pub struct ConsumerFilters {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    by_group: HashMap<String, HashMap<String, Compiled>>,
    entries: usize,
}

impl ConsumerFilters {
    /// The compiled `expression` of `group`'s subscription to `topic`; compiled now if it is new
    /// or changed. A selector that does not parse stays refused until it changes.
    pub fn get(&self, group: &str, topic: &str, expression: &str) -> Result<Arc<SqlFilter>, SqlError> {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = table.by_group.get(group).and_then(|t| t.get(topic)) {
            if c.expression == expression {
                return c.filter.clone();
            }
        }
        let filter = SqlFilter::compile(expression).map(Arc::new);
        if table.entries >= MAX_ENTRIES {
            *table = Table::default();
        }
        let compiled = Compiled { expression: expression.to_owned(), filter: filter.clone() };
        if table.by_group.entry(group.to_owned()).or_default().insert(topic.to_owned(), compiled).is_none() {
            table.entries += 1;
        }
        filter
    }
}

/// The filter of one pull.
pub struct PullFilter {
    pub sub: SubscriptionData,
    /// Set for SQL92 subscriptions.
    pub sql: Option<Arc<SqlFilter>>,
}

impl MessageFilter for PullFilter {
    fn matches_tags_code(&self, tags_code: i64) -> bool {
        // No bloom-filter bit map (`enableCalcFilterBitMap`): every SQL92 candidate is read.
        self.sql.is_some() || self.sub.matches_tags_code(tags_code)
    }

    fn matches_record(&self, record: &[u8]) -> bool {
        let Some(sql) = &self.sql else { return true };
        let raw = record_properties(record).unwrap_or_default();
        let props = String::from_utf8_lossy(raw);
        sql.matches(|name| property_value(&props, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_once_per_expression_and_recompiled_when_it_changes() {
        let f = ConsumerFilters::default();
        let a = f.get("G", "T", "a > 1").unwrap();
        let again = f.get("G", "T", "a > 1").unwrap();
        assert!(Arc::ptr_eq(&a, &again), "the same subscription is compiled once");
        let b = f.get("G", "T", "a > 2").unwrap();
        assert_eq!(b.source(), "a > 2");
        assert!(f.get("G", "T", "a >").is_err());
        assert!(f.get("G", "T", "a >").is_err(), "a bad selector stays refused");
        assert!(f.get("G2", "T", "a > 1").is_ok(), "groups are separate");
    }
}
