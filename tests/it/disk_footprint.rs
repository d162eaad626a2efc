//! What a store takes on disk (issue #28 point 6): a fresh broker under the default config holds
//! a few MB, as Java's (3 MB), not two fallocated 1 GiB CommitLog segments; blocks follow the
//! write end (`commitLogAllocateAheadSize`), and a segment whose blocks are partly allocated
//! recovers after a crash like any other. Sizes are allocated blocks (`st_blocks`), not lengths.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use ferrocket::broker::BrokerConfig;
use ferrocket::protocol::ResponseCode;
use ferrocket::store::{FlushDiskType, MessageStore};

use super::broker::{send, start_broker, wait_max_offset};
use super::broker_harness::{call_addr, start_broker_on};
use super::store::{bodies, config, msg, wait_dispatched};
use super::support::*;

const MIB: u64 = 1 << 20;

/// Bytes of disk the files below `dir` hold (`st_blocks` × 512), and the largest file length.
fn on_disk(dir: &Path) -> (u64, u64) {
    let (mut blocks, mut longest) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        if m.is_dir() {
            let (b, l) = on_disk(&e.path());
            blocks += b;
            longest = longest.max(l);
        } else {
            blocks += m.blocks() * 512;
            longest = longest.max(m.len());
        }
    }
    (blocks, longest)
}

/// Ten 1,000-byte messages to queue 0 of `topic`, each acknowledged.
async fn send_ten(c: &Client, addr: &str, topic: &str) {
    for _ in 0..10 {
        let r = call_addr(c, addr, send(topic, 0, &[b'x'; 1000], "A")).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    }
}

/// Before: 2.1 GB (the first segment fallocated whole at creation, the next one ahead of time).
#[tokio::test]
async fn a_fresh_store_under_the_default_config_takes_a_few_megabytes() {
    let dir = tempfile::tempdir().unwrap();
    let defaults = BrokerConfig::default();
    let b = start_broker(dir.path(), |c| {
        c.mapped_file_size_commit_log = defaults.mapped_file_size_commit_log;
        c.max_hash_slot_num = defaults.max_hash_slot_num;
        c.max_index_num = defaults.max_index_num;
    })
    .await;
    let c = client();
    send_ten(&c, &b.addr, "DiskT").await;
    wait_max_offset(&c, &b.addr, "DiskT", 0, 10).await;
    let (blocks, longest) = on_disk(dir.path());
    assert_eq!(longest, 1 << 30, "mappedFileSizeCommitLog still sizes the segments");
    assert!(blocks < 16 * MIB, "a fresh store holds {} MiB of disk", blocks / MIB);
    b.stop().await;
}

/// The slave's CommitLog (written by replication, `append_replicated`) follows the same rule.
#[tokio::test]
async fn a_slave_store_takes_a_few_megabytes_too() {
    let ns = TestNamesrv::start(|_| {}).await;
    let ns_addr = ns.addr.to_string();
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one_gib = BrokerConfig::default().mapped_file_size_commit_log;
    let master = start_broker_on(&ns_addr, master_dir.path(), |c| c.mapped_file_size_commit_log = one_gib).await;
    let slave = start_broker_on(&ns_addr, slave_dir.path(), |c| {
        c.mapped_file_size_commit_log = one_gib;
        c.broker_role = "SLAVE".into();
        c.broker_id = 1;
    })
    .await;
    let c = client();
    send_ten(&c, &master.addr, "DiskHA").await;
    // Replication (the master's address from the registration, the HA connect, the transfer,
    // the slave's dispatch) can outlast wait_max_offset's 5 s on a loaded machine, and a failed
    // first connect waits the 5 s reconnect delay: poll the slave's store for longer.
    let replicated = eventually(std::time::Duration::from_secs(30), || async {
        slave.inner.store.max_offset_in_queue("DiskHA", 0) == 10
    })
    .await;
    assert!(replicated, "the slave never held the 10 messages");
    for dir in [master_dir.path(), slave_dir.path()] {
        let (blocks, longest) = on_disk(dir);
        assert_eq!(longest, 1 << 30);
        assert!(blocks < 16 * MIB, "{} holds {} MiB of disk", dir.display(), blocks / MIB);
    }
    slave.stop().await;
    master.stop().await;
}

/// A store whose CommitLog segments hold blocks only a little ahead of the write end, killed
/// (dropped without shutdown) in the middle of a segment, recovers every message, and appends
/// after recovery land where they should.
#[tokio::test]
async fn a_partly_allocated_segment_recovers_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || ferrocket::store::StoreConfig {
        mapped_file_size_commit_log: 1 << 20,
        commit_log_allocate_ahead_size: 64 * 1024,
        ..config(dir.path(), FlushDiskType::SyncFlush)
    };
    {
        let store = MessageStore::open(cfg()).unwrap();
        for i in 0..300 {
            assert!(store
                .put_messages(&[msg("T", 0, &format!("a{i}-{}", "x".repeat(900)), "A", "")], true)
                .await
                .is_ok());
        }
        wait_dispatched(&store).await;
        // Dropped without shutdown: like kill -9.
    }
    let segment = dir.path().join("commitlog").join("00000000000000000000");
    let m = std::fs::metadata(&segment).unwrap();
    assert_eq!(m.len(), 1 << 20);
    assert!(m.blocks() * 512 < 1 << 20, "the segment is partly allocated: {} bytes", m.blocks() * 512);
    let store = MessageStore::open(cfg()).unwrap();
    wait_dispatched(&store).await;
    let all = bodies(&store, "T", 0);
    assert_eq!(all.len(), 300);
    assert!(all.iter().enumerate().all(|(i, b)| b.starts_with(&format!("a{i}-"))));
    for i in 0..1000 {
        assert!(store.put_messages(&[msg("T", 0, &format!("b{i}-{}", "y".repeat(900)), "A", "")], true).await.is_ok());
    }
    wait_dispatched(&store).await;
    let all = bodies(&store, "T", 0);
    assert_eq!(all.len(), 1300, "appends after recovery, across the next segment");
    assert!(all[300].starts_with("b0-") && all[1299].starts_with("b999-"));
    store.shutdown().unwrap();
}
