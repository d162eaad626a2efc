//! The transaction log: the coordinator's table ([`Txns`]) in memory, and
//! `config/kafkaTransactions.json` on disk, rewritten atomically and fsync'd
//! (`crate::persist`, group commit) before the request that changed it is answered. A
//! transaction open at a crash is in the file as `Ongoing` with its partitions and their start
//! offsets; one that reached `PrepareCommit` / `PrepareAbort` holds what its completion needs
//! (partitions, pending offsets).
//!
//! ```text
//! config/kafkaTransactions.json  {"<transactional id>": {"producerId":..,"prevProducerId":..,
//!   "producerEpoch":..,"lastProducerEpoch":..,"timeoutMs":..,"state":"Ongoing","startMs":..,
//!   "lastUpdateMs":..,"partitions":[{"topic":..,"partition":..,"startOffset":..}],
//!   "groups":[..],"offsets":[{"group":..,"topic":..,"partition":..,"offset":..,"metadata":..}]}}
//! ```
//! Bounded by the coordinator's limits (`kafkaMaxTransactionalIds`).
//!
//! May import: `crate::persist`, `super::txn_coordinator`.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tracing::warn;

use super::api::error;
use super::txn_coordinator::{Limits, Txns};
use crate::persist::ConfigFile;

/// The file under the broker's config directory.
pub const FILE: &str = "kafkaTransactions.json";

pub struct TxnLog {
    table: Arc<Mutex<Txns>>,
    file: Arc<ConfigFile>,
    pub limits: Limits,
    /// Rung when a transactional append finishes (a completion waits for in-flight appends).
    pub appended: Notify,
}

impl TxnLog {
    /// Loads the file (absent: no transactional id yet).
    pub fn open(path: &Path, limits: Limits) -> Result<Self, String> {
        let parse = |b: &[u8]| serde_json::from_slice::<Txns>(b).map_err(|e| e.to_string());
        let txns = crate::persist::load(path, parse)?.unwrap_or_default();
        let table = Arc::new(Mutex::new(txns));
        let shared = table.clone();
        let snapshot = move || {
            let t = shared.lock().unwrap_or_else(|e| e.into_inner());
            serde_json::to_vec(&*t).unwrap_or_default()
        };
        Ok(Self { table, file: ConfigFile::new(path.to_owned(), Box::new(snapshot)), limits, appended: Notify::new() })
    }

    pub fn lock(&self) -> MutexGuard<'_, Txns> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns once the file holds every change made so far; COORDINATOR_NOT_AVAILABLE when it
    /// cannot be written (the client retries).
    pub async fn persist(&self) -> Result<(), i16> {
        self.file.persist().await.map_err(|e| {
            warn!(file = %self.file.path().display(), error = %e, "cannot write the Kafka transaction log");
            error::COORDINATOR_NOT_AVAILABLE
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::txn_coordinator::{Init, TxnState};

    fn limits() -> Limits {
        Limits { max_timeout_ms: 900_000, expiration_ms: 604_800_000, max_ids: 10 }
    }

    #[tokio::test]
    async fn the_table_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let log = TxnLog::open(&path, limits()).unwrap();
        let mut next = 0;
        let mut alloc = || {
            next += 1;
            Some(next)
        };
        let init = log.lock().init(&log.limits, "app-1", 60_000, None, 0, &mut alloc).unwrap();
        assert_eq!(init, Init::Ready { producer_id: 1, epoch: 0 });
        log.lock().add_partitions("app-1", 1, 0, &[("T".into(), 0, 42)], 5).unwrap();
        log.persist().await.unwrap();
        let again = TxnLog::open(&path, limits()).unwrap();
        let t = again.lock();
        let m = &t.ids["app-1"];
        assert_eq!((m.state, m.producer_id, m.start_ms), (TxnState::Ongoing, 1, 5));
        assert_eq!(m.partitions[0].start_offset, 42);
        assert!(!m.completing);
    }

    /// The rewrite grows with the table: at the default cap (`kafkaMaxTransactionalIds`, 1000
    /// ids) the file stays about 270 bytes per id. What a rewrite costs (it must stay well below
    /// Kafka Streams' 100 ms EOS commit interval) is measured by `benches/persist.rs`, not here.
    #[tokio::test]
    async fn a_full_table_is_rewritten_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let full = Limits { max_timeout_ms: 900_000, expiration_ms: 604_800_000, max_ids: 1000 };
        let log = TxnLog::open(&dir.path().join(FILE), full).unwrap();
        let mut next = 0;
        let mut alloc = || {
            next += 1;
            Some(next)
        };
        for i in 0..1000 {
            let id = format!("streams-app-{i:05}-0_1");
            log.lock().init(&log.limits, &id, 60_000, None, 0, &mut alloc).unwrap();
            log.lock().add_partitions(&id, i + 1, 0, &[("app-changelog".into(), 3, 1000)], 1).unwrap();
        }
        log.persist().await.unwrap();
        let size = std::fs::metadata(dir.path().join(FILE)).unwrap().len();
        assert!(size < 400 * 1000, "{size} bytes for 1000 ids");
        let again = TxnLog::open(&dir.path().join(FILE), limits()).unwrap();
        assert_eq!(again.lock().ids.len(), 1000);
    }
}
