//! One fixed-size, memory-mapped segment file (`DefaultMappedFile.java`). The only `unsafe`
//! code in ferrocket lives here.
//!
//! ```text
//! [0 ............ flushed ............ wrote ............ size)
//!  durable         written, not yet    free: only the single writer touches it
//!                  fsync'd; readable
//! ```
//!
//! Readers see bytes below `wrote` (published with Release/Acquire); one writer at a time (an
//! internal lock) appends above it. Slices handed out keep the mapping alive through an `Arc`,
//! so a segment deleted by retention stays readable until its last reader drops it.

#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use memmap2::{MmapMut, MmapRaw};

/// `DefaultMappedFile.OS_PAGE_SIZE`: flush arithmetic counts 4 KiB pages.
pub const OS_PAGE_SIZE: usize = 4096;

/// A segment file mapped in full.
pub struct MappedFile {
    path: PathBuf,
    file_from_offset: u64,
    size: usize,
    file: File,
    mmap: MmapRaw,
    wrote: AtomicUsize,
    flushed: AtomicUsize,
    /// Store time of the newest record appended (for the checkpoint); 0 if unknown.
    last_store_timestamp: AtomicI64,
    writer: Mutex<()>,
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("path", &self.path)
            .field("wrote", &self.wrote_position())
            .field("flushed", &self.flushed_position())
            .finish()
    }
}

/// The file name of a segment starting at `offset`: 20 decimal digits (`UtilAll.offset2FileName`).
pub fn file_name(offset: u64) -> String {
    format!("{offset:020}")
}

impl MappedFile {
    /// Creates a zero-filled segment of `size` bytes and maps it. A `journal` segment (the
    /// CommitLog's) gets its blocks allocated up front and its directory entry made durable
    /// before it is used; any other is sparse and its caller syncs the directory later
    /// ([`sync_dir`]), so that creating it costs no disk wait on the path that needs it.
    pub fn create(dir: &Path, file_from_offset: u64, size: usize, journal: bool) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(file_name(file_from_offset));
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        // The first write to each page of a sparse file makes the filesystem allocate its block
        // in the page fault, which on ext4 costs ~30x more CPU (10 s vs 0.35 s per GiB measured
        // here). Zeros either way; sparse where fallocate is unsupported.
        let allocated =
            journal && rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, size as u64).is_ok();
        if !allocated {
            file.set_len(size as u64)?;
        }
        if journal {
            // A crash must not lose the file: its entry is durable before any write is acknowledged.
            sync_dir(dir)?;
        }
        Self::map(path, file, file_from_offset, size, 0)
    }

    /// Opens an existing segment, which must be exactly `size` bytes. Positions start at the end;
    /// recovery moves them back to the real end of data.
    pub fn open(path: &Path, file_from_offset: u64, size: usize) -> std::io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let len = file.metadata()?.len();
        if len != size as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is {len} bytes, expected {size} (check the configured file size)", path.display()),
            ));
        }
        Self::map(path.to_owned(), file, file_from_offset, size, size)
    }

    fn map(path: PathBuf, file: File, from: u64, size: usize, pos: usize) -> std::io::Result<Self> {
        let mmap = MmapRaw::map_raw(&file)?;
        Ok(Self {
            path,
            file_from_offset: from,
            size,
            file,
            mmap,
            wrote: AtomicUsize::new(pos),
            flushed: AtomicUsize::new(pos),
            last_store_timestamp: AtomicI64::new(0),
            writer: Mutex::new(()),
        })
    }

    /// Populates the pages from `from` on with `madvise(MADV_POPULATE_WRITE)`, 16 MiB per call,
    /// without a fault per page. It changes no byte, so it may run while a writer appends.
    /// False where the kernel lacks it (before 5.14).
    pub fn populate(&self, from: usize) -> bool {
        const CHUNK: usize = 16 << 20;
        let mut pos = from.next_multiple_of(OS_PAGE_SIZE);
        while pos < self.size {
            let len = CHUNK.min(self.size - pos);
            if self.mmap.advise_range(memmap2::Advice::PopulateWrite, pos, len).is_err() {
                return false;
            }
            pos += len;
        }
        true
    }

    /// Maps `len` bytes from `from` (rounded out to whole pages, clipped to the file) readable
    /// with `madvise(MADV_POPULATE_READ)`: the page cache pages are allocated, zero-filled (or
    /// read) and mapped now, so a later append into them takes only a write-protect fault.
    /// Changes no byte. False where the kernel lacks it (before 5.14).
    pub fn populate_read(&self, from: usize, len: usize) -> bool {
        let start = from - from % OS_PAGE_SIZE;
        let end = from.saturating_add(len).min(self.size).next_multiple_of(OS_PAGE_SIZE).min(self.size);
        end <= start || self.mmap.advise_range(memmap2::Advice::PopulateRead, start, end - start).is_ok()
    }

    /// Makes every page resident so the first appends do not pay for page faults
    /// (`warmMappedFile`): [`Self::populate`], or where that is missing, touching each page.
    /// Call before the file is handed to a writer.
    pub fn prefault(&self) {
        if self.populate(self.wrote.load(Ordering::Acquire)) {
            return;
        }
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let start = self.wrote.load(Ordering::Acquire);
        let base = self.mmap.as_mut_ptr();
        let mut pos = start.next_multiple_of(OS_PAGE_SIZE);
        while pos < self.size {
            // SAFETY: `pos < size`, the mapping is `size` bytes long and stays mapped while
            // `self` lives. Bytes at or above `wrote` belong to the writer, whose lock we hold,
            // and no reader looks past `wrote`. The page is still zero, so writing 0 changes
            // nothing but forces the kernel to allocate it.
            unsafe { base.add(pos).write_volatile(0) };
            pos += OS_PAGE_SIZE;
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file_from_offset(&self) -> u64 {
        self.file_from_offset
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn wrote_position(&self) -> usize {
        self.wrote.load(Ordering::Acquire)
    }

    pub fn flushed_position(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }

    pub fn is_full(&self) -> bool {
        self.wrote_position() == self.size
    }

    pub fn last_store_timestamp(&self) -> i64 {
        self.last_store_timestamp.load(Ordering::Relaxed)
    }

    /// Appends `data` at the write position; returns the position it was written at, or `None`
    /// if it does not fit.
    pub fn append(&self, data: &[u8], store_timestamp: i64) -> Option<usize> {
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let pos = self.wrote.load(Ordering::Acquire);
        let end = pos.checked_add(data.len()).filter(|end| *end <= self.size)?;
        // SAFETY: [pos, end) lies inside the mapping (`end <= size`). It is at or above `wrote`,
        // so no reader can hold a slice of it (slices stop below `wrote`), and we hold the
        // writer lock, so no other writer touches it. `data` is a separate allocation.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mmap.as_mut_ptr().add(pos), data.len()) };
        if store_timestamp > 0 {
            self.last_store_timestamp.store(store_timestamp, Ordering::Relaxed);
        }
        self.wrote.store(end, Ordering::Release);
        Some(pos)
    }

    /// Marks the segment full without writing (after an END_OF_FILE blank, or to retire it).
    pub fn mark_full(&self) {
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.wrote.store(self.size, Ordering::Release);
    }

    /// A read-only view of `[pos, pos + len)`, if it has been written.
    pub fn slice(self: &Arc<Self>, pos: usize, len: usize) -> Option<MappedSlice> {
        let end = pos.checked_add(len)?;
        (end <= self.wrote_position()).then(|| MappedSlice { file: self.clone(), pos, len })
    }

    /// Everything written from `pos` on.
    pub fn slice_from(self: &Arc<Self>, pos: usize) -> Option<MappedSlice> {
        let wrote = self.wrote_position();
        (pos <= wrote).then(|| MappedSlice { file: self.clone(), pos, len: wrote - pos })
    }

    /// Number of whole 4 KiB pages written but not yet flushed.
    pub fn dirty_pages(&self) -> usize {
        let wrote = self.wrote_position();
        if wrote == self.size && self.flushed_position() < self.size {
            return usize::MAX;
        }
        wrote / OS_PAGE_SIZE - self.flushed_position() / OS_PAGE_SIZE
    }

    /// msyncs `[flushed, wrote)` if at least `least_pages` pages are dirty (0 = anything); returns
    /// the flushed position. Blocking: call off the async workers.
    pub fn flush(&self, least_pages: usize) -> std::io::Result<usize> {
        let flushed = self.flushed_position();
        let wrote = self.wrote_position();
        if wrote == flushed || (least_pages > 0 && self.dirty_pages() < least_pages) {
            return Ok(flushed);
        }
        let start = flushed - flushed % OS_PAGE_SIZE;
        self.mmap.flush_range(start, wrote - start)?;
        self.flushed.fetch_max(wrote, Ordering::AcqRel);
        Ok(wrote)
    }

    /// Recovery: the data ends at `pos`. Everything after it is discarded (the file is cut and
    /// re-extended, so stale bytes read back as zeros) and both positions move to `pos`.
    ///
    /// Contract (what [`MappedSlice`]'s `Deref` relies on): no view of this segment exists. The
    /// caller must hold the only `Arc` of it; this is checked, and a segment in use is refused
    /// rather than rewritten under a reader.
    pub(super) fn truncate_to(self: &Arc<Self>, pos: usize) -> std::io::Result<()> {
        if Arc::strong_count(self) > 1 {
            return Err(std::io::Error::other(format!(
                "segment {} is in use: truncating it would rewrite bytes under a reader",
                self.path.display()
            )));
        }
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let pos = pos.min(self.size);
        self.wrote.store(pos, Ordering::Release);
        self.flushed.store(pos, Ordering::Release);
        if pos < self.size {
            self.file.set_len(pos as u64)?;
            self.file.set_len(self.size as u64)?;
            self.file.sync_all()?;
        }
        Ok(())
    }

    /// Last modification time of the file (retention compares it with `fileReservedTime`).
    pub fn last_modified(&self) -> std::io::Result<std::time::SystemTime> {
        self.file.metadata()?.modified()
    }
}

/// Written bytes of a segment; keeps the mapping alive.
#[derive(Clone)]
pub struct MappedSlice {
    file: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl MappedSlice {
    /// The CommitLog/ConsumeQueue offset of the first byte.
    pub fn start_offset(&self) -> u64 {
        self.file.file_from_offset + self.pos as u64
    }

    /// A zero-copy `Bytes` over the mapped range.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }

    /// A narrower view, relative to this one.
    pub fn sub(&self, from: usize, len: usize) -> Option<MappedSlice> {
        let end = from.checked_add(len)?;
        (end <= self.len).then(|| MappedSlice { file: self.file.clone(), pos: self.pos + from, len })
    }
}

impl Deref for MappedSlice {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `slice`/`sub` only build views with `pos + len <= wrote` at creation time.
        // `wrote` never moves below a handed-out view except through `truncate_to`, which runs
        // during recovery before any view exists. Bytes below `wrote` are never written again,
        // so this shared view aliases no mutable access. The `Arc` keeps the mapping alive.
        unsafe { std::slice::from_raw_parts(self.file.mmap.as_ptr().add(self.pos), self.len) }
    }
}

impl AsRef<[u8]> for MappedSlice {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// A whole file mapped for random reads and writes (IndexFile, checkpoint). Access is governed
/// by Rust's borrow rules: writing needs `&mut self`, so wrap it in a lock to share it.
pub struct MappedRegion {
    path: PathBuf,
    mmap: MmapMut,
}

impl MappedRegion {
    /// Opens `path`, creating it zero-filled with `size` bytes if it does not exist. An existing
    /// file of another size is an error.
    pub fn open_or_create(path: &Path, size: usize) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            file.set_len(size as u64)?;
            if let Some(dir) = path.parent() {
                File::open(dir)?.sync_all()?;
            }
        } else if len != size as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is {len} bytes, expected {size}", path.display()),
            ));
        }
        // SAFETY: memmap2 marks mapping unsafe because another process could change the file
        // underneath us. The store's `lock` file keeps other ferrocket processes out of this
        // directory; all access from this process goes through `&self`/`&mut self` below.
        let mmap = unsafe { MmapMut::map_mut(&file)? };
        Ok(Self { path: path.to_owned(), mmap })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// msyncs the whole region. Blocking.
    pub fn flush(&self) -> std::io::Result<()> {
        self.mmap.flush()
    }
}

impl Deref for MappedRegion {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.mmap
    }
}

impl std::ops::DerefMut for MappedRegion {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.mmap
    }
}

/// Makes the entries of directory `dir` durable (new or removed files).
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_read_flush_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let f = Arc::new(MappedFile::create(dir.path(), 4096, 8192, true).unwrap());
        assert_eq!(f.path().file_name().unwrap(), "00000000000000004096");
        assert_eq!(f.append(b"hello", 1), Some(0));
        assert_eq!(f.append(b"world", 2), Some(5));
        assert_eq!(&*f.slice(0, 10).unwrap(), b"helloworld");
        assert!(f.slice(5, 6).is_none(), "unwritten bytes must not be readable");
        assert_eq!(f.slice(5, 5).unwrap().start_offset(), 4101);
        assert_eq!(f.flush(0).unwrap(), 10);
        assert_eq!(f.append(&[0u8; 8192], 3), None);
        let bytes = f.slice_from(5).unwrap().into_bytes();
        drop(f);
        assert_eq!(&bytes[..], b"world", "slice outlives the file handle");

        let f = Arc::new(MappedFile::open(&dir.path().join(file_name(4096)), 4096, 8192).unwrap());
        assert!(f.is_full());
        f.truncate_to(10).unwrap();
        assert_eq!(f.append(b"!", 4), Some(10));
        assert!(MappedFile::open(&dir.path().join(file_name(4096)), 4096, 4096).is_err());
    }

    #[test]
    fn populating_ahead_changes_no_byte() {
        let dir = tempfile::tempdir().unwrap();
        let f = Arc::new(MappedFile::create(dir.path(), 0, 3 * OS_PAGE_SIZE, true).unwrap());
        f.append(&[9u8; 5000], 1).unwrap();
        // Unaligned, overlapping what is written, past the end, empty: all fine, nothing changes.
        for (from, len) in [(100, 10), (4000, 9000), (2 * OS_PAGE_SIZE + 1, usize::MAX), (3 * OS_PAGE_SIZE, 0), (0, 0)]
        {
            assert!(f.populate_read(from, len), "populate_read({from}, {len})");
        }
        assert_eq!(f.append(&[8u8; 100], 2), Some(5000));
        f.mark_full();
        let all = f.slice(0, 3 * OS_PAGE_SIZE).unwrap();
        assert!(all[..5000].iter().all(|b| *b == 9) && all[5000..5100].iter().all(|b| *b == 8));
        assert!(all[5100..].iter().all(|b| *b == 0));
    }

    #[test]
    fn truncate_discards_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let f = Arc::new(MappedFile::create(dir.path(), 0, 8192, false).unwrap());
        f.prefault();
        f.append(&[7u8; 6000], 1).unwrap();
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

    #[test]
    fn dirty_pages_count_whole_pages() {
        let dir = tempfile::tempdir().unwrap();
        let f = MappedFile::create(dir.path(), 0, 4 * OS_PAGE_SIZE, true).unwrap();
        f.append(&[1u8; OS_PAGE_SIZE + 10], 1).unwrap();
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
}
