//! One IndexFile, byte for byte as `IndexFile.java` / `IndexHeader.java` write it.
//!
//! Every header field is written through to the mapping as soon as it changes (Java keeps a
//! copy in atomics and writes through too), so the mapped bytes are the only state.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::path::Path;

use super::{ENTRY_SIZE, HASH_SLOT_SIZE, HEADER_SIZE};
use crate::model::message::java_hash;
use crate::store::mapped_file::MappedRegion;
use crate::store::StoreError;

const BEGIN_TIMESTAMP_POS: usize = 0;
const END_TIMESTAMP_POS: usize = 8;
const BEGIN_PHY_OFFSET_POS: usize = 16;
const END_PHY_OFFSET_POS: usize = 24;
const HASH_SLOT_COUNT_POS: usize = 32;
const INDEX_COUNT_POS: usize = 36;
/// `IndexFile.invalidIndex`: entry 0 is never written, so 0 ends a chain and marks an empty slot.
const INVALID_INDEX: i32 = 0;

/// `IndexFile.indexKeyHashMethod`: `abs(key.hashCode())`, with `Integer.MIN_VALUE` (whose
/// absolute value overflows) mapped to 0.
pub fn key_hash(key: &str) -> i32 {
    java_hash(key).checked_abs().unwrap_or(0)
}

/// A memory-mapped IndexFile: header, `hash_slot_num` slots, `index_num` entries.
pub struct IndexFile {
    region: MappedRegion,
    hash_slot_num: usize,
    index_num: usize,
}

impl std::fmt::Debug for IndexFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexFile")
            .field("path", &self.path())
            .field("index_count", &self.index_count())
            .field("end_phy_offset", &self.end_phy_offset())
            .finish()
    }
}

impl IndexFile {
    /// Bytes of a file with these dimensions.
    pub fn file_size(hash_slot_num: usize, index_num: usize) -> usize {
        HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * ENTRY_SIZE
    }

    /// Creates a new file (Java's constructor). A rolled file starts where the previous one
    /// ended: non-zero `prev_end_phy_offset` / `prev_end_timestamp` become both its begin and end
    /// values. Other header fields stay zero on disk until the first key (indexCount reads as 1).
    pub fn create(
        path: &Path,
        hash_slot_num: usize,
        index_num: usize,
        prev_end_phy_offset: i64,
        prev_end_timestamp: i64,
    ) -> Result<Self, StoreError> {
        let mut file = Self::open(path, hash_slot_num, index_num)?;
        if prev_end_phy_offset > 0 {
            file.put_i64(BEGIN_PHY_OFFSET_POS, prev_end_phy_offset);
            file.put_i64(END_PHY_OFFSET_POS, prev_end_phy_offset);
        }
        if prev_end_timestamp > 0 {
            file.put_i64(BEGIN_TIMESTAMP_POS, prev_end_timestamp);
            file.put_i64(END_TIMESTAMP_POS, prev_end_timestamp);
        }
        Ok(file)
    }

    /// Maps an existing file (created zero-filled if missing). Its size must match the
    /// configured dimensions: a file written with other `maxHashSlotNum`/`maxIndexNum` values
    /// cannot be read correctly, so it is an error rather than a silent misreading.
    pub fn open(path: &Path, hash_slot_num: usize, index_num: usize) -> Result<Self, StoreError> {
        let size = Self::file_size(hash_slot_num, index_num);
        let region = MappedRegion::open_or_create(path, size)
            .map_err(StoreError::io(format!("open index file {}", path.display())))?;
        Ok(Self { region, hash_slot_num, index_num })
    }

    pub fn path(&self) -> &Path {
        self.region.path()
    }

    pub fn hash_slot_num(&self) -> usize {
        self.hash_slot_num
    }

    pub fn index_num(&self) -> usize {
        self.index_num
    }

    pub fn begin_timestamp(&self) -> i64 {
        self.i64_at(BEGIN_TIMESTAMP_POS).unwrap_or(0)
    }

    pub fn end_timestamp(&self) -> i64 {
        self.i64_at(END_TIMESTAMP_POS).unwrap_or(0)
    }

    pub fn begin_phy_offset(&self) -> i64 {
        self.i64_at(BEGIN_PHY_OFFSET_POS).unwrap_or(0)
    }

    pub fn end_phy_offset(&self) -> i64 {
        self.i64_at(END_PHY_OFFSET_POS).unwrap_or(0)
    }

    /// Slots in use.
    pub fn hash_slot_count(&self) -> i32 {
        self.i32_at(HASH_SLOT_COUNT_POS).unwrap_or(0)
    }

    /// The number the next entry gets. `IndexHeader.load` turns a stored value ≤ 0 into 1.
    pub fn index_count(&self) -> i32 {
        self.i32_at(INDEX_COUNT_POS).unwrap_or(0).max(1)
    }

    /// `isWriteFull`: entry numbers run from 1, so a file holds `index_num - 1` entries.
    pub fn is_write_full(&self) -> bool {
        self.index_count() as usize >= self.index_num
    }

    /// `isTimeMatched`: whether `[begin, end]` overlaps the file's time range.
    pub fn is_time_matched(&self, begin: i64, end: i64) -> bool {
        let (first, last) = (self.begin_timestamp(), self.end_timestamp());
        (begin < first && end > last) || (begin >= first && begin <= last) || (end >= first && end <= last)
    }

    /// Adds `key` as the newest entry of its slot's chain. Returns false when the file is full.
    pub fn put_key(&mut self, key: &str, phy_offset: i64, store_timestamp: i64) -> bool {
        let index_count = self.index_count();
        if index_count as usize >= self.index_num {
            tracing::warn!(file = %self.path().display(), index_count, "index file is full");
            return false;
        }
        let hash = key_hash(key);
        let slot_pos = self.slot_pos(hash);
        let entry_pos = self.entry_pos(index_count);
        let mut prev = self.i32_at(slot_pos).unwrap_or(INVALID_INDEX);
        if prev <= INVALID_INDEX || prev > index_count {
            prev = INVALID_INDEX;
        }
        let begin = self.begin_timestamp();
        let time_diff = if begin <= 0 {
            0
        } else {
            (store_timestamp.wrapping_sub(begin) / 1000).clamp(0, i64::from(i32::MAX)) as i32
        };
        let mut entry = [0u8; ENTRY_SIZE];
        entry[..4].copy_from_slice(&hash.to_be_bytes());
        entry[4..12].copy_from_slice(&phy_offset.to_be_bytes());
        entry[12..16].copy_from_slice(&time_diff.to_be_bytes());
        entry[16..].copy_from_slice(&prev.to_be_bytes());
        if !self.put_bytes(entry_pos, &entry) {
            return false;
        }
        self.put_i32(slot_pos, index_count);
        if index_count <= 1 {
            self.put_i64(BEGIN_PHY_OFFSET_POS, phy_offset);
            self.put_i64(BEGIN_TIMESTAMP_POS, store_timestamp);
        }
        if prev == INVALID_INDEX {
            self.put_i32(HASH_SLOT_COUNT_POS, self.hash_slot_count().wrapping_add(1));
        }
        self.put_i32(INDEX_COUNT_POS, index_count + 1);
        self.put_i64(END_PHY_OFFSET_POS, phy_offset);
        self.put_i64(END_TIMESTAMP_POS, store_timestamp);
        true
    }

    /// `selectPhyOffset`: walks `key`'s slot chain from the newest entry, appending to `out`
    /// the CommitLog offsets of entries with the same hash stored within `[begin, end]`, until
    /// `out` holds `max_num`. The walk stops at the chain's end, at an entry older than `begin`
    /// (the chain runs newest to oldest), or at a pointer that cannot be valid. Entries of other
    /// keys with an equal hash are returned too; the caller re-checks keys.
    pub fn select_phy_offsets(&self, key: &str, max_num: usize, begin: i64, end: i64, out: &mut Vec<i64>) {
        let index_count = self.index_count();
        let hash = key_hash(key);
        let Some(mut next) = self.i32_at(self.slot_pos(hash)) else { return };
        if next <= INVALID_INDEX || next > index_count || index_count <= 1 {
            return;
        }
        let file_begin = self.begin_timestamp();
        // A valid chain is shorter than the file; the bound only stops a corrupt, cyclic one.
        for _ in 0..index_count {
            if out.len() >= max_num {
                break;
            }
            let Some((hash_read, phy_offset, time_diff, prev)) = self.entry(next) else { break };
            if time_diff < 0 {
                break;
            }
            let time_read = file_begin.wrapping_add(i64::from(time_diff) * 1000);
            if hash_read == hash && time_read >= begin && time_read <= end {
                out.push(phy_offset);
            }
            if prev <= INVALID_INDEX || prev > index_count || prev == next || time_read < begin {
                break;
            }
            next = prev;
        }
    }

    /// msyncs the whole file. Blocking.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.region.flush().map_err(StoreError::io(format!("flush index file {}", self.path().display())))
    }

    fn slot_pos(&self, hash: i32) -> usize {
        HEADER_SIZE + (hash as usize % self.hash_slot_num) * HASH_SLOT_SIZE
    }

    fn entry_pos(&self, index: i32) -> usize {
        HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE + index as usize * ENTRY_SIZE
    }

    /// Entry `index`: (keyHash, phyOffset, timeDiffSeconds, prevIndex); None beyond the file.
    fn entry(&self, index: i32) -> Option<(i32, i64, i32, i32)> {
        let pos = self.entry_pos(index);
        Some((self.i32_at(pos)?, self.i64_at(pos + 4)?, self.i32_at(pos + 12)?, self.i32_at(pos + 16)?))
    }

    fn i32_at(&self, pos: usize) -> Option<i32> {
        Some(i32::from_be_bytes(self.region.get(pos..pos + 4)?.try_into().ok()?))
    }

    fn i64_at(&self, pos: usize) -> Option<i64> {
        Some(i64::from_be_bytes(self.region.get(pos..pos + 8)?.try_into().ok()?))
    }

    /// Writes inside the mapping. Positions come from the fixed layout and an entry number below
    /// `index_num`, so they always fit; false is the "cannot happen" answer instead of a panic.
    fn put_bytes(&mut self, pos: usize, bytes: &[u8]) -> bool {
        match self.region.get_mut(pos..pos + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }

    fn put_i32(&mut self, pos: usize, v: i32) {
        self.put_bytes(pos, &v.to_be_bytes());
    }

    fn put_i64(&mut self, pos: usize, v: i64) {
        self.put_bytes(pos, &v.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000;

    fn be32(v: i32) -> [u8; 4] {
        v.to_be_bytes()
    }

    fn be64(v: i64) -> [u8; 8] {
        v.to_be_bytes()
    }

    fn new_file(dir: &Path, slots: usize, entries: usize) -> IndexFile {
        IndexFile::create(&dir.join("20231114221320000"), slots, entries, 0, 0).unwrap()
    }

    #[test]
    fn layout_golden_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = new_file(dir.path(), 4, 5);
        let path = f.path().to_owned();
        assert_eq!(IndexFile::file_size(4, 5), 156);
        assert_eq!(std::fs::read(&path).unwrap(), vec![0u8; 156], "a new file is all zeros");
        assert_eq!(f.index_count(), 1);

        // "k" hashes to 107 and "o" to 111: both land in slot 3 (107 % 4 == 111 % 4 == 3).
        assert_eq!((key_hash("k"), key_hash("o")), (107, 111));
        assert!(f.put_key("k", 100, T0));
        assert!(f.put_key("o", 200, T0 + 5_999));
        f.flush().unwrap();

        let mut want = vec![0u8; 156];
        want[0..8].copy_from_slice(&be64(T0)); // beginTimestamp
        want[8..16].copy_from_slice(&be64(T0 + 5_999)); // endTimestamp
        want[16..24].copy_from_slice(&be64(100)); // beginPhyOffset
        want[24..32].copy_from_slice(&be64(200)); // endPhyOffset
        want[32..36].copy_from_slice(&be32(1)); // hashSlotCount: one slot used
        want[36..40].copy_from_slice(&be32(3)); // indexCount: next entry is 3
        want[52..56].copy_from_slice(&be32(2)); // slot 3 at 40 + 3*4 -> entry 2
                                                // entry 1 at 40 + 4*4 + 1*20 = 76
        want[76..80].copy_from_slice(&be32(107));
        want[80..88].copy_from_slice(&be64(100));
        want[88..92].copy_from_slice(&be32(0)); // first entry of a fresh file: timeDiff 0
        want[92..96].copy_from_slice(&be32(0)); // end of chain
                                                // entry 2 at 96
        want[96..100].copy_from_slice(&be32(111));
        want[100..108].copy_from_slice(&be64(200));
        want[108..112].copy_from_slice(&be32(5)); // 5.999 s truncates to 5
        want[112..116].copy_from_slice(&be32(1)); // previous entry of slot 3
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    #[test]
    fn rolled_file_header_starts_at_previous_end() {
        let dir = tempfile::tempdir().unwrap();
        let f = IndexFile::create(&dir.path().join("1"), 4, 5, 4096, T0).unwrap();
        let bytes = std::fs::read(f.path()).unwrap();
        let mut want = vec![0u8; 156];
        want[0..8].copy_from_slice(&be64(T0));
        want[8..16].copy_from_slice(&be64(T0));
        want[16..24].copy_from_slice(&be64(4096));
        want[24..32].copy_from_slice(&be64(4096));
        assert_eq!(bytes, want, "counts stay 0 on disk until the first key");
        assert_eq!((f.index_count(), f.hash_slot_count()), (1, 0));
    }

    #[test]
    fn chain_walk_with_collisions() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = new_file(dir.path(), 4, 10);
        // "Aa" and "BB" have the same Java hash (2112); "D" (68) shares their slot 0.
        assert_eq!(key_hash("Aa"), key_hash("BB"));
        assert_eq!((key_hash("Aa") % 4, key_hash("D") % 4), (0, 0));
        assert!(f.put_key("Aa", 1, T0));
        assert!(f.put_key("BB", 2, T0));
        assert!(f.put_key("C", 3, T0));
        assert!(f.put_key("D", 4, T0));
        assert_eq!(f.hash_slot_count(), 2);
        let mut out = Vec::new();
        f.select_phy_offsets("Aa", 10, 0, i64::MAX, &mut out);
        assert_eq!(out, [2, 1], "newest first; the equal-hash key comes back too");
        out.clear();
        f.select_phy_offsets("D", 10, 0, i64::MAX, &mut out);
        assert_eq!(out, [4]);
        out.clear();
        f.select_phy_offsets("E", 10, 0, i64::MAX, &mut out);
        assert!(out.is_empty(), "E's slot 1 is empty");
    }

    #[test]
    fn time_range_and_max_num() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = new_file(dir.path(), 4, 10);
        for (i, phy) in [10, 20, 30, 40].into_iter().enumerate() {
            assert!(f.put_key("k", phy, T0 + i as i64 * 10_000 + 999));
        }
        let select = |max, begin, end| {
            let mut out = Vec::new();
            f.select_phy_offsets("k", max, begin, end, &mut out);
            out
        };
        // Stored times are T0+999 (the file's begin), then begin + 10 s, 20 s, 30 s.
        assert_eq!(select(10, T0 + 10_999, T0 + 20_999), [30, 20]);
        assert_eq!(select(10, T0 + 11_000, T0 + 30_999), [40, 30], "stops at the first entry before begin");
        assert_eq!(select(2, 0, i64::MAX), [40, 30]);
        assert_eq!(select(0, 0, i64::MAX), [] as [i64; 0]);
        assert_eq!(select(10, T0 + 40_000, i64::MAX), [] as [i64; 0]);
        assert!(f.is_time_matched(T0, T0 + 5_000));
        assert!(f.is_time_matched(0, i64::MAX));
        assert!(!f.is_time_matched(T0 + 40_000, i64::MAX));
    }

    #[test]
    fn full_file_refuses_keys() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = new_file(dir.path(), 2, 3);
        assert!(f.put_key("a", 1, T0) && f.put_key("b", 2, T0));
        assert!(f.is_write_full(), "entries 1 and 2 used; entry 0 never is");
        assert!(!f.put_key("c", 3, T0));
        assert_eq!((f.index_count(), f.end_phy_offset()), (3, 2));
    }

    #[test]
    fn min_value_hash_maps_to_zero() {
        assert_eq!(java_hash("polygenelubricants"), i32::MIN);
        assert_eq!(key_hash("polygenelubricants"), 0);
        assert_eq!(key_hash("Aa"), 2112);
        assert!(java_hash("zzzzzzzz") < 0 && key_hash("zzzzzzzz") == -java_hash("zzzzzzzz"));
        let dir = tempfile::tempdir().unwrap();
        let mut f = new_file(dir.path(), 3, 4);
        assert!(f.put_key("polygenelubricants", 7, T0));
        assert_eq!(f.i32_at(HEADER_SIZE), Some(1), "slot 0");
        let mut out = Vec::new();
        f.select_phy_offsets("polygenelubricants", 5, 0, i64::MAX, &mut out);
        assert_eq!(out, [7]);
    }

    #[test]
    fn reopen_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = {
            let mut f = new_file(dir.path(), 4, 10);
            assert!(f.put_key("x", 5, T0) && f.put_key("x", 6, T0 + 1_000));
            f.flush().unwrap();
            f.path().to_owned()
        };
        let f = IndexFile::open(&path, 4, 10).unwrap();
        assert_eq!((f.begin_timestamp(), f.end_timestamp()), (T0, T0 + 1_000));
        assert_eq!((f.begin_phy_offset(), f.end_phy_offset(), f.index_count()), (5, 6, 3));
        let mut out = Vec::new();
        f.select_phy_offsets("x", 10, 0, i64::MAX, &mut out);
        assert_eq!(out, [6, 5]);
        let err = IndexFile::open(&path, 8, 10).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
    }
}
