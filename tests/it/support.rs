//! Starting an in-process NameServer and talking to it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferrocket::namesrv::{NameServer, NamesrvConfig};
use ferrocket::protocol::{FrameLimits, RemotingCommand, RequestCode};
use ferrocket::remoting::{Connection, RemotingClient, RequestHandler};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub struct TestNamesrv {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestNamesrv {
    pub async fn start(tweak: impl FnOnce(&mut NamesrvConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, tweak).await
    }

    pub async fn start_in(dir: tempfile::TempDir, tweak: impl FnOnce(&mut NamesrvConfig)) -> Self {
        let mut config = NamesrvConfig {
            listen_port: 0,
            bind_address: "127.0.0.1".into(),
            kv_config_path: dir.path().join("kvConfig.json"),
            config_store_path: dir.path().join("namesrv.properties"),
            ..Default::default()
        };
        tweak(&mut config);
        let ns = NameServer::bind(config).await.unwrap();
        let addr = ns.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(ns.run(shutdown.clone()));
        Self { addr, dir, shutdown, task: Some(task) }
    }

    /// Stops the server and hands back its directory.
    pub async fn stop(mut self) -> tempfile::TempDir {
        self.shutdown.cancel();
        if let Some(t) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(5), t).await.expect("namesrv did not stop").unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        std::mem::replace(&mut self.dir, dir)
    }
}

impl Drop for TestNamesrv {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A client that answers nothing the server sends back.
pub struct NoHandler;

impl RequestHandler for NoHandler {
    async fn handle(&self, _conn: &Arc<Connection>, _req: RemotingCommand) -> Option<RemotingCommand> {
        None
    }
}

pub type Client = RemotingClient<NoHandler>;

pub fn client() -> Client {
    RemotingClient::new(Arc::new(NoHandler), FrameLimits::default(), TaskTracker::new(), CancellationToken::new())
}

pub async fn call(client: &Client, addr: SocketAddr, req: RemotingCommand) -> RemotingCommand {
    client.invoke(&addr.to_string(), req, Duration::from_secs(5)).await.unwrap()
}

pub fn request(code: RequestCode, ext: &[(&str, &str)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in ext {
        r.ext_fields.insert(k.to_string().into(), v.to_string());
    }
    r
}

/// A REGISTER_BROKER request with a JSON body holding `topics` (4 queues each).
pub fn register_request(cluster: &str, name: &str, addr: &str, id: i64, topics: &[&str]) -> RemotingCommand {
    let mut table = serde_json::Map::new();
    for t in topics {
        table.insert(
            t.to_string(),
            serde_json::json!({"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":t,"topicSysFlag":0,"writeQueueNums":4}),
        );
    }
    let body = serde_json::json!({
        "filterServerList": [],
        "topicConfigSerializeWrapper": {
            "dataVersion": {"counter": 1, "stateVersion": 0, "timestamp": 1_700_000_000_000i64},
            "topicConfigTable": table,
        }
    });
    let id = id.to_string();
    let ha = format!("{addr}-ha");
    request(
        RequestCode::REGISTER_BROKER,
        &[
            ("brokerName", name),
            ("brokerAddr", addr),
            ("clusterName", cluster),
            ("haServerAddr", &ha),
            ("brokerId", &id),
            ("compressed", "false"),
        ],
    )
    .with_body(serde_json::to_vec(&body).unwrap())
}

/// Polls `check` until it holds or `timeout` passes.
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Everything logged in this test binary (all tests share one subscriber).
pub fn logs() -> std::sync::Arc<std::sync::Mutex<Vec<u8>>> {
    use std::sync::{Mutex, OnceLock};
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let _ = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_env_filter("warn")
            .with_writer(move || LogWriter(sink.clone()))
            .try_init();
        buf
    })
    .clone()
}

struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
