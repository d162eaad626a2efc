//! Master side: accepts slaves, streams CommitLog bytes to each from the offset it reports, and
//! tracks how far slaves have acknowledged, for SYNC_MASTER puts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use super::wire::{encode_header, REPORT_LEN, TRANSFER_BATCH};
use crate::store::MessageStore;

/// `haSendHeartbeatInterval`.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// `haHousekeepingInterval`: a slave silent this long is dropped.
const HOUSEKEEPING: Duration = Duration::from_secs(20);

/// Why a SYNC_MASTER put was not replicated in time.
#[derive(Debug, PartialEq, Eq)]
pub enum ReplicaWait {
    Ok,
    /// No slave connected (4.x SLAVE_NOT_AVAILABLE).
    NoSlave,
    /// A slave is connected but did not acknowledge in time (FLUSH_SLAVE_TIMEOUT).
    Timeout,
}

pub struct HaService {
    store: Arc<MessageStore>,
    /// Acknowledged offset per connected slave.
    acks: Mutex<HashMap<u64, u64>>,
    acked: Notify,
    next_id: AtomicU64,
    /// `haMaxGapNotInSync`: a slave further behind than this does not count for SYNC_MASTER.
    max_gap: u64,
}

impl HaService {
    pub fn new(store: Arc<MessageStore>, max_gap: u64) -> Arc<Self> {
        Arc::new(Self {
            store,
            acks: Mutex::new(HashMap::new()),
            acked: Notify::new(),
            next_id: AtomicU64::new(1),
            max_gap,
        })
    }

    fn acks(&self) -> std::sync::MutexGuard<'_, HashMap<u64, u64>> {
        self.acks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Slaves connected and within `haMaxGapNotInSync` of the master's end.
    pub fn in_sync_slaves(&self) -> usize {
        let end = self.store.commit_log_max_offset();
        self.acks().values().filter(|a| end.saturating_sub(**a) <= self.max_gap).count()
    }

    /// Waits until `needed` slaves acknowledged `end_offset`, or `timeout`.
    pub async fn wait_for_replicas(&self, end_offset: u64, needed: usize, timeout: Duration) -> ReplicaWait {
        if self.in_sync_slaves() < needed {
            return ReplicaWait::NoSlave;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.acked.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.acks().values().filter(|a| **a >= end_offset).count() >= needed {
                return ReplicaWait::Ok;
            }
            tokio::select! {
                _ = notified => {},
                _ = tokio::time::sleep_until(deadline) => return ReplicaWait::Timeout,
            }
        }
    }

    /// Accepts slaves on `listener` until `shutdown`.
    pub async fn serve(self: Arc<Self>, listener: TcpListener, shutdown: CancellationToken, tracker: TaskTracker) {
        loop {
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break,
                a = listener.accept() => a,
            };
            match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    info!(slave = %peer, "slave connected for replication");
                    let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                    let me = self.clone();
                    let stop = shutdown.child_token();
                    tracker.spawn(async move {
                        if let Err(e) = me.clone().serve_slave(id, stream, stop).await {
                            warn!(slave = %peer, error = %e, "replication connection closed");
                        }
                        me.acks().remove(&id);
                    });
                }
                Err(e) => {
                    warn!(error = %e, "HA accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    async fn serve_slave(self: Arc<Self>, id: u64, stream: TcpStream, stop: CancellationToken) -> std::io::Result<()> {
        let (mut read, mut write) = stream.into_split();
        let requested = Arc::new(AtomicU64::new(u64::MAX));
        let reader = {
            let (me, requested, stop) = (self.clone(), requested.clone(), stop.clone());
            async move {
                let mut buf = [0u8; REPORT_LEN];
                loop {
                    let r = tokio::select! {
                        _ = stop.cancelled() => return Ok(()),
                        r = tokio::time::timeout(HOUSEKEEPING, read.read_exact(&mut buf)) => r,
                    };
                    let offset = match r {
                        Ok(Ok(_)) => u64::try_from(i64::from_be_bytes(buf)).unwrap_or(0),
                        Ok(Err(e)) => return Err(e),
                        Err(_) => {
                            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "slave silent for 20 s"))
                        }
                    };
                    let _ = requested.compare_exchange(u64::MAX, offset, Ordering::AcqRel, Ordering::Acquire);
                    me.acks().insert(id, offset);
                    me.acked.notify_waiters();
                }
            }
        };
        let writer = async move {
            // Nothing is sent until the slave's first report says where to start.
            while requested.load(Ordering::Acquire) == u64::MAX {
                tokio::select! {
                    _ = stop.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(Duration::from_millis(10)) => {},
                }
            }
            let size = self.store.config().mapped_file_size_commit_log as u64;
            let mut next = match requested.load(Ordering::Acquire) {
                0 => {
                    let max = self.store.commit_log_max_offset();
                    max - max % size
                }
                o => o,
            };
            let mut last_write = Instant::now();
            let appended = self.store.append_signal();
            while !stop.is_cancelled() {
                let wake = appended.notified();
                tokio::pin!(wake);
                wake.as_mut().enable();
                let chunk = self.store.commit_log_data(next).filter(|d| !d.is_empty());
                match chunk {
                    Some(data) => {
                        let len = data.len().min(TRANSFER_BATCH);
                        write.write_all(&encode_header(next, len)).await?;
                        write.write_all(&data[..len]).await?;
                        next += len as u64;
                        last_write = Instant::now();
                    }
                    None if last_write.elapsed() >= HEARTBEAT => {
                        write.write_all(&encode_header(next, 0)).await?;
                        last_write = Instant::now();
                    }
                    None => {
                        // Woken by the next append; the timeout covers heartbeats.
                        let _ = tokio::time::timeout(Duration::from_millis(100), wake).await;
                    }
                }
            }
            Ok(())
        };
        tokio::select! {
            r = reader => r,
            r = writer => r,
        }
    }
}
