//! Master side: accepts slaves, streams CommitLog bytes to each from the offset it reports, and
//! tracks how far slaves have acknowledged, for SYNC_MASTER puts.
//!
//! The HA port authenticates nobody, so a report is credited only with what this connection
//! was sent (Java takes every report as it comes: one `i64::MAX` completes every SYNC put):
//! ```text
//! first report r:  r < 0 or r > master's end       -> connection refused (closed, warned)
//!                  streaming starts at r (0: the start of the last CommitLog segment)
//!                  credited: r
//! later report r:  credited: min(r, end of the last frame written to this connection)
//!                  (lower than the last one: credited as it is; the slave lost bytes)
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Buf;
use std::net::SocketAddr;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use super::flow::{FlowMonitor, SlaveInfo};
use super::wire::{encode_header, REPORT_LEN, TRANSFER_BATCH};
use crate::net::{Listener, ListenerConfig, Stream};
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

/// A SYNC_MASTER put waiting for its bytes to reach `needed` slaves.
struct Waiter {
    end: u64,
    needed: usize,
    done: oneshot::Sender<()>,
}

pub struct HaService {
    store: Arc<MessageStore>,
    /// Acknowledged offset per connected slave.
    acks: Mutex<HashMap<u64, u64>>,
    /// Puts waiting for acknowledgements; each ack completes exactly the ones it covers (no
    /// wake-up of every waiter per ack).
    waiters: Mutex<Vec<Waiter>>,
    next_id: AtomicU64,
    /// `haMaxGapNotInSync`: a slave further behind than this does not count for SYNC_MASTER.
    max_gap: u64,
    /// What `haStatus` shows of each connected slave.
    conns: Mutex<HashMap<u64, Conn>>,
}

/// A connected slave, as `haStatus` shows it.
struct Conn {
    addr: SocketAddr,
    /// The end of the last frame written to it (NOTHING_YET before its first report).
    sent_to: Arc<AtomicU64>,
    flow: Arc<FlowMonitor>,
}

impl HaService {
    pub fn new(store: Arc<MessageStore>, max_gap: u64) -> Arc<Self> {
        Arc::new(Self {
            store,
            acks: Mutex::new(HashMap::new()),
            waiters: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            max_gap,
            conns: Mutex::new(HashMap::new()),
        })
    }

    fn conns(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Conn>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `haMaxGapNotInSync`.
    pub fn max_gap(&self) -> u64 {
        self.max_gap
    }

    /// Each connected slave: address, acknowledged offset, bytes sent in the last second, where
    /// the next frame starts (`DefaultHAService.getRuntimeInfo`).
    pub fn slaves(&self) -> Vec<SlaveInfo> {
        let acks = self.acks().clone();
        let mut out: Vec<SlaveInfo> = self
            .conns()
            .iter()
            .map(|(id, c)| {
                let sent = c.sent_to.load(Ordering::Acquire);
                SlaveInfo {
                    addr: c.addr.to_string(),
                    ack_offset: acks.get(id).copied().unwrap_or(0),
                    bytes_per_second: c.flow.per_second(),
                    transfer_from: if sent == NOTHING_YET { -1 } else { sent as i64 },
                }
            })
            .collect();
        out.sort_by(|a, b| a.addr.cmp(&b.addr));
        out
    }

    fn acks(&self) -> std::sync::MutexGuard<'_, HashMap<u64, u64>> {
        self.acks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The CommitLog offset each connected slave acknowledged.
    pub fn slave_acks(&self) -> Vec<u64> {
        self.acks().values().copied().collect()
    }

    /// Slaves connected and within `haMaxGapNotInSync` of the master's end.
    pub fn in_sync_slaves(&self) -> usize {
        let end = self.store.commit_log_max_offset();
        self.acks().values().filter(|a| end.saturating_sub(**a) <= self.max_gap).count()
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, Vec<Waiter>> {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The offset that at least `needed` slaves have acknowledged (0 if fewer are connected).
    fn replicated_to(acks: &HashMap<u64, u64>, needed: usize) -> u64 {
        if needed == 0 {
            return u64::MAX;
        }
        let mut v: Vec<u64> = acks.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v.get(needed - 1).copied().unwrap_or(0)
    }

    /// Waits until `needed` slaves acknowledged `end_offset`, or `timeout`.
    pub async fn wait_for_replicas(&self, end_offset: u64, needed: usize, timeout: Duration) -> ReplicaWait {
        if self.in_sync_slaves() < needed {
            return ReplicaWait::NoSlave;
        }
        let rx = {
            // Checked and registered under the waiters lock, which every ack takes after
            // recording itself: an ack cannot slip in between.
            let mut waiters = self.waiters();
            if Self::replicated_to(&self.acks(), needed) >= end_offset {
                return ReplicaWait::Ok;
            }
            if waiters.len() >= 1024 {
                // Timed-out puts are normally dropped by the next ack; a silent slave sends none.
                waiters.retain(|w| !w.done.is_closed());
            }
            let (done, rx) = oneshot::channel();
            waiters.push(Waiter { end: end_offset, needed, done });
            rx
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(())) => ReplicaWait::Ok,
            _ => ReplicaWait::Timeout,
        }
    }

    /// Records a slave's acknowledged offset and completes the puts it covers.
    fn ack(&self, slave: u64, offset: u64) {
        self.acks().insert(slave, offset);
        // Lock order as in wait_for_replicas: waiters, then acks.
        let mut waiters = self.waiters();
        if waiters.is_empty() {
            return;
        }
        let acks = self.acks();
        let mut reached: Vec<(usize, u64)> = Vec::new();
        let mut i = 0;
        while i < waiters.len() {
            let w = &waiters[i];
            let to = match reached.iter().find(|(n, _)| *n == w.needed) {
                Some((_, to)) => *to,
                None => {
                    let to = Self::replicated_to(&acks, w.needed);
                    reached.push((w.needed, to));
                    to
                }
            };
            if w.end <= to || w.done.is_closed() {
                let _ = waiters.swap_remove(i).done.send(());
            } else {
                i += 1;
            }
        }
    }

    /// Serves slaves accepted by `listener` until `shutdown`; over TLS as the listener's
    /// `tls.server.mode` says (a Java slave's first bytes are an offset report, never a TLS
    /// record, so permissive mode serves both).
    pub async fn serve(self: Arc<Self>, listener: Listener, shutdown: CancellationToken, tracker: TaskTracker) {
        let stop = shutdown.clone();
        let serve = move |stream: Stream, peer: SocketAddr| {
            let (me, stop) = (self.clone(), stop.child_token());
            async move {
                info!(slave = %peer, "slave connected for replication");
                let id = me.next_id.fetch_add(1, Ordering::Relaxed);
                let conn = Conn { addr: peer, sent_to: Arc::new(AtomicU64::new(NOTHING_YET)), flow: Arc::default() };
                let (sent_to, flow) = (conn.sent_to.clone(), conn.flow.clone());
                me.conns().insert(id, conn);
                if let Err(e) = me.clone().serve_slave(id, stream, sent_to, flow, stop).await {
                    warn!(slave = %peer, error = %e, "replication connection closed");
                }
                me.conns().remove(&id);
                me.acks().remove(&id);
            }
        };
        listener.serve(serve, shutdown, tracker).await;
    }

    /// How the HA listener accepts: a slave's first report may come a heartbeat interval
    /// after it connects; one silent for the housekeeping interval is dropped.
    pub fn listener_timeouts(config: &mut ListenerConfig) {
        config.first_byte_timeout = Some(HOUSEKEEPING);
        config.handshake_timeout = HOUSEKEEPING;
    }

    /// `sent_to`: the end of the last frame written to this slave (NOTHING_YET until its first
    /// report says where to start), what its reports are capped at; `flow` counts bytes sent.
    async fn serve_slave<S>(
        self: Arc<Self>,
        id: u64,
        stream: S,
        sent_to: Arc<AtomicU64>,
        flow: Arc<FlowMonitor>,
        stop: CancellationToken,
    ) -> std::io::Result<()>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut read, mut write) = tokio::io::split(stream);
        let started = Arc::new(tokio::sync::Notify::new());
        let reader = {
            let (me, sent_to, started, stop) = (self.clone(), sent_to.clone(), started.clone(), stop.clone());
            async move {
                let mut buf = [0u8; REPORT_LEN];
                loop {
                    let r = tokio::select! {
                        _ = stop.cancelled() => return Ok(()),
                        r = tokio::time::timeout(HOUSEKEEPING, read.read_exact(&mut buf)) => r,
                    };
                    match r {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return Err(e),
                        Err(_) => {
                            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "slave silent for 20 s"))
                        }
                    }
                    let sent = sent_to.load(Ordering::Acquire);
                    let max = me.store.commit_log_max_offset();
                    let credited = credit(i64::from_be_bytes(buf), (sent != NOTHING_YET).then_some(sent), max)
                        .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidData, why))?;
                    if sent == NOTHING_YET {
                        let segment = me.store.config().mapped_file_size_commit_log as u64;
                        sent_to.store(start_offset(credited, max, segment), Ordering::Release);
                        started.notify_one();
                    }
                    me.ack(id, credited);
                }
            }
        };
        let writer = async move {
            // Nothing is sent until the slave's first report says where to start.
            while sent_to.load(Ordering::Acquire) == NOTHING_YET {
                tokio::select! {
                    _ = stop.cancelled() => return Ok(()),
                    _ = started.notified() => {},
                }
            }
            let mut next = sent_to.load(Ordering::Acquire);
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
                        // Header and bytes in one vectored write.
                        let header = encode_header(next, len);
                        let mut frame = Buf::chain(&header[..], &data[..len]);
                        write.write_all_buf(&mut frame).await?;
                        next += len as u64;
                        flow.add(len as u64);
                        sent_to.store(next, Ordering::Release);
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

/// `sent_to` before the slave's first report.
const NOTHING_YET: u64 = u64::MAX;

/// The offset a slave's report `report` is credited with: `sent` is the end of what this
/// connection was sent (`None` before the first report), `master_end` the CommitLog's end. `Err`
/// (why) refuses the connection: a negative offset, or a first report beyond the master's end
/// (that slave holds bytes this master never wrote: streaming on from there would leave it
/// with a CommitLog that is not the master's).
fn credit(report: i64, sent: Option<u64>, master_end: u64) -> Result<u64, String> {
    let report = u64::try_from(report).map_err(|_| format!("slave reported a negative offset {report}"))?;
    match sent {
        Some(sent) => Ok(report.min(sent)),
        None if report > master_end => Err(format!(
            "slave reported offset {report}, beyond this master's CommitLog end {master_end}: \
             its CommitLog is not a copy of this master's; refused"
        )),
        None => Ok(report),
    }
}

/// Where streaming to a slave starts after its first report: at its end, or for an empty slave
/// (0) at the start of the master's last CommitLog segment.
fn start_offset(report: u64, master_end: u64, segment: u64) -> u64 {
    match report {
        0 => master_end - master_end % segment.max(1),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreConfig;

    #[test]
    fn reports_are_credited_with_what_the_connection_was_sent() {
        // First report: taken as the slave's end when the master has that much.
        assert_eq!(credit(0, None, 0), Ok(0));
        assert_eq!(credit(500, None, 500), Ok(500));
        assert!(credit(501, None, 500).unwrap_err().contains("beyond this master's CommitLog end 500"));
        assert!(credit(i64::MAX, None, 500).is_err());
        assert!(credit(-1, None, 500).unwrap_err().contains("negative"));
        // Later reports: capped at what was sent, before anything was sent too.
        assert_eq!(credit(i64::MAX, Some(300), 500), Ok(300));
        assert_eq!(credit(400, Some(300), 500), Ok(300), "nothing sent beyond the start yet");
        assert_eq!(credit(250, Some(300), 500), Ok(250), "a report going backwards is credited lower");
        assert!(credit(-5, Some(300), 500).is_err());
        assert_eq!(start_offset(0, 2500, 1000), 2000);
        assert_eq!(start_offset(700, 2500, 1000), 700);
    }

    fn service(dir: &std::path::Path) -> Arc<HaService> {
        let config = StoreConfig { store_path_root_dir: dir.to_owned(), ..Default::default() };
        HaService::new(Arc::new(MessageStore::open(config).unwrap()), u64::MAX)
    }

    #[test]
    fn replicated_to_is_the_nth_highest_ack() {
        let acks: HashMap<u64, u64> = [(1, 100), (2, 300), (3, 200)].into();
        assert_eq!(HaService::replicated_to(&acks, 0), u64::MAX);
        assert_eq!(HaService::replicated_to(&acks, 1), 300);
        assert_eq!(HaService::replicated_to(&acks, 2), 200);
        assert_eq!(HaService::replicated_to(&acks, 3), 100);
        assert_eq!(HaService::replicated_to(&acks, 4), 0);
    }

    #[tokio::test]
    async fn a_put_completes_once_enough_slaves_acknowledged_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let ha = service(dir.path());
        assert_eq!(ha.wait_for_replicas(10, 1, Duration::from_millis(10)).await, ReplicaWait::NoSlave);
        ha.ack(1, 0);
        ha.ack(2, 0);
        let waiting = {
            let ha = ha.clone();
            tokio::spawn(async move { ha.wait_for_replicas(500, 2, Duration::from_secs(10)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        ha.ack(1, 600);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "one slave of the two needed acknowledged");
        ha.ack(2, 499);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "the second slave is short of the put's end");
        ha.ack(2, 500);
        assert_eq!(waiting.await.unwrap(), ReplicaWait::Ok);
        // Already covered: answered without waiting.
        assert_eq!(ha.wait_for_replicas(400, 2, Duration::from_millis(1)).await, ReplicaWait::Ok);
        // Not covered in time.
        assert_eq!(ha.wait_for_replicas(700, 1, Duration::from_millis(10)).await, ReplicaWait::Timeout);
        ha.ack(1, 650);
        assert!(ha.waiters().is_empty(), "a timed-out waiter is dropped by the next ack");
    }
}
