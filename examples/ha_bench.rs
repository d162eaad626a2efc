//! Send throughput and latency of a broker group (master + slave, in this process) with
//! SYNC_MASTER against ASYNC_MASTER, as ratios from one run:
//!
//! ```text
//! cargo run --release --example ha_bench -- [MESSAGES] [SENDERS] [ROUNDS]
//! ```
//! Both groups (a NameServer, a master and a slave each, on loopback, fresh directories) run for
//! the whole benchmark. Each is warmed up first, then the rounds alternate between them (which
//! goes first alternates too), so both see the same machine; each round sends MESSAGES 1 KiB
//! messages with SEND_MESSAGE_V2 from SENDERS concurrent senders and records per-send latency.
//! Medians over the rounds are reported. CommitLog segments are 64 MiB, so the next one is
//! pre-faulted in the background as in a long-running broker, not zeroed in the put path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket::broker::{Broker, BrokerConfig};
use ferrocket::namesrv::{NameServer, NamesrvConfig};
use ferrocket::protocol::{FrameLimits, RemotingCommand, RequestCode, ResponseCode};
use ferrocket::remoting::RemotingClient;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

const ROLES: [&str; 2] = ["ASYNC_MASTER", "SYNC_MASTER"];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

struct Run {
    throughput: f64,
    p50: Duration,
    p99: Duration,
    failed: usize,
}

/// A NameServer, a master of `role` and its slave; stopped on drop of the token's owner.
struct Group {
    _root: tempfile::TempDir,
    master: String,
    client: Arc<RemotingClient<ferrocket::remoting::NoCallbacks>>,
}

async fn start_group(role: &str, shutdown: &CancellationToken) -> anyhow::Result<Group> {
    let root = tempfile::tempdir()?;
    let ns_config = NamesrvConfig {
        listen_port: 0,
        bind_address: "127.0.0.1".into(),
        kv_config_path: root.path().join("kv.json"),
        ..Default::default()
    };
    let ns = NameServer::bind(ns_config).await?;
    let ns_addr = ns.local_addr()?.to_string();
    tokio::spawn(ns.run(shutdown.clone()));
    let mut brokers = Vec::new();
    let name = format!("bench-{}", role.to_lowercase());
    for (id, role) in [(0, role), (1, "SLAVE")] {
        let port = free_port();
        let config = BrokerConfig {
            broker_name: name.clone(),
            broker_id: id,
            broker_role: role.into(),
            broker_ip1: "127.0.0.1".into(),
            bind_address: "127.0.0.1".into(),
            listen_port: port,
            ha_listen_port: free_port(),
            namesrv_addr: ns_addr.clone(),
            store_path_root_dir: root.path().join(format!("b{id}")),
            mapped_file_size_commit_log: 64 * 1024 * 1024,
            max_hash_slot_num: 100_000,
            max_index_num: 400_000,
            ..BrokerConfig::default()
        };
        let broker = Broker::bind(config).await?;
        brokers.push(format!("127.0.0.1:{port}"));
        tokio::spawn(broker.run(shutdown.clone()));
    }
    let client = Arc::new(RemotingClient::new(
        Arc::new(ferrocket::remoting::NoCallbacks),
        FrameLimits::default(),
        TaskTracker::new(),
        shutdown.clone(),
    ));
    Ok(Group { _root: root, master: brokers[0].clone(), client })
}

async fn send_round(g: &Group, messages: usize, senders: usize) -> anyhow::Result<Run> {
    let body = vec![b'x'; 1024];
    let start = Instant::now();
    let mut tasks = Vec::new();
    for s in 0..senders {
        let (client, master, body) = (g.client.clone(), g.master.clone(), body.clone());
        let n = messages / senders;
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(n);
            let mut failed = 0;
            for _ in 0..n {
                let mut req = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2).with_body(body.clone());
                for (k, v) in [
                    ("a", "PG"),
                    ("b", "BenchTopic"),
                    ("c", "TBW102"),
                    ("d", "8"),
                    ("f", "0"),
                    ("g", "0"),
                    ("h", "0"),
                    ("i", "WAIT\u{1}true\u{2}"),
                ] {
                    req.ext_fields.insert(k.into(), v.into());
                }
                req.ext_fields.insert("e".into(), (s % 8).to_string());
                let t = Instant::now();
                match client.invoke(&master, req, Duration::from_secs(10)).await {
                    Ok(r) if r.response_code() == ResponseCode::SUCCESS => latencies.push(t.elapsed()),
                    _ => failed += 1,
                }
            }
            (latencies, failed)
        }));
    }
    let mut all = Vec::new();
    let mut failed = 0;
    for t in tasks {
        let (l, f) = t.await?;
        all.extend(l);
        failed += f;
    }
    let elapsed = start.elapsed();
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1))).copied().unwrap_or_default()
    };
    Ok(Run { throughput: all.len() as f64 / elapsed.as_secs_f64(), p50: pct(0.50), p99: pct(0.99), failed })
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let messages: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let senders: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(32);
    let rounds: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    println!(
        "{messages} messages of 1 KiB per round, {senders} concurrent senders, two groups (master + slave) on \
         loopback, warmed up, {rounds} rounds alternating the groups (medians reported)"
    );
    let shutdown = CancellationToken::new();
    let result = rt.block_on(async {
        let mut groups = Vec::new();
        for role in ROLES {
            groups.push(start_group(role, &shutdown).await?);
        }
        // Slaves connect once their first registration names the master's HA address.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        for (g, role) in groups.iter().zip(ROLES) {
            let r = send_round(g, messages, senders).await?;
            eprintln!("warm-up   {role:13} {:9.0} msg/s   failed {}", r.throughput, r.failed);
        }
        let mut by_role: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let r = send_round(&groups[i], messages, senders).await?;
                eprintln!(
                    "round {}/{rounds} {:13} {:9.0} msg/s   p99 {:7.2} ms   failed {}",
                    round + 1,
                    ROLES[i],
                    r.throughput,
                    r.p99.as_secs_f64() * 1e3,
                    r.failed
                );
                by_role[i].push(r);
            }
        }
        anyhow::Ok(by_role)
    });
    shutdown.cancel();
    let by_role = result?;
    let median = |runs: &[Run], f: fn(&Run) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut med = [(0.0, 0.0, 0.0); 2];
    for (i, role) in ROLES.iter().enumerate() {
        let runs = &by_role[i];
        med[i] = (
            median(runs, |r| r.throughput),
            median(runs, |r| r.p50.as_secs_f64() * 1e3),
            median(runs, |r| r.p99.as_secs_f64() * 1e3),
        );
        let failed: usize = runs.iter().map(|r| r.failed).sum();
        println!(
            "{role:13} {:9.0} msg/s   p50 {:7.2} ms   p99 {:7.2} ms   failed {failed}",
            med[i].0, med[i].1, med[i].2
        );
    }
    let (a, s) = (med[0], med[1]);
    println!(
        "SYNC_MASTER / ASYNC_MASTER: throughput {:.2}x, p99 latency {:.2}x (throughput cost {:.1} %)",
        s.0 / a.0,
        s.2 / a.2,
        (1.0 - s.0 / a.0) * 100.0
    );
    Ok(())
}
