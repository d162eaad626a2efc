//! IndexFiles: look messages up by key (`IndexService.java`, `IndexFile.java`, `IndexHeader.java`).
//! Owns `<root>/index/`; imports the store's mapped files and dispatch records, and `model`.
//!
//! ```text
//! <root>/index/yyyyMMddHHmmssSSS   maxIndexNum - 1 entries per file, named by local creation time
//!
//! header (40 bytes, big-endian)
//!   0 beginTimestamp:i64   8 endTimestamp:i64   16 beginPhyOffset:i64   24 endPhyOffset:i64
//!  32 hashSlotCount:i32   36 indexCount:i32 (next entry number; entry 0 is never used)
//! slots   40 + slot*4: number of the newest entry whose keyHash % slots == slot (0 = empty)
//! entries 40 + slots*4 + n*20:
//!   keyHash:i32  phyOffset:i64  timeDiffSeconds:i32 (from beginTimestamp)  prevIndex:i32 (0 = end)
//! keyHash = abs(javaHash("topic#key")), Integer.MIN_VALUE -> 0
//! ```
//!
//! Locks: `writer` serialises index building, rolling and destroy; the file list is read-locked
//! only to copy it, so a query never waits for a file to be created; each file has its own lock,
//! write-held just for the few bytes of one key. Flushes msync a second mapping of the file
//! without that lock: std's RwLock queues new readers behind a waiting writer, so a flush under
//! the lock would make queries wait for the disk.

mod file;
mod name;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use tracing::{error, info, warn};

pub use file::{key_hash, IndexFile};

use super::commit_log::record::DispatchRequest;
use super::mapped_file::MappedRegion;
use super::{StoreConfig, StoreError};
use crate::model::message::sys_flag;

pub const HEADER_SIZE: usize = 40;
pub const HASH_SLOT_SIZE: usize = 4;
pub const ENTRY_SIZE: usize = 20;
/// `MessageStoreConfig.maxMsgsNumBatch` (default 64): the most offsets one query returns.
/// StoreConfig has no such key yet, so the default is fixed here.
pub const MAX_MSGS_NUM_BATCH: usize = 64;
/// `IndexService.MAX_TRY_IDX_CREATE`: attempts, 1 s apart, to create a file.
const MAX_TRY_CREATE: usize = 3;

/// What `queryOffset` returns: matching CommitLog offsets (newest first, possibly including hash
/// collisions) and where the newest file ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryOffsetResult {
    pub phy_offsets: Vec<i64>,
    pub index_last_update_timestamp: i64,
    pub index_last_update_phyoffset: i64,
}

/// One loaded file.
struct Shared {
    file: RwLock<IndexFile>,
    /// The same file mapped again, only to msync it (the page cache is shared by both mappings).
    syncer: MappedRegion,
}

impl Shared {
    fn new(file: IndexFile) -> Result<Arc<Self>, StoreError> {
        let path = file.path().to_owned();
        let size = IndexFile::file_size(file.hash_slot_num(), file.index_num());
        let syncer = MappedRegion::open_or_create(&path, size)
            .map_err(StoreError::io(format!("map index file {}", path.display())))?;
        Ok(Arc::new(Self { file: RwLock::new(file), syncer }))
    }

    fn path(&self) -> &Path {
        self.syncer.path()
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.syncer.flush().map_err(StoreError::io(format!("flush index file {}", self.path().display())))
    }
}

type SharedFile = Arc<Shared>;

/// The directory of IndexFiles, oldest first; only the last one is written.
pub struct IndexService {
    dir: PathBuf,
    hash_slot_num: usize,
    index_num: usize,
    enabled: bool,
    files: RwLock<Vec<SharedFile>>,
    writer: Mutex<()>,
    /// Files that filled up and have not been flushed since.
    unflushed_full: Mutex<Vec<SharedFile>>,
    last_full_end_timestamp: AtomicI64,
}

impl IndexService {
    /// Opens every file in the index directory, ordered by name. After an abnormal exit
    /// (`!last_exit_ok`), files with entries newer than `index_msg_timestamp`
    /// (checkpoint.indexMsgTimestamp) may be torn: they are deleted, and recovery re-dispatches
    /// what they held. Names that are not numbers are skipped, as Java does.
    pub fn load(config: &StoreConfig, last_exit_ok: bool, index_msg_timestamp: i64) -> Result<Self, StoreError> {
        let (hash_slot_num, index_num) = (config.max_hash_slot_num, config.max_index_num);
        check_dimensions(hash_slot_num, index_num)?;
        let dir = config.index_dir();
        let mut files = Vec::new();
        for path in list_files(&dir)? {
            let file = IndexFile::open(&path, hash_slot_num, index_num)?;
            if !last_exit_ok && file.end_timestamp() > index_msg_timestamp {
                drop(file);
                std::fs::remove_file(&path).map_err(StoreError::io(format!("delete {}", path.display())))?;
                info!(file = %path.display(), index_msg_timestamp, "deleted index file written after the checkpoint");
                continue;
            }
            info!(file = %path.display(), "loaded index file");
            files.push(Shared::new(file)?);
        }
        Ok(Self {
            dir,
            hash_slot_num,
            index_num,
            enabled: config.message_index_enable,
            files: RwLock::new(files),
            writer: Mutex::new(()),
            unflushed_full: Mutex::new(Vec::new()),
            last_full_end_timestamp: AtomicI64::new(0),
        })
    }

    /// `buildIndex`: indexes `topic#UNIQ_KEY`, then `topic#k` for each key of KEYS. Skips
    /// everything when `messageIndexEnable` is off, ROLLBACK records, and records below the
    /// newest file's endPhyOffset, and the record at it (already indexed: recovery re-dispatches). Like Java, it first
    /// makes sure a writable file exists, even for a record with no keys.
    pub fn build_index(&self, req: &DispatchRequest) -> Result<(), StoreError> {
        if !self.enabled {
            return Ok(());
        }
        let _writer = lock(&self.writer);
        let mut file = self.writable_file()?;
        // Java skips only offsets below endPhyOffset; the record at it is the last one indexed
        // too (unless the file is still empty), and re-dispatching it (every restart
        // re-dispatches from the checkpoint) must not add its keys again.
        let (end, fresh) = {
            let f = read(&file);
            (f.end_phy_offset(), f.index_count() <= 1 && f.end_phy_offset() == 0)
        };
        if req.commit_log_offset < end
            || (req.commit_log_offset == end && !fresh)
            || sys_flag::transaction_type(req.sys_flag) == sys_flag::TRANSACTION_ROLLBACK
        {
            return Ok(());
        }
        // `topic#key`, one buffer for all of the record's keys.
        let mut key = String::with_capacity(req.topic.len() + 40);
        key.push_str(&req.topic);
        key.push('#');
        let prefix = key.len();
        for k in req.uniq_key().into_iter().chain(req.keys().unwrap_or("").split(' ').filter(|k| !k.is_empty())) {
            key.truncate(prefix);
            key.push_str(k);
            file = self.put_key(file, &key, req)?;
        }
        Ok(())
    }

    /// `queryOffset`: searches the files newest first for `topic#key` stored within
    /// `[begin, end]` (ms), collecting at most `min(max_num, 64)` offsets.
    pub fn query_offsets(&self, topic: &str, key: &str, max_num: usize, begin: i64, end: i64) -> QueryOffsetResult {
        let max_num = max_num.min(MAX_MSGS_NUM_BATCH);
        let key = format!("{topic}#{key}");
        let files = read_list(&self.files).clone();
        let mut result = QueryOffsetResult::default();
        for (i, shared) in files.iter().enumerate().rev() {
            let file = read(shared);
            if i + 1 == files.len() {
                result.index_last_update_timestamp = file.end_timestamp();
                result.index_last_update_phyoffset = file.end_phy_offset();
            }
            if file.is_time_matched(begin, end) {
                file.select_phy_offsets(&key, max_num, begin, end, &mut result.phy_offsets);
            }
            if file.begin_timestamp() < begin || result.phy_offsets.len() >= max_num {
                break;
            }
        }
        result
    }

    /// Flushes the files that filled up since the last call (Java flushes each on a thread
    /// started when it fills). Afterwards [`Self::last_full_end_timestamp`] is safe to store as
    /// checkpoint.indexMsgTimestamp. Blocking; cheap when nothing filled up.
    pub fn flush_full_files(&self) -> Result<(), StoreError> {
        let pending = std::mem::take(&mut *lock(&self.unflushed_full));
        for (i, shared) in pending.iter().enumerate() {
            if let Err(e) = shared.flush() {
                lock(&self.unflushed_full).extend(pending.iter().skip(i).cloned());
                return Err(e);
            }
            self.last_full_end_timestamp.fetch_max(read(shared).end_timestamp(), Ordering::AcqRel);
        }
        Ok(())
    }

    /// Flushes every file, full ones first (shutdown, thorough flushes). Failures are logged:
    /// a file that could not be flushed is written again by recovery after a crash.
    pub fn flush(&self) {
        if let Err(e) = self.flush_full_files() {
            error!("index flush failed: {e}");
        }
        let files = read_list(&self.files).clone();
        for shared in &files {
            if let Err(e) = shared.flush() {
                error!("index flush failed: {e}");
            }
        }
    }

    /// The endTimestamp of the newest file that filled up and was flushed by this process, the
    /// value for checkpoint.indexMsgTimestamp; 0 if none.
    pub fn last_full_end_timestamp(&self) -> i64 {
        self.last_full_end_timestamp.load(Ordering::Acquire)
    }

    /// `deleteExpiredFile`: deletes the oldest files, never the newest, while their endPhyOffset
    /// lies below the CommitLog's min offset.
    pub fn delete_expired(&self, min_commit_log_offset: i64) -> Result<(), StoreError> {
        let first_expired =
            read_list(&self.files).first().is_some_and(|f| read(f).end_phy_offset() < min_commit_log_offset);
        if !first_expired {
            return Ok(());
        }
        let expired: Vec<SharedFile> = {
            let mut files = write_list(&self.files);
            let deletable = files.len().saturating_sub(1);
            let n =
                files.iter().take(deletable).take_while(|f| read(f).end_phy_offset() < min_commit_log_offset).count();
            files.drain(..n).collect()
        };
        remove_files(&expired)
    }

    /// Deletes every file (the CommitLog is empty, or the store is destroyed).
    pub fn destroy(&self) -> Result<(), StoreError> {
        let _writer = lock(&self.writer);
        lock(&self.unflushed_full).clear();
        let all: Vec<SharedFile> = write_list(&self.files).drain(..).collect();
        remove_files(&all)
    }

    /// Not in Java, which leaves such entries behind: after recovery cut the CommitLog at `end`,
    /// drops the newest files holding entries at or past it. Those entries would point into data
    /// that is gone or about to be overwritten, and their endPhyOffset would make `build_index`
    /// skip the new records below it. Returns the CommitLog offset to re-index from (the first
    /// dropped file's beginPhyOffset, a record start), or None if nothing was dropped.
    pub fn truncate_beyond(&self, end: i64) -> Result<Option<i64>, StoreError> {
        let _writer = lock(&self.writer);
        let dropped: Vec<SharedFile> = {
            let mut files = write_list(&self.files);
            let keep = files.iter().take_while(|f| read(f).end_phy_offset() < end).count();
            files.drain(keep..).collect()
        };
        let Some(first) = dropped.first() else { return Ok(None) };
        let from = read(first).begin_phy_offset();
        lock(&self.unflushed_full).retain(|f| !dropped.iter().any(|d| Arc::ptr_eq(d, f)));
        warn!(end, from, files = dropped.len(), "dropping index files that reach past the end of the CommitLog");
        remove_files(&dropped)?;
        Ok(Some(from))
    }

    /// `getTotalSize`: bytes of all files.
    pub fn total_size(&self) -> u64 {
        read_list(&self.files).len() as u64 * IndexFile::file_size(self.hash_slot_num, self.index_num) as u64
    }

    /// The files, oldest first.
    pub fn file_paths(&self) -> Vec<PathBuf> {
        read_list(&self.files).iter().map(|f| f.path().to_owned()).collect()
    }

    /// Puts `key` into `file`, rolling to a new file if it is full. Caller holds `writer`.
    fn put_key(&self, file: SharedFile, key: &str, req: &DispatchRequest) -> Result<SharedFile, StoreError> {
        if write(&file).put_key(key, req.commit_log_offset, req.store_timestamp) {
            return Ok(file);
        }
        warn!(file = %file.path().display(), "index file is full, creating another one");
        let fresh = self.writable_file()?;
        if !write(&fresh).put_key(key, req.commit_log_offset, req.store_timestamp) {
            let err = std::io::Error::other("a new index file refused its first key");
            return Err(StoreError::io(format!("index file {}", fresh.path().display()))(err));
        }
        Ok(fresh)
    }

    /// `getAndCreateLastIndexFile`: the newest file if it has room, else a new one that starts
    /// where the newest ended. Caller holds `writer`.
    fn writable_file(&self) -> Result<SharedFile, StoreError> {
        let last = read_list(&self.files).last().cloned();
        let (prev_end_phy, prev_end_ts, last_name) = match &last {
            Some(shared) => {
                let file = read(shared);
                if !file.is_write_full() {
                    return Ok(shared.clone());
                }
                let name = shared.path().file_name().map(|n| n.to_string_lossy().into_owned());
                (file.end_phy_offset(), file.end_timestamp(), name)
            }
            None => (0, 0, None),
        };
        let created = Shared::new(self.create_file(last_name.as_deref(), prev_end_phy, prev_end_ts)?)?;
        write_list(&self.files).push(created.clone());
        if let Some(full) = last {
            lock(&self.unflushed_full).push(full);
        }
        Ok(created)
    }

    fn create_file(
        &self,
        last_name: Option<&str>,
        prev_end_phy: i64,
        prev_end_ts: i64,
    ) -> Result<IndexFile, StoreError> {
        let mut attempt = 1;
        loop {
            let path = self.dir.join(name::next_name(last_name));
            match IndexFile::create(&path, self.hash_slot_num, self.index_num, prev_end_phy, prev_end_ts) {
                Ok(file) => {
                    info!(file = %path.display(), "created index file");
                    return Ok(file);
                }
                Err(e) if attempt < MAX_TRY_CREATE => warn!(attempt, "cannot create index file: {e}"),
                Err(e) => {
                    error!("cannot create index file after {MAX_TRY_CREATE} attempts, index building stops: {e}");
                    return Err(e);
                }
            }
            attempt += 1;
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// Java takes the sizes as ints; a file must hold at least one entry after the unused entry 0.
fn check_dimensions(hash_slot_num: usize, index_num: usize) -> Result<(), StoreError> {
    let max = i32::MAX as usize;
    let ok = (1..=max).contains(&hash_slot_num)
        && (2..=max).contains(&index_num)
        && hash_slot_num.checked_mul(HASH_SLOT_SIZE).zip(index_num.checked_mul(ENTRY_SIZE)).is_some_and(|(s, e)| {
            s.checked_add(e).and_then(|b| b.checked_add(HEADER_SIZE)).is_some_and(|total| total <= max)
        });
    if ok {
        return Ok(());
    }
    let msg =
        format!("maxHashSlotNum={hash_slot_num} maxIndexNum={index_num}: need slots >= 1, entries >= 2, file < 2 GiB");
    Err(StoreError::io("index settings")(std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)))
}

/// Regular files of `dir` whose names parse as a long (`Long.parseLong` in `DefaultMappedFile`),
/// sorted by name as `Arrays.sort(File[])` does. A missing directory has none.
fn list_files(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(format!("list {}", dir.display()))(e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(StoreError::io(format!("list {}", dir.display())))?;
        let path = entry.path();
        let numeric = entry.file_name().to_str().is_some_and(|n| n.parse::<i64>().is_ok());
        if numeric && path.is_file() {
            paths.push(path);
        } else {
            warn!(file = %path.display(), "skipping a non-index entry in the index directory");
        }
    }
    paths.sort();
    Ok(paths)
}

/// Unlinks each file, going on past failures; returns the first. Readers still holding a file
/// keep its mapping until they drop it.
fn remove_files(files: &[SharedFile]) -> Result<(), StoreError> {
    let mut first_err = None;
    for shared in files {
        let path = shared.path();
        match std::fs::remove_file(path) {
            Ok(()) => info!(file = %path.display(), "deleted index file"),
            Err(e) => {
                error!(file = %path.display(), "cannot delete index file: {e}");
                first_err.get_or_insert(StoreError::io(format!("delete {}", path.display()))(e));
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

// A panic while holding a lock leaves the mapped bytes as consistent as Java's unlocked writes
// would be, so poisoned locks are entered anyway.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(f: &SharedFile) -> RwLockReadGuard<'_, IndexFile> {
    f.file.read().unwrap_or_else(|e| e.into_inner())
}

fn write(f: &SharedFile) -> RwLockWriteGuard<'_, IndexFile> {
    f.file.write().unwrap_or_else(|e| e.into_inner())
}

fn read_list(l: &RwLock<Vec<SharedFile>>) -> RwLockReadGuard<'_, Vec<SharedFile>> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write_list(l: &RwLock<Vec<SharedFile>>) -> RwLockWriteGuard<'_, Vec<SharedFile>> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
