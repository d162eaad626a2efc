//! Metrics against hostile clients (issue #25, point 9): a client chooses the request codes it
//! sends, so `request_code` takes the codes this build knows and `unknown` for the rest; one
//! series per code would grow the broker's memory with every new code.

use std::collections::HashSet;

use ferrocket::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::{call_addr, start_broker};
use super::support::*;

const CLUSTER: &str = "HostileMetricsCluster";

/// `count` request codes this build does not know, none of them in `used`.
fn unknown_codes(seed: &mut u64, count: usize, used: &mut HashSet<i32>) -> Vec<i32> {
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        // xorshift64: reproducible, no dependency.
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let code = (*seed >> 32) as i32;
        if RequestCode(code).name().is_none() && used.insert(code) {
            out.push(code);
        }
    }
    out
}

/// The `rocketmq_rpc_latency` lines of this test's broker, and the `request_code` values in them.
fn rpc_series() -> (usize, HashSet<String>) {
    let text = ferrocket::telemetry::render();
    let cluster = format!("cluster=\"{CLUSTER}\"");
    let lines: Vec<&str> =
        text.lines().filter(|l| l.starts_with("rocketmq_rpc_latency") && l.contains(&cluster)).collect();
    let codes =
        lines.iter().filter_map(|l| l.split("request_code=\"").nth(1)?.split('"').next().map(str::to_owned)).collect();
    (lines.len(), codes)
}

/// Reproduced on `main` before the fix: every code got its own series (20,001 distinct
/// `request_code` values after the first round), and the thread-local handle caches grew alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_request_codes_share_one_unknown_series() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b = start_broker(dir.path(), |c| {
        c.metrics_exporter_type = "PROM".into();
        c.metrics_prom_exporter_host = "127.0.0.1".into();
        c.metrics_prom_exporter_port = port;
        c.broker_cluster_name = CLUSTER.into();
    })
    .await;
    let c = client();
    let (mut seed, mut used) = (0x9E37_79B9_7F4A_7C15u64, HashSet::new());
    let mut series = Vec::new();
    for _round in 0..2 {
        for code in unknown_codes(&mut seed, 10_000, &mut used) {
            c.invoke_oneway(&b.addr, RemotingCommand::request(RequestCode(code))).await.unwrap();
        }
        // Frames are read in order and an unknown code is answered (recorded) as it is read:
        // once this request on the same connection is answered, the oneway ones are recorded.
        let r = call_addr(&c, &b.addr, request(RequestCode::GET_BROKER_RUNTIME_INFO, &[])).await;
        assert_eq!(r.response_code(), ResponseCode::SUCCESS, "{:?}", r.remark);
        let unsupported = call_addr(&c, &b.addr, RemotingCommand::request(RequestCode(-7))).await;
        assert_eq!(unsupported.response_code(), ResponseCode::REQUEST_CODE_NOT_SUPPORTED);
        series.push(rpc_series());
    }
    let (lines, codes) = &series[0];
    assert!(codes.contains("unknown"), "unknown codes are counted under `unknown` ({} values)", codes.len());
    let known = |c: &String| c == "unknown" || c.parse().is_ok_and(|n| RequestCode(n).name().is_some());
    assert!(codes.iter().all(known), "only known codes label a series: {} values", codes.len());
    assert!(codes.len() <= 3, "{codes:?}");
    assert_eq!(series[1].0, *lines, "10,000 more new codes added no series");
    b.stop().await;
}
