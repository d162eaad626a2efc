//! ListOffsets `-3` (Kafka's MAX_TIMESTAMP): the record with the largest timestamp of a queue,
//! from a running maximum per queue instead of a scan of the whole queue per request (Kafka keeps
//! `maxTimestampSoFar` per segment for the same reason).
//!
//! ```text
//! per (topic, queue)   scanned_to: every offset below it has been seen
//!                      best:       (offset, timestamp) of the largest timestamp seen there
//! a request            the best is gone (below the log start, or compacted away): start over;
//!                      then read only [scanned_to, max) and fold it in (first of equals wins)
//! ```
//! The first request after a start reads the queue once; later ones read what came since. The
//! table is a cache: bounded by [`MAX_QUEUES`] (full: emptied, then rebuilt on demand), and an
//! entry of a deleted and recreated topic is caught by the same check as a compacted one.
//!
//! May import: `store`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::store::commit_log::record;
use crate::store::{AcceptAll, MessageStore};

/// At most this many queues are remembered.
pub const MAX_QUEUES: usize = 10_000;

#[derive(Clone, Copy, Default)]
struct Running {
    scanned_to: i64,
    best: Option<(i64, i64)>,
}

/// Running maxima of record timestamps, per queue.
#[derive(Default)]
pub struct MaxTimestamps {
    table: Mutex<HashMap<(String, i32), Running>>,
    /// Records read to fold them in, ever (what the running maximum saves shows here).
    folded: AtomicU64,
}

impl MaxTimestamps {
    /// The (offset, timestamp) of the record with the largest timestamp in `[min, max)` of the
    /// queue (the first of equals), reading off the async workers only what is new since the
    /// last call.
    pub async fn get(
        self: &Arc<Self>,
        store: &Arc<MessageStore>,
        topic: &str,
        queue_id: i32,
        min: i64,
        max: i64,
    ) -> Option<(i64, i64)> {
        let key = (topic.to_owned(), queue_id);
        let known = self.table.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied();
        let (me, store) = (self.clone(), store.clone());
        let work = move || {
            let mut run = known.unwrap_or_default();
            let stale =
                |(offset, ts)| offset < min || first_at_or_after(&store, &key.0, key.1, offset) != Some((offset, ts));
            if run.best.is_some_and(stale) || run.scanned_to > max {
                run = Running::default();
            }
            let from = run.scanned_to.max(min);
            if from < max {
                let (best, read) = fold(&store, &key.0, key.1, from, max, run.best);
                run.best = best;
                me.folded.fetch_add(read, Ordering::Relaxed);
                run.scanned_to = max;
            }
            let mut t = me.table.lock().unwrap_or_else(|e| e.into_inner());
            if t.len() >= MAX_QUEUES && !t.contains_key(&key) {
                t.clear();
            }
            t.insert(key, run);
            run.best
        };
        tokio::task::spawn_blocking(work).await.ok().flatten()
    }
}

/// `best` with the records of `[from, to)` folded in, and how many records that read.
fn fold(
    store: &MessageStore,
    topic: &str,
    queue_id: i32,
    from: i64,
    to: i64,
    mut best: Option<(i64, i64)>,
) -> (Option<(i64, i64)>, u64) {
    let (mut next, mut read) = (from, 0);
    while next < to {
        let got = store.get_message(topic, queue_id, next, 1024, usize::MAX, &AcceptAll);
        if got.messages.is_empty() {
            if got.next_begin_offset > next {
                next = got.next_begin_offset;
                continue;
            }
            break;
        }
        for (offset, ts) in got.messages.iter().filter_map(|m| record::queue_offset_and_born_time(m)) {
            read += 1;
            if offset < to && best.is_none_or(|(_, b)| ts > b) {
                best = Some((offset, ts));
            }
        }
        next = got.next_begin_offset.max(next + 1);
    }
    (best, read)
}

/// The offset and record timestamp (born time) of the first record at or after `offset` (a
/// compacted queue has gaps).
pub fn first_at_or_after(store: &MessageStore, topic: &str, queue_id: i32, offset: i64) -> Option<(i64, i64)> {
    if offset < 0 {
        return None;
    }
    let got = store.get_message(topic, queue_id, offset, 1, usize::MAX, &AcceptAll);
    got.messages.first().and_then(|m| record::queue_offset_and_born_time(m))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::message::MessageToStore;
    use crate::store::StoreConfig;

    fn at(ts: i64) -> MessageToStore {
        MessageToStore {
            topic: "mt".into(),
            queue_id: 0,
            flag: 0,
            body: bytes::Bytes::from_static(b"v"),
            tags_code: 0,
            properties: String::new(),
            born_timestamp: ts,
            born_host: "127.0.0.1:50000".parse().unwrap(),
            store_host: "127.0.0.1:10911".parse().unwrap(),
            sys_flag: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    #[tokio::test]
    async fn later_requests_read_only_the_new_records() {
        let dir = tempfile::tempdir().unwrap();
        let config = StoreConfig { store_path_root_dir: dir.path().to_owned(), ..StoreConfig::default() };
        let store = Arc::new(MessageStore::open(config).unwrap());
        let put = |batch: Vec<i64>| {
            let store = store.clone();
            async move {
                let msgs: Vec<MessageToStore> = batch.into_iter().map(at).collect();
                assert!(store.put_messages(&msgs, false).await.is_ok());
                store.await_dispatched(Duration::from_secs(10)).await;
            }
        };
        let m = Arc::new(MaxTimestamps::default());
        put(vec![100, 300, 200]).await;
        assert_eq!(m.get(&store, "mt", 0, 0, 3).await, Some((1, 300)));
        assert_eq!(m.folded.load(Ordering::Relaxed), 3);
        put(vec![250, 400]).await;
        assert_eq!(m.get(&store, "mt", 0, 0, 5).await, Some((4, 400)));
        assert_eq!(m.folded.load(Ordering::Relaxed), 5, "the first three are not read again");
        assert_eq!(m.get(&store, "mt", 0, 0, 5).await, Some((4, 400)));
        assert_eq!(m.folded.load(Ordering::Relaxed), 5, "nothing new, nothing read");
        assert_eq!(m.get(&store, "mt", 0, 0, 2).await, Some((1, 300)), "a lower end (a new topic) starts over");
    }
}
