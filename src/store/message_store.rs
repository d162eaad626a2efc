//! `MessageStore` (`DefaultMessageStore.java`): opens and recovers the directory, runs the
//! flush, dispatch, ConsumeQueue-flush and cleaning threads, and serves puts and reads.
//!
//! May import: `model` and modules of `store/`; the area's rule is its line in
//! docs/architecture.md.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use tracing::{info, warn};

use super::checkpoint::Checkpoint;
use super::commit_log::{AppendResult, CommitLog};
use super::compaction::CompactionTable;
use super::consume_queue::ConsumeQueueTable;
use super::group_commit::GroupCommit;
use super::index::IndexService;
use super::state::{now_ms, total_memory, ArrivalListener, FlushFault, Inner};
use super::{FlushDiskType, StoreConfig, StoreError};
use crate::model::message::MessageToStore;

/// The outcome of a put (`PutMessageStatus`).
#[derive(Clone, Debug, PartialEq)]
pub enum PutStatus {
    PutOk,
    /// Stored, but not on disk within `syncFlushTimeout`.
    FlushDiskTimeout,
    ServiceNotAvailable(String),
    MessageIllegal(String),
    PropertiesSizeExceeded,
    UnknownError(String),
}

#[derive(Clone, Debug)]
pub struct PutMessageResult {
    pub status: PutStatus,
    pub append: Option<AppendResult>,
}

impl PutMessageResult {
    fn refused(status: PutStatus) -> Self {
        Self { status, append: None }
    }

    pub fn is_ok(&self) -> bool {
        self.status == PutStatus::PutOk
    }
}

/// The message store. Dropping it without [`MessageStore::shutdown`] behaves like a crash.
/// The most [`MessageStore::await_dispatched`] waits for: what acknowledged sends can leave
/// undispatched for a moment, far less than a replication or recovery backlog.
pub const READ_AFTER_SEND_MAX_LAG: u64 = 8 << 20;

/// How long a read (GET_MAX_OFFSET, a pull, a Kafka fetch or ListOffsets) waits for messages already acknowledged to be
/// dispatched, so that it sees them: normally microseconds; bounded for a starved dispatcher
/// or a slave holding half a record. 50 ms was not enough on a loaded 2-core machine (a compat
/// run saw a SYNC_MASTER's dispatcher 44 messages behind after that long); the wait ends as soon
/// as dispatch catches up, and a backlog (more than `READ_AFTER_SEND_MAX_LAG`) is not waited for.
pub const READ_AFTER_SEND_WAIT: std::time::Duration = std::time::Duration::from_millis(1000);

pub struct MessageStore {
    pub(super) inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    lock: Mutex<Option<File>>,
}

impl MessageStore {
    /// Opens (creating if needed) and recovers the store at `config.store_path_root_dir`, then
    /// starts its threads.
    pub fn open(config: StoreConfig) -> Result<Self, StoreError> {
        let root = config.store_path_root_dir.clone();
        std::fs::create_dir_all(&root).map_err(StoreError::io(format!("create {}", root.display())))?;
        let lock = take_lock(&config)?;
        let last_exit_ok = !config.abort_path().exists();
        let commit_log = CommitLog::load(
            &config.commit_log_dir(),
            config.mapped_file_size_commit_log,
            config.warm_mapped_file_enable,
        )?
        .allocate_ahead(config.commit_log_allocate_ahead_size);
        commit_log.files().set_random_reads(!config.data_read_ahead_enable);
        let starts = super::log_start::LogStarts::load(&config.log_start_path())?;
        let queues = ConsumeQueueTable::load(&config.consume_queue_dir(), config.consume_queue_file_size(), starts)?;
        let checkpoint = Checkpoint::load(&config.checkpoint_path())?;
        let index = IndexService::load(&config, last_exit_ok, checkpoint.index_msg_timestamp())?;
        let compaction = CompactionTable::load(&config.compaction_dir())?;
        let inner = Arc::new(Inner {
            live: RwLock::new(Arc::new(config.clone())),
            config,
            commit_log,
            queues,
            index,
            compaction,
            checkpoint,
            group_commit: GroupCommit::default(),
            reput_from: AtomicU64::new(0),
            skipped_records: AtomicU64::new(0),
            last_dispatched_timestamp: AtomicI64::new(0),
            disk_full: AtomicBool::new(false),
            running: AtomicBool::new(true),
            poison: Mutex::new(None),
            flush_fault: Mutex::new(None),
            disk_usage_override: std::sync::atomic::AtomicU32::new(u32::MAX),
            dispatch_wake: (Mutex::new(false), Condvar::new()),
            dispatcher_idle: AtomicBool::new(false),
            stop_wake: (Mutex::new(()), Condvar::new()),
            arrival: RwLock::new(None),
            total_memory: total_memory(),
            appended: Arc::new(tokio::sync::Notify::new()),
            dispatched: tokio::sync::Notify::new(),
        });
        super::recovery::recover(&inner, last_exit_ok)?;
        let abort = inner.config.abort_path();
        std::fs::write(&abort, std::process::id().to_string())
            .map_err(StoreError::io(format!("create {}", abort.display())))?;
        let store = Self { inner, threads: Mutex::new(Vec::new()), lock: Mutex::new(Some(lock)) };
        store.start_threads()?;
        Ok(store)
    }

    fn start_threads(&self) -> Result<(), StoreError> {
        type Job = fn(&Inner);
        let jobs: [(&str, Job); 6] = [
            ("ferrocket-flush", super::flush::run),
            ("ferrocket-prefault", super::prefault::run),
            ("ferrocket-dispatch", super::dispatch::run),
            ("ferrocket-cq-flush", super::housekeeping::run_consume_queue_flush),
            ("ferrocket-clean", super::retention::run),
            ("ferrocket-compact", super::compaction::service::run),
        ];
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        for (name, job) in jobs {
            let inner = self.inner.clone();
            let handle = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || job(&inner))
                .map_err(StoreError::io(format!("start thread {name}")))?;
            threads.push(handle);
        }
        Ok(())
    }

    /// The config the store started with (paths, file sizes, flushDiskType: what a restart
    /// changes); the keys read per use are in [`MessageStore::live_config`].
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// The config now, with the changes [`MessageStore::update_live_config`] made.
    pub fn live_config(&self) -> Arc<StoreConfig> {
        self.inner.live()
    }

    /// Takes the settings the store reads per use from `next` ([`StoreConfig::with_live`]);
    /// the others keep their boot value. Each service sees the change at its next use.
    pub fn update_live_config(&self, next: &StoreConfig) {
        self.inner.set_live(next);
    }

    /// Waits (at most `max`) until everything appended before the call is dispatched, so that a
    /// read right after an acknowledged send sees the message: the dispatcher is a thread that
    /// a busy machine may not run for milliseconds after the append woke it. Returns at once
    /// when nothing is pending, or when more than [`READ_AFTER_SEND_MAX_LAG`] is (a slave or a
    /// restarted broker catching up: a read then sees what is dispatched so far, as in Java).
    pub async fn await_dispatched(&self, max: Duration) {
        let inner = &self.inner;
        let target = inner.confirm_offset();
        if target.saturating_sub(inner.reput_from.load(Ordering::Acquire)) > READ_AFTER_SEND_MAX_LAG {
            return;
        }
        let done = || inner.reput_from.load(Ordering::Acquire) >= target;
        let deadline = tokio::time::Instant::now() + max;
        while !done() {
            let notified = inner.dispatched.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done() || tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// Registers the listener told about each dispatched message (long polling).
    pub fn set_arrival_listener(&self, listener: ArrivalListener) {
        *self.inner.arrival.write().unwrap_or_else(|e| e.into_inner()) = Some(listener);
    }

    /// Appends one message, or a batch for one topic and queue. With SYNC_FLUSH and `wait`, the
    /// result comes once the bytes are on disk (or `syncFlushTimeout` passed).
    pub async fn put_messages(&self, msgs: &[MessageToStore], wait: bool) -> PutMessageResult {
        self.put(msgs, wait, false).await
    }

    /// As [`Self::put_messages`], but under ASYNC_FLUSH the records wait in the CommitLog's
    /// buffer until [`Self::commit`]: the caller must commit before it acknowledges them
    /// (readers and replication do not see them before). Under SYNC_FLUSH, the same as
    /// `put_messages`.
    pub async fn put_messages_deferred(&self, msgs: &[MessageToStore], wait: bool) -> PutMessageResult {
        self.put(msgs, wait, true).await
    }

    /// Writes the records deferred by [`Self::put_messages_deferred`] (one write for all of
    /// them); returns once every record deferred before the call is written, waiting for
    /// another thread's write that carries them. `Err` (naming why) if writing deferred records
    /// has ever failed: their acknowledgements must not be sent; the store is poisoned.
    pub fn commit(&self) -> Result<(), String> {
        self.inner.commit()
    }

    async fn put(&self, msgs: &[MessageToStore], wait: bool, defer: bool) -> PutMessageResult {
        let defer = defer && self.inner.config.flush_disk_type == FlushDiskType::AsyncFlush;
        let append = match self.append(msgs, defer) {
            Ok(a) => a,
            Err(status) => return PutMessageResult::refused(status),
        };
        if defer && self.inner.commit_log.has_pending() {
            // Waiting records are announced by the commit that writes them.
            return PutMessageResult { status: PutStatus::PutOk, append: Some(append) };
        }
        // Written now (also a deferred append that found the buffer full): tell the dispatcher
        // and replication, as a commit would.
        self.inner.appended.notify_waiters();
        if self.inner.config.flush_disk_type == FlushDiskType::AsyncFlush {
            self.inner.wake_dispatcher();
            return PutMessageResult { status: PutStatus::PutOk, append: Some(append) };
        }
        if !wait {
            self.inner.group_commit.wake();
            return PutMessageResult { status: PutStatus::PutOk, append: Some(append) };
        }
        let status = self.wait_flushed(append.end_offset).await;
        PutMessageResult { status, append: Some(append) }
    }

    /// Under SYNC_FLUSH, returns once the CommitLog is on disk up to `end_offset`: PUT_OK,
    /// FlushDiskTimeout after `syncFlushTimeout`, ServiceNotAvailable if flushing failed. Under
    /// ASYNC_FLUSH, PUT_OK at once.
    pub async fn wait_flushed(&self, end_offset: u64) -> PutStatus {
        if self.inner.config.flush_disk_type == FlushDiskType::AsyncFlush || self.flushed_offset() >= end_offset {
            return PutStatus::PutOk;
        }
        let done = self.inner.group_commit.request(end_offset);
        match tokio::time::timeout(self.inner.live().sync_flush_timeout, done).await {
            Ok(Ok(true)) => PutStatus::PutOk,
            Ok(Ok(false)) | Ok(Err(_)) => PutStatus::ServiceNotAvailable(
                self.inner.poisoned().unwrap_or_else(|| "the store stopped before the message was flushed".into()),
            ),
            Err(_) => PutStatus::FlushDiskTimeout,
        }
    }

    /// The synchronous part of a put: checks, then the CommitLog append.
    fn append(&self, msgs: &[MessageToStore], defer: bool) -> Result<AppendResult, PutStatus> {
        let inner = &self.inner;
        if !inner.is_running() {
            return Err(PutStatus::ServiceNotAvailable("message store has been shut down".into()));
        }
        if let Some(why) = inner.poisoned() {
            return Err(PutStatus::ServiceNotAvailable(why));
        }
        // Read per put (as Java's CommitLog does): UPDATE_BROKER_CONFIG changes them live.
        let c = inner.live();
        if inner.disk_full.load(Ordering::Acquire) {
            return Err(PutStatus::ServiceNotAvailable(format!(
                "the broker's disk is full (above diskSpaceWarningLevelRatio {}%); writes resume once space is freed",
                c.disk_space_warning_level_ratio
            )));
        }
        for m in msgs {
            if m.body.len() > c.max_message_size {
                return Err(PutStatus::MessageIllegal(format!(
                    "message body of {} bytes exceeds maxMessageSize {}",
                    m.body.len(),
                    c.max_message_size
                )));
            }
            if m.properties.len() > i16::MAX as usize {
                return Err(PutStatus::PropertiesSizeExceeded);
            }
            // Every door checks names where they enter; this is the last line of defence: a
            // record's topic becomes a directory below the store's root.
            if !crate::model::name::is_path_component(&m.topic) || m.queue_id < 0 {
                return Err(PutStatus::MessageIllegal(format!(
                    "topic {}/{} is not a queue this store can hold (1..=255 bytes, one path component)",
                    crate::model::name::shown(&m.topic),
                    m.queue_id
                )));
            }
        }
        inner.commit_log.append(msgs, now_ms, defer).map_err(|e| {
            // A failed write may have lost deferred records of other sends with it: that poisons
            // the store now, before anything is appended where they were.
            let _ = inner.commit();
            match e {
                StoreError::MessageIllegal(why) => PutStatus::MessageIllegal(why),
                other => PutStatus::UnknownError(other.to_string()),
            }
        })
    }

    /// Makes the next CommitLog flush fail or stall, as a failing or slow disk would (tests).
    #[doc(hidden)]
    pub fn inject_flush_fault(&self, fault: FlushFault) {
        *self.inner.flush_fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(fault);
    }

    /// Records the dispatcher left out of the consume queues: a topic no queue can be made for,
    /// or a dispatch that kept failing (Java's 30 tries).
    pub fn skipped_records(&self) -> u64 {
        self.inner.skipped_records.load(Ordering::Relaxed)
    }

    /// CommitLog offset up to which messages are dispatched to ConsumeQueues.
    pub fn dispatched_offset(&self) -> u64 {
        self.inner.reput_from.load(Ordering::Acquire)
    }

    pub fn commit_log_min_offset(&self) -> u64 {
        self.inner.commit_log.min_offset()
    }

    pub fn commit_log_max_offset(&self) -> u64 {
        self.inner.commit_log.max_offset()
    }

    pub fn flushed_offset(&self) -> u64 {
        self.inner.commit_log.files().flushed_where()
    }

    /// Why the store refuses writes, if it does.
    pub fn write_refusal(&self) -> Option<String> {
        self.inner.poisoned().or_else(|| self.inner.disk_full.load(Ordering::Acquire).then(|| "disk full".to_owned()))
    }

    /// Clean shutdown: stop the threads, flush everything, remove `abort`, release the lock.
    pub fn shutdown(&self) -> Result<(), StoreError> {
        let inner = &self.inner;
        if !inner.running.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        inner.stop_wake.1.notify_all();
        inner.group_commit.wake();
        inner.wake_dispatcher();
        for t in self.threads.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            let _ = t.join();
        }
        // Anything deferred, written but not yet dispatched (ASYNC) or flushed (SYNC).
        let _ = inner.commit();
        let flushed = inner.commit_log.files().flush(0).map_err(StoreError::io("final CommitLog flush"))?;
        let end = inner.commit_log.max_offset().max(flushed);
        let from = inner.reput_from.load(Ordering::Acquire);
        if from < end {
            inner.commit_log.scan_valid(from, false, |d| {
                let _ = super::dispatch::dispatch(inner, d);
            });
        }
        super::housekeeping::flush_consume_queues(inner, 0);
        inner.index.flush();
        inner.checkpoint.set_physic_msg_timestamp(
            inner.last_dispatched_timestamp.load(Ordering::Acquire).max(inner.checkpoint.physic_msg_timestamp()),
        );
        inner.checkpoint.flush()?;
        if inner.poisoned().is_none() {
            let abort = inner.config.abort_path();
            std::fs::remove_file(&abort).map_err(StoreError::io(format!("delete {}", abort.display())))?;
        } else {
            warn!("store was poisoned; leaving the abort file so the next start recovers");
        }
        self.lock.lock().unwrap_or_else(|e| e.into_inner()).take();
        info!(dir = %inner.config.store_path_root_dir.display(), "message store shut down");
        Ok(())
    }
}

impl MessageStore {
    /// Runs one cleaning pass now, as if at `now` (the admin "delete expired files" request,
    /// and tests). Returns the CommitLog segments deleted.
    pub fn clean_expired_files(&self, now: SystemTime) -> Result<usize, StoreError> {
        super::retention::clean_pass(&self.inner, now, true)
    }

    /// Pretends the disk is `percent` full (tests of disk protection); `None` measures again.
    #[doc(hidden)]
    pub fn override_disk_usage(&self, percent: Option<u32>) {
        self.inner.set_disk_usage_override(percent);
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        // Like a crash: stop the threads, leave files (and `abort`) as they are.
        self.inner.running.store(false, Ordering::Release);
        self.inner.stop_wake.1.notify_all();
        self.inner.group_commit.wake();
        self.inner.wake_dispatcher();
        for t in self.threads.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            let _ = t.join();
        }
    }
}

fn take_lock(config: &StoreConfig) -> Result<File, StoreError> {
    let path = config.lock_path();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(StoreError::io(format!("open {}", path.display())))?;
    // flock keeps out other opens of this process and other ferrocket processes; a POSIX
    // (fcntl) lock is what the Java broker takes (`FileChannel.tryLock`), and flock and fcntl
    // locks do not see each other on Linux, so take both.
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(StoreError::Locked(config.store_path_root_dir.clone())),
        Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(format!("lock {}", path.display()))(e)),
    }
    match rustix::fs::fcntl_lock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS => {
            Err(StoreError::Locked(config.store_path_root_dir.clone()))
        }
        Err(e) => Err(StoreError::io(format!("lock {}", path.display()))(e.into())),
    }
}
