//! Store append throughput beside the raw sequential-write speed of the same disk, as ratios
//! measured in one run:
//!
//! ```text
//! cargo run --release --example store_throughput -- [DIR] [MIB]
//! ```
//! DIR defaults to a temporary directory (put it on the disk you care about), MIB (256) is how
//! much each measurement writes. Segments are 64 MiB so that several roll during a run.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use ferrocket::model::message::{self, MessageToStore};
use ferrocket::store::{FlushDiskType, MessageStore, StoreConfig};

const MSG: usize = 1024;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let tmp = tempfile::tempdir_in(args.get(1).map_or(".", String::as_str))?;
    let mib: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(512);
    let total = mib * 1024 * 1024;
    let count = total / MSG;
    println!("writing {mib} MiB per measurement in {}", tmp.path().display());

    let raw = raw_write(&tmp.path().join("raw"), total, false)?;
    println!("raw sequential write (1 KiB writes, one fsync):  {raw:8.1} MB/s");
    let raw_sync_count = (count / 64).max(256);
    let raw_sync = raw_write(&tmp.path().join("raw-sync"), raw_sync_count * MSG, true)?;
    println!("raw sequential write, fdatasync per 1 KiB:       {raw_sync:8.1} MB/s");

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    for (name, flush, writers, n) in [
        ("ASYNC_FLUSH, 1 writer", FlushDiskType::AsyncFlush, 1, count),
        ("ASYNC_FLUSH, 8 writers", FlushDiskType::AsyncFlush, 8, count),
        ("SYNC_FLUSH, 1 writer", FlushDiskType::SyncFlush, 1, raw_sync_count),
        ("SYNC_FLUSH, 64 writers", FlushDiskType::SyncFlush, 64, count / 4),
    ] {
        let dir = tmp.path().join(name.replace([',', ' '], "_"));
        let mbps = rt.block_on(store_append(&dir, flush, writers, n))?;
        let base = if flush == FlushDiskType::SyncFlush { raw_sync } else { raw };
        let basis = if flush == FlushDiskType::SyncFlush { "raw fdatasync'd" } else { "raw" };
        println!("store append, {name:24} {mbps:8.1} MB/s = {:.2}x {basis}", mbps / base);
    }
    Ok(())
}

fn raw_write(path: &std::path::Path, bytes: usize, sync_each: bool) -> anyhow::Result<f64> {
    let mut f = std::fs::File::create(path)?;
    let block = vec![b'x'; MSG];
    let start = Instant::now();
    for _ in 0..bytes / MSG {
        f.write_all(&block)?;
        if sync_each {
            f.sync_data()?;
        }
    }
    f.sync_all()?;
    Ok(bytes as f64 / start.elapsed().as_secs_f64() / 1e6)
}

async fn store_append(dir: &std::path::Path, flush: FlushDiskType, writers: usize, n: usize) -> anyhow::Result<f64> {
    let store = Arc::new(MessageStore::open(StoreConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 64 * 1024 * 1024,
        max_hash_slot_num: 100_000,
        max_index_num: 400_000,
        flush_disk_type: flush,
        ..StoreConfig::default()
    })?);
    let body = Bytes::from(vec![b'x'; MSG]);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (store, body) = (store.clone(), body.clone());
        let per = n / writers;
        tasks.push(tokio::spawn(async move {
            let msg = [MessageToStore {
                topic: "BenchTopic".into(),
                queue_id: (w % 8) as i32,
                flag: 0,
                body,
                properties: message::properties_to_string([("WAIT", "true")]),
                tags_code: 0,
                born_timestamp: 1,
                born_host: "127.0.0.1:50000".parse().unwrap(),
                store_host: "127.0.0.1:10911".parse().unwrap(),
                sys_flag: 0,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            }];
            for _ in 0..per {
                assert!(store.put_messages(&msg, true).await.is_ok());
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let written = store.commit_log_max_offset() as f64;
    let elapsed = start.elapsed().as_secs_f64();
    store.shutdown()?;
    Ok(written / elapsed / 1e6)
}
