//! What the store's unit tests share: a small store's config, a message, waiting for dispatch.
//!
//! May import: `model` and modules of `store/`.

use std::time::Duration;

use bytes::Bytes;

use super::{FlushDiskType, MessageStore, StoreConfig};
use crate::model::message::MessageToStore;

/// A store in `dir` with 64 KiB CommitLog segments and 100-unit ConsumeQueue files, flushed
/// asynchronously, that never deletes for disk space.
pub fn small_config(dir: &std::path::Path) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 64 * 1024,
        mapped_file_size_consume_queue: 20 * 100,
        flush_disk_type: FlushDiskType::AsyncFlush,
        clean_file_forcibly_enable: false,
        ..StoreConfig::default()
    }
}

/// A plain message for queue 0 of `topic`.
pub fn message(topic: &str, body: Bytes, properties: String) -> MessageToStore {
    MessageToStore {
        topic: topic.into(),
        queue_id: 0,
        flag: 0,
        body,
        tags_code: 0,
        properties,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// Waits (5 s at most) until everything written is dispatched.
pub async fn wait_dispatched(store: &MessageStore) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.dispatched_offset() < store.commit_log_max_offset() {
        assert!(std::time::Instant::now() < deadline, "dispatcher did not catch up");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
