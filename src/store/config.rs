//! The store's settings (`MessageStoreConfig.java` keys the store honours), as a plain struct;
//! the broker fills it from `broker.conf` and replaces the live part while running
//! ([`StoreConfig::with_live`]; the store's services read it per use).
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::path::PathBuf;
use std::time::Duration;

/// `flushDiskType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlushDiskType {
    #[default]
    AsyncFlush,
    SyncFlush,
}

#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub store_path_root_dir: PathBuf,
    /// `storePathCommitLog`; `<root>/commitlog` when `None`.
    pub store_path_commit_log: Option<PathBuf>,
    pub mapped_file_size_commit_log: usize,
    /// Rounded up to a multiple of 20 by [`StoreConfig::consume_queue_file_size`].
    pub mapped_file_size_consume_queue: usize,
    pub flush_disk_type: FlushDiskType,
    pub flush_interval_commit_log: Duration,
    pub flush_commit_log_least_pages: usize,
    pub flush_commit_log_thorough_interval: Duration,
    pub flush_interval_consume_queue: Duration,
    pub flush_consume_queue_least_pages: usize,
    pub flush_consume_queue_thorough_interval: Duration,
    pub sync_flush_timeout: Duration,
    pub max_message_size: usize,
    pub check_crc_on_recover: bool,
    /// `warmMapedFileEnable`: make every page of a new CommitLog segment resident when it is
    /// allocated (in the background), so appends take no page faults. Off by default as in Java:
    /// it writes the whole segment (1 GiB of zeros) through the page cache up front.
    pub warm_mapped_file_enable: bool,
    /// `dataReadAheadEnable`: false advises the kernel of random reads on every CommitLog
    /// segment (MADV_RANDOM: no read-ahead), live.
    pub data_read_ahead_enable: bool,
    /// `commitLogAllocateAheadSize` (ferrocket's): bytes of the CommitLog given their disk blocks
    /// (`fallocate`) ahead of the write end, in chunks of a quarter of it, by a background
    /// thread; appends then find their blocks allocated. At least `mappedFileSizeCommitLog`:
    /// each whole segment at creation (the next one too, ahead of time); 0: none (sparse, as
    /// Java's: blocks are allocated by the writes).
    pub commit_log_allocate_ahead_size: usize,
    pub message_index_enable: bool,
    pub max_hash_slot_num: usize,
    pub max_index_num: usize,
    /// Hours a CommitLog segment is kept after its last write.
    pub file_reserved_time: u64,
    /// `;`-separated hours of the day when expired files are deleted.
    pub delete_when: String,
    pub disk_max_used_space_ratio: u32,
    pub disk_space_warning_level_ratio: u32,
    pub disk_space_clean_forcibly_ratio: u32,
    pub clean_file_forcibly_enable: bool,
    pub clean_resource_interval: Duration,
    pub delete_file_batch_max: usize,
    pub max_transfer_bytes_on_message_in_memory: usize,
    pub max_transfer_count_on_message_in_memory: usize,
    pub max_transfer_bytes_on_message_in_disk: usize,
    pub max_transfer_count_on_message_in_disk: usize,
    pub access_message_in_memory_max_ratio: u32,
    pub max_filter_message_size: usize,
    pub default_query_max_num: usize,
    /// Delay of each level in ms (`messageDelayLevel`, level 1 first): the ConsumeQueue tag code
    /// of a SCHEDULE_TOPIC_XXXX message is its delivery time.
    pub delay_level_millis: Vec<i64>,
    /// `enableCompaction`: compacted topics are compacted (off: read and kept like any topic).
    pub enable_compaction: bool,
    /// `compactionScheduleInternal` (Java's spelling): time between compaction rounds (Kafka's
    /// `log.cleaner.backoff.ms`).
    pub compaction_interval: Duration,
    /// `maxOffsetMapSize`: bytes the offset map of one pass may take (Kafka's
    /// `log.cleaner.dedupe.buffer.size`); a dirty range with more keys takes several passes.
    pub max_offset_map_size: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        let root = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from).join("store");
        Self {
            store_path_root_dir: root,
            store_path_commit_log: None,
            mapped_file_size_commit_log: 1024 * 1024 * 1024,
            mapped_file_size_consume_queue: 300_000 * 20,
            flush_disk_type: FlushDiskType::AsyncFlush,
            flush_interval_commit_log: Duration::from_millis(500),
            flush_commit_log_least_pages: 4,
            flush_commit_log_thorough_interval: Duration::from_secs(10),
            flush_interval_consume_queue: Duration::from_millis(1000),
            flush_consume_queue_least_pages: 2,
            flush_consume_queue_thorough_interval: Duration::from_secs(60),
            sync_flush_timeout: Duration::from_millis(5000),
            max_message_size: 4 * 1024 * 1024,
            check_crc_on_recover: true,
            warm_mapped_file_enable: false,
            data_read_ahead_enable: true,
            commit_log_allocate_ahead_size: 4 * 1024 * 1024,
            message_index_enable: true,
            max_hash_slot_num: 5_000_000,
            max_index_num: 20_000_000,
            file_reserved_time: 72,
            delete_when: "04".into(),
            disk_max_used_space_ratio: 75,
            disk_space_warning_level_ratio: 90,
            disk_space_clean_forcibly_ratio: 85,
            clean_file_forcibly_enable: true,
            clean_resource_interval: Duration::from_secs(10),
            delete_file_batch_max: 10,
            max_transfer_bytes_on_message_in_memory: 256 * 1024,
            max_transfer_count_on_message_in_memory: 32,
            max_transfer_bytes_on_message_in_disk: 64 * 1024,
            max_transfer_count_on_message_in_disk: 8,
            access_message_in_memory_max_ratio: 40,
            max_filter_message_size: 16_000,
            default_query_max_num: 32,
            delay_level_millis: [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
                .iter()
                .map(|s| s * 1000)
                .collect(),
            enable_compaction: true,
            compaction_interval: Duration::from_secs(15),
            max_offset_map_size: 100 * 1024 * 1024,
        }
    }
}

impl StoreConfig {
    /// `self` with the settings the store reads per use taken from `next` (UPDATE_BROKER_CONFIG):
    /// retention and disk ratios, flush intervals, size and transfer limits, compaction. The
    /// others (paths, file sizes, flushDiskType, the index, timers) shape files or threads made
    /// at start-up and keep their boot value until a restart.
    pub fn with_live(&self, next: &StoreConfig) -> StoreConfig {
        StoreConfig {
            file_reserved_time: next.file_reserved_time,
            delete_when: next.delete_when.clone(),
            disk_max_used_space_ratio: next.disk_max_used_space_ratio,
            disk_space_warning_level_ratio: next.disk_space_warning_level_ratio,
            disk_space_clean_forcibly_ratio: next.disk_space_clean_forcibly_ratio,
            clean_file_forcibly_enable: next.clean_file_forcibly_enable,
            clean_resource_interval: next.clean_resource_interval,
            delete_file_batch_max: next.delete_file_batch_max,
            max_message_size: next.max_message_size,
            flush_interval_commit_log: next.flush_interval_commit_log,
            flush_commit_log_least_pages: next.flush_commit_log_least_pages,
            flush_commit_log_thorough_interval: next.flush_commit_log_thorough_interval,
            flush_interval_consume_queue: next.flush_interval_consume_queue,
            flush_consume_queue_least_pages: next.flush_consume_queue_least_pages,
            flush_consume_queue_thorough_interval: next.flush_consume_queue_thorough_interval,
            sync_flush_timeout: next.sync_flush_timeout,
            max_transfer_bytes_on_message_in_memory: next.max_transfer_bytes_on_message_in_memory,
            max_transfer_count_on_message_in_memory: next.max_transfer_count_on_message_in_memory,
            max_transfer_bytes_on_message_in_disk: next.max_transfer_bytes_on_message_in_disk,
            max_transfer_count_on_message_in_disk: next.max_transfer_count_on_message_in_disk,
            access_message_in_memory_max_ratio: next.access_message_in_memory_max_ratio,
            max_filter_message_size: next.max_filter_message_size,
            default_query_max_num: next.default_query_max_num,
            enable_compaction: next.enable_compaction,
            compaction_interval: next.compaction_interval,
            max_offset_map_size: next.max_offset_map_size,
            data_read_ahead_enable: next.data_read_ahead_enable,
            ..self.clone()
        }
    }

    pub fn commit_log_dir(&self) -> PathBuf {
        self.store_path_commit_log.clone().unwrap_or_else(|| self.store_path_root_dir.join("commitlog"))
    }

    pub fn consume_queue_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("consumequeue")
    }

    pub fn index_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("index")
    }

    /// Compacted queues (`compacted/<topic>/<queueId>/`: not Java's `compaction/`, whose files stay apart).
    pub fn compaction_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("compacted")
    }

    pub fn checkpoint_path(&self) -> PathBuf {
        self.store_path_root_dir.join("checkpoint")
    }

    /// The log start offsets (`log_start.rs`).
    pub fn log_start_path(&self) -> PathBuf {
        self.store_path_root_dir.join("config").join("logStartOffset.json")
    }

    pub fn abort_path(&self) -> PathBuf {
        self.store_path_root_dir.join("abort")
    }

    pub fn lock_path(&self) -> PathBuf {
        self.store_path_root_dir.join("lock")
    }

    /// `getMappedFileSizeConsumeQueue`: rounded up to whole 20-byte units.
    pub fn consume_queue_file_size(&self) -> usize {
        self.mapped_file_size_consume_queue.div_ceil(20) * 20
    }
}
