//! `ferrocket bench`: a load generator speaking the remoting protocol like the official Java
//! client, for measuring a cluster (ferrocket's or Java's) from outside.
//!
//! Owns: `bench produce` (SEND_MESSAGE_V2 sync, oneway or batch, round-robin over the write
//! queues of every master, a fixed pool of sender tasks over `--connections` sockets per broker),
//! `bench consume` (one long-polling PULL_MESSAGE loop per read queue), the per-second
//! statistics (HDR histograms), the progress line, the final table, the one-line JSON summary and
//! the HTML report.
//!
//! May import: `crate::protocol`, `crate::remoting`, `crate::model` and
//! `crate::store::commit_log::record` (the record layout, to count what a pull returned), nothing
//! else of the crate: it is a client and must not see the servers' insides.
//!
//! ```text
//!             route (GET_ROUTEINFO_BY_TOPIC, 105)
//! namesrv <--------------------------------------- bench
//!                                                   |  senders: `--in-flight` tasks, each one
//!                                                   |  request at a time; request k goes to
//! broker A conn 0..C  <--- SEND_MESSAGE_V2 (310) ---+  write queue k mod Q, socket (k / Q) mod C
//! broker B conn 0..C  <---                          |
//!                                                   v
//!            Recorder (counters + HDR histogram, one mutex) --1 s--> Timeline: one Point/s
//!                                                               --> progress line, table, JSON, HTML
//! ```

pub mod cli;
mod consume;
mod produce;
mod report;
mod stats;
mod uniq;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::protocol::body::json;
use crate::protocol::body::route::{ClusterInfo, TopicRouteData};
use crate::protocol::{FrameLimits, RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::{Connection, RemotingClient, RemotingError, RequestHandler};

pub use consume::{consume, ConsumeOptions, StartFrom};
pub use produce::{produce, ProduceOptions, SendMode};
pub use report::html_report;
pub use stats::{Latency, Point, Recorder, Role, Summary, Timeline};

/// Why a bench could not start (or its report could not be written). Failures of single
/// requests during a run are counted, not returned. The cause is the error's `source()`, which
/// `main` prints under it.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("cannot reach the NameServer at {addr}")]
    Namesrv { addr: String, source: RemotingError },
    #[error("{what}")]
    Transport { what: String, source: RemotingError },
    #[error("{what}: answered {code}: {remark}")]
    Refused { what: String, code: ResponseCode, remark: String },
    #[error("{what}: unreadable answer: {why}")]
    Body { what: String, why: String },
    #[error("no route for topic {topic}: {why}")]
    NoRoute { topic: String, why: String },
    #[error("{0}")]
    Usage(String),
    #[error("cannot write the report {path}")]
    Report { path: String, source: std::io::Error },
    #[error("cannot draw the report: {0}")]
    Chart(String),
}

/// When a run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Stop starting requests after this long.
    Time(Duration),
    /// Stop after this many messages.
    Count(u64),
}

/// The bench answers nothing the broker asks of it (it registers no producer or consumer).
pub struct Quiet;

impl RequestHandler for Quiet {
    async fn handle(&self, _conn: &Arc<Connection>, _request: RemotingCommand) -> Option<RemotingCommand> {
        None
    }
}

pub type Client = RemotingClient<Quiet>;

/// A client with its own sockets: one per address it talks to.
pub(crate) fn new_client(tracker: &TaskTracker, shutdown: &CancellationToken) -> Client {
    RemotingClient::new(Arc::new(Quiet), FrameLimits::default(), tracker.clone(), shutdown.clone())
}

const NAMESRV_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends `req` and insists on SUCCESS; the error names `what`.
pub(crate) async fn call(
    client: &Client,
    addr: &str,
    req: RemotingCommand,
    what: &str,
) -> Result<RemotingCommand, BenchError> {
    let resp = client
        .invoke(addr, req, NAMESRV_TIMEOUT)
        .await
        .map_err(|source| BenchError::Transport { what: what.to_owned(), source })?;
    if resp.response_code() != ResponseCode::SUCCESS {
        return Err(BenchError::Refused {
            what: what.to_owned(),
            code: resp.response_code(),
            remark: resp.remark.unwrap_or_default(),
        });
    }
    Ok(resp)
}

/// The route of `topic`, `None` when the NameServer does not know it.
pub(crate) async fn route(client: &Client, namesrv: &str, topic: &str) -> Result<Option<TopicRouteData>, BenchError> {
    let req = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    let resp = client
        .invoke(namesrv, req, NAMESRV_TIMEOUT)
        .await
        .map_err(|source| BenchError::Namesrv { addr: namesrv.to_owned(), source })?;
    match resp.response_code() {
        ResponseCode::SUCCESS => json::from_slice(&resp.body)
            .map(Some)
            .map_err(|e| BenchError::Body { what: format!("route of {topic}"), why: e.to_string() }),
        ResponseCode::TOPIC_NOT_EXIST => Ok(None),
        code => Err(BenchError::Refused {
            what: format!("route of {topic} from {namesrv}"),
            code,
            remark: resp.remark.unwrap_or_default(),
        }),
    }
}

/// Every master the NameServer knows: (broker name, address).
pub(crate) async fn masters(client: &Client, namesrv: &str) -> Result<Vec<(String, String)>, BenchError> {
    let req = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO);
    let resp = client
        .invoke(namesrv, req, NAMESRV_TIMEOUT)
        .await
        .map_err(|source| BenchError::Namesrv { addr: namesrv.to_owned(), source })?;
    if resp.response_code() != ResponseCode::SUCCESS {
        return Err(BenchError::Refused {
            what: format!("cluster info from {namesrv}"),
            code: resp.response_code(),
            remark: resp.remark.unwrap_or_default(),
        });
    }
    let info: ClusterInfo = json::from_slice(&resp.body)
        .map_err(|e| BenchError::Body { what: "cluster info".into(), why: e.to_string() })?;
    Ok(info
        .broker_addr_table
        .values()
        .filter_map(|b| b.master_addr().map(|a| (b.broker_name.clone(), a.to_owned())))
        .collect())
}

/// The first address of a `host:port;host:port` list.
pub(crate) fn first_namesrv(list: &str) -> Result<String, BenchError> {
    list.split(';')
        .map(str::trim)
        .find(|a| !a.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| BenchError::Usage("give a NameServer address (--namesrv host:port)".into()))
}

/// Runs `work` while rolling `recorder` into a timeline once a second and, when `print_every`
/// is set, printing a progress line to stderr at that pace. The last, partial second is rolled
/// when `work` ends; the timeline's end is that moment.
pub(crate) async fn drive<T>(
    recorder: &Recorder,
    start: Instant,
    print_every: Option<Duration>,
    work: impl Future<Output = T>,
) -> (T, Timeline) {
    let mut timeline = Timeline::default();
    let mut ticks = tokio::time::interval_at(
        tokio::time::Instant::from_std(start) + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let mut next_print = print_every;
    tokio::pin!(work);
    let out = loop {
        tokio::select! {
            out = &mut work => break out,
            _ = ticks.tick() => {
                let at = start.elapsed().as_secs_f64();
                timeline.roll(recorder, at);
                if let (Some(every), Some(due)) = (print_every, next_print) {
                    if at + 0.05 >= due.as_secs_f64() {
                        eprintln!("{}", timeline.progress_line(at));
                        next_print = Some(due + every);
                    }
                }
            }
        }
    };
    timeline.roll(recorder, start.elapsed().as_secs_f64());
    (out, timeline)
}

/// A failed request's cause, as counted in the report (low cardinality: no addresses).
pub(crate) fn cause(e: &RemotingError) -> &'static str {
    match e {
        RemotingError::Timeout { .. } => "timeout",
        RemotingError::Closed(_) => "connection closed",
        RemotingError::Connect { .. } => "connect failed",
        RemotingError::Protocol(_) => "protocol error",
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
