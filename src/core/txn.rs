//! Kafka transactions as every reader of the shared log sees them: which records are transactional,
//! which transactions are still open in a queue (the last stable offset, LSO), and which ended in
//! an abort. The Kafka transaction coordinator (`kafka/txn*`) writes this state; Kafka Fetch and
//! ListOffsets with `isolation_level=1` and RocketMQ pulls (committed readers) read it, so both
//! doors agree on what is committed.
//!
//! ```text
//! stored message of a transactional record   KAFKA_PID=<producer id> KAFKA_EPOCH=<epoch> KAFKA_TXN=true
//! control record (one offset, empty body)     KAFKA_PID KAFKA_EPOCH KAFKA_CONTROL=COMMIT|ABORT
//!                                             KAFKA_COORD_EPOCH=<coordinator epoch>
//! per queue (here)   open:     producer id -> first offset of its open transaction (LSO = the least)
//!                    aborted:  [first offset, control record offset] per aborted transaction
//! config/kafkaTxnMarkers.json {"<topic>":{"<queue>":{"aborted":[{"producerId":..,"firstOffset":..,
//!                              "lastOffset":..}]}}}   (a queue listed here has held transactions)
//! ```
//! Open transactions are not persisted here: after a restart the coordinator, whose transaction
//! log knows the open transactions and their partitions, calls [`TxnMarkers::begin`] again (with
//! the queue's end offset at AddPartitionsToTxn, a lower bound of the first offset).
//!
//! May import: `persist`, `model`. Bounded: aborted ranges below a queue's log start are pruned.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde::{Deserialize, Serialize};

use crate::model::message::{property_value, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};
use crate::persist::ConfigFile;

/// The file under the broker's config directory.
pub const MARKERS_FILE: &str = "kafkaTxnMarkers.json";

/// Producer id of a record of a transactional batch, and of a control record.
pub const KAFKA_PID: &str = "KAFKA_PID";
/// Producer epoch, beside [`KAFKA_PID`].
pub const KAFKA_EPOCH: &str = "KAFKA_EPOCH";
/// `true` on every record of a transactional batch.
pub const KAFKA_TXN: &str = "KAFKA_TXN";
/// `COMMIT` or `ABORT` on a control record (Kafka's end-transaction marker).
pub const KAFKA_CONTROL: &str = "KAFKA_CONTROL";
/// The coordinator epoch written into a control record's value.
pub const KAFKA_COORD_EPOCH: &str = "KAFKA_COORD_EPOCH";

/// The properties above: the Kafka door's alone. Any other door drops them from what a client
/// sends ([`without_reserved`]).
pub const RESERVED: [&str; 5] = [KAFKA_PID, KAFKA_EPOCH, KAFKA_TXN, KAFKA_CONTROL, KAFKA_COORD_EPOCH];

/// `properties` (RocketMQ's property string) without the [`RESERVED`] names: a RocketMQ
/// producer's message (or a copy of a Kafka record it re-sends) is no part of a Kafka
/// transaction and no control record. Java keeps such names as user properties; here they would
/// change what readers see, so they go. Borrows when there is nothing to drop (the usual case).
pub fn without_reserved(properties: &str) -> Cow<'_, str> {
    let reserved = |seg: &str| seg.split_once(NAME_VALUE_SEPARATOR).is_some_and(|(k, _)| RESERVED.contains(&k));
    if !properties.contains("KAFKA_") || !properties.split(PROPERTY_SEPARATOR).any(reserved) {
        return Cow::Borrowed(properties);
    }
    let mut out = String::with_capacity(properties.len());
    for seg in properties.split(PROPERTY_SEPARATOR).filter(|s| !s.is_empty() && !reserved(s)) {
        out.push_str(seg);
        out.push(PROPERTY_SEPARATOR);
    }
    Cow::Owned(out)
}

/// One aborted transaction of one producer in one queue (Fetch's `AbortedTransaction`, plus the
/// offset of its ABORT marker).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
}

/// What a stored record says about transactions, read from its properties.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordTxn {
    /// The producer id of a transactional record or a control record; `None` otherwise.
    pub producer_id: Option<i64>,
    /// A control record (commit or abort marker): never shown to applications.
    pub control: bool,
}

impl RecordTxn {
    /// Reads the record's transaction properties (RocketMQ's `\x01`/`\x02` property string).
    pub fn of(properties: &str) -> Self {
        let control = property_value(properties, KAFKA_CONTROL).is_some();
        let transactional = control || property_value(properties, KAFKA_TXN) == Some("true");
        let producer_id =
            if transactional { property_value(properties, KAFKA_PID).and_then(|v| v.parse().ok()) } else { None };
        Self { producer_id, control }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct QueueFile {
    #[serde(default)]
    aborted: Vec<AbortedTxn>,
}

type FileTable = BTreeMap<String, BTreeMap<i32, QueueFile>>;

#[derive(Default)]
struct Table {
    /// Persisted: the queues that have held transactions, with their aborted ranges.
    file: FileTable,
    /// (topic, queue) -> producer id -> first offset of its open transaction.
    open: BTreeMap<(String, i32), BTreeMap<i64, i64>>,
}

/// Told (topic, queue) when a transaction ended there: its LSO may have moved.
pub type EndListener = Box<dyn Fn(&str, i32) + Send + Sync>;

/// The per-queue transaction state both doors read.
pub struct TxnMarkers {
    table: Arc<Mutex<Table>>,
    file: Arc<ConfigFile>,
    on_end: OnceLock<EndListener>,
}

impl TxnMarkers {
    /// Loads `config/kafkaTxnMarkers.json` (absent: no transaction ever).
    pub fn open(path: &Path) -> Result<Self, String> {
        let parse = |b: &[u8]| serde_json::from_slice::<FileTable>(b).map_err(|e| e.to_string());
        let file = crate::persist::load(path, parse)?.unwrap_or_default();
        let table = Arc::new(Mutex::new(Table { file, open: BTreeMap::new() }));
        let shared = table.clone();
        let snapshot = move || {
            let t = shared.lock().unwrap_or_else(|e| e.into_inner());
            serde_json::to_vec(&t.file).unwrap_or_default()
        };
        Ok(Self { table, file: ConfigFile::new(path.to_owned(), Box::new(snapshot)), on_end: OnceLock::new() })
    }

    /// Sets what [`Self::end`] tells once a transaction ended in a queue (the core rings the
    /// queue's arrival signal: a read held at the old LSO reads again). Only the first call counts.
    pub fn set_end_listener(&self, listener: EndListener) {
        let _ = self.on_end.set(listener);
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether (topic, queue) has ever held a transactional record: only such queues need
    /// [`Self::visible_committed`] and the LSO cap. Cheap (one map look-up).
    /// ([`Self::begin`] enters the queue into the file table before any transaction is open
    /// there, and only [`Self::forget_topics`] takes it out, from both tables.)
    pub fn has_transactions(&self, topic: &str, queue_id: i32) -> bool {
        self.lock().file.get(topic).is_some_and(|q| q.contains_key(&queue_id))
    }

    /// A transactional append of `producer_id` landed at `first_offset` while its transaction is
    /// open; only the first call per open transaction counts (a later, lower offset lowers it).
    /// Persists that the queue holds transactions before returning.
    pub async fn begin(&self, topic: &str, queue_id: i32, producer_id: i64, first_offset: i64) {
        let new_queue = {
            let mut t = self.lock();
            let slot =
                t.open.entry((topic.to_owned(), queue_id)).or_default().entry(producer_id).or_insert(first_offset);
            *slot = (*slot).min(first_offset);
            let known = t.file.get(topic).is_some_and(|q| q.contains_key(&queue_id));
            if !known {
                t.file.entry(topic.to_owned()).or_default().insert(queue_id, QueueFile::default());
            }
            !known
        };
        if new_queue {
            let _ = self.file.persist().await;
        }
    }

    /// The transaction's control record was stored at `marker_offset`: it is no longer open; an
    /// abort adds `[first offset, marker_offset]` to the queue's aborted ranges, on disk before
    /// this returns. Then the end listener is told, so held reads see the new LSO. A call for a transaction that was never begun here (no record reached this
    /// queue) only records nothing.
    pub async fn end(&self, topic: &str, queue_id: i32, producer_id: i64, marker_offset: i64, commit: bool) {
        let aborted = {
            let mut t = self.lock();
            let key = (topic.to_owned(), queue_id);
            let first = t.open.get_mut(&key).and_then(|p| p.remove(&producer_id));
            if t.open.get(&key).is_some_and(BTreeMap::is_empty) {
                t.open.remove(&key);
            }
            match first {
                Some(first_offset) if !commit => {
                    let q = t.file.entry(topic.to_owned()).or_default().entry(queue_id).or_default();
                    q.aborted.push(AbortedTxn { producer_id, first_offset, last_offset: marker_offset });
                    true
                }
                _ => false,
            }
        };
        if aborted {
            let _ = self.file.persist().await;
        }
        // The control record's own arrival may have woken readers before this moved the LSO.
        if let Some(tell) = self.on_end.get() {
            tell(topic, queue_id);
        }
    }

    /// The first offset (or its lower bound) of `producer_id`'s open transaction in (topic,
    /// queue), if one is open there (DescribeProducers' `currentTxnStartOffset`).
    pub fn open_first_offset(&self, topic: &str, queue_id: i32, producer_id: i64) -> Option<i64> {
        let t = self.lock();
        t.open.get(&(topic.to_owned(), queue_id)).and_then(|p| p.get(&producer_id)).copied()
    }

    /// The last stable offset: the first offset of the earliest open transaction, else
    /// `high_watermark`.
    pub fn last_stable_offset(&self, topic: &str, queue_id: i32, high_watermark: i64) -> i64 {
        let t = self.lock();
        t.open
            .get(&(topic.to_owned(), queue_id))
            .and_then(|p| p.values().min().copied())
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    /// The aborted transactions whose ranges overlap `[from, to)` (Fetch's
    /// `aborted_transactions` for the records it returns), in order of first offset.
    pub fn aborted_between(&self, topic: &str, queue_id: i32, from: i64, to: i64) -> Vec<AbortedTxn> {
        let t = self.lock();
        let mut out: Vec<AbortedTxn> = t
            .file
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .map(|q| q.aborted.iter().filter(|a| a.first_offset < to && a.last_offset >= from).copied().collect())
            .unwrap_or_default();
        out.sort_by_key(|a| a.first_offset);
        out
    }

    /// Whether a committed reader (a RocketMQ consumer, a Kafka `read_committed` fetch that
    /// filters on the broker) may see the record at `offset`: not a control record, and not a
    /// record of a transaction that aborted. Records at or past the LSO are the caller's to hold
    /// back ([`Self::last_stable_offset`]).
    pub fn visible_committed(&self, topic: &str, queue_id: i32, offset: i64, record: RecordTxn) -> bool {
        if record.control {
            return false;
        }
        let Some(pid) = record.producer_id else { return true };
        let t = self.lock();
        !t.file.get(topic).and_then(|q| q.get(&queue_id)).is_some_and(|q| {
            q.aborted.iter().any(|a| a.producer_id == pid && a.first_offset <= offset && offset <= a.last_offset)
        })
    }

    /// Drops the aborted ranges of (topic, queue) that end below `log_start` (retention,
    /// DeleteRecords). Returns once the file says so, if anything changed.
    pub async fn prune(&self, topic: &str, queue_id: i32, log_start: i64) {
        let changed = {
            let mut t = self.lock();
            t.file.get_mut(topic).and_then(|q| q.get_mut(&queue_id)).is_some_and(|q| {
                let before = q.aborted.len();
                q.aborted.retain(|a| a.last_offset >= log_start);
                q.aborted.len() != before
            })
        };
        if changed {
            let _ = self.file.persist().await;
        }
    }

    /// Forgets every queue of the deleted `topics`.
    pub async fn forget_topics(&self, topics: &BTreeSet<String>) {
        let changed = {
            let mut t = self.lock();
            let before = t.file.len();
            t.file.retain(|name, _| !topics.contains(name));
            t.open.retain(|(name, _), _| !topics.contains(name));
            t.file.len() != before
        };
        if changed {
            let _ = self.file.persist().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::message::properties_to_string;

    #[test]
    fn the_reserved_properties_go_and_the_rest_stays_in_order() {
        let props =
            properties_to_string([("a", "1"), (KAFKA_PID, "9"), ("KAFKA_KEY", "AAE="), (KAFKA_CONTROL, "ABORT")]);
        assert_eq!(without_reserved(&props), properties_to_string([("a", "1"), ("KAFKA_KEY", "AAE=")]));
        let plain = properties_to_string([("a", "1"), ("KAFKA_KEY", "AAE=")]);
        assert!(matches!(without_reserved(&plain), Cow::Borrowed(_)));
        assert_eq!(without_reserved(""), "");
    }

    fn markers() -> (tempfile::TempDir, TxnMarkers) {
        let dir = tempfile::tempdir().unwrap();
        let m = TxnMarkers::open(&dir.path().join("kafkaTxnMarkers.json")).unwrap();
        (dir, m)
    }

    #[tokio::test]
    async fn an_open_transaction_holds_the_lso_and_an_abort_hides_its_records_after_a_restart() {
        let (dir, m) = markers();
        assert!(!m.has_transactions("t", 0));
        m.begin("t", 0, 7, 10).await;
        m.begin("t", 0, 7, 12).await; // a later batch of the same transaction
        m.begin("t", 0, 8, 11).await;
        assert_eq!(m.last_stable_offset("t", 0, 20), 10);
        assert_eq!(m.last_stable_offset("t", 1, 20), 20);
        m.end("t", 0, 7, 15, false).await;
        assert_eq!(m.last_stable_offset("t", 0, 20), 11);
        m.end("t", 0, 8, 16, true).await;
        assert_eq!(m.last_stable_offset("t", 0, 20), 20);

        let m = TxnMarkers::open(&dir.path().join("kafkaTxnMarkers.json")).unwrap();
        assert!(m.has_transactions("t", 0));
        let rec =
            |pid: i64| RecordTxn::of(&properties_to_string([(KAFKA_TXN, "true"), (KAFKA_PID, &*pid.to_string())]));
        assert!(!m.visible_committed("t", 0, 12, rec(7)), "a record of the aborted transaction");
        assert!(m.visible_committed("t", 0, 12, rec(8)), "another producer's committed record");
        assert!(m.visible_committed("t", 0, 16, rec(7)), "past the abort marker");
        let marker = RecordTxn::of(&properties_to_string([(KAFKA_CONTROL, "ABORT"), (KAFKA_PID, "7")]));
        assert!(!m.visible_committed("t", 0, 15, marker));
        assert!(m.visible_committed("t", 0, 12, RecordTxn::of("")), "a plain record");
        assert_eq!(
            m.aborted_between("t", 0, 0, 11),
            vec![AbortedTxn { producer_id: 7, first_offset: 10, last_offset: 15 }]
        );
        assert!(m.aborted_between("t", 0, 16, 30).is_empty());
        m.prune("t", 0, 16).await;
        assert!(m.aborted_between("t", 0, 0, 30).is_empty());
        m.forget_topics(&BTreeSet::from(["t".to_owned()])).await;
        assert!(!m.has_transactions("t", 0));
    }
}
