//! The single writer of one config file, with group commit.
//!
//! A change is made in memory first; [`ConfigFile::persist`] then returns once a write that
//! includes it is on disk. Whoever finds no write in progress becomes the writer: it takes the
//! *latest* snapshot (which holds every change announced before it) and writes it; callers that
//! arrive meanwhile wait and are covered by the next write. A burst of N changes costs one or
//! two writes, writes never overlap, and an older snapshot never lands over a newer one.
//!
//! ```text
//! persist():  announce -> n ──┬─ written >= n ─────────────────> Ok
//!                             ├─ nobody writing: write snapshot, written = requested-at-claim
//!                             └─ a write in progress: wait for it, check again
//! ```
//!
//! May import: nothing outside `persist/` (the area's rule: docs/architecture.md).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::sync::Notify;
use tracing::error;

/// Takes a snapshot of the file's content (serialized under the owner's lock).
pub type Snapshot = Box<dyn Fn() -> Vec<u8> + Send + Sync>;

#[derive(Default)]
struct State {
    /// Changes announced so far; each `persist` call is one.
    requested: u64,
    /// Every change up to here is on disk.
    written: u64,
    writing: bool,
    /// The last failed write: the changes it would have covered, and why it failed.
    failed: Option<(u64, String)>,
}

/// What a caller does next.
enum Step {
    Done(std::io::Result<()>),
    /// Write a snapshot covering changes up to this count.
    Write(u64),
    Wait,
}

pub struct ConfigFile {
    path: PathBuf,
    snapshot: Snapshot,
    state: Mutex<State>,
    /// Async callers wait here for the write in progress.
    written: Notify,
    /// Blocking callers (shutdown, background threads) wait here.
    written_blocking: Condvar,
}

impl ConfigFile {
    /// The writer of `path`; removes temporary files a killed process left there.
    pub fn new(path: PathBuf, snapshot: Snapshot) -> Arc<Self> {
        super::remove_stale_temp_files(&path);
        Arc::new(Self {
            path,
            snapshot,
            state: Mutex::new(State::default()),
            written: Notify::new(),
            written_blocking: Condvar::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn announce(&self) -> u64 {
        let mut s = self.lock();
        s.requested += 1;
        s.requested
    }

    fn step(&self, s: &mut State, mine: u64) -> Step {
        if s.written >= mine {
            return Step::Done(Ok(()));
        }
        if let Some((covered, why)) = &s.failed {
            if *covered >= mine {
                return Step::Done(Err(std::io::Error::other(why.clone())));
            }
        }
        if s.writing {
            return Step::Wait;
        }
        s.writing = true;
        Step::Write(s.requested)
    }

    /// Writes the latest snapshot as the claimed writer, then wakes every waiter. Blocking.
    fn write(&self, covers: u64) -> std::io::Result<()> {
        let bytes = (self.snapshot)();
        let result = super::write_atomically(&self.path, &bytes);
        let mut s = self.lock();
        s.writing = false;
        match &result {
            Ok(()) => s.written = s.written.max(covers),
            Err(e) => {
                // Logged once per failed write, not once per waiting caller.
                error!(file = %self.path.display(), error = %e, "cannot persist config file");
                s.failed = Some((covers, e.to_string()));
            }
        }
        drop(s);
        self.written.notify_waiters();
        self.written_blocking.notify_all();
        result
    }

    /// Returns once every change made before this call is on disk; the write runs on a blocking
    /// thread. Dropping the future does not stop a write that started.
    pub async fn persist(self: &Arc<Self>) -> std::io::Result<()> {
        let mine = self.announce();
        loop {
            let notified = self.written.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let step = self.step(&mut self.lock(), mine);
            match step {
                Step::Done(r) => return r,
                Step::Write(covers) => {
                    let me = self.clone();
                    return tokio::task::spawn_blocking(move || me.write(covers))
                        .await
                        .unwrap_or_else(|e| Err(std::io::Error::other(format!("config writer panicked: {e}"))));
                }
                Step::Wait => notified.await,
            }
        }
    }

    /// [`Self::persist`] for threads that may block (shutdown, background jobs).
    pub fn persist_blocking(&self) -> std::io::Result<()> {
        let mine = self.announce();
        let mut s = self.lock();
        loop {
            match self.step(&mut s, mine) {
                Step::Done(r) => return r,
                Step::Write(covers) => {
                    drop(s);
                    return self.write(covers);
                }
                Step::Wait => s = self.written_blocking.wait(s).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    fn counting(dir: &Path) -> (Arc<ConfigFile>, Arc<AtomicU64>, Arc<AtomicU64>) {
        let value = Arc::new(AtomicU64::new(0));
        let writes = Arc::new(AtomicU64::new(0));
        let (v, w) = (value.clone(), writes.clone());
        let file = ConfigFile::new(
            dir.join("c.json"),
            Box::new(move || {
                w.fetch_add(1, Ordering::SeqCst);
                // A slow disk: callers pile up behind the write in progress.
                std::thread::sleep(std::time::Duration::from_millis(5));
                v.load(Ordering::SeqCst).to_string().into_bytes()
            }),
        );
        (file, value, writes)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_burst_is_covered_by_few_writes_and_the_latest_snapshot_lands() {
        let dir = tempfile::tempdir().unwrap();
        let (file, value, writes) = counting(dir.path());
        let mut tasks = Vec::new();
        for _ in 0..500 {
            let (file, value) = (file.clone(), value.clone());
            tasks.push(tokio::spawn(async move {
                let mine = value.fetch_add(1, Ordering::SeqCst) + 1;
                file.persist().await.unwrap();
                // When persist returns, the file holds this change or a newer one.
                let on_disk: u64 = std::fs::read_to_string(file.path()).unwrap().parse().unwrap();
                assert!(on_disk >= mine, "{on_disk} < {mine}");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "500");
        let n = writes.load(Ordering::SeqCst);
        assert!(n < 100, "{n} writes for 500 changes: not coalesced");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn blocking_callers_and_failures() {
        let dir = tempfile::tempdir().unwrap();
        let (file, value, _) = counting(dir.path());
        value.store(7, Ordering::SeqCst);
        file.persist_blocking().unwrap();
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "7");
        // A directory where the file should be: the write fails, the caller learns why.
        let broken = ConfigFile::new(dir.path().to_owned(), Box::new(|| b"x".to_vec()));
        assert!(broken.persist_blocking().is_err());
    }

    #[test]
    fn stale_temp_files_are_removed_at_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.json.tmp.1.2"), "old").unwrap();
        std::fs::write(dir.path().join("other.json.tmp"), "keep").unwrap();
        let _ = counting(dir.path());
        assert!(!dir.path().join("c.json.tmp.1.2").exists());
        assert!(dir.path().join("other.json.tmp").exists());
    }
}
