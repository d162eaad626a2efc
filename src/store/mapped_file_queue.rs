//! A directory of equal-size segments named by their start offset (`MappedFileQueue.java`).
//!
//! ```text
//! 00000000000000000000  00000000001073741824  00000000002147483648 ...
//! [ full               ][ full               ][ wrote … | free     ]
//! ```
//!
//! With preallocation on (the CommitLog), creating segment N starts building (and, with
//! `warmMapedFileEnable`, pre-faulting) segment N+1 on a background thread, so a roll never pays
//! for file creation. Disk blocks are given either to the whole segment when it is created, or
//! (`commitLogAllocateAheadSize` below the segment size) a chunk at a time just ahead of the
//! write end ([`MappedFileQueue::allocate_ahead_of_write`], run by the prefault thread):
//!
//! ```text
//! segment N   ....written....|..allocated (ahead)..|....sparse....
//!                          write end        end + ahead, rounded up to a chunk (ahead / 4)
//! segment N+1 sparse until the window ahead reaches it
//! ```
//!
//! May import: nothing outside `store/` (the area's rule: docs/architecture.md).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use tracing::{info, warn};

use super::mapped_file::MappedFile;
use super::StoreError;

type Prepared = (u64, JoinHandle<std::io::Result<MappedFile>>);

pub struct MappedFileQueue {
    dir: PathBuf,
    file_size: usize,
    files: RwLock<Vec<Arc<MappedFile>>>,
    flushed_where: AtomicU64,
    preallocate: bool,
    /// Populate new segments in the background (`warmMapedFileEnable`).
    warm: bool,
    /// Journal segments: bytes given disk blocks ahead of the write end; the file size or more
    /// allocates each whole segment when it is created, 0 none (sparse, as Java's).
    allocate_ahead: usize,
    /// A segment was created whose directory entry is not yet durable: the next flush syncs
    /// the directory first (ConsumeQueue segments are created on the dispatch path).
    dir_unsynced: std::sync::atomic::AtomicBool,
    /// Segments are advised of random reads (`dataReadAheadEnable=false`), new ones too.
    random_reads: std::sync::atomic::AtomicBool,
    next: Mutex<Option<Prepared>>,
}

impl MappedFileQueue {
    /// Loads the segments in `dir` (created if missing). A zero-length last file is deleted; any
    /// other size mismatch is an error naming the file.
    pub fn load(dir: &Path, file_size: usize, preallocate: bool) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(StoreError::io(format!("create {}", dir.display())))?;
        let mut names: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
            .map_err(StoreError::io(format!("list {}", dir.display())))?
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name.len() == 20).then(|| name.parse::<u64>().ok().map(|o| (o, e.path()))).flatten()
            })
            .collect();
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        let count = names.len();
        for (i, (offset, path)) in names.into_iter().enumerate() {
            let len = std::fs::metadata(&path).map_err(StoreError::io(format!("stat {}", path.display())))?.len();
            if len == 0 && i + 1 == count {
                warn!(file = %path.display(), "deleting zero-length last segment");
                std::fs::remove_file(&path).map_err(StoreError::io(format!("delete {}", path.display())))?;
                continue;
            }
            let f = MappedFile::open(&path, offset, file_size, preallocate)
                .map_err(StoreError::io(format!("open {}", path.display())))?;
            files.push(Arc::new(f));
        }
        Ok(Self {
            dir: dir.to_owned(),
            file_size,
            files: RwLock::new(files),
            flushed_where: AtomicU64::new(0),
            preallocate,
            warm: false,
            allocate_ahead: usize::MAX,
            dir_unsynced: std::sync::atomic::AtomicBool::new(false),
            random_reads: std::sync::atomic::AtomicBool::new(false),
            next: Mutex::new(None),
        })
    }

    /// Makes every new segment resident in the background before (or, for the first one,
    /// while) it is written, so appends take no page faults (`warmMapedFileEnable`).
    pub fn warm(mut self, on: bool) -> Self {
        self.warm = on;
        self
    }

    /// How many bytes ahead of the write end journal segments get their disk blocks
    /// (`commitLogAllocateAheadSize`; the default allocates each whole segment at creation).
    pub fn allocate_ahead(mut self, bytes: usize) -> Self {
        self.allocate_ahead = bytes;
        self
    }

    /// Bytes a new journal segment gets its blocks for when it is created.
    fn allocate_at_creation(&self) -> usize {
        if self.allocate_ahead >= self.file_size {
            self.file_size
        } else {
            0
        }
    }

    /// Chunked allocation: gives the segments from the write end up to `allocate_ahead` bytes
    /// past it their disk blocks, a chunk (a quarter of the window) at a time, so a call while
    /// the write end stays inside one chunk allocates nothing. Returns the bytes allocated. For
    /// the prefault thread: a `fallocate` costs the writer nothing there.
    pub fn allocate_ahead_of_write(&self) -> std::io::Result<u64> {
        let Some((ahead, chunk)) = self.chunking() else { return Ok(0) };
        let end = self.max_offset();
        let target = end.saturating_add(ahead).next_multiple_of(chunk);
        let (mut at, mut done) = (end, 0u64);
        while at < target {
            // None past the last segment: the next one gets its blocks once it is in use.
            let Some(f) = self.find(at) else { break };
            let from = f.file_from_offset();
            done += f.allocate_to((target.min(from + f.size() as u64) - from) as usize)? as u64;
            at = from + f.size() as u64;
        }
        Ok(done)
    }

    /// `(window, chunk)` when journal segments get their blocks ahead of the write end.
    fn chunking(&self) -> Option<(u64, u64)> {
        let ahead = self.allocate_ahead as u64;
        let chunk = (ahead / 4).max(1).next_multiple_of(super::mapped_file::OS_PAGE_SIZE as u64);
        (self.preallocate && ahead > 0 && self.allocate_ahead < self.file_size).then_some((ahead, chunk))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn file_size(&self) -> usize {
        self.file_size
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<MappedFile>>> {
        self.files.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<MappedFile>>> {
        self.files.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn files(&self) -> Vec<Arc<MappedFile>> {
        self.read().clone()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    pub fn first(&self) -> Option<Arc<MappedFile>> {
        self.read().first().cloned()
    }

    pub fn last(&self) -> Option<Arc<MappedFile>> {
        self.read().last().cloned()
    }

    /// The segment holding `offset`.
    pub fn find(&self, offset: u64) -> Option<Arc<MappedFile>> {
        let files = self.read();
        let first = files.first()?.file_from_offset();
        let size = self.file_size as u64;
        let idx = usize::try_from(offset.checked_sub(first)? / size).ok()?;
        match files.get(idx) {
            Some(f) if f.file_from_offset() <= offset && offset < f.file_from_offset() + size => Some(f.clone()),
            _ => files.iter().find(|f| f.file_from_offset() <= offset && offset < f.file_from_offset() + size).cloned(),
        }
    }

    /// First offset still on disk.
    pub fn min_offset(&self) -> u64 {
        self.first().map_or(0, |f| f.file_from_offset())
    }

    /// End of the written data.
    pub fn max_offset(&self) -> u64 {
        self.last().map_or(0, |f| f.file_from_offset() + f.wrote_position() as u64)
    }

    pub fn flushed_where(&self) -> u64 {
        self.flushed_where.load(Ordering::Acquire)
    }

    pub fn set_flushed_where(&self, offset: u64) {
        self.flushed_where.store(offset, Ordering::Release);
    }

    /// The segment to write into: the last one unless it is full, else a new one starting where
    /// the last ends (or at `start_if_empty`).
    pub fn last_for_write(&self, start_if_empty: u64) -> Result<Arc<MappedFile>, StoreError> {
        let start = match self.last() {
            Some(f) if !f.is_full() => return Ok(f),
            Some(f) => f.file_from_offset() + self.file_size as u64,
            None => start_if_empty - start_if_empty % self.file_size as u64,
        };
        let (file, prepared) = self.take_prepared(start)?;
        let file = Arc::new(file);
        if self.random_reads.load(Ordering::Acquire) {
            advise(&file, true);
        }
        self.write().push(file.clone());
        if self.preallocate {
            if self.warm && !prepared {
                // Created just now (the first segment of a store): warm it in the background
                // while the writer starts using it, so its page faults leave the put path soon.
                let f = file.clone();
                let _ = std::thread::Builder::new().name("ferrocket-populate".into()).spawn(move || {
                    f.prefault();
                });
            }
            self.prepare(start + self.file_size as u64);
        }
        Ok(file)
    }

    /// Advises every segment, and the ones to come, of random reads (no kernel read-ahead) or
    /// back to the default (`dataReadAheadEnable`, SET_COMMITLOG_READ_MODE).
    pub fn set_random_reads(&self, random: bool) {
        self.random_reads.store(random, Ordering::Release);
        for f in self.files() {
            advise(&f, random);
        }
    }

    /// The segment starting at `start`, and whether the preallocation thread made it.
    fn take_prepared(&self, start: u64) -> Result<(MappedFile, bool), StoreError> {
        let prepared = self.next.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((offset, handle)) = prepared {
            match handle.join() {
                Ok(Ok(file)) if offset == start => return Ok((file, true)),
                Ok(Ok(file)) => {
                    // Not the one we need (the queue was truncated); discard it.
                    let _ = std::fs::remove_file(file.path());
                }
                Ok(Err(e)) => warn!(error = %e, "preallocating a segment failed; creating it now"),
                Err(_) => warn!("preallocation thread panicked; creating the segment now"),
            }
        }
        let journal = self.preallocate;
        let file = MappedFile::create(&self.dir, start, self.file_size, journal, self.allocate_at_creation())
            .map_err(StoreError::io(format!("create segment {} in {}", start, self.dir.display())))?;
        if !journal {
            self.dir_unsynced.store(true, Ordering::Release);
        }
        Ok((file, false))
    }

    fn prepare(&self, start: u64) {
        let (dir, size, warm, allocate) = (self.dir.clone(), self.file_size, self.warm, self.allocate_at_creation());
        let spawned = std::thread::Builder::new().name("ferrocket-prealloc".into()).spawn(move || {
            let f = MappedFile::create(&dir, start, size, true, allocate)?;
            if warm {
                f.prefault();
            }
            Ok(f)
        });
        match spawned {
            Ok(h) => *self.next.lock().unwrap_or_else(|e| e.into_inner()) = Some((start, h)),
            Err(e) => warn!(error = %e, "cannot start the preallocation thread"),
        }
    }

    /// Flushes from `flushed_where` up to the written end, segment by segment, if at least
    /// `least_pages` pages are dirty (0 = anything). Returns the new flushed offset. Blocking.
    pub fn flush(&self, least_pages: usize) -> std::io::Result<u64> {
        if self.dir_unsynced.swap(false, Ordering::AcqRel) {
            match super::mapped_file::sync_dir(&self.dir) {
                Ok(()) => {}
                // Destroyed (a deleted topic's queue: its segments go first, then its directory)
                // while this flush ran: nothing is left to make durable.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.read().is_empty() => {}
                Err(e) => {
                    self.dir_unsynced.store(true, Ordering::Release);
                    return Err(e);
                }
            }
        }
        let mut where_ = self.flushed_where();
        while let Some(f) = self.find(where_) {
            let flushed = f.flush(least_pages)?;
            let reached = f.file_from_offset() + flushed as u64;
            if reached > where_ {
                where_ = reached;
                self.flushed_where.fetch_max(reached, Ordering::AcqRel);
            }
            if !(f.is_full() && flushed == f.size()) {
                break;
            }
        }
        Ok(self.flushed_where())
    }

    /// Recovery: data ends at `offset`. The segment holding it is cut there; later ones are
    /// deleted. Only while no reader holds a view of the segment to cut (refused otherwise).
    pub(super) fn truncate_dirty(&self, offset: u64) -> Result<(), StoreError> {
        let mut files = self.write();
        let mut keep = Vec::with_capacity(files.len());
        for f in files.drain(..) {
            let from = f.file_from_offset();
            if from + self.file_size as u64 <= offset {
                keep.push(f);
            } else if from <= offset {
                f.truncate_to((offset - from) as usize)
                    .map_err(StoreError::io(format!("truncate {}", f.path().display())))?;
                keep.push(f);
            } else {
                info!(file = %f.path().display(), "deleting segment past the end of valid data");
                std::fs::remove_file(f.path()).map_err(StoreError::io(format!("delete {}", f.path().display())))?;
            }
        }
        *files = keep;
        drop(files);
        self.flushed_where.fetch_min(offset, Ordering::AcqRel);
        Ok(())
    }

    /// Removes the first `n` segments from the queue and deletes their files. Readers holding
    /// slices keep the mappings until they let go.
    pub fn delete_first(&self, n: usize) -> Result<usize, StoreError> {
        let removed: Vec<_> = {
            let mut files = self.write();
            let n = n.min(files.len());
            files.drain(..n).collect()
        };
        for f in &removed {
            std::fs::remove_file(f.path()).map_err(StoreError::io(format!("delete {}", f.path().display())))?;
        }
        Ok(removed.len())
    }

    /// Deletes every segment and the directory's files (used when the queue is rebuilt).
    pub fn destroy(&self) -> Result<(), StoreError> {
        let n = self.read().len();
        self.delete_first(n)?;
        self.flushed_where.store(0, Ordering::Release);
        self.dir_unsynced.store(false, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// A failed advice costs read-ahead behaviour, never data: logged, not returned.
fn advise(f: &MappedFile, random: bool) {
    if let Err(e) = f.advise_random_reads(random) {
        warn!(file = %f.path().display(), error = %e, "madvise of a CommitLog segment failed");
    }
}
