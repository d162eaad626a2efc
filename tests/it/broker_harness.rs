//! A broker on 127.0.0.1 with free ports, a store in a temporary directory and its own
//! NameServer (or an existing one), for the integration tests. The harness binds every port
//! itself (127.0.0.1:0) and hands the sockets to the composition root: no port is picked, let
//! go and then taken by somebody else, so there is no retry.

use std::time::Duration;

use ferrocket::broker::BrokerConfig;
use ferrocket::node::{BrokerNode, Sockets};
use ferrocket::protocol::RemotingCommand;
use tokio_util::sync::CancellationToken;

use super::support::*;

/// `kafkaListenPort` for a Kafka listener on a port the harness binds (then in
/// [`TestBroker::kafka_port`]); any other non-zero value is bound as it is (a restart on the
/// port a previous broker had).
pub const KAFKA_ANY_PORT: u16 = 1;
/// As [`KAFKA_ANY_PORT`], for `grpcListenPort` ([`TestBroker::grpc_port`]).
pub const GRPC_ANY_PORT: u16 = 1;

pub struct TestBroker {
    pub addr: String,
    /// The Kafka port, when the broker serves Kafka.
    pub kafka_port: Option<u16>,
    /// The gRPC port, when the broker serves gRPC.
    pub grpc_port: Option<u16>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    pub ns: Option<TestNamesrv>,
    /// The broker's state (its store, timer service ...), for tests that reach inside.
    pub inner: std::sync::Arc<ferrocket::broker::BrokerInner>,
}

async fn bind(port: u16) -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap_or_else(|e| panic!("bind 127.0.0.1:{port}: {e}"))
}

/// A client port and its VIP port (listenPort - 2, where Java slaves and VIP-channel clients
/// look for it), both held before the broker starts.
async fn bind_with_vip() -> (tokio::net::TcpListener, tokio::net::TcpListener) {
    for _ in 0..100 {
        let remoting = bind(0).await;
        let port = remoting.local_addr().unwrap().port();
        if let Some(vip) = port.checked_sub(2).filter(|p| *p > 1024) {
            if let Ok(vip) = tokio::net::TcpListener::bind(("127.0.0.1", vip)).await {
                return (remoting, vip);
            }
        }
    }
    panic!("no free port P with P - 2 free in 100 tries");
}

pub async fn start_broker(dir: &std::path::Path, tweak: impl FnOnce(&mut BrokerConfig)) -> TestBroker {
    let ns = TestNamesrv::start(|_| {}).await;
    let mut b = start_broker_on(&ns.addr.to_string(), dir, tweak).await;
    b.ns = Some(ns);
    b
}

/// A broker registering with an existing NameServer.
pub async fn start_broker_on(
    namesrv: &str,
    dir: &std::path::Path,
    tweak: impl FnOnce(&mut BrokerConfig),
) -> TestBroker {
    let mut base = BrokerConfig {
        broker_name: "broker-t".into(),
        broker_ip1: "127.0.0.1".into(),
        bind_address: "127.0.0.1".into(),
        namesrv_addr: namesrv.to_owned(),
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1024 * 1024,
        max_hash_slot_num: 1000,
        max_index_num: 4000,
        // The machine's disk must not decide: above 85 % a broker deletes unconsumed segments.
        clean_file_forcibly_enable: false,
        ..BrokerConfig::default()
    };
    tweak(&mut base);
    let kafka = match base.kafka_listen_port {
        0 => None,
        KAFKA_ANY_PORT => Some(bind(0).await),
        port => Some(bind(port).await),
    };
    let grpc = match base.grpc_listen_port {
        0 => None,
        GRPC_ANY_PORT => Some(bind(0).await),
        port => Some(bind(port).await),
    };
    let (remoting, vip) = bind_with_vip().await;
    let broker = ferrocket::broker::Sockets {
        remoting: Some(remoting),
        vip: Some(vip),
        ha: if base.is_slave() { None } else { Some(bind(0).await) },
    };
    let node = BrokerNode::bind_with(base, Sockets { broker, kafka, grpc })
        .await
        .unwrap_or_else(|e| panic!("broker start failed: {e}"));
    let port = node.local_addr().unwrap().port();
    let kafka_port = node.kafka_addr().map(|a| a.port());
    let grpc_port = node.grpc_addr().map(|a| a.port());
    let shutdown = CancellationToken::new();
    let inner = node.inner();
    let task = tokio::spawn(node.run(shutdown.clone()));
    TestBroker { addr: format!("127.0.0.1:{port}"), kafka_port, grpc_port, shutdown, task, ns: None, inner }
}

impl TestBroker {
    pub async fn stop(self) {
        self.shutdown.cancel();
        // A hang guard, not a measure: a stop is normally well under a second (at most 0.7 s
        // in a full run), but one on a busy CI machine once took over 10 s (cause not known).
        let stopped = tokio::time::timeout(Duration::from_secs(30), self.task).await;
        let stopped = stopped.unwrap_or_else(|_| {
            panic!("broker did not stop in 30 s; listeners closed: {}", self.inner.closing.is_cancelled())
        });
        stopped.expect("the broker task panicked");
    }
}

pub async fn call_addr(c: &Client, addr: &str, req: RemotingCommand) -> RemotingCommand {
    c.invoke(addr, req, Duration::from_secs(10)).await.unwrap()
}
