//! `bench consume`: one PULL_MESSAGE loop per read queue, long polling like the Java push
//! consumer (suspend + subscription flags, subscription `*`), counting the records each pull
//! returns. Reports the time to the first message and the drain rate; latency is
//! store-to-consume (the broker's store timestamp to the pull's arrival), as RocketMQ's
//! benchmark Consumer reports it.
//!
//! May import: `model`, `protocol`, `remoting`, `store` and modules of `tools/`; the area's rule is
//! its line in docs/architecture.md.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::stats::{Recorder, Role, Summary, TimerLateness};
use super::{call, cause, drive, first_namesrv, new_client, now_ms, route, BenchError, Client, Limit};
use crate::model::message::{self, property, sys_flag};
use crate::model::perm;
use crate::protocol::header::broker::{
    OffsetResponseHeader, PullMessageRequestHeader, PullMessageResponseHeader, TopicQueueHeader,
};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::RemotingError;
use crate::store::commit_log::record::{MAGIC_V1, MAGIC_V2, SYSFLAG_POS};

/// `PullSysFlag`: FLAG_SUSPEND | FLAG_SUBSCRIPTION.
const PULL_SYS_FLAG: i32 = 2 | 4;
/// How long the broker may hold a pull (`brokerSuspendMaxTimeMillis`).
const SUSPEND_MILLIS: i64 = 15_000;
/// The client's timeout for a held pull (`consumerTimeoutMillisWhenSuspend`).
const PULL_TIMEOUT: Duration = Duration::from_secs(30);

/// Where each queue starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StartFrom {
    /// Offset 0 (the broker moves it to the queue's minimum if older data is gone).
    Earliest,
    /// The queue's max offset when the run starts: only new messages.
    Latest,
}

/// What `bench consume` does.
#[derive(Clone, Debug)]
pub struct ConsumeOptions {
    pub namesrv: String,
    pub topic: String,
    pub group: String,
    /// `None`: drain, i.e. stop once every queue reached its max offset as of the start.
    pub limit: Option<Limit>,
    pub from: StartFrom,
    /// maxMsgNums per pull.
    pub pull_batch: i32,
    pub progress: Option<Duration>,
    pub stop: CancellationToken,
}

impl Default for ConsumeOptions {
    fn default() -> Self {
        Self {
            namesrv: "127.0.0.1:9876".into(),
            topic: "BenchTopic".into(),
            group: "ferrocket_bench_consumer".into(),
            limit: None,
            from: StartFrom::Earliest,
            pull_batch: 32,
            progress: None,
            stop: CancellationToken::new(),
        }
    }
}

/// One read queue and where it lives.
struct Queue {
    addr: String,
    queue_id: i32,
}

struct Ctx {
    client: Client,
    topic: String,
    group: String,
    pull_batch: i32,
    start: Instant,
    limit: Option<Limit>,
    received: AtomicU64,
    first: OnceLock<Duration>,
    stop: CancellationToken,
    /// Timer messages: how late each was stored after its requested time (ms).
    timer_late: std::sync::Mutex<Vec<i64>>,
}

/// Pulls until the limit (or the drain), then reports. Errors only when the run cannot start.
pub async fn consume(opts: ConsumeOptions) -> Result<Summary, BenchError> {
    if opts.pull_batch <= 0 || opts.group.is_empty() {
        return Err(BenchError::Usage("--group must be given and --pull-batch be at least 1".into()));
    }
    if opts.limit.is_none() && opts.from == StartFrom::Latest {
        return Err(BenchError::Usage("--from latest needs --seconds or --count (there is nothing to drain)".into()));
    }
    if matches!(opts.limit, Some(Limit::Count(0) | Limit::Time(Duration::ZERO))) {
        return Err(BenchError::Usage("--count and --seconds must be at least 1".into()));
    }
    let namesrv = first_namesrv(&opts.namesrv)?;
    let tracker = TaskTracker::new();
    let shutdown = CancellationToken::new();
    let result = run(&opts, &namesrv, &tracker, &shutdown).await;
    shutdown.cancel();
    tracker.close();
    result
}

async fn run(
    opts: &ConsumeOptions,
    namesrv: &str,
    tracker: &TaskTracker,
    shutdown: &CancellationToken,
) -> Result<Summary, BenchError> {
    let start = Instant::now();
    let client = new_client(tracker, shutdown);
    let route = route(&client, namesrv, &opts.topic)
        .await?
        .ok_or_else(|| BenchError::NoRoute { topic: opts.topic.clone(), why: format!("{namesrv} does not know it") })?;
    let mut queues = Vec::new();
    for q in route.queue_datas.iter().filter(|q| perm::is_readable(q.perm)) {
        let Some(b) = route.broker_datas.iter().find(|b| b.broker_name == q.broker_name) else { continue };
        let Some(addr) = b.master_addr().or_else(|| b.broker_addrs.values().next().map(String::as_str)) else {
            continue;
        };
        client.connection(addr).await.map_err(|source| BenchError::Transport {
            what: format!("connect to broker {} at {addr}", b.broker_name),
            source,
        })?;
        queues.extend((0..q.read_queue_nums).map(|queue_id| Queue { addr: addr.to_owned(), queue_id }));
    }
    if queues.is_empty() {
        return Err(BenchError::NoRoute { topic: opts.topic.clone(), why: "no readable queue on any broker".into() });
    }
    let mut plan = Vec::with_capacity(queues.len());
    for q in queues {
        let max = if opts.from == StartFrom::Latest || opts.limit.is_none() {
            Some(max_offset(&client, &opts.topic, &q).await?)
        } else {
            None
        };
        let from = if opts.from == StartFrom::Latest { max.unwrap_or(0) } else { 0 };
        let until = if opts.limit.is_none() { max } else { None };
        plan.push((q, from, until));
    }
    let ctx = Arc::new(Ctx {
        client,
        topic: opts.topic.clone(),
        group: opts.group.clone(),
        pull_batch: opts.pull_batch,
        start,
        limit: opts.limit,
        received: AtomicU64::new(0),
        first: OnceLock::new(),
        stop: opts.stop.child_token(),
        timer_late: std::sync::Mutex::new(Vec::new()),
    });
    let recorder = Arc::new(Recorder::default());
    let pullers = TaskTracker::new();
    for (q, from, until) in plan {
        pullers.spawn(puller(ctx.clone(), recorder.clone(), q, from, until));
    }
    pullers.close();
    let work = async {
        match ctx.limit {
            Some(Limit::Time(d)) => {
                tokio::select! {
                    _ = pullers.wait() => {}
                    _ = tokio::time::sleep_until(tokio::time::Instant::from_std(start + d)) => {
                        ctx.stop.cancel();
                        pullers.wait().await;
                    }
                }
            }
            _ => pullers.wait().await,
        }
    };
    let ((), timeline) = drive(&recorder, start, opts.progress, work).await;
    let mut summary = timeline.summary(Role::Consume, ctx.first.get().copied());
    let late = std::mem::take(&mut *ctx.timer_late.lock().unwrap_or_else(|e| e.into_inner()));
    summary.timer_lateness = TimerLateness::of(late);
    Ok(summary)
}

async fn max_offset(client: &Client, topic: &str, q: &Queue) -> Result<i64, BenchError> {
    let mut req = RemotingCommand::request(RequestCode::GET_MAX_OFFSET);
    TopicQueueHeader { topic: topic.to_owned(), queue_id: q.queue_id }.encode(&mut req.ext_fields);
    let what = format!("max offset of {topic} queue {} on {}", q.queue_id, q.addr);
    let resp = call(client, &q.addr, req, &what).await?;
    OffsetResponseHeader::decode(&resp.ext_fields)
        .map(|h| h.offset)
        .map_err(|e| BenchError::Body { what, why: e.to_string() })
}

/// Pulls one queue from `offset` until `until` (drain), the stop, or the count.
async fn puller(ctx: Arc<Ctx>, recorder: Arc<Recorder>, q: Queue, mut offset: i64, until: Option<i64>) {
    let mut stamps = Vec::with_capacity(ctx.pull_batch as usize);
    let mut late = Vec::new();
    let mut latencies = Vec::with_capacity(ctx.pull_batch as usize);
    while !ctx.stop.is_cancelled() && until.is_none_or(|u| offset < u) {
        let header = PullMessageRequestHeader {
            consumer_group: ctx.group.clone(),
            topic: ctx.topic.clone(),
            queue_id: q.queue_id,
            queue_offset: offset,
            max_msg_nums: ctx.pull_batch,
            sys_flag: PULL_SYS_FLAG,
            commit_offset: Some(0),
            suspend_timeout_millis: Some(SUSPEND_MILLIS),
            subscription: Some("*".into()),
            sub_version: Some(0),
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        };
        let mut req = RemotingCommand::request(RequestCode::PULL_MESSAGE);
        header.encode(&mut req.ext_fields);
        let resp = tokio::select! {
            _ = ctx.stop.cancelled() => return,
            r = ctx.client.invoke(&q.addr, req, PULL_TIMEOUT) => r,
        };
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                recorder.failure(cause(&e), 1);
                if !matches!(e, RemotingError::Timeout { .. }) {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                continue;
            }
        };
        let next = PullMessageResponseHeader::decode(&resp.ext_fields).map(|h| h.next_begin_offset);
        match (resp.response_code(), next) {
            (ResponseCode::SUCCESS, Ok(next)) => {
                stamps.clear();
                late.clear();
                match scan(&resp.body, &mut stamps, &mut late) {
                    Ok((n, bytes)) => {
                        if !late.is_empty() {
                            ctx.timer_late.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&late);
                        }
                        let now = now_ms();
                        latencies.clear();
                        latencies.extend(stamps.iter().map(|s| u64::try_from(now - s).unwrap_or(0) * 1000));
                        recorder.success(n, bytes, &latencies);
                        if n > 0 {
                            ctx.first.get_or_init(|| ctx.start.elapsed());
                        }
                        let total = ctx.received.fetch_add(n, Ordering::Relaxed) + n;
                        if ctx.limit.is_some_and(|l| matches!(l, Limit::Count(c) if total >= c)) {
                            ctx.stop.cancel();
                        }
                    }
                    Err(why) => {
                        tracing::warn!(queue = q.queue_id, broker = %q.addr, %why, "unreadable pull body; skipping it");
                        recorder.failure("unreadable pull body", 1);
                    }
                }
                offset = next;
            }
            (
                ResponseCode::PULL_NOT_FOUND | ResponseCode::PULL_RETRY_IMMEDIATELY | ResponseCode::PULL_OFFSET_MOVED,
                Ok(next),
            ) => offset = next,
            (code, _) => {
                recorder.failure(&code.to_string(), 1);
                // Java's push consumer waits 3 s after an exception; a bench waits less.
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(i32::from_be_bytes)
}

fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(i64::from_be_bytes)
}

/// Walks the stored records of a pull body (the CommitLog layout, see `record`): returns the
/// number of messages and their body bytes, and pushes each store timestamp onto `stamps` and,
/// for each delivered timer message, how late it was stored onto `late`. Only the fields needed
/// are read; bodies are not copied.
pub(super) fn scan(body: &[u8], stamps: &mut Vec<i64>, late: &mut Vec<i64>) -> Result<(u64, u64), String> {
    let (mut pos, mut msgs, mut bytes) = (0usize, 0u64, 0u64);
    while pos < body.len() {
        let bad = |why: &str| format!("record {msgs} at byte {pos}: {why}");
        let rest = body.get(pos..).unwrap_or_default();
        let total = be_i32(rest, 0).ok_or_else(|| bad("truncated size"))?;
        let magic = be_i32(rest, 4).ok_or_else(|| bad("truncated magic"))?;
        if magic != MAGIC_V1 && magic != MAGIC_V2 {
            return Err(bad("not a message record"));
        }
        let rec = usize::try_from(total).ok().and_then(|t| rest.get(..t)).ok_or_else(|| bad("size out of range"))?;
        let flags = be_i32(rec, SYSFLAG_POS).ok_or_else(|| bad("truncated"))?;
        let host = |v6: bool| if v6 { 20 } else { 8 };
        let store_ts_at = SYSFLAG_POS + 4 + 8 + host(flags & sys_flag::BORNHOST_V6 != 0);
        let store_ts = be_i64(rec, store_ts_at).ok_or_else(|| bad("truncated"))?;
        // storeHost, reconsumeTimes:4, preparedTransactionOffset:8, then bodyLen:4.
        let body_len_at = store_ts_at + 8 + host(flags & sys_flag::STOREHOST_V6 != 0) + 4 + 8;
        let body_len = be_i32(rec, body_len_at)
            .and_then(|l| u64::try_from(l).ok())
            .filter(|l| body_len_at as u64 + 4 + l <= rec.len() as u64)
            .ok_or_else(|| bad("body length out of range"))?;
        stamps.push(store_ts);
        if let Some(due) = timer_due(rec) {
            late.push(store_ts - due);
        }
        msgs += 1;
        bytes += body_len;
        pos += rec.len();
    }
    Ok((msgs, bytes))
}

/// When a delivered timer message was asked for: `TIMER_DELIVER_MS`, or its born time plus
/// `TIMER_DELAY_MS` / `TIMER_DELAY_SEC` (the broker counts from when it got the send, a moment
/// after). `None` for other messages.
fn timer_due(rec: &[u8]) -> Option<i64> {
    let props = std::str::from_utf8(crate::store::commit_log::record::properties(rec)?).ok()?;
    message::property_value(props, property::TIMER_OUT_MS)?;
    let born = be_i64(rec, SYSFLAG_POS + 4)?;
    let num = |k| message::property_value(props, k).and_then(|v| v.parse::<i64>().ok());
    num(property::TIMER_DELAY_SEC)
        .map(|s| born + s * 1000)
        .or_else(|| num(property::TIMER_DELAY_MS).map(|ms| born + ms))
        .or_else(|| num(property::TIMER_DELIVER_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v1 record with IPv4 hosts (the layout of `record::encode`), written out by hand.
    fn record(body: &[u8], store_ts: i64) -> Vec<u8> {
        let topic = b"T";
        let total = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + body.len() + 1 + topic.len() + 2;
        let mut r = Vec::new();
        r.extend_from_slice(&(total as i32).to_be_bytes());
        r.extend_from_slice(&MAGIC_V1.to_be_bytes());
        r.extend_from_slice(&[0; 12]); // bodyCrc, queueId, flag
        r.extend_from_slice(&[0; 16]); // queueOffset, physicalOffset
        r.extend_from_slice(&0i32.to_be_bytes()); // sysFlag
        r.extend_from_slice(&1i64.to_be_bytes()); // bornTimestamp
        r.extend_from_slice(&[127, 0, 0, 1, 0, 0, 0, 1]);
        r.extend_from_slice(&store_ts.to_be_bytes());
        r.extend_from_slice(&[127, 0, 0, 1, 0, 0, 0, 2]);
        r.extend_from_slice(&[0; 12]); // reconsumeTimes, preparedTransactionOffset
        r.extend_from_slice(&(body.len() as i32).to_be_bytes());
        r.extend_from_slice(body);
        r.push(topic.len() as u8);
        r.extend_from_slice(topic);
        r.extend_from_slice(&0i16.to_be_bytes());
        assert_eq!(r.len(), total);
        r
    }

    #[test]
    fn scan_counts_records_bodies_and_store_times() {
        let mut body = record(b"hello", 1000);
        body.extend(record(&[7; 300], 2000));
        let mut stamps = Vec::new();
        assert_eq!(scan(&body, &mut stamps, &mut Vec::new()), Ok((2, 305)));
        assert_eq!(stamps, [1000, 2000]);
        assert_eq!(scan(&[], &mut stamps, &mut Vec::new()), Ok((0, 0)));
    }

    #[test]
    fn scan_rejects_every_truncation_without_panicking() {
        let mut body = record(b"hello", 1000);
        body.extend(record(b"world", 1000));
        let first = body.len() / 2;
        for n in (1..body.len()).filter(|n| *n != first) {
            assert!(scan(&body[..n], &mut Vec::new(), &mut Vec::new()).is_err(), "prefix {n}");
        }
        let mut bad = body.clone();
        bad[4] ^= 0xFF;
        assert!(scan(&bad, &mut Vec::new(), &mut Vec::new()).unwrap_err().contains("not a message record"));
    }
}
