//! Trust boundary: every request any client can send, as the broker handles it. One broker runs
//! in this process (RocketMQ remoting and Kafka listeners on 127.0.0.1, a store in a temporary
//! directory nested three deep); each input becomes one request to it:
//!
//! ```text
//! byte 0 % 4 == 0 | 1   a RocketMQ request built from the input: byte 1-2 pick the code (from
//!                       CODES, or the raw u16 when byte 1's top bit is set), byte 3 bit 0 makes it
//!                       oneway; the rest, split at NUL bytes, is `key=value` ext fields and
//!                       finally the body
//! byte 0 % 4 == 2       the rest written raw to the remoting port (framing and header decoding)
//! byte 0 % 4 == 3       the rest sent as one Kafka request frame to the Kafka port
//! ```
//! After each input it checks the invariants of #25: no panic (libFuzzer aborts on one, in any
//! thread), nothing created outside the store's root (the directories above it hold only the
//! path to it), and the dispatcher keeps up: a canary message sent now is pullable at once.
//! Inputs that could legitimately stop the canary (broker config, anything naming its topic) are
//! skipped.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use ferrocket::broker::{Broker, BrokerConfig};
use ferrocket::protocol::{FrameLimits, RemotingCommand, RequestCode, ResponseCode};
use ferrocket::remoting::{Connection, RemotingClient, RequestHandler};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

const CANARY: &str = "FUZZ_CANARY";

/// Request codes the broker serves, so that most inputs reach a handler.
const CODES: &[i32] = &[
    10, 310, 320, 11, 361, 34, 35, 46, 37, 38, 14, 15, 30, 31, 29, 32, 36, 41, 42, 12, 33, 17, 215, 21, 351, 43,
    45, 200, 201, 207, 202, 203, 204, 205, 206, 220, 222, 223, 28, 26, 50, 51, 52, 53, 54,
];

struct NoHandler;

impl RequestHandler for NoHandler {
    async fn handle(&self, _conn: &std::sync::Arc<Connection>, _req: RemotingCommand) -> Option<RemotingCommand> {
        None
    }
}

struct Env {
    rt: tokio::runtime::Runtime,
    /// The directory the store's root is nested in: `top/a/b/store`.
    top: PathBuf,
    addr: String,
    kafka_port: u16,
    client: RemotingClient<NoHandler>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let top = std::env::temp_dir().join(format!("ferrocket-fuzz-{}", std::process::id()));
        let root = top.join("a").join("b").join("store");
        std::fs::create_dir_all(&root).unwrap();
        let (port, kafka_port) = (free_port(), free_port());
        let config = BrokerConfig {
            broker_name: "fuzz".into(),
            broker_ip1: "127.0.0.1".into(),
            bind_address: "127.0.0.1".into(),
            namesrv_addr: String::new(),
            store_path_root_dir: root,
            listen_port: port,
            ha_listen_port: free_port(),
            kafka_listen_port: kafka_port,
            mapped_file_size_commit_log: 4 * 1024 * 1024,
            max_hash_slot_num: 1000,
            max_index_num: 4000,
            clean_file_forcibly_enable: false,
            timer_precision_ms: 100,
            metrics_exporter_type: "DISABLE".into(),
            ..BrokerConfig::default()
        };
        let client = rt.block_on(async {
            let broker = Broker::bind(config).await.expect("the fuzz broker starts");
            tokio::spawn(broker.run(CancellationToken::new()));
            RemotingClient::new(
                std::sync::Arc::new(NoHandler),
                FrameLimits::default(),
                TaskTracker::new(),
                CancellationToken::new(),
            )
        });
        Env { rt, top, addr: format!("127.0.0.1:{port}"), kafka_port, client }
    })
}

/// The request an input of the first kind describes, or `None` for one that is skipped.
fn request(data: &[u8]) -> Option<RemotingCommand> {
    let [pick, low, flags, rest @ ..] = data else { return None };
    let code = if pick & 0x80 != 0 {
        i32::from(u16::from_be_bytes([pick & 0x7f, *low]))
    } else {
        CODES[usize::from(u16::from_be_bytes([*pick, *low])) % CODES.len()]
    };
    // Changing the broker's config (permission, auto-creation) may stop the canary by design.
    if code == RequestCode::UPDATE_BROKER_CONFIG.0 {
        return None;
    }
    let mut req = RemotingCommand::request(RequestCode(code));
    let mut parts: Vec<&[u8]> = rest.split(|b| *b == 0).collect();
    let body = parts.pop().unwrap_or_default();
    for p in parts {
        let text = String::from_utf8_lossy(p);
        let (k, v) = text.split_once('=').unwrap_or((&text, ""));
        req.ext_fields.insert(k.to_owned().into(), v.to_owned());
    }
    req.body = body.to_vec().into();
    if flags & 1 != 0 {
        req.mark_oneway();
    }
    Some(req)
}

/// Nothing above the store's root but the path to it.
fn assert_nothing_outside(top: &Path) {
    for (dir, only) in [(top.to_owned(), "a"), (top.join("a"), "b"), (top.join("a").join("b"), "store")] {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            assert_eq!(e.file_name().to_string_lossy(), only, "created outside the store: {}", e.path().display());
        }
    }
}

async fn raw(addr: &str, bytes: &[u8]) {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else { return };
    let _ = s.write_all(bytes).await;
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(20), s.read(&mut buf)).await;
}

async fn max_offset(e: &Env) -> i64 {
    let mut q = RemotingCommand::request(RequestCode::GET_MAX_OFFSET);
    q.ext_fields.insert("topic".into(), CANARY.into());
    q.ext_fields.insert("queueId".into(), "0".into());
    let r = e.client.invoke(&e.addr, q, Duration::from_secs(5)).await.expect("GET_MAX_OFFSET answered");
    r.ext_fields.get("offset").and_then(|o| o.parse().ok()).unwrap_or(-1)
}

/// A canary sent now is counted in its queue at once (GET_MAX_OFFSET waits for the dispatcher
/// to pass what was acknowledged).
async fn assert_canary_readable(e: &Env) {
    let before = max_offset(e).await;
    let mut send = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2);
    for (k, v) in [("a", "PG"), ("b", CANARY), ("c", "TBW102"), ("d", "1"), ("e", "0"), ("f", "0"), ("g", "0"), ("h", "0")] {
        send.ext_fields.insert(k.into(), v.into());
    }
    send.body = bytes::Bytes::from_static(b"canary");
    let r = e.client.invoke(&e.addr, send, Duration::from_secs(5)).await.expect("the canary send is answered");
    assert_eq!(r.response_code(), ResponseCode::SUCCESS, "the canary send failed: {:?}", r.remark);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while max_offset(e).await <= before {
        assert!(std::time::Instant::now() < deadline, "the dispatcher stopped: the canary never reached its queue");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    if rest.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()) {
        return;
    }
    let e = env();
    e.rt.block_on(async {
        match kind % 4 {
            0 | 1 => {
                if let Some(req) = request(rest) {
                    if req.is_oneway() {
                        let _ = e.client.invoke_oneway(&e.addr, req).await;
                    } else {
                        let _ = e.client.invoke(&e.addr, req, Duration::from_millis(50)).await;
                    }
                }
            }
            2 => raw(&e.addr, rest).await,
            _ => {
                let mut frame = (rest.len() as u32).to_be_bytes().to_vec();
                frame.extend_from_slice(rest);
                raw(&format!("127.0.0.1:{}", e.kafka_port), &frame).await;
            }
        }
        assert_nothing_outside(&e.top);
        assert_canary_readable(e).await;
    });
});
