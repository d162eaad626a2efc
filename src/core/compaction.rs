//! What the store's compaction asks the core: which topics are compacted (their `cleanup.policy`
//! attribute, written by both doors: RocketMQ `+cleanup.policy=COMPACTION`, Kafka `compact`) and
//! what Kafka transactions left in a queue (`txn.rs`: the last stable offset, aborted ranges,
//! control records), so that compaction keeps what a committed reader sees, as Kafka's cleaner.
//!
//! May import: `store`, `meta` and modules of `core/`; the area's rule is its line in
//! docs/architecture.md.

use std::sync::Arc;

use super::txn::{RecordTxn, TxnMarkers};
use crate::meta::topic::TopicConfigManager;
use crate::store::compaction::{CompactionPolicy, CompactionTxn};
use crate::store::MessageStore;

/// Gives `store` the policy lookup and the transaction view.
pub fn attach(store: &MessageStore, topics: &Arc<TopicConfigManager>, txn: &Arc<TxnMarkers>) {
    let topics = topics.clone();
    store.set_compaction_lookup(Arc::new(move |topic| {
        topics.get(topic).and_then(|tc| CompactionPolicy::of(&tc.attributes))
    }));
    store.set_compaction_txn(Arc::new(TxnView(txn.clone())));
}

struct TxnView(Arc<TxnMarkers>);

impl CompactionTxn for TxnView {
    fn clean_limit(&self, topic: &str, queue_id: i32, end: i64) -> i64 {
        self.0.last_stable_offset(topic, queue_id, end)
    }

    fn committed(&self, topic: &str, queue_id: i32, offset: i64, properties: &str) -> bool {
        self.0.visible_committed(topic, queue_id, offset, RecordTxn::of(properties))
    }
}
