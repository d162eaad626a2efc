//! Slave side: connects to the master's HA port, reports its CommitLog end, appends what the
//! master streams, reconnects after faults.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::flow::{ClientInfo, FlowMonitor};
use super::wire::{decode_header, HEADER_LEN, TRANSFER_BATCH};
use crate::net::tls::TlsClient;
use crate::store::MessageStore;

const RECONNECT_DELAY: Duration = Duration::from_secs(5);
const HOUSEKEEPING: Duration = Duration::from_secs(20);
/// A frame body larger than this is a protocol error (frames carry ≤ 32 KiB).
const MAX_BODY: usize = 64 * 1024 * 1024;

pub struct HaClient {
    store: Arc<MessageStore>,
    master: Mutex<Option<String>>,
    changed: Notify,
    /// Connected to the master and hearing from it (data or heartbeats).
    connected: AtomicBool,
    tls: Option<Arc<TlsClient>>,
    /// What `haStatus` shows: bytes read per second, last read and last report (ms).
    flow: FlowMonitor,
    last_read_ms: AtomicI64,
    last_write_ms: AtomicI64,
}

impl HaClient {
    /// `tls`: connect to the master over TLS (`tls.enable`).
    pub fn new(store: Arc<MessageStore>, master: Option<String>, tls: Option<Arc<TlsClient>>) -> Arc<Self> {
        Arc::new(Self {
            store,
            tls,
            master: Mutex::new(master.filter(|m| m.len() >= 6)),
            changed: Notify::new(),
            connected: AtomicBool::new(false),
            flow: FlowMonitor::default(),
            last_read_ms: AtomicI64::new(crate::store::now_ms()),
            last_write_ms: AtomicI64::new(crate::store::now_ms()),
        })
    }

    /// The master's HA address as the NameServer reported it.
    pub fn update_master(&self, addr: &str) {
        let mut m = self.master.lock().unwrap_or_else(|e| e.into_inner());
        if m.as_deref() != Some(addr) {
            info!(master = addr, "replicating from a new master HA address");
            *m = Some(addr.to_owned());
            self.changed.notify_waiters();
        }
    }

    pub fn master(&self) -> Option<String> {
        self.master.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the master is reachable now: connected, and heard from within the housekeeping
    /// interval (it sends a heartbeat every 5 s).
    pub fn master_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    /// What `haStatus` shows of this slave's client (`DefaultHAService.getRuntimeInfo`).
    pub fn runtime_info(&self) -> ClientInfo {
        ClientInfo {
            master_addr: self.master(),
            bytes_per_second: self.flow.per_second(),
            last_read_ms: self.last_read_ms.load(Ordering::Acquire),
            last_write_ms: self.last_write_ms.load(Ordering::Acquire),
        }
    }

    async fn report<W: AsyncWrite + Unpin>(&self, write: &mut W) -> std::io::Result<()> {
        write.write_all(&(self.store.commit_log_max_offset() as i64).to_be_bytes()).await?;
        self.last_write_ms.store(crate::store::now_ms(), Ordering::Release);
        Ok(())
    }

    /// Replicates until `shutdown`, reconnecting after errors.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            let Some(addr) = self.master() else {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = self.changed.notified() => continue,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            };
            let result = tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.changed.notified() => Ok(()),
                r = self.replicate(&addr) => r,
            };
            self.connected.store(false, Ordering::Release);
            if let Err(e) = result {
                warn!(master = addr, error = %e, "replication interrupted; reconnecting in 5 s");
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(RECONNECT_DELAY) => {},
                }
            }
        }
    }

    async fn replicate(&self, addr: &str) -> std::io::Result<()> {
        let stream = tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(addr))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
        let _ = stream.set_nodelay(true);
        info!(master = addr, offset = self.store.commit_log_max_offset(), "connected to master for replication");
        match &self.tls {
            None => self.replicate_on(stream).await,
            Some(tls) => self.replicate_on(tls.connect(stream).await?).await,
        }
    }

    async fn replicate_on<S: AsyncRead + AsyncWrite>(&self, stream: S) -> std::io::Result<()> {
        let (read, mut write) = tokio::io::split(stream);
        self.report(&mut write).await?;
        self.connected.store(true, Ordering::Release);
        // A report follows every frame, heartbeats included (the master sends one every 5 s, so
        // the slave reports at least that often), except while more received bytes wait in the
        // buffer: one report then covers them all.
        let mut read = BufReader::with_capacity(TRANSFER_BATCH + 2 * HEADER_LEN, read);
        let mut header = [0u8; HEADER_LEN];
        let mut body = Vec::new();
        loop {
            // Cancelled only when the master has been silent for 20 s: the connection is dropped.
            tokio::time::timeout(HOUSEKEEPING, read.read_exact(&mut header))
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "master silent for 20 s"))??;
            let (offset, len) = decode_header(&header).filter(|(_, l)| *l <= MAX_BODY).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "bad transfer header from master")
            })?;
            body.resize(len, 0);
            read.read_exact(&mut body).await?;
            self.last_read_ms.store(crate::store::now_ms(), Ordering::Release);
            self.flow.add((HEADER_LEN + len) as u64);
            if len > 0 {
                self.store
                    .append_replicated(offset, &body)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            }
            if read.buffer().is_empty() {
                self.report(&mut write).await?;
            }
        }
    }
}
