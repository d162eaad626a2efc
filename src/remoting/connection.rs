//! One TCP connection: a reader task, a writer task, and the table of our requests awaiting
//! their responses.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, info, warn, Instrument};

use super::frame_writer::FrameWriter;
use super::RemotingError;
use crate::protocol::{FrameLimits, RemotingCodec, RemotingCommand, RequestCode, ResponseCode};

/// Frames queued for the writer per connection.
const WRITE_QUEUE: usize = 1024;
/// Requests from one peer processed at once; the reader stops reading beyond this.
const MAX_IN_FLIGHT: usize = 256;
/// Requests of one peer that may wait parked (long-polling pulls) without counting as in
/// flight. A Java client process shares one connection between all its consumers, each
/// parking one pull per queue; beyond this, parked requests count again.
const MAX_PARKED: usize = 16_384;

tokio::task_local! {
    /// The in-flight slot of the request this task serves.
    static SLOT: std::cell::RefCell<Slot>;
}

/// What a request task holds: an in-flight permit, or once parked a parked permit.
enum Slot {
    InFlight { _permit: OwnedSemaphorePermit, parked: Arc<Semaphore> },
    Parked { _permit: OwnedSemaphorePermit },
    Released,
}

/// Marks the request served by the current task as parked (a long-polling pull waiting for
/// messages): it stops counting against its connection's in-flight limit, so other requests
/// of the same peer are read and answered meanwhile (Java suspends such pulls off its request
/// threads). Does nothing outside a request task or once the peer has `MAX_PARKED` parked.
pub fn park_current_request() {
    let _ = SLOT.try_with(|slot| {
        let mut slot = slot.borrow_mut();
        if let Slot::InFlight { parked, .. } = &*slot {
            if let Ok(p) = parked.clone().try_acquire_owned() {
                // Dropping the in-flight permit lets the reader take the next request.
                *slot = Slot::Parked { _permit: p };
            }
        }
    });
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Per-connection settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnectionOptions {
    pub limits: FrameLimits,
    /// Close the connection after this long without reading or writing a frame
    /// (`serverChannelMaxIdleTimeSeconds`); `None` keeps it open.
    pub idle_timeout: Option<Duration>,
}

/// Serves the requests a peer sends on a connection.
pub trait RequestHandler: Send + Sync + 'static {
    /// Handles one request; `None` sends nothing (oneway requests are never answered anyway).
    fn handle(
        &self,
        conn: &Arc<Connection>,
        request: RemotingCommand,
    ) -> impl Future<Output = Option<RemotingCommand>> + Send;

    /// Called by the connection's writer before it writes what is queued (answers, and requests
    /// to the peer): the place to make durable what those answers acknowledge, once for all of
    /// them. `Err` (naming why) closes the connection without writing them.
    fn before_write(&self) -> Result<(), String> {
        Ok(())
    }

    /// Called once when the connection has closed, for whatever reason.
    fn connection_closed(&self, _conn: &Arc<Connection>) {}

    /// The node whose `rocketmq_rpc_latency` records this handler's requests; `None` records
    /// nothing.
    fn metrics_node(&self) -> Option<&crate::telemetry::Node> {
        None
    }
}

type Pending = Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>;

/// A handle on an open connection, used to send requests to the peer and to identify it.
#[derive(Debug)]
pub struct Connection {
    id: u64,
    peer: SocketAddr,
    tx: mpsc::Sender<RemotingCommand>,
    pending: Pending,
    next_opaque: AtomicI32,
    closed: CancellationToken,
    born: Instant,
    /// Milliseconds after `born` of the last frame read or written.
    last_io_ms: AtomicU64,
}

impl Connection {
    /// Splits `stream` into reader and writer tasks on `tracker`, serving requests with `handler`.
    pub fn spawn<H: RequestHandler>(
        stream: TcpStream,
        handler: Arc<H>,
        options: ConnectionOptions,
        tracker: &TaskTracker,
        shutdown: &CancellationToken,
    ) -> std::io::Result<Arc<Connection>> {
        let peer = stream.peer_addr()?;
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        Ok(Self::start(peer, read, write, handler, options, tracker, shutdown))
    }

    /// As [`Self::spawn`], for a stream that is not a plain socket (TLS).
    pub fn spawn_stream<H, S>(
        stream: S,
        peer: SocketAddr,
        handler: Arc<H>,
        options: ConnectionOptions,
        tracker: &TaskTracker,
        shutdown: &CancellationToken,
    ) -> Arc<Connection>
    where
        H: RequestHandler,
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(stream);
        Self::start(peer, read, write, handler, options, tracker, shutdown)
    }

    fn start<H, R, W>(
        peer: SocketAddr,
        read: R,
        write: W,
        handler: Arc<H>,
        options: ConnectionOptions,
        tracker: &TaskTracker,
        shutdown: &CancellationToken,
    ) -> Arc<Connection>
    where
        H: RequestHandler,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let conn = Arc::new(Connection {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            peer,
            tx,
            pending: Mutex::new(HashMap::new()),
            next_opaque: AtomicI32::new(1),
            closed: shutdown.child_token(),
            born: Instant::now(),
            last_io_ms: AtomicU64::new(0),
        });
        let limits = options.limits;
        let span = tracing::info_span!("conn", id = conn.id, peer = %peer);
        tracker.spawn(write_loop(write, rx, conn.clone(), handler.clone()).instrument(span.clone()));
        let reader =
            read_loop(FramedRead::new(read, RemotingCodec::new(limits)), conn.clone(), handler, tracker.clone());
        tracker.spawn(reader.instrument(span.clone()));
        if let Some(idle) = options.idle_timeout {
            tracker.spawn(idle_watch(conn.clone(), idle).instrument(span));
        }
        conn
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Resolves once the connection has closed.
    pub async fn closed_signal(&self) {
        self.closed.cancelled().await
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Closes the connection: both tasks stop and the handler is told.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Sends a request and waits for its response.
    pub async fn invoke(
        &self,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.opaque = opaque;
        let (done, wait) = oneshot::channel();
        self.pending_table().insert(opaque, done);
        let result = tokio::time::timeout(timeout, async {
            self.tx.send(request).await.map_err(|_| self.closed_error())?;
            wait.await.map_err(|_| self.closed_error())
        })
        .await;
        self.pending_table().remove(&opaque);
        match result {
            Ok(r) => r,
            Err(_) => Err(RemotingError::Timeout { addr: self.peer.to_string(), millis: timeout.as_millis() }),
        }
    }

    /// Sends a oneway request; nothing comes back.
    pub async fn invoke_oneway(&self, mut request: RemotingCommand) -> Result<(), RemotingError> {
        request.opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.mark_oneway();
        self.tx.send(request).await.map_err(|_| self.closed_error())
    }

    fn touch(&self) {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_io_ms.store(now, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        self.born.elapsed().saturating_sub(Duration::from_millis(self.last_io_ms.load(Ordering::Relaxed)))
    }

    fn closed_error(&self) -> RemotingError {
        RemotingError::Closed(self.peer.to_string())
    }

    fn pending_table(&self) -> std::sync::MutexGuard<'_, HashMap<i32, oneshot::Sender<RemotingCommand>>> {
        // A panic while holding this lock cannot leave the map inconsistent; keep going.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn complete(&self, response: RemotingCommand) {
        match self.pending_table().remove(&response.opaque) {
            Some(done) => {
                let _ = done.send(response);
            }
            None => {
                debug!(opaque = response.opaque, code = response.code, "response matches no pending request; dropped")
            }
        }
    }
}

async fn read_loop<H: RequestHandler, R: AsyncRead + Unpin>(
    mut frames: FramedRead<R, RemotingCodec>,
    conn: Arc<Connection>,
    handler: Arc<H>,
    tracker: TaskTracker,
) {
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let parked = Arc::new(Semaphore::new(MAX_PARKED));
    loop {
        let next = tokio::select! {
            _ = conn.closed.cancelled() => break,
            next = frames.next() => next,
        };
        let cmd = match next {
            None => break,
            Some(Ok(cmd)) => cmd,
            // A peer that resets its connection (a client process exiting) is not misbehaving.
            Some(Err(crate::protocol::ProtocolError::Io(e)))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::BrokenPipe
                ) =>
            {
                debug!(error = %e, "connection reset by peer");
                break;
            }
            Some(Err(e)) => {
                warn!(error = %e, "closing connection: undecodable frame");
                break;
            }
        };
        conn.touch();
        if cmd.is_response() {
            conn.complete(cmd);
            continue;
        }
        let Ok(permit) = in_flight.clone().acquire_owned().await else { break };
        let (conn2, handler2) = (conn.clone(), handler.clone());
        let slot = std::cell::RefCell::new(Slot::InFlight { _permit: permit, parked: parked.clone() });
        let mut task = Box::pin(SLOT.scope(slot, async move {
            let (oneway, code, start) = (cmd.is_oneway(), cmd.code, std::time::Instant::now());
            let response = handler2.handle(&conn2, cmd).await;
            let parked = SLOT.with(|s| std::mem::replace(&mut *s.borrow_mut(), Slot::Released));
            if let Some(node) = handler2.metrics_node() {
                let answered = response.as_ref().map_or(0, |r| r.code);
                let long_polling = matches!(parked, Slot::Parked { .. });
                let millis = start.elapsed().as_secs_f64() * 1e3;
                // Label values from a closed set: a code the peer made up is `unknown`.
                let request = RequestCode(code).name().map(|_| code);
                let response = ResponseCode(answered).name().map(|_| answered);
                crate::telemetry::rpc_latency(
                    node,
                    crate::telemetry::Protocol::Remoting,
                    request,
                    response,
                    long_polling,
                    oneway,
                    millis,
                );
            }
            drop(parked);
            if let (false, Some(resp)) = (oneway, response) {
                let _ = conn2.tx.send(resp).await;
            }
        }));
        // Most requests (a send under ASYNC_FLUSH, a query) finish without waiting for anything:
        // they run here, on the reader. Spawning each one cost an allocation, the task list's
        // locks and often a wake-up of the other worker to steal it. A request that has to wait
        // (a long-polling pull, a flush, a call to the client) becomes a task; it polls again at
        // once, so nothing it registered with the no-op waker here is lost. A handler that panics
        // here loses its request, as it would in a task, and the connection goes on.
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.as_mut().poll(&mut cx))) {
            // Polled here, it ran in the connection's span already; as a task it needs it again.
            Ok(std::task::Poll::Pending) => drop(tracker.spawn(task.in_current_span())),
            Ok(std::task::Poll::Ready(())) => {}
            Err(_) => error!("request handler panicked; that request is not answered"),
        }
    }
    conn.closed.cancel();
    conn.pending_table().clear();
    handler.connection_closed(&conn);
    debug!("connection closed");
}

async fn write_loop<W: AsyncWrite + Unpin, H: RequestHandler>(
    mut sink: W,
    mut rx: mpsc::Receiver<RemotingCommand>,
    conn: Arc<Connection>,
    handler: Arc<H>,
) {
    let closed = conn.closed.clone();
    let mut out = FrameWriter::default();
    loop {
        let cmd = tokio::select! {
            _ = closed.cancelled() => break,
            cmd = rx.recv() => match cmd {
                Some(c) => c,
                None => break,
            },
        };
        // Gather what is queued, then write it with as few syscalls as possible. When only one
        // frame is ready, let the handlers that are about to answer run first (one pass of the
        // scheduler): with many requests in flight this turns a write per response into one
        // write for several.
        out.push(cmd);
        let mut yielded = false;
        while out.len() < 1 << 20 {
            match rx.try_recv() {
                Ok(more) => out.push(more),
                Err(_) if !yielded && out.frames() == 1 => {
                    yielded = true;
                    tokio::task::yield_now().await;
                }
                Err(_) => break,
            }
        }
        if let Err(why) = handler.before_write() {
            warn!(error = %why, "closing connection: its answers cannot be sent");
            break;
        }
        if let Err(e) = out.write_to(&mut sink).await {
            debug!(error = %e, "write failed; closing connection");
            break;
        }
        conn.touch();
    }
    closed.cancel();
    let _ = sink.shutdown().await;
}

/// Closes the connection once it has been idle for `idle`.
async fn idle_watch(conn: Arc<Connection>, idle: Duration) {
    loop {
        let wait = idle.saturating_sub(conn.idle_for()).max(Duration::from_millis(10));
        tokio::select! {
            _ = conn.closed.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        if conn.idle_for() >= idle {
            info!(idle_secs = idle.as_secs(), "closing idle connection");
            conn.close();
            return;
        }
    }
}
