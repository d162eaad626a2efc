//! One compacted queue on disk: the generation in force (a log of records, byte for byte as the
//! CommitLog held them, and a sparse index over it) and the state file that names it.
//!
//! ```text
//! <root>/compacted/<topic>/<queueId>/state                 generation=N base=B end=E (text)
//! <root>/compacted/<topic>/<queueId>/<N:020>.log           the kept records, unchanged
//! <root>/compacted/<topic>/<queueId>/<N:020>.idx           36-byte entries, queue offset order:
//!     queueOffset:i64 position:i64 size:i32 tagsCode:i64 deleteHorizonMs:i64 (0: not a tombstone)
//! ```
//! Queue offsets in `[base, end)` are served from the generation (an offset in a gap reads the
//! next kept record, as in Kafka and Java's `SparseConsumeQueue`); from `end` on, the
//! ConsumeQueue serves as for any topic. A pass writes generation N+1 beside N and fsyncs it;
//! renaming a new `state` over the old one is the one commit point. A crash before the rename
//! leaves N in force; the next load deletes every file of another generation.
//!
//! May import: modules of `store/`; the area's rule is its line in docs/architecture.md.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use tracing::warn;

use super::super::mapped_file::{sync_dir, MappedFile, MappedSlice};
use super::super::StoreError;

pub const ENTRY_SIZE: usize = 36;
const STATE: &str = "state";

/// One index entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub queue_offset: i64,
    pub position: i64,
    pub size: i32,
    pub tags_code: i64,
    /// When a tombstone may go (ms since the epoch); 0 for a record with a value;
    /// [`BOUNDARY`] for a record kept only because it was the last of its pass.
    pub delete_horizon_ms: i64,
}

/// The horizon of a record a pass would have dropped (keyless, a control record, aborted) but kept
/// because it was the last record of its range: a Kafka reader moves on only past a record, so a
/// gap up to the queue's end would leave it short of the high watermark for ever (Kafka's cleaner
/// never cleans the active segment). The next pass that covers a later record drops it.
pub const BOUNDARY: i64 = -1;

impl Entry {
    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut b = [0u8; ENTRY_SIZE];
        b[..8].copy_from_slice(&self.queue_offset.to_be_bytes());
        b[8..16].copy_from_slice(&self.position.to_be_bytes());
        b[16..20].copy_from_slice(&self.size.to_be_bytes());
        b[20..28].copy_from_slice(&self.tags_code.to_be_bytes());
        b[28..36].copy_from_slice(&self.delete_horizon_ms.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Self> {
        let i64_at = |at: usize| Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?));
        Some(Self {
            queue_offset: i64_at(0)?,
            position: i64_at(8)?,
            size: i32::from_be_bytes(b.get(16..20)?.try_into().ok()?),
            tags_code: i64_at(20)?,
            delete_horizon_ms: i64_at(28)?,
        })
    }

    pub fn is_tombstone(&self) -> bool {
        self.delete_horizon_ms != 0
    }
}

/// A generation: what a pass wrote, read-only once installed.
pub struct Generation {
    pub id: u64,
    /// The first queue offset the compacted log covers.
    pub base: i64,
    /// The compacted end: offsets below it are read here, never from the ConsumeQueue.
    pub end: i64,
    log: Option<Arc<MappedFile>>,
    idx: Option<Arc<MappedFile>>,
}

impl Generation {
    fn empty() -> Self {
        Self { id: 0, base: 0, end: 0, log: None, idx: None }
    }

    pub fn entries(&self) -> usize {
        self.idx.as_ref().map_or(0, |f| f.size() / ENTRY_SIZE)
    }

    pub fn entry(&self, i: usize) -> Option<Entry> {
        let f = self.idx.as_ref()?;
        Entry::decode(&f.slice(i.checked_mul(ENTRY_SIZE)?, ENTRY_SIZE)?)
    }

    /// The index of the first entry at or after `queue_offset` (`entries()` if none).
    pub fn search(&self, queue_offset: i64) -> usize {
        let (mut lo, mut hi) = (0usize, self.entries());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.entry(mid) {
                Some(e) if e.queue_offset < queue_offset => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }

    /// The record an entry points at, unchanged; `None` if the entry does not fit the log.
    pub fn record(&self, e: &Entry) -> Option<MappedSlice> {
        let f = self.log.as_ref()?;
        f.slice(usize::try_from(e.position).ok()?, usize::try_from(e.size).ok()?)
    }
}

/// A compacted queue: the generation in force, swapped whole by a pass.
pub struct CompactedQueue {
    dir: PathBuf,
    current: RwLock<Arc<Generation>>,
    /// One pass at a time per queue.
    pub(super) pass: Mutex<()>,
}

impl CompactedQueue {
    /// Opens `dir` (creating nothing): the generation its state names, or an empty one. Files of
    /// any other generation (an interrupted pass) are deleted.
    pub fn load(dir: &Path) -> Result<Self, StoreError> {
        let generation = match std::fs::read_to_string(dir.join(STATE)) {
            Ok(text) => open_generation(dir, &text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Generation::empty(),
            Err(e) => return Err(StoreError::io(format!("read {}", dir.join(STATE).display()))(e)),
        };
        remove_other_generations(dir, generation.id);
        Ok(Self { dir: dir.to_owned(), current: RwLock::new(Arc::new(generation)), pass: Mutex::new(()) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn current(&self) -> Arc<Generation> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Where generation `id`'s files go.
    pub fn paths(&self, id: u64) -> (PathBuf, PathBuf) {
        (self.dir.join(format!("{id:020}.log")), self.dir.join(format!("{id:020}.idx")))
    }

    /// Commits generation `id` (its files written and synced): the state file names it, then it
    /// is read from, then the previous generation's files go.
    pub fn install(&self, id: u64, base: i64, end: i64) -> Result<(), StoreError> {
        let text = format!("generation={id}\nbase={base}\nend={end}\n");
        let tmp = self.dir.join("state.tmp");
        let state = self.dir.join(STATE);
        let io = |what: &str, p: &Path| StoreError::io(format!("{what} {}", p.display()));
        {
            let mut f = std::fs::File::create(&tmp).map_err(io("create", &tmp))?;
            f.write_all(text.as_bytes()).map_err(io("write", &tmp))?;
            f.sync_all().map_err(io("sync", &tmp))?;
        }
        let generation = open_generation(&self.dir, &text)?;
        std::fs::rename(&tmp, &state).map_err(io("rename", &state))?;
        sync_dir(&self.dir).map_err(io("sync", &self.dir))?;
        let old =
            std::mem::replace(&mut *self.current.write().unwrap_or_else(|e| e.into_inner()), Arc::new(generation));
        // Readers holding the old generation keep its mappings; the files go now.
        remove_other_generations(&self.dir, id);
        drop(old);
        Ok(())
    }
}

fn field(text: &str, name: &str) -> Option<i64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix('=')?.trim().parse().ok())
}

fn open_generation(dir: &Path, state: &str) -> Result<Generation, StoreError> {
    let bad = || StoreError::NotWritable(format!("unreadable compaction state in {}", dir.display()));
    let id = u64::try_from(field(state, "generation").ok_or_else(bad)?).map_err(|_| bad())?;
    let (base, end) = (field(state, "base").ok_or_else(bad)?, field(state, "end").ok_or_else(bad)?);
    if base < 0 || end < base {
        return Err(bad());
    }
    let open = |path: PathBuf| -> Result<Option<Arc<MappedFile>>, StoreError> {
        let len = std::fs::metadata(&path).map_err(StoreError::io(format!("stat {}", path.display())))?.len();
        if len == 0 {
            return Ok(None);
        }
        let size = usize::try_from(len).map_err(|_| bad())?;
        let f = MappedFile::open(&path, 0, size, true).map_err(StoreError::io(format!("open {}", path.display())))?;
        Ok(Some(Arc::new(f)))
    };
    let log = open(dir.join(format!("{id:020}.log")))?;
    let idx = open(dir.join(format!("{id:020}.idx")))?;
    if idx.as_ref().is_some_and(|f| f.size() % ENTRY_SIZE != 0) {
        return Err(bad());
    }
    Ok(Generation { id, base, end, log, idx })
}

/// Deletes every generation file but `keep`'s (and a stray `state.tmp`).
fn remove_other_generations(dir: &Path, keep: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let keep_prefix = format!("{keep:020}.");
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let generation_file = name.ends_with(".log") || name.ends_with(".idx") || name == "state.tmp";
        if generation_file && !name.starts_with(&keep_prefix) {
            if let Err(err) = std::fs::remove_file(e.path()) {
                warn!(file = %e.path().display(), error = %err, "cannot delete an old compaction generation");
            }
        }
    }
}
