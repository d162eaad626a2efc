//! Registration with the NameServer as clients see it: a topic a send creates has a route by
//! the time the send is answered, even when the NameServer is slow to hear of it.

use std::net::SocketAddr;
use std::time::Duration;

use ferrocket::protocol::{RequestCode, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::broker::send;
use super::broker_harness::{call_addr, start_broker_on};
use super::support::*;

/// A TCP proxy to `upstream` that holds every chunk from its clients for `delay` before it
/// passes it on (answers come back at once): a NameServer far away, or busy.
async fn delaying_proxy(upstream: SocketAddr, delay: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(upstream).await else { continue };
            let (mut client_rx, mut client_tx) = client.into_split();
            let (mut server_rx, mut server_tx) = server.into_split();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = client_rx.read(&mut buf).await {
                    tokio::time::sleep(delay).await;
                    if server_tx.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut server_rx, &mut client_tx).await;
            });
        }
    });
    addr
}

/// Java's `createTopicInSendMessageMethod` registers the new topic (`registerBrokerAll`) and
/// waits for it before it answers the send, so a client that asks the NameServer next finds the
/// route (the Go client's push consumer does, at once). Without that wait the route arrives a
/// registration round later: here, after the proxy's delay.
#[tokio::test]
async fn a_topic_created_by_a_send_has_a_route_when_the_send_is_answered() {
    let ns = TestNamesrv::start(|_| {}).await;
    let slow_ns = delaying_proxy(ns.addr, Duration::from_millis(700)).await;
    let dir = tempfile::tempdir().unwrap();
    let b = start_broker_on(&slow_ns.to_string(), dir.path(), |_| {}).await;
    let c = client();
    let ns_addr = ns.addr;
    let route = |topic: &'static str| {
        let c = &c;
        async move {
            let req = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &[("topic", topic)]);
            call(c, ns_addr, req).await.response_code()
        }
    };
    // The first round (with the default topic) has reached the NameServer.
    assert!(
        eventually(Duration::from_secs(10), || async { route("TBW102").await == ResponseCode::SUCCESS }).await,
        "the broker never registered"
    );
    assert_eq!(route("created-by-a-send").await, ResponseCode::TOPIC_NOT_EXIST);

    let resp = call_addr(&c, &b.addr, send("created-by-a-send", 0, b"first", "A")).await;
    assert_eq!(resp.response_code(), ResponseCode::SUCCESS, "{:?}", resp.remark);
    assert_eq!(route("created-by-a-send").await, ResponseCode::SUCCESS, "no route right after the send");
    b.stop().await;
    ns.stop().await;
}
