//! How full the store's disk is, as the 75 %/85 %/90 % thresholds (`diskMaxUsedSpaceRatio`,
//! `diskSpaceCleanForciblyRatio`, `diskSpaceWarningLevelRatio`) and `brokerStatus`'s
//! `commitLogDiskRatio` read it: what is written, not what is reserved.
//!
//! ```text
//! disk      [ used by others | CommitLog written | allocated ahead, unwritten | usable ]
//! counted     used             used                usable (ours to write)       usable
//! ```
//! Blocks the CommitLog holds ahead of its write end (`commitLogAllocateAheadSize`, or whole
//! segments fallocated by an older version) are free space to Java, whose segments are sparse;
//! counted as used they made a small disk cross the thresholds with an empty store.
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::path::Path;

use super::mapped_file_queue::MappedFileQueue;
use super::MessageStore;

/// Percentage of the disk holding `path` in use, rounded up, as Java computes it
/// (`UtilAll.getDiskPartitionSpaceUsedPercent`) and as `df` shows it, less the blocks `log`
/// holds unwritten if it lives on that disk.
pub(super) fn used_percent_at(path: &Path, log: &MappedFileQueue) -> Option<u32> {
    let total = fs4::total_space(path).ok()?;
    let reserved = if same_filesystem(path, log.dir()) { reserved_unwritten(log) } else { 0 };
    used_percent(total, fs4::free_space(path).ok()?, fs4::available_space(path).ok()?, reserved)
}

/// Used over used + usable: blocks reserved for root (free but not usable) count on neither
/// side. Counting them as used (total - usable over total) made a disk with a large
/// reservation look nearly full, so retention deleted segments still being read and writes
/// were refused on a disk `df` showed at 57 %. `unwritten` (allocated by us, not written) moves
/// from used to usable.
fn used_percent(total: u64, free: u64, usable: u64, unwritten: u64) -> Option<u32> {
    let used = total.checked_sub(free)?;
    let entire = used.checked_add(usable).filter(|e| *e > 0)?;
    let written = used.saturating_sub(unwritten);
    u32::try_from((u128::from(written) * 100).div_ceil(u128::from(entire))).ok()
}

/// Bytes of disk the segments hold past their write positions.
fn reserved_unwritten(log: &MappedFileQueue) -> u64 {
    log.files().iter().filter_map(|f| f.reserved_unwritten().ok()).sum()
}

fn same_filesystem(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    matches!((std::fs::metadata(a), std::fs::metadata(b)), (Ok(a), Ok(b)) if a.dev() == b.dev())
}

impl MessageStore {
    /// Percentage of the disk holding `path` in use, counting the CommitLog's written bytes
    /// and not its blocks allocated ahead (`commitLogDiskRatio`); `None` if it cannot be
    /// measured.
    pub fn disk_used_percent(&self, path: &Path) -> Option<u32> {
        used_percent_at(path, self.inner.commit_log.files())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::mapped_file::MappedFile;

    #[test]
    fn disk_usage_leaves_root_reserved_blocks_out_as_java_and_df_do() {
        const G: u64 = 1 << 30;
        // This machine's disk: 251 GiB, 200 GiB free, 39 GiB usable (a large root reservation).
        assert_eq!(used_percent(251 * G, 200 * G, 39 * G, 0), Some(57), "df shows 57%, not 85%");
        // No reservation: used over total, rounded up.
        assert_eq!(used_percent(100, 40, 40, 0), Some(60));
        assert_eq!(used_percent(300, 199, 199, 0), Some(34));
        assert_eq!(used_percent(100, 0, 0, 0), Some(100));
        // Nonsense from the kernel is no figure rather than a wrong one.
        assert_eq!(used_percent(100, 101, 0, 0), None);
        assert_eq!(used_percent(0, 0, 0, 0), None);
    }

    /// Before (#28.6): two fallocated 1 GiB segments on a 2.5 GiB disk read as 84 % used with
    /// nothing written; Java's sparse segments read as the 4 % the other files take.
    #[test]
    fn blocks_allocated_ahead_count_as_free() {
        const M: u64 = 1 << 20;
        assert_eq!(used_percent(2560 * M, 400 * M, 400 * M, 2048 * M), Some(5));
        assert_eq!(used_percent(100, 40, 40, 10), Some(50));
        // More than is used (a racing measurement): nothing, never an underflow.
        assert_eq!(used_percent(100, 40, 40, 1000), Some(0));
    }

    #[test]
    fn a_segment_counts_what_it_holds_past_its_write_position() {
        let dir = tempfile::tempdir().unwrap();
        let seg = 1 << 20;
        let f = MappedFile::create(dir.path(), 0, seg, true, 0).unwrap();
        assert_eq!(f.reserved_unwritten().unwrap(), 0, "sparse: nothing reserved");
        f.allocate_to(256 << 10).unwrap();
        f.append(&[1u8; 10_000], 1).unwrap().unwrap();
        // Allocated to 256 KiB, written to 10,000 (the page it ends in counts as written).
        assert_eq!(f.reserved_unwritten().unwrap(), (256 << 10) - 3 * 4096);
        let whole = MappedFile::create(dir.path(), seg as u64, seg, true, seg).unwrap();
        assert_eq!(whole.reserved_unwritten().unwrap(), seg as u64);
        whole.mark_full();
        assert_eq!(whole.reserved_unwritten().unwrap(), 0, "a full segment holds nothing ahead");
    }
}
