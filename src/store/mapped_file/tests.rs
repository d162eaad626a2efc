//! MappedFile: appends, views, flushing, readahead and truncation on real files.
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).
use super::*;

#[test]
fn append_read_flush_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(MappedFile::create(dir.path(), 4096, 8192, true, 8192).unwrap());
    assert_eq!(f.path().file_name().unwrap(), "00000000000000004096");
    assert_eq!(f.append(b"hello", 1).unwrap(), Some(0));
    assert_eq!(f.append(b"world", 2).unwrap(), Some(5));
    assert_eq!(&*f.slice(0, 10).unwrap(), b"helloworld");
    assert!(f.slice(5, 6).is_none(), "unwritten bytes must not be readable");
    assert_eq!(f.slice(5, 5).unwrap().start_offset(), 4101);
    assert_eq!(f.flush(0).unwrap(), 10);
    assert_eq!(f.append(&[0u8; 8192], 3).unwrap(), None);
    let bytes = f.slice_from(5).unwrap().into_bytes();
    drop(f);
    assert_eq!(&bytes[..], b"world", "slice outlives the file handle");

    let f = Arc::new(MappedFile::open(&dir.path().join(file_name(4096)), 4096, 8192, true).unwrap());
    assert!(f.is_full());
    f.truncate_to(10).unwrap();
    assert_eq!(f.append(b"!", 4).unwrap(), Some(10));
    assert!(MappedFile::open(&dir.path().join(file_name(4096)), 4096, 4096, true).is_err());
}

#[test]
fn reading_ahead_changes_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(MappedFile::create(dir.path(), 0, 3 * OS_PAGE_SIZE, true, 0).unwrap());
    f.append(&[9u8; 5000], 1).unwrap().unwrap();
    // Unaligned, overlapping what is written, past the end, empty: all fine, nothing changes.
    for (from, len) in [(100, 10), (4000, 9000), (2 * OS_PAGE_SIZE + 1, usize::MAX), (3 * OS_PAGE_SIZE, 0), (0, 0)] {
        f.readahead(from, len).unwrap_or_else(|e| panic!("readahead({from}, {len}): {e}"));
    }
    assert_eq!(f.append(&[8u8; 100], 2).unwrap(), Some(5000));
    f.mark_full();
    let all = f.slice(0, 3 * OS_PAGE_SIZE).unwrap();
    assert!(all[..5000].iter().all(|b| *b == 9) && all[5000..5100].iter().all(|b| *b == 8));
    assert!(all[5100..].iter().all(|b| *b == 0));
}

#[test]
fn truncate_discards_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(MappedFile::create(dir.path(), 0, 8192, false, 0).unwrap());
    f.prefault();
    f.append(&[7u8; 6000], 1).unwrap().unwrap();
    let view = f.slice(0, 10).unwrap();
    assert!(f.truncate_to(100).is_err(), "truncated under a live view");
    drop(view);
    f.truncate_to(100).unwrap();
    assert_eq!(f.wrote_position(), 100);
    f.mark_full();
    let all = f.slice(0, 8192).unwrap();
    assert!(all[..100].iter().all(|b| *b == 7));
    assert!(all[100..].iter().all(|b| *b == 0), "stale bytes survived truncation");
}

/// Recovery cuts a CommitLog segment in place: the file never changes size (a kill between a
/// cut and a re-extension left a short segment the next start refused), the tail reads zeros
/// and its blocks are freed.
#[test]
fn truncation_punches_a_hole_and_keeps_the_size() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let size = 16 * OS_PAGE_SIZE;
    let f = Arc::new(MappedFile::create(dir.path(), 0, size, true, size).unwrap());
    f.append(&[7u8; 12 * OS_PAGE_SIZE], 1).unwrap().unwrap();
    let before = std::fs::metadata(f.path()).unwrap().blocks();
    f.truncate_to(100).unwrap();
    let meta = std::fs::metadata(f.path()).unwrap();
    assert_eq!(meta.len(), size as u64);
    assert!(meta.blocks() < before, "the tail's blocks are freed: {} -> {}", before, meta.blocks());
    f.mark_full();
    let all = f.slice(0, size).unwrap();
    assert!(all[..100].iter().all(|b| *b == 7));
    assert!(all[100..].iter().all(|b| *b == 0), "stale bytes survived truncation");
}

#[test]
fn dirty_pages_count_whole_pages() {
    let dir = tempfile::tempdir().unwrap();
    let f = MappedFile::create(dir.path(), 0, 4 * OS_PAGE_SIZE, true, 4 * OS_PAGE_SIZE).unwrap();
    f.append(&[1u8; OS_PAGE_SIZE + 10], 1).unwrap().unwrap();
    assert_eq!(f.dirty_pages(), 1);
    assert_eq!(f.flush(2).unwrap(), 0, "below the least-pages threshold");
    assert_eq!(f.flush(1).unwrap(), OS_PAGE_SIZE + 10);
    f.mark_full();
    assert_eq!(f.dirty_pages(), usize::MAX);
}

#[test]
fn region_reads_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoint");
    {
        let mut r = MappedRegion::open_or_create(&path, 4096).unwrap();
        r[8..16].copy_from_slice(&42i64.to_be_bytes());
        r.flush().unwrap();
    }
    let r = MappedRegion::open_or_create(&path, 4096).unwrap();
    assert_eq!(i64::from_be_bytes(r[8..16].try_into().unwrap()), 42);
    assert!(MappedRegion::open_or_create(&path, 8192).is_err());
}

/// Disk blocks (`st_blocks`) the file holds.
fn on_disk(f: &MappedFile) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(f.path()).unwrap().blocks() * 512
}

/// #28.6: a journal segment gets blocks for what `create` and `allocate_to` name, never from
/// below the write position, and truncation gives back what lies past the cut.
#[test]
fn blocks_are_allocated_where_asked_and_no_further() {
    let dir = tempfile::tempdir().unwrap();
    let size = 64 * OS_PAGE_SIZE;
    let whole = MappedFile::create(dir.path(), 0, size, true, size).unwrap();
    assert_eq!(on_disk(&whole), size as u64, "allocated whole at creation");
    let f = Arc::new(MappedFile::create(dir.path(), size as u64, size, true, 0).unwrap());
    assert_eq!(on_disk(&f), 0, "sparse at creation");
    assert_eq!(std::fs::metadata(f.path()).unwrap().len(), size as u64, "full length either way");
    assert_eq!(f.allocate_to(8 * OS_PAGE_SIZE).unwrap(), 8 * OS_PAGE_SIZE);
    assert_eq!(f.allocate_to(8 * OS_PAGE_SIZE).unwrap(), 0, "already allocated");
    assert_eq!(on_disk(&f), 8 * OS_PAGE_SIZE as u64);
    // Written past what was allocated: the next chunk starts at the write position.
    f.append(&vec![5u8; 12 * OS_PAGE_SIZE], 1).unwrap().unwrap();
    assert_eq!(f.allocate_to(16 * OS_PAGE_SIZE).unwrap(), 4 * OS_PAGE_SIZE);
    assert_eq!(f.allocate_to(usize::MAX).unwrap(), 48 * OS_PAGE_SIZE, "clipped to the file");
    f.truncate_to(10 * OS_PAGE_SIZE).unwrap();
    assert_eq!(on_disk(&f), 10 * OS_PAGE_SIZE as u64, "the cut freed the blocks past it");
    assert_eq!(f.allocate_to(11 * OS_PAGE_SIZE).unwrap(), OS_PAGE_SIZE, "allocated again after the cut");
    f.mark_full();
    let all = f.slice(0, size).unwrap();
    assert!(all[..10 * OS_PAGE_SIZE].iter().all(|b| *b == 5) && all[10 * OS_PAGE_SIZE..].iter().all(|b| *b == 0));
}
