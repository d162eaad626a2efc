//! Compaction throughput (#27.3), steady state as Kafka's cleaner sees it: a queue over 1,000
//! keys gets 5,000 new records of 200 bytes (not timed), then one compaction is timed: it reads
//! the compacted log (1,000 records) and the 5,000 dirty ones and writes the 1,000 survivors.
//! With the offset map holding all keys (one pass), and holding 100 (ten passes: the cost of a
//! small `maxOffsetMapSize`). Throughput is dirty records compacted per second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use ferrocket::model::message::{self, MessageToStore};
use ferrocket::store::compaction::pass::MAP_SLOT_BYTES;
use ferrocket::store::compaction::CompactionPolicy;
use ferrocket::store::{FlushDiskType, MessageStore, StoreConfig};

const DIRTY: usize = 5_000;
const KEYS: usize = 1_000;
const TOPIC: &str = "BenchCompacted";

fn message(i: usize) -> MessageToStore {
    let key = format!("key-{}", i % KEYS);
    MessageToStore {
        topic: TOPIC.into(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(vec![b'x'; 200]),
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

fn store(dir: &std::path::Path, map_keys: usize) -> MessageStore {
    let store = MessageStore::open(StoreConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 256 * 1024 * 1024,
        max_hash_slot_num: 100_000,
        max_index_num: 400_000,
        flush_disk_type: FlushDiskType::AsyncFlush,
        compaction_interval: Duration::from_secs(3600),
        max_offset_map_size: map_keys * MAP_SLOT_BYTES,
        ..StoreConfig::default()
    })
    .unwrap();
    store.set_compaction_lookup(Arc::new(|_| Some(CompactionPolicy::default())));
    store
}

/// Appends the next `DIRTY` records and waits until they are dispatched.
async fn dirty(store: &MessageStore, next: &mut usize) {
    for _ in 0..DIRTY {
        assert!(store.put_messages(&[message(*next)], false).await.is_ok());
        *next += 1;
    }
    while store.dispatched_offset() < store.commit_log_max_offset() {
        store.await_dispatched(Duration::from_secs(10)).await;
    }
}

fn compaction(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut g = c.benchmark_group("compaction");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(DIRTY as u64));
    for map_keys in [KEYS * 2, KEYS / 10] {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), map_keys);
        let mut next = 0usize;
        g.bench_with_input(BenchmarkId::new("dirty_records", format!("map_{map_keys}_keys")), &map_keys, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    rt.block_on(dirty(&store, &mut next));
                    let start = Instant::now();
                    let stats = store.compact_now(TOPIC, 0, 0).unwrap().unwrap();
                    total += start.elapsed();
                    assert_eq!(stats.records_kept, KEYS as u64);
                }
                total
            })
        });
        store.shutdown().unwrap();
    }
    g.finish();
}

criterion_group!(benches, compaction);
criterion_main!(benches);
