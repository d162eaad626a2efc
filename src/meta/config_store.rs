//! Settings derived from `broker.conf`: the store's ([`BrokerConfig::store_config`]), the delay
//! levels, the timer's precision and the gRPC long-polling bounds.
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

    /// `messageDelayLevel` in ms, level 1 first: blank-separated numbers with a unit s, m, h or d.
    pub fn delay_levels(&self) -> Result<Vec<i64>, String> {
        let levels = self
            .message_delay_level
            .split_whitespace()
            .map(|item| {
                let (num, unit) = item.split_at(item.len().saturating_sub(1));
                let factor = match unit {
                    "s" => 1000,
                    "m" => 60_000,
                    "h" => 3_600_000,
                    "d" => 86_400_000,
                    _ => return Err(format!("'{item}' needs a unit s, m, h or d")),
                };
                num.parse::<i64>().map(|n| n * factor).map_err(|_| format!("'{item}' is not a number with a unit"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if levels.is_empty() {
            return Err("at least one delay level is needed".into());
        }
        Ok(levels)
    }

    /// `MessageStoreConfig.setTimerPrecisionMs`: the precision snapped to 100, 200, 500 or 1000.
    pub fn timer_precision(&self) -> i64 {
        match self.timer_precision_ms {
            v if v < 200 => 100,
            v if v < 500 => 200,
            v if v < 1000 => 500,
            _ => 1000,
        }
    }

    /// `grpcClientConsumerMin|MaxLongPollingTimeoutMillis`.
    pub fn grpc_long_polling(&self) -> (Duration, Duration) {
        let ms = Duration::from_millis;
        (
            ms(self.grpc_client_consumer_min_long_polling_timeout_millis),
            ms(self.grpc_client_consumer_max_long_polling_timeout_millis),
        )
    }
}
