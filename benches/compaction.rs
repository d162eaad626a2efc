//! Compaction throughput (#27.3): one queue of 50,000 records of 1 KiB over 1,000 keys (a dirty
//! range compacted in one pass), and the same with an offset map of 100 keys (ten passes: the
//! cost of a small `maxOffsetMapSize`). Reported as records read per second; the store is filled
//! before the clock starts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrocket::model::message::{self, MessageToStore};
use ferrocket::store::compaction::CompactionPolicy;
use ferrocket::store::{FlushDiskType, MessageStore, StoreConfig};

const RECORDS: usize = 50_000;
const KEYS: usize = 1_000;

fn message(i: usize) -> MessageToStore {
    let key = format!("key-{}", i % KEYS);
    MessageToStore {
        topic: "BenchCompacted".into(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(vec![b'x'; 1024]),
        properties: message::properties_to_string([("TAGS", "TagA"), ("KEYS", key.as_str())]),
        tags_code: message::tags_code(Some("TagA")),
        born_timestamp: 1,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// A filled store, dispatched, not yet compacted.
async fn filled(dir: &std::path::Path, map_keys: usize) -> MessageStore {
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 256 * 1024 * 1024,
        max_hash_slot_num: 100_000,
        max_index_num: 400_000,
        flush_disk_type: FlushDiskType::AsyncFlush,
        compaction_interval: Duration::from_secs(3600),
        max_offset_map_size: map_keys * ferrocket::store::compaction::pass::MAP_SLOT_BYTES,
        ..StoreConfig::default()
    })
    .unwrap();
    store.set_compaction_lookup(Arc::new(|_| Some(CompactionPolicy::default())));
    for chunk in (0..RECORDS).collect::<Vec<_>>().chunks(64) {
        for i in chunk {
            assert!(store.put_messages(&[message(*i)], false).await.is_ok());
        }
    }
    while store.dispatched_offset() < store.commit_log_max_offset() {
        store.await_dispatched(Duration::from_secs(10)).await;
    }
    store
}

fn compaction(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut g = c.benchmark_group("compaction");
    g.sample_size(10).measurement_time(Duration::from_secs(20)).throughput(Throughput::Elements(RECORDS as u64));
    for map_keys in [KEYS * 2, KEYS / 10] {
        g.bench_with_input(BenchmarkId::new("records", format!("map_{map_keys}_keys")), &map_keys, |b, &map_keys| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = tempfile::tempdir().unwrap();
                    let store = rt.block_on(filled(dir.path(), map_keys));
                    let start = Instant::now();
                    let stats = store.compact_now("BenchCompacted", 0, 0).unwrap().unwrap();
                    total += start.elapsed();
                    assert_eq!(stats.records_kept, KEYS as u64);
                    store.shutdown().unwrap();
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, compaction);
criterion_main!(benches);
