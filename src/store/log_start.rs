//! Log start offsets: per queue, the first queue offset readers may see, moved forward by Kafka's
//! DeleteRecords and by per-topic retention (`retention.ms`, `retention.bytes`). Kafka's "log
//! start offset"; RocketMQ has no such thing, so a queue without an entry starts where its
//! ConsumeQueue does.
//!
//! It lives in the store, not in `meta`, because the store is what both doors read a queue's
//! start from: `ConsumeQueue::min_offset_in_queue` is the
//! larger of the ConsumeQueue's first unit and this offset, so a Kafka ListOffsets EARLIEST, a
//! Kafka fetch (OFFSET_OUT_OF_RANGE below it), a RocketMQ pull (OFFSET_TOO_SMALL, moved to it),
//! a time lookup and `mqadmin` all see the same start without each door remembering to ask.
//! `meta` sits above the store, so the store could not consult it.
//!
//! An offset never goes down, and it is on disk (written to a temporary file, fsynced, renamed,
//! directory fsynced) before [`LogStarts::advance`] returns: a DeleteRecords answer survives
//! `kill -9`. Entries exist only for queues that exist; a deleted topic's go with it.
//!
//! ```text
//! <root>/config/logStartOffset.json   {"<topic>":{"<queueId>":<offset>,...},...}
//! ```
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::StoreError;

/// topic -> queue id -> log start offset.
type Table = BTreeMap<String, BTreeMap<i32, i64>>;

pub struct LogStarts {
    path: PathBuf,
    table: Mutex<Table>,
}

impl LogStarts {
    /// Reads `path` (absent: no queue has moved its start).
    pub fn load(path: &Path) -> Result<Self, StoreError> {
        let table = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<Table>(&bytes).map_err(|e| {
                StoreError::io(format!("parse {}", path.display()))(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    e,
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Table::new(),
            Err(e) => return Err(StoreError::io(format!("read {}", path.display()))(e)),
        };
        Ok(Self { path: path.to_owned(), table: Mutex::new(table) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The recorded start of a queue (0: none).
    pub fn get(&self, topic: &str, queue_id: i32) -> i64 {
        self.lock().get(topic).and_then(|q| q.get(&queue_id)).copied().unwrap_or(0)
    }

    /// Every recorded start.
    pub fn all(&self) -> Vec<(String, i32, i64)> {
        let t = self.lock();
        t.iter().flat_map(|(topic, qs)| qs.iter().map(move |(q, o)| (topic.clone(), *q, *o))).collect()
    }

    /// Raises a queue's start to `offset` (never lowers it) and writes the table to disk before
    /// returning; `publish` is called with the new start once it is durable (and not on failure).
    /// Returns the recorded start afterwards.
    pub fn advance(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        publish: impl FnOnce(i64),
    ) -> Result<i64, StoreError> {
        let mut t = self.lock();
        let current = t.get(topic).and_then(|q| q.get(&queue_id)).copied().unwrap_or(0);
        if offset <= current {
            return Ok(current);
        }
        let mut next = t.clone();
        next.entry(topic.to_owned()).or_default().insert(queue_id, offset);
        self.write(&next)?;
        *t = next;
        publish(offset);
        Ok(offset)
    }

    /// Forgets a deleted topic's starts.
    pub fn remove_topic(&self, topic: &str) -> Result<(), StoreError> {
        let mut t = self.lock();
        if !t.contains_key(topic) {
            return Ok(());
        }
        let mut next = t.clone();
        next.remove(topic);
        self.write(&next)?;
        *t = next;
        Ok(())
    }

    /// Temporary file, fsync, rename, directory fsync.
    fn write(&self, table: &Table) -> Result<(), StoreError> {
        let ctx = |what: &str| format!("{what} {}", self.path.display());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(StoreError::io(ctx("create the directory of")))?;
        let tmp = self.path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(table).unwrap_or_default();
        let mut f = std::fs::File::create(&tmp).map_err(StoreError::io(ctx("create a temporary file for")))?;
        f.write_all(&bytes).map_err(StoreError::io(ctx("write")))?;
        f.sync_all().map_err(StoreError::io(ctx("fsync")))?;
        std::fs::rename(&tmp, &self.path).map_err(StoreError::io(ctx("rename into")))?;
        super::mapped_file::sync_dir(dir).map_err(StoreError::io(ctx("fsync the directory of")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_never_goes_down_and_is_read_back_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/logStartOffset.json");
        let s = LogStarts::load(&path).unwrap();
        assert_eq!(s.get("T", 0), 0);
        let mut seen = Vec::new();
        assert_eq!(s.advance("T", 0, 5, |o| seen.push(o)).unwrap(), 5);
        assert_eq!(s.advance("T", 0, 3, |o| seen.push(o)).unwrap(), 5, "never lowers");
        assert_eq!(s.advance("U", 2, 7, |o| seen.push(o)).unwrap(), 7);
        assert_eq!(seen, vec![5, 7], "published only when it moved");
        let again = LogStarts::load(&path).unwrap();
        assert_eq!((again.get("T", 0), again.get("U", 2), again.get("U", 0)), (5, 7, 0));
        again.remove_topic("T").unwrap();
        assert_eq!(LogStarts::load(&path).unwrap().all(), vec![("U".to_owned(), 2, 7)]);
    }
}
