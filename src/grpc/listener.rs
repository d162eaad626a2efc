//! From accepted connections to tonic: `net::Listener` accepts (maxConnections, the TLS
//! decision on the first byte, the handshake with ALPN h2), each ready stream goes to tonic's
//! server through a channel, and the listener's connection task lives until tonic drops the
//! stream, so connection counts and permits stay true.
//!
//! May import: `net`, `grpc`.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use super::pb::messaging_service_server::MessagingServiceServer;
use super::service::Service;
use super::Grpc;
use crate::net::{Listener, Stream};

/// Ready connections waiting for tonic to take them.
const HANDOFF_QUEUE: usize = 64;

/// An accepted stream as tonic serves it; dropping it ends the listener's connection task.
struct Conn {
    stream: Stream,
    peer: SocketAddr,
    _done: oneshot::Sender<()>,
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        tonic::transport::server::TcpConnectInfo { local_addr: None, remote_addr: Some(self.peer) }
    }
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

pub async fn serve(g: Arc<Grpc>, listener: Listener, shutdown: CancellationToken, tracker: TaskTracker) {
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    info!(addr, advertised = format!("{}:{}", g.advertised.0, g.advertised.1), "gRPC listener started");
    let (tx, rx) = mpsc::channel::<Conn>(HANDOFF_QUEUE);
    let closing = shutdown.clone();
    let accept = listener.serve(
        move |stream, peer| {
            let (tx, closing) = (tx.clone(), closing.clone());
            async move {
                let (done, served) = oneshot::channel();
                let handed = tokio::select! {
                    _ = closing.cancelled() => false,
                    sent = tx.send(Conn { stream, peer, _done: done }) => sent.is_ok(),
                };
                if handed {
                    // Until tonic drops the stream (the connection closed).
                    let _ = served.await;
                }
            }
        },
        shutdown.clone(),
        tracker,
    );
    let incoming =
        futures_util::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|c| (Ok::<_, std::io::Error>(c), rx)) },
        );
    // A request holds at most a few messages of maxMessageSize each.
    let max_request = g.core.config.max_message_size.saturating_mul(4).saturating_add(1 << 20);
    let service = MessagingServiceServer::new(Service(g.clone()))
        .max_decoding_message_size(max_request)
        .max_encoding_message_size(max_request);
    let stop = shutdown.clone();
    let grpc_stop = g.shutdown.clone();
    let server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .max_concurrent_streams(Some(1024))
        // Headers are a client id, a few x-mq-* values and a signature: 64 KiB, not h2's 16 MiB.
        .http2_max_header_list_size(Some(64 * 1024))
        .serve_with_incoming_shutdown(service, incoming, async move {
            stop.cancelled().await;
            grpc_stop.cancel();
        });
    let (_, served) = tokio::join!(accept, server);
    if let Err(e) = served {
        warn!(error = %e, "gRPC server stopped");
    }
}
