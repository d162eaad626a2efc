//! Malformed frames over real TCP: each closes only its own connection with a warning; the
//! server keeps serving everyone else and nothing persisted changes.

use std::time::Duration;

use ferrocket::protocol::{RequestCode, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::support::*;

fn frame(word: u32, header: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + header.len()) as u32).to_be_bytes());
    f.extend_from_slice(&word.to_be_bytes());
    f.extend_from_slice(header);
    f
}

/// Sends `bytes` (then half-closes if `eof`) and expects the server to close the connection.
async fn expect_closed(addr: std::net::SocketAddr, bytes: &[u8], eof: bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    if eof {
        s.shutdown().await.unwrap();
    }
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(3), s.read(&mut buf)).await;
    match read {
        Ok(Ok(0)) | Ok(Err(_)) => {}
        Ok(Ok(n)) => panic!("server answered {n} bytes to malformed input {bytes:02x?}"),
        Err(_) => panic!("server kept the connection open after malformed input {bytes:02x?}"),
    }
}

#[tokio::test]
async fn malformed_frames_close_only_their_connection() {
    let logs = logs();
    let ns = TestNamesrv::start(|c| c.frame_max_length = 1024 * 1024).await;
    let c = client();
    let put = request(RequestCode::PUT_KV_CONFIG, &[("namespace", "ns"), ("key", "k"), ("value", "v")]);
    assert_eq!(call(&c, ns.addr, put).await.response_code(), ResponseCode::SUCCESS);
    let kv_path = ns.dir.path().join("kvConfig.json");
    let kv_before = std::fs::read(&kv_path).unwrap();

    let json = |h: &str| frame(h.len() as u32, h.as_bytes());
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("negative frame length", (-5i32).to_be_bytes().to_vec(), false),
        ("exceeds the limit", 0x7FFF_FFFFu32.to_be_bytes().to_vec(), false),
        ("exceeds the limit", (2u32 * 1024 * 1024).to_be_bytes().to_vec(), false),
        ("below 4", 2u32.to_be_bytes().to_vec(), false),
        ("exceeds frame length", frame(9, b"{}"), false),
        ("invalid JSON header", json("{not json"), false),
        ("invalid JSON header", json("[1,2,3]"), false),
        ("unknown header serialize type 5", frame(0x0500_0002, b"{}"), false),
        ("invalid ROCKETMQ binary header", frame(0x0100_0003, &[0, 1, 2]), false),
        ("bytes remaining on stream", json(r#"{"code":105,"opaque":1}"#)[..10].to_vec(), true),
    ];
    for (expect_log, bytes, eof) in &cases {
        expect_closed(ns.addr, bytes, *eof).await;
        let logged = eventually(Duration::from_secs(2), || async {
            String::from_utf8_lossy(&logs.lock().unwrap()).contains(expect_log)
        })
        .await;
        assert!(logged, "no warning containing '{expect_log}' was logged");
    }

    // The earlier client's connection and new ones are still served.
    let get = request(RequestCode::GET_KV_CONFIG, &[("namespace", "ns"), ("key", "k")]);
    assert_eq!(call(&c, ns.addr, get.clone()).await.ext_fields["value"], "v");
    assert_eq!(call(&client(), ns.addr, get).await.ext_fields["value"], "v");
    assert_eq!(std::fs::read(&kv_path).unwrap(), kv_before, "KV file changed by malformed input");
}
