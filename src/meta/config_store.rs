//! The store's settings derived from `broker.conf` ([`BrokerConfig::store_config`]).
//!
//! May import: what `meta/config.rs` may.

use std::path::PathBuf;
use std::time::Duration;

use super::BrokerConfig;
use crate::store::{FlushDiskType, StoreConfig};

impl BrokerConfig {
    /// The store's settings. Loop intervals are at least 1 ms: 0 (at boot or from
    /// UPDATE_BROKER_CONFIG) would spin a thread.
    pub fn store_config(&self) -> StoreConfig {
        let ms = Duration::from_millis;
        StoreConfig {
            store_path_root_dir: self.store_path_root_dir.clone(),
            store_path_commit_log: (!self.store_path_commit_log.is_empty())
                .then(|| PathBuf::from(&self.store_path_commit_log)),
            mapped_file_size_commit_log: self.mapped_file_size_commit_log,
            mapped_file_size_consume_queue: self.mapped_file_size_consume_queue,
            flush_disk_type: if self.flush_disk_type == "SYNC_FLUSH" {
                FlushDiskType::SyncFlush
            } else {
                FlushDiskType::AsyncFlush
            },
            flush_interval_commit_log: ms(self.flush_interval_commit_log.max(1)),
            flush_commit_log_least_pages: self.flush_commit_log_least_pages,
            flush_commit_log_thorough_interval: ms(self.flush_commit_log_thorough_interval),
            flush_interval_consume_queue: ms(self.flush_interval_consume_queue.max(1)),
            flush_consume_queue_least_pages: self.flush_consume_queue_least_pages,
            flush_consume_queue_thorough_interval: ms(self.flush_consume_queue_thorough_interval),
            sync_flush_timeout: ms(self.sync_flush_timeout),
            max_message_size: self.max_message_size,
            check_crc_on_recover: self.check_crc_on_recover,
            warm_mapped_file_enable: self.warm_maped_file_enable,
            data_read_ahead_enable: self.data_read_ahead_enable,
            commit_log_allocate_ahead_size: self.commit_log_allocate_ahead_size,
            message_index_enable: self.message_index_enable,
            max_hash_slot_num: self.max_hash_slot_num,
            max_index_num: self.max_index_num,
            file_reserved_time: self.file_reserved_time,
            delete_when: self.delete_when.clone(),
            disk_max_used_space_ratio: self.disk_max_used_space_ratio,
            disk_space_warning_level_ratio: self.disk_space_warning_level_ratio,
            disk_space_clean_forcibly_ratio: self.disk_space_clean_forcibly_ratio,
            clean_file_forcibly_enable: self.clean_file_forcibly_enable,
            clean_resource_interval: ms(self.clean_resource_interval.max(1)),
            delete_file_batch_max: self.delete_file_batch_max,
            max_transfer_bytes_on_message_in_memory: self.max_transfer_bytes_on_message_in_memory,
            max_transfer_count_on_message_in_memory: self.max_transfer_count_on_message_in_memory,
            max_transfer_bytes_on_message_in_disk: self.max_transfer_bytes_on_message_in_disk,
            max_transfer_count_on_message_in_disk: self.max_transfer_count_on_message_in_disk,
            access_message_in_memory_max_ratio: self.access_message_in_memory_max_ratio,
            max_filter_message_size: self.max_filter_message_size,
            default_query_max_num: self.default_query_max_num,
            delay_level_millis: self.delay_levels().unwrap_or_default(),
            enable_compaction: self.enable_compaction,
            compaction_interval: ms(self.compaction_schedule_internal.max(1)),
            max_offset_map_size: self.max_offset_map_size,
        }
    }
}
