//! Parked (long-polling) pulls do not hold up other requests on their connection: a Java client
//! process shares one connection per broker between all its producers and consumers, and its
//! push consumers park one pull per queue for up to 15 s. Raw frames over one socket, so the
//! order on the wire is exact: 1,000 pulls, then a query and a send.

use std::collections::HashMap;
use std::time::Duration;

use bytes::BytesMut;
use ferrocket::protocol::frame::encode_frame;
use ferrocket::protocol::{FrameLimits, RemotingCodec, RemotingCommand, RequestCode, ResponseCode};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::codec::FramedRead;

use super::broker::{call_addr, pull, records, send, start_broker, wait_max_offset};
use super::support::*;

const PARKED: i32 = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_parked_pulls_leave_the_connection_free() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker(dir.path(), |_| {}).await;
    let c = client();
    let r = call_addr(&c, &b.addr, send("PARK", 0, b"first", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
    wait_max_offset(&c, &b.addr, "PARK", 0, 1).await;

    let stream = TcpStream::connect(&b.addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut responses = FramedRead::new(read, RemotingCodec::new(FrameLimits::default()));
    let mut out = BytesMut::new();
    let mut frame = |opaque: i32, mut cmd: RemotingCommand| {
        cmd.opaque = opaque;
        encode_frame(&cmd, &mut out);
    };
    // Opaques 1..=1000: pulls at the end of queue 0, each parked for up to 60 s.
    for opaque in 1..=PARKED {
        frame(opaque, pull("PARK", 0, 1, 4 | 2, 60_000));
    }
    // Then, on the same connection, a query and a send to another queue.
    let (max_opaque, send_opaque) = (PARKED + 1, PARKED + 2);
    frame(max_opaque, request(RequestCode::GET_MAX_OFFSET, &[("topic", "PARK"), ("queueId", "0")]));
    frame(send_opaque, send("PARK", 1, b"other queue", "A"));
    write.write_all(&out).await.unwrap();

    // The query and the send are answered while every pull is still parked.
    let mut answered = HashMap::new();
    for _ in 0..2 {
        let r = next(&mut responses).await;
        assert!(r.opaque > PARKED, "pull {} answered before any message arrived", r.opaque);
        answered.insert(r.opaque, r);
    }
    assert_eq!(answered[&max_opaque].ext_fields["offset"], "1");
    assert_eq!(answered[&send_opaque].response_code(), ResponseCode::SUCCESS);

    // A message on queue 0 wakes every parked pull with it.
    let r = call_addr(&c, &b.addr, send("PARK", 0, b"second", "A")).await;
    assert_eq!(r.response_code(), ResponseCode::SUCCESS);
    let mut woken = std::collections::BTreeSet::new();
    while woken.len() < PARKED as usize {
        let r = next(&mut responses).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        let bodies: Vec<_> = records(&r.body).iter().map(|m| m.body.to_vec()).collect();
        assert_eq!(bodies, vec![b"second".to_vec()]);
        assert!(woken.insert(r.opaque), "pull {} answered twice", r.opaque);
    }
    assert_eq!(woken, (1..=PARKED).collect());
    b.stop().await;
}

async fn next(responses: &mut FramedRead<tokio::net::tcp::OwnedReadHalf, RemotingCodec>) -> RemotingCommand {
    let r = tokio::time::timeout(Duration::from_secs(30), responses.next()).await;
    r.expect("no response within 30 s").expect("connection closed").expect("bad frame")
}
