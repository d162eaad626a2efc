//! HA against hostile clients (issue #25, point 6): whoever connects to a SYNC_MASTER's HA port
//! and writes offsets is credited only with bytes the master sent on that connection, so a
//! forged report completes no send.

use std::time::Duration;

use ferrocket::protocol::{RequestCode, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::broker::{call_addr, send, start_broker, TestBroker};
use super::support::*;

/// A SYNC_MASTER without a slave; a put waits 500 ms for one.
async fn sync_master(dir: &std::path::Path) -> TestBroker {
    start_broker(dir, |c| {
        c.broker_role = "SYNC_MASTER".into();
        c.slave_timeout = 500;
    })
    .await
}

/// The master's HA address, from its configuration (GET_BROKER_CONFIG).
async fn ha_addr(c: &Client, b: &TestBroker) -> String {
    let r = call_addr(c, &b.addr, request(RequestCode::GET_BROKER_CONFIG, &[])).await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    let port = text.lines().find_map(|l| l.strip_prefix("haListenPort=")).expect("haListenPort in the config");
    format!("127.0.0.1:{}", port.trim())
}

/// Reads one transfer frame: (offset, body length).
async fn frame(s: &mut TcpStream) -> (i64, usize) {
    let mut header = [0u8; 12];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut header)).await.unwrap().unwrap();
    let offset = i64::from_be_bytes(header[..8].try_into().unwrap());
    let len = usize::try_from(i32::from_be_bytes(header[8..].try_into().unwrap())).unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.unwrap();
    (offset, len)
}

/// Reproduced on `main` before the fix: the report was taken as the slave's acknowledgement,
/// the master counted an in-sync slave, and the next send answered SUCCESS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_of_i64_max_on_a_fresh_connection_completes_no_send() {
    let dir = tempfile::tempdir().unwrap();
    let b = sync_master(dir.path()).await;
    let c = client();
    let r = call_addr(&c, &b.addr, send("HA", 0, b"before", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SLAVE_NOT_AVAILABLE, "{:?}", r.remark);

    let mut s = TcpStream::connect(ha_addr(&c, &b).await).await.unwrap();
    s.write_all(&i64::MAX.to_be_bytes()).await.unwrap();
    // The master refuses a first report beyond its CommitLog's end: it closes the connection
    // (before the fix it kept it and sent heartbeats).
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut rest)).await;

    let r = call_addr(&c, &b.addr, send("HA", 0, b"after", "A")).await;
    assert_eq!(
        r.response_code(),
        ResponseCode::SLAVE_NOT_AVAILABLE,
        "a forged report completed a send: {:?}",
        r.remark
    );
    assert!(matches!(closed, Ok(Ok(0))), "the master kept the connection: {closed:?}, {} bytes", rest.len());
    b.stop().await;
}

/// Reproduced on `main` before the fix: after a plausible first report (0, an empty slave), a
/// report of i64::MAX was credited whole and the next send answered SUCCESS. Now it is
/// credited with what the master sent on that connection; a slave that reports honestly what
/// it received still completes sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_counts_only_bytes_the_master_sent_on_that_connection() {
    let dir = tempfile::tempdir().unwrap();
    let b = sync_master(dir.path()).await;
    let c = client();
    let r = call_addr(&c, &b.addr, send("HA", 0, b"before", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SLAVE_NOT_AVAILABLE, "{:?}", r.remark);

    let mut s = TcpStream::connect(ha_addr(&c, &b).await).await.unwrap();
    s.write_all(&0i64.to_be_bytes()).await.unwrap();
    // The master streams what it has from the start: the report has been taken.
    let (offset, len) = frame(&mut s).await;
    assert_eq!(offset, 0);
    assert!(len > 0);
    s.write_all(&i64::MAX.to_be_bytes()).await.unwrap();
    // Wait until the master has read that report: it is credited with what this connection was
    // sent (the first frame's end; the first report was credited 0). Without this wait the
    // forged send below could be appended and written to the socket before the report is read,
    // and a report read after its bytes were sent rightly counts them.
    let end = (offset + len as i64) as u64;
    let ha = b.inner.ha_service.clone().expect("a SYNC_MASTER has an HA service");
    let credited = eventually(Duration::from_secs(5), || {
        let ha = ha.clone();
        async move { ha.slave_acks() == vec![end] }
    })
    .await;
    assert!(credited, "the report was never read: acks {:?}, sent up to {end}", ha.slave_acks());
    let r = call_addr(&c, &b.addr, send("HA", 0, b"forged", "A")).await;
    assert_eq!(
        r.response_code(),
        ResponseCode::FLUSH_SLAVE_TIMEOUT,
        "a forged report completed a send: {:?}",
        r.remark
    );

    // From here on an honest slave: it reports the end of each frame it received.
    let mut received = offset + len as i64;
    let honest = tokio::spawn(async move {
        loop {
            let (offset, len) = frame(&mut s).await;
            assert_eq!(offset, received, "the master streams on from where it was");
            received += len as i64;
            s.write_all(&received.to_be_bytes()).await.unwrap();
        }
    });
    let r = call_addr(&c, &b.addr, send("HA", 0, b"replicated", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "an honest report completes the send: {:?}", r.remark);
    honest.abort();
    b.stop().await;
}
