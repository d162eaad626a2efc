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
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use memmap2::{MmapMut, MmapOptions, MmapRaw};

/// `DefaultMappedFile.OS_PAGE_SIZE`: flush arithmetic counts 4 KiB pages.
pub const OS_PAGE_SIZE: usize = 4096;

/// A segment file mapped in full.
pub struct MappedFile {
    path: PathBuf,
    file_from_offset: u64,
    size: usize,
    file: File,
    mmap: MmapRaw,
    /// A journal segment (the CommitLog's) is appended to with `pwrite` and mapped read-only;
    /// any other is written through its mapping (see `append`).
    journal: bool,
    wrote: AtomicUsize,
    flushed: AtomicUsize,
    /// Blocks are allocated (`fallocate`) below this position or below `wrote`, whichever is
    /// higher ([`Self::allocate_to`]); above both, the file may be sparse.
    allocated: AtomicUsize,
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
    /// Creates a zero-filled, sparse segment of `size` bytes and maps it. A `journal` segment (the
    /// CommitLog's) has its directory entry made durable before it is used, and its first
    /// `allocate` bytes given their blocks (`fallocate`; the rest later, [`Self::allocate_to`]);
    /// any other's caller syncs the directory later ([`sync_dir`]), so that creating it costs no
    /// disk wait on the path that needs it.
    pub fn create(
        dir: &Path,
        file_from_offset: u64,
        size: usize,
        journal: bool,
        allocate: usize,
    ) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(file_name(file_from_offset));
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        file.set_len(size as u64)?;
        if journal {
            // A crash must not lose the file: its entry is durable before any write is acknowledged.
            sync_dir(dir)?;
        }
        let f = Self::map(path, file, file_from_offset, size, 0, journal)?;
        if journal && allocate > 0 {
            // Where fallocate is unsupported the file stays sparse: zeros either way.
            if let Err(e) = f.allocate_to(allocate) {
                tracing::debug!(error = %e, file = %f.path.display(), "segment stays sparse");
            }
        }
        Ok(f)
    }

    /// Gives the segment its disk blocks (`fallocate`, zeros) from where they end, or from the
    /// write position if that is higher, up to `end` (clipped to the file); returns the bytes
    /// newly allocated. A block allocated ahead makes a later write cheaper: the first write to
    /// a page of a sparse file allocates its block then, on the write path (on ext4 ~30x more
    /// CPU through a mapping: 10 s vs 0.35 s per GiB measured here). One caller at a time (the
    /// prefault thread, or `create` before the segment is shared).
    pub fn allocate_to(&self, end: usize) -> std::io::Result<usize> {
        let end = end.min(self.size);
        let from = self.allocated.load(Ordering::Acquire).max(self.wrote_position());
        if from >= end {
            return Ok(0);
        }
        rustix::fs::fallocate(&self.file, rustix::fs::FallocateFlags::KEEP_SIZE, from as u64, (end - from) as u64)?;
        self.allocated.fetch_max(end, Ordering::AcqRel);
        Ok(end - from)
    }

    /// Bytes of disk the segment holds beyond what is written: its blocks (`st_blocks`, what
    /// the filesystem really holds, whoever allocated it) less the written pages, which all
    /// have theirs (a write allocates what it covers). `SEEK_DATA` cannot tell: ext4 reports
    /// fallocated, unwritten extents as holes.
    pub fn reserved_unwritten(&self) -> std::io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        let on_disk = self.file.metadata()?.blocks().saturating_mul(512);
        Ok(on_disk.saturating_sub((self.wrote_position() as u64).next_multiple_of(OS_PAGE_SIZE as u64)))
    }

    /// Opens an existing segment, which must be exactly `size` bytes. Positions start at the end;
    /// recovery moves them back to the real end of data. `journal` as for [`Self::create`].
    pub fn open(path: &Path, file_from_offset: u64, size: usize, journal: bool) -> std::io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let len = file.metadata()?.len();
        if len != size as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is {len} bytes, expected {size} (check the configured file size)", path.display()),
            ));
        }
        Self::map(path.to_owned(), file, file_from_offset, size, size, journal)
    }

    fn map(path: PathBuf, file: File, from: u64, size: usize, pos: usize, journal: bool) -> std::io::Result<Self> {
        // A journal is mapped read-only: its appends go in with `pwrite`, so writeback never has
        // to write-protect our page table entries again.
        let mmap = if journal { MmapOptions::new().map_raw_read_only(&file)? } else { MmapRaw::map_raw(&file)? };
        Ok(Self {
            path,
            file_from_offset: from,
            size,
            file,
            mmap,
            journal,
            wrote: AtomicUsize::new(pos),
            flushed: AtomicUsize::new(pos),
            allocated: AtomicUsize::new(0),
            last_store_timestamp: AtomicI64::new(0),
            writer: Mutex::new(()),
        })
    }

    /// Brings `len` bytes from `from` (clipped to the file) into the page cache with
    /// `posix_fadvise(POSIX_FADV_WILLNEED)`: their pages are allocated and zero-filled (or read)
    /// now, by the caller, rather than by a later append. Changes no byte.
    ///
    /// Not `MADV_POPULATE_*` through the mapping: mapping faults allocate large folios (up to
    /// 2 MiB, PMD-mapped), and ext4 writes back a dirty large folio whole, so every SYNC_FLUSH
    /// msync rewrote megabytes. Readahead allocates single pages. The kernel caps one call at
    /// the device's readahead window, so this asks in steps of `STEP`.
    pub fn readahead(&self, from: usize, len: usize) -> std::io::Result<()> {
        /// The smallest usual readahead window (`read_ahead_kb` = 128).
        const STEP: usize = 128 << 10;
        let end = from.saturating_add(len).min(self.size);
        let mut pos = from;
        while pos < end {
            let step = STEP.min(end - pos);
            let n = std::num::NonZeroU64::new(step as u64);
            rustix::fs::fadvise(&self.file, pos as u64, n, rustix::fs::Advice::WillNeed)?;
            pos += step;
        }
        Ok(())
    }

    /// `madvise`: random reads (no read-ahead) or back to the kernel's default
    /// (`scanFileAndSetReadMode`, MADV_RANDOM / MADV_NORMAL).
    pub fn advise_random_reads(&self, random: bool) -> std::io::Result<()> {
        self.mmap.advise(if random { memmap2::Advice::Random } else { memmap2::Advice::Normal })
    }

    /// Brings every page from the write position on into the page cache (`warmMappedFile`), so
    /// the first appends do not allocate pages. Call before the file is handed to a writer.
    pub fn prefault(&self) {
        let from = self.wrote.load(Ordering::Acquire);
        if let Err(e) = self.readahead(from, self.size) {
            tracing::warn!(error = %e, file = %self.path.display(), "cannot warm the segment");
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

    /// Appends `data` at the write position; returns the position it was written at, `Ok(None)`
    /// if it does not fit, or the error of the write.
    ///
    /// A journal segment is written with `pwrite`, not through the mapping: a store into a
    /// shared writable mapping makes every flush write-protect the page again (a TLB shootdown
    /// on each CPU the process runs on) and fault it writable on the next append, and ext4 then
    /// writes back the whole (large) folio (measured under SYNC_FLUSH: 10 GiB written for
    /// 370 MB of messages). `pwrite` dirties only the blocks written. Readers still read through
    /// the mapping; the page cache is the same. Other segments (ConsumeQueue: 20 bytes per
    /// message, flushed once a second) keep the cheaper copy into the mapping.
    pub fn append(&self, data: &[u8], store_timestamp: i64) -> std::io::Result<Option<usize>> {
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let pos = self.wrote.load(Ordering::Acquire);
        let Some(end) = pos.checked_add(data.len()).filter(|end| *end <= self.size) else { return Ok(None) };
        if self.journal {
            use std::os::unix::fs::FileExt;
            // [pos, end) lies inside the file and at or above `wrote`: no reader looks at it
            // (slices stop below `wrote`) and we hold the writer lock.
            self.file.write_all_at(data, pos as u64)?;
        } else {
            // SAFETY: [pos, end) lies inside the mapping (`end <= size`), which is writable for
            // a non-journal segment. It is at or above `wrote`, so no reader can hold a slice of
            // it (slices stop below `wrote`), and we hold the writer lock, so no other writer
            // touches it. `data` is a separate allocation.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mmap.as_mut_ptr().add(pos), data.len()) };
        }
        if store_timestamp > 0 {
            self.last_store_timestamp.store(store_timestamp, Ordering::Relaxed);
        }
        self.wrote.store(end, Ordering::Release);
        Ok(Some(pos))
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

    /// Recovery: the data ends at `pos`. Everything after it is discarded (a hole is punched
    /// there, so stale bytes read back as zeros and the file never changes size) and both
    /// positions move to `pos`.
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
        // Cutting the file frees the blocks past `pos`.
        self.allocated.fetch_min(pos, Ordering::AcqRel);
        if pos < self.size {
            // Zero the tail in place (a hole reads back as zeros): the file keeps its size at
            // every instant, so a kill during recovery never leaves a segment shorter than the
            // configured size, which the next start would refuse to open. Where holes cannot
            // be punched, cut and re-extend (that window stays).
            let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
            if rustix::fs::fallocate(&self.file, flags, pos as u64, (self.size - pos) as u64).is_err() {
                self.file.set_len(pos as u64)?;
                self.file.set_len(self.size as u64)?;
            }
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
mod tests;
