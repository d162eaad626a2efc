//! MappedFileQueue: rolling, finding, flushing, truncating and allocating segments on real files.
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).
use super::*;

/// Before: a deleted topic's new queue (its directory not yet synced) flushed by the
/// housekeeping thread after its directory was removed logged "consume queue flush failed"
/// (ENOENT) at ERROR (seen under franz-go's tests, which delete their topics).
#[test]
fn a_destroyed_queue_flushes_without_an_error_once_its_directory_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let qdir = dir.path().join("topic").join("0");
    let q = MappedFileQueue::load(&qdir, 4096, false).unwrap();
    q.last_for_write(0).unwrap().append(b"x", 1).unwrap();
    assert!(q.dir_unsynced.load(Ordering::Acquire));
    // The flush thread's race: it took the flag, then the topic's files and directory went.
    q.dir_unsynced.store(true, Ordering::Release);
    let n = q.read().len();
    q.delete_first(n).unwrap();
    std::fs::remove_dir_all(dir.path().join("topic")).unwrap();
    q.flush(0).expect("nothing left to flush is no error");
    q.destroy().unwrap();
    assert!(!q.dir_unsynced.load(Ordering::Acquire), "a destroyed queue has no directory to sync");
}

#[test]
fn a_sparse_segment_has_its_directory_synced_by_the_next_flush() {
    let dir = tempfile::tempdir().unwrap();
    let q = MappedFileQueue::load(dir.path(), 4096, false).unwrap();
    let f = q.last_for_write(0).unwrap();
    assert!(q.dir_unsynced.load(Ordering::Acquire), "created without a directory sync");
    f.append(b"x", 1).unwrap();
    q.flush(0).unwrap();
    assert!(!q.dir_unsynced.load(Ordering::Acquire), "the flush synced the directory");
    let journal = MappedFileQueue::load(&dir.path().join("j"), 4096, true).unwrap();
    journal.last_for_write(0).unwrap();
    assert!(!journal.dir_unsynced.load(Ordering::Acquire), "a journal segment is synced at creation");
}

#[test]
fn rolls_segments_and_finds_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let q = MappedFileQueue::load(dir.path(), 4096, true).unwrap().warm(true);
    assert_eq!(q.max_offset(), 0);
    let f = q.last_for_write(0).unwrap();
    f.append(&[1u8; 4096], 1).unwrap();
    let g = q.last_for_write(0).unwrap();
    assert_eq!(g.file_from_offset(), 4096);
    g.append(&[2u8; 100], 2).unwrap();
    assert_eq!(q.max_offset(), 4196);
    assert_eq!(q.find(4100).unwrap().file_from_offset(), 4096);
    assert_eq!(q.find(10).unwrap().file_from_offset(), 0);
    assert!(q.find(9000).is_none());
    assert_eq!(q.flush(0).unwrap(), 4196);

    let again = MappedFileQueue::load(dir.path(), 4096, false).unwrap();
    // The preallocated third segment exists too.
    assert!(again.files().len() >= 2);
    again.truncate_dirty(4196).unwrap();
    assert_eq!(again.files().len(), 2);
    assert_eq!(again.max_offset(), 4196);
    again.truncate_dirty(100).unwrap();
    assert_eq!(again.files().len(), 1);
    assert_eq!(again.max_offset(), 100);
    assert!(MappedFileQueue::load(dir.path(), 8192, false).is_err(), "size mismatch must fail");
}

/// #28.6: with a window smaller than the segment, blocks follow the write end a chunk
/// (a quarter of the window) at a time, into the next segment once it is in use.
#[test]
fn allocates_a_chunk_at_a_time_ahead_of_the_write_end() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let on_disk = |f: &MappedFile| std::fs::metadata(f.path()).unwrap().blocks() * 512;
    let q = MappedFileQueue::load(dir.path(), 64 * 4096, true).unwrap().allocate_ahead(16 * 4096);
    assert_eq!(q.allocate_ahead_of_write().unwrap(), 0, "no segment yet");
    let f = q.last_for_write(0).unwrap();
    assert_eq!(on_disk(&f), 0, "created sparse");
    assert_eq!(q.allocate_ahead_of_write().unwrap(), 16 * 4096);
    // The window's end moves into the next chunk: all of it is allocated.
    f.append(&[1u8; 4096], 1).unwrap().unwrap();
    assert_eq!(q.allocate_ahead_of_write().unwrap(), 4 * 4096, "one chunk more");
    f.append(&[1u8; 3 * 4096], 2).unwrap().unwrap();
    assert_eq!(q.allocate_ahead_of_write().unwrap(), 0, "still inside that chunk");
    f.append(&[1u8; 4096], 2).unwrap().unwrap();
    assert_eq!(q.allocate_ahead_of_write().unwrap(), 4 * 4096, "the next one");
    assert_eq!(on_disk(&f), 24 * 4096);
    // Near the end: the window stops at the segment's end until the next is in use.
    f.append(&[1u8; 55 * 4096], 3).unwrap().unwrap();
    q.allocate_ahead_of_write().unwrap();
    assert_eq!(on_disk(&f), 64 * 4096);
    f.mark_full();
    let g = q.last_for_write(0).unwrap();
    assert_eq!(on_disk(&g), 0, "the next segment was created without blocks");
    assert_eq!(q.allocate_ahead_of_write().unwrap(), 16 * 4096);
    assert_eq!(on_disk(&g), 16 * 4096);
    // A window as large as the segment: whole segments at creation, nothing ahead.
    let whole = MappedFileQueue::load(&dir.path().join("w"), 64 * 4096, true).unwrap().allocate_ahead(64 * 4096);
    let w = whole.last_for_write(0).unwrap();
    assert_eq!(on_disk(&w), 64 * 4096);
    assert_eq!(whole.allocate_ahead_of_write().unwrap(), 0);
    // None: sparse throughout.
    let none = MappedFileQueue::load(&dir.path().join("n"), 64 * 4096, true).unwrap().allocate_ahead(0);
    let n = none.last_for_write(0).unwrap();
    assert_eq!((on_disk(&n), none.allocate_ahead_of_write().unwrap()), (0, 0));
}

#[test]
fn delete_first_keeps_slices_readable() {
    let dir = tempfile::tempdir().unwrap();
    let q = MappedFileQueue::load(dir.path(), 4096, false).unwrap();
    let f = q.last_for_write(0).unwrap();
    f.append(b"abc", 1).unwrap();
    let s = f.slice(0, 3).unwrap();
    f.mark_full();
    q.last_for_write(0).unwrap();
    assert_eq!(q.delete_first(1).unwrap(), 1);
    assert_eq!(q.min_offset(), 4096);
    assert_eq!(&*s, b"abc");
}
