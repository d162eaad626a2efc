//! The timer service's loop, one thread (`TimerEnqueue*` and `TimerDequeue*` services of Java's
//! `TimerMessageStore` in one): enters new timer messages into the wheel, delivers the slots
//! whose time has passed, flushes the files every `timerFlushIntervalMs`.
//!
//! Progress is the timer topic's ConsumeQueue offset (enqueue side) and the next slot time to
//! read (dequeue side), both in `timercheck`, written only when timers moved (an idle broker
//! writes nothing). After a restart or `kill -9` the slots missed
//! while the broker was down are read at once, so overdue timers are delivered right after
//! start. Delivery is at least once: a crash between a delivery and the next checkpoint
//! delivers that slot again.
//!
//! A due timer the store refuses (disk full, a failed flush that poisoned it) is never
//! dropped: the engine waits and tries again until the store accepts it, and progress does not
//! move past it (a shutdown meanwhile leaves it to be delivered after the restart). Java
//! drops it after three tries unless `timerEnableRetryUntilSuccess`.
//!
//! May import: `broker` (inner, timer), `model`, `store`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::{TimerService, TIMER_TOPIC};
use crate::broker::BrokerInner;
use crate::model::message::{self, property, MessageToStore, StoredMessage};
use crate::store::timer::log::{MAGIC_DEFAULT, MAGIC_DELETE, MAGIC_ROLL};
use crate::store::timer::wheel::SLOTS_TOTAL;
use crate::store::timer::{TimerFiles, TimerProgress};
use crate::store::{AcceptAll, GetMessageStatus, PutStatus};

/// Timer-log segments are checked for deletion this often (Java: 30 s).
const CLEAN_INTERVAL: Duration = Duration::from_secs(30);
/// Messages read from the timer topic per round.
const BATCH: usize = 64;
/// Pause between tries of a delivery the store refused: half a slot, within these bounds.
const RETRY_PAUSE_MS: (i64, i64) = (10, 1000);
/// How soon the checkpoint follows a delivery.
const DELIVERED_FLUSH: Duration = Duration::from_millis(100);

struct Engine<'a> {
    inner: &'a BrokerInner,
    timer: &'a TimerService,
    files: &'a Mutex<TimerFiles>,
    p: i64,
    progress: TimerProgress,
    /// CommitLog end of the newest delivery or roll not yet covered by the checkpoint (0: none).
    unsaved_put_end: u64,
    /// Something the checkpoint does not cover yet: units added, timer messages read, slots
    /// with units delivered. Moving the read time over empty slots is not worth a write: after
    /// a restart those slots are walked again, and found empty again.
    dirty: bool,
    shutdown: &'a CancellationToken,
    /// A delivery was cut short by the shutdown: progress must stay before that message.
    interrupted: bool,
}

/// Runs until `shutdown` (masters with the wheel enabled).
pub async fn run(inner: Arc<BrokerInner>, shutdown: CancellationToken) {
    let timer = &inner.timer;
    let Some(files) = timer.files.as_ref() else { return };
    let recovered = TimerProgress {
        read_time_ms: timer.read_time_ms.load(std::sync::atomic::Ordering::Relaxed),
        queue_offset: timer.queue_offset.load(std::sync::atomic::Ordering::Relaxed),
    };
    let p = timer.precision_ms;
    let write = crate::store::now_ms() / p * p;
    // Java: never further back than one lap (minus a minute) of the wheel.
    let oldest = write - SLOTS_TOTAL * p + 60 * p;
    let read_time_ms = match recovered.read_time_ms {
        0 => write,
        t => (t / p * p).max(oldest),
    };
    let mut e = Engine {
        inner: &inner,
        timer,
        files,
        p,
        progress: TimerProgress { read_time_ms, ..recovered },
        unsaved_put_end: 0,
        dirty: false,
        shutdown: &shutdown,
        interrupted: false,
    };
    info!(
        precision_ms = p,
        queue_offset = e.progress.queue_offset,
        overdue_slots = (write - read_time_ms) / p,
        "timer service started"
    );
    // A first checkpoint at once: a fresh store's starting slot is on disk before any timer.
    e.flush().await;
    let flush_every = Duration::from_millis(timer.flush_interval_ms);
    let (mut last_flush, mut last_clean) = (Instant::now(), Instant::now());
    loop {
        let write = crate::store::now_ms() / p * p;
        let read = e.enqueue(write).await;
        e.dequeue(write).await;
        // After deliveries the checkpoint follows within DELIVERED_FLUSH: a crash re-delivers
        // at most that much.
        let since = last_flush.elapsed();
        if e.dirty && (since >= flush_every || (e.unsaved_put_end > 0 && since >= DELIVERED_FLUSH)) {
            last_flush = Instant::now();
            e.flush().await;
        }
        timer.read_time_ms.store(e.progress.read_time_ms, std::sync::atomic::Ordering::Relaxed);
        timer.queue_offset.store(e.progress.queue_offset, std::sync::atomic::Ordering::Relaxed);
        if last_clean.elapsed() >= CLEAN_INTERVAL {
            last_clean = Instant::now();
            e.clean();
        }
        if shutdown.is_cancelled() {
            break;
        }
        if read > 0 {
            // More may be waiting (a read is capped by the store's transfer limits).
            continue;
        }
        let mut wait = (write + p - crate::store::now_ms()).clamp(1, p) as u64;
        if e.unsaved_put_end > 0 {
            wait = wait.min(DELIVERED_FLUSH.as_millis() as u64);
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = timer.arrived.notified() => {},
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {},
        }
    }
    e.flush().await;
    info!(read_time_ms = e.progress.read_time_ms, queue_offset = e.progress.queue_offset, "timer service stopped");
}

impl Engine<'_> {
    fn files(&self) -> std::sync::MutexGuard<'_, TimerFiles> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads new timer messages: overdue ones are delivered now, the others go into the wheel
    /// (past the roll window, into a nearer slot to be re-entered from there). Returns how many
    /// were read.
    async fn enqueue(&mut self, write: i64) -> usize {
        let store = &self.inner.store;
        let offset = self.progress.queue_offset;
        let r = store.get_message(TIMER_TOPIC, 0, offset, BATCH, usize::MAX, &AcceptAll);
        if r.status != GetMessageStatus::Found {
            if r.next_begin_offset > offset && r.status != GetMessageStatus::OffsetOverflowOne {
                warn!(from = offset, to = r.next_begin_offset, status = ?r.status, "timer topic: skipping queue offsets no longer readable");
                self.progress.queue_offset = r.next_begin_offset;
            }
            return 0;
        }
        let read = r.messages.len();
        self.dirty |= read > 0;
        for rec in &r.messages {
            let Some(m) = crate::store::commit_log::record::decode(rec, false) else {
                warn!(queue_offset = self.progress.queue_offset, "unreadable timer message skipped");
                self.progress.queue_offset += 1;
                continue;
            };
            let out =
                message::property_value(&m.properties, property::TIMER_OUT_MS).and_then(|v| v.parse::<i64>().ok());
            match out {
                None => warn!(queue_offset = m.queue_offset, "timer message without TIMER_OUT_MS dropped"),
                Some(t) if t < write => {
                    self.deliver(&m, i64::MAX).await;
                    if self.interrupted {
                        return read;
                    }
                }
                Some(t) => {
                    let w = self.timer.roll_window_slots;
                    let (slot, magic) = if t - write >= w * self.p {
                        let near = if t - write - w * self.p < w / 3 * self.p { w / 2 } else { w };
                        (write + near * self.p, MAGIC_DEFAULT | MAGIC_ROLL)
                    } else {
                        (t, MAGIC_DEFAULT)
                    };
                    let hash =
                        message::java_hash(message::property_value(&m.properties, property::REAL_TOPIC).unwrap_or(""));
                    let added =
                        self.files().add(slot, write, magic, m.commit_log_offset, m.total_size, hash, m.queue_offset);
                    if let Err(err) = added {
                        error!(error = %err, queue_offset = m.queue_offset, "cannot write the timer log; retrying");
                        return 0;
                    }
                }
            }
            self.progress.queue_offset = m.queue_offset + 1;
        }
        read
    }

    /// Delivers every slot before `write`, oldest first.
    async fn dequeue(&mut self, write: i64) {
        while self.progress.read_time_ms < write && !self.shutdown.is_cancelled() {
            let units = self.files().units(self.progress.read_time_ms);
            self.dirty |= !units.is_empty();
            for u in units {
                let found = self
                    .inner
                    .store
                    .lookup_message(u.commit_log_offset)
                    .filter(|m| m.total_size == u.size && m.topic == TIMER_TOPIC);
                let Some(m) = found else {
                    warn!(commit_log_offset = u.commit_log_offset, "timer message no longer in the CommitLog; dropped");
                    continue;
                };
                if u.magic & MAGIC_ROLL != 0 {
                    self.roll(&m).await;
                } else if u.magic & MAGIC_DELETE == 0 {
                    self.deliver(&m, u.enqueue_time).await;
                }
                if self.interrupted {
                    return; // this slot again after the restart
                }
            }
            self.progress.read_time_ms += self.p;
        }
    }

    /// `convertMessage`: the message on its real topic and queue, with when it entered and left
    /// the wheel.
    async fn deliver(&mut self, m: &StoredMessage, enqueue_ms: i64) {
        let mut props = message::parse_properties(&m.properties);
        // The send that entered it checked its topic: a REAL_TOPIC the store could not hold comes
        // from a record shipped by a master or written by another build, and is dropped.
        let Some(topic) = props.remove(property::REAL_TOPIC).filter(|t| crate::model::name::is_path_component(t))
        else {
            warn!(commit_log_offset = m.commit_log_offset, "timer message without a legal REAL_TOPIC dropped");
            return;
        };
        let queue_id =
            props.remove(property::REAL_QID).and_then(|q| q.parse().ok()).filter(|q: &i32| *q >= 0).unwrap_or(0);
        props.insert(property::WAIT.to_owned(), "false".to_owned());
        props.insert(property::TIMER_ENQUEUE_MS.to_owned(), enqueue_ms.to_string());
        props.insert(property::TIMER_DEQUEUE_MS.to_owned(), crate::store::now_ms().to_string());
        self.put(m.to_store(topic, queue_id, message::map_to_properties(&props))).await;
    }

    /// A timer past the roll window: stored again on the timer topic, to be entered anew.
    async fn roll(&mut self, m: &StoredMessage) {
        let mut props = message::parse_properties(&m.properties);
        let times = props.get(property::TIMER_ROLL_TIMES).and_then(|v| v.parse::<i32>().ok()).unwrap_or(0);
        props.insert(property::TIMER_ROLL_TIMES.to_owned(), (times + 1).to_string());
        props.insert(property::WAIT.to_owned(), "false".to_owned());
        self.put(m.to_store(TIMER_TOPIC.to_owned(), 0, message::map_to_properties(&props))).await;
    }

    /// `doPut`: an illegal message is dropped; one the store refuses for a passing reason is
    /// tried again, every half slot, until the store takes it (see the module doc). Sets
    /// `interrupted` if the shutdown comes first.
    async fn put(&mut self, msg: MessageToStore) {
        let mut refused = false;
        loop {
            let r = self.inner.store.put_messages(std::slice::from_ref(&msg), false).await;
            match r.status {
                PutStatus::PutOk | PutStatus::FlushDiskTimeout => {
                    self.inner.count_delivery(&msg, &r);
                    let end = r.append.map_or(0, |a| a.end_offset);
                    self.unsaved_put_end = self.unsaved_put_end.max(end);
                    if refused {
                        info!(topic = msg.topic, "the store takes writes again; timer delivery resumed");
                    }
                    return;
                }
                PutStatus::MessageIllegal(_) | PutStatus::PropertiesSizeExceeded => {
                    warn!(topic = msg.topic, status = ?r.status, "timer message cannot be stored; dropped");
                    return;
                }
                status => {
                    self.timer.refused_puts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if !refused {
                        refused = true;
                        warn!(
                            topic = msg.topic,
                            ?status,
                            "the store refuses a due timer message; delivery waits until it takes writes"
                        );
                    }
                    let pause = (self.p / 2).clamp(RETRY_PAUSE_MS.0, RETRY_PAUSE_MS.1) as u64;
                    tokio::select! {
                        _ = self.shutdown.cancelled() => {
                            self.interrupted = true;
                            return;
                        }
                        _ = tokio::time::sleep(Duration::from_millis(pause)) => {}
                    }
                }
            }
        }
    }

    /// Writes the files and the current progress. Under SYNC_FLUSH the deliveries the progress
    /// covers are on disk first, so a power loss cannot lose a timer the checkpoint calls done.
    async fn flush(&mut self) {
        if self.unsaved_put_end > 0 && self.inner.store.wait_flushed(self.unsaved_put_end).await != PutStatus::PutOk {
            warn!("the CommitLog is not flushed; the timer checkpoint waits");
            return;
        }
        self.unsaved_put_end = 0;
        let written = self.files().flush(self.progress);
        match written {
            Ok(()) => self.dirty = false,
            Err(err) => error!(error = %err, "cannot flush the timer files"),
        }
    }

    /// Deletes timer-log segments whose messages the CommitLog dropped.
    fn clean(&self) {
        let min = self.inner.store.commit_log_min_offset() as i64;
        match self.files().delete_expired(min) {
            Ok(0) => {}
            Ok(n) => info!(segments = n, "deleted timer-log segments of messages no longer stored"),
            Err(err) => warn!(error = %err, "cannot delete expired timer-log segments"),
        }
    }
}
