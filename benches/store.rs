//! Store throughput: appending 1 KiB messages (ASYNC_FLUSH and SYNC_FLUSH, 1/8/64 concurrent
//! writers) and reading by queue offset. `examples/store_throughput.rs` relates these figures
//! to the raw disk.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrocket::model::message::{self, MessageToStore};
use ferrocket::store::{AcceptAll, FlushDiskType, MessageStore, StoreConfig};

fn store(dir: &std::path::Path, flush: FlushDiskType) -> Arc<MessageStore> {
    Arc::new(
        MessageStore::open(StoreConfig {
            store_path_root_dir: dir.to_owned(),
            mapped_file_size_commit_log: 256 * 1024 * 1024,
            max_hash_slot_num: 100_000,
            max_index_num: 400_000,
            flush_disk_type: flush,
            ..StoreConfig::default()
        })
        .unwrap(),
    )
}

fn message(queue_id: i32) -> MessageToStore {
    MessageToStore {
        topic: "BenchTopic".into(),
        queue_id,
        flag: 0,
        body: Bytes::from(vec![b'x'; 1024]),
        properties: message::properties_to_string([("TAGS", "TagA"), ("WAIT", "true")]),
        tags_code: message::tags_code(Some("TagA")),
        born_timestamp: 1,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// Appends `iters` messages spread over `writers` concurrent tasks; returns the elapsed time.
async fn append(store: &Arc<MessageStore>, writers: u64, iters: u64) -> Duration {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        let n = iters / writers + u64::from(w < iters % writers);
        tasks.push(tokio::spawn(async move {
            let msg = [message((w % 8) as i32)];
            for _ in 0..n {
                assert!(store.put_messages(&msg, true).await.is_ok());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
}

fn bench_append(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    for (name, flush) in [("async_flush", FlushDiskType::AsyncFlush), ("sync_flush", FlushDiskType::SyncFlush)] {
        let mut group = c.benchmark_group(format!("append_1k/{name}"));
        group.throughput(Throughput::Bytes(1024));
        group.sample_size(10);
        for writers in [1u64, 8, 64] {
            let dir = tempfile::tempdir().unwrap();
            let s = store(dir.path(), flush);
            group.bench_with_input(BenchmarkId::from_parameter(writers), &writers, |b, &writers| {
                b.to_async(&rt).iter_custom(|iters| {
                    let s = s.clone();
                    async move { append(&s, writers, iters).await }
                })
            });
            s.shutdown().unwrap();
        }
        group.finish();
    }
}

fn bench_read(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), FlushDiskType::AsyncFlush);
    rt.block_on(append(&s, 1, 20_000));
    while s.dispatched_offset() < s.commit_log_max_offset() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut group = c.benchmark_group("read_by_queue_offset");
    group.throughput(Throughput::Elements(32));
    let max = s.max_offset_in_queue("BenchTopic", 0);
    let mut offset = 0;
    group.bench_function("32_messages", |b| {
        b.iter(|| {
            let r = s.get_message("BenchTopic", 0, offset, 32, 1 << 20, &AcceptAll);
            offset = if r.next_begin_offset >= max { 0 } else { r.next_begin_offset };
            r.messages.len()
        })
    });
    group.finish();
    s.shutdown().unwrap();
}

criterion_group!(benches, bench_append, bench_read);
criterion_main!(benches);
