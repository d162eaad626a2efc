//! A broker on 127.0.0.1 with free ports, a store in a temporary directory and its own
//! NameServer (or an existing one), for the integration tests.

use std::time::Duration;

use ferrocket::broker::{Broker, BrokerConfig};
use ferrocket::protocol::RemotingCommand;
use tokio_util::sync::CancellationToken;

use super::support::*;

pub struct TestBroker {
    pub addr: String,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    pub ns: Option<TestNamesrv>,
    /// The broker's state (its store, timer service ...), for tests that reach inside.
    pub inner: std::sync::Arc<ferrocket::broker::BrokerInner>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
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
    // Ports come from binding port 0 and letting go: another test (or a client's ephemeral
    // port) can take one before the broker binds it. Then pick new ones; any other error fails.
    let (broker, port) = loop {
        let port = free_port();
        let config = BrokerConfig { listen_port: port, ha_listen_port: free_port(), ..base.clone() };
        match Broker::bind(config).await {
            Ok(b) => break (b, port),
            Err(ferrocket::broker::StartError::Bind { addr, source }) => {
                eprintln!("port taken before the broker bound it ({addr}: {source}); picking others");
            }
            Err(e) => panic!("broker start failed: {e}"),
        }
    };
    let shutdown = CancellationToken::new();
    let inner = broker.inner();
    let task = tokio::spawn(broker.run(shutdown.clone()));
    TestBroker { addr: format!("127.0.0.1:{port}"), shutdown, task, ns: None, inner }
}

impl TestBroker {
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task).await.expect("broker did not stop").unwrap();
    }
}

pub async fn call_addr(c: &Client, addr: &str, req: RemotingCommand) -> RemotingCommand {
    c.invoke(addr, req, Duration::from_secs(10)).await.unwrap()
}
