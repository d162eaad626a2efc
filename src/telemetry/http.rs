//! The scrape endpoint: `GET /metrics` answers the Prometheus text format; anything else 404.
//!
//! Hand-written rather than the exporter's `http-listener` feature: the answer must run the
//! scrape-time collectors first (gauges computed from broker state, as Java's observable
//! gauges are), which that listener cannot do, and it would bring in an HTTP stack for one GET.
//! One request per connection (`Connection: close`), head at most 8 KiB, 10 s to send it.
//!
//! May import: nothing outside `telemetry/` (the area's rule: docs/architecture.md).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

const MAX_HEAD: usize = 8 << 10;

/// Addresses this process serves metrics on: a standalone process's NameServer and broker (or
/// the brokers of one test process) ask for the same one, and one listener serves them all.
fn serving() -> &'static Mutex<HashSet<String>> {
    static SERVING: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SERVING.get_or_init(Mutex::default)
}

/// Starts serving `/metrics` on `host:port` (an empty host means every interface) until
/// `shutdown`, unless this process already does. A port that cannot be bound is a warning
/// naming the key, not a reason to stop the broker. Returns the bound address.
pub async fn serve(host: &str, port: u16, shutdown: CancellationToken) -> Option<SocketAddr> {
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    let addr = format!("{host}:{port}");
    if !serving().lock().unwrap_or_else(|e| e.into_inner()).insert(addr.clone()) {
        return None;
    }
    super::handle()?;
    let listener = match TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            serving().lock().unwrap_or_else(|e| e.into_inner()).remove(&addr);
            warn!(addr, error = %e, "cannot serve metrics (metricsPromExporterHost/metricsPromExporterPort); running without the endpoint");
            return None;
        }
    };
    let local = listener.local_addr().ok();
    info!(addr = ?local, "serving Prometheus metrics at /metrics");
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break,
                a = listener.accept() => a,
            };
            match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(async move {
                        if let Err(e) = answer(stream).await {
                            debug!(error = %e, "metrics request failed");
                        }
                    });
                }
                Err(e) => {
                    warn!(error = %e, "accepting a metrics connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        serving().lock().unwrap_or_else(|e| e.into_inner()).remove(&addr);
    });
    local
}

async fn answer(mut stream: TcpStream) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
    if !matches!(read, Ok(Ok(()))) {
        return Ok(());
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let mut parts = std::str::from_utf8(line).unwrap_or("").split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, kind, body) = match (method, path) {
        ("GET", "/metrics") => {
            let body = tokio::task::spawn_blocking(super::render).await.unwrap_or_default();
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
        }
        ("GET", _) => ("404 Not Found", "text/plain; charset=utf-8", "metrics are at /metrics\n".to_owned()),
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", "only GET /metrics\n".to_owned()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
