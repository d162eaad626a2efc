//! `bench produce`: SEND_MESSAGE_V2 at every master's write queues, as the official Java
//! producer sends it, from a fixed pool of `in_flight` sender tasks (each keeps one request
//! outstanding, so the pool size is the in-flight bound) over `connections` sockets per broker.
//!
//! May import: `model`, `protocol`, `remoting` and modules of `tools/`; the area's rule is its line
//! in docs/architecture.md.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::stats::{Recorder, Role, Summary};
use super::uniq::UniqId;
use super::{call, cause, drive, first_namesrv, masters, new_client, now_ms, route, BenchError, Client, Limit};
use crate::model::message::{properties_to_string, property};
use crate::model::perm;
use crate::protocol::body::message::{encode_batch, BatchEntry};
use crate::protocol::body::route::TopicRouteData;
use crate::protocol::header::broker::{CreateTopicRequestHeader, SendMessageRequestHeaderV2, TopicQueueHeader};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, RequestCode, ResponseCode};
use crate::remoting::RemotingError;

/// How messages are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SendMode {
    /// One message per request, waiting for the answer.
    Sync,
    /// One message per request with the oneway flag: nothing is answered, no latency.
    Oneway,
    /// `batch` messages per request (header `m=true`, a `MessageDecoder.encodeMessages` body).
    Batch,
}

/// What `bench produce` does; see the command's help for each field.
#[derive(Clone, Debug)]
pub struct ProduceOptions {
    /// NameServer address(es), `host:port[;host:port]`; the first is used.
    pub namesrv: String,
    pub topic: String,
    /// Body bytes per message.
    pub size: usize,
    pub limit: Limit,
    /// Requests outstanding in total.
    pub in_flight: usize,
    /// Sockets per broker.
    pub connections: usize,
    pub mode: SendMode,
    /// Messages per request in batch mode.
    pub batch: usize,
    /// Queues of a topic this creates.
    pub queues: i32,
    pub producer_group: String,
    /// Per request; a request not answered by then counts as failed.
    pub timeout: Duration,
    /// Print a progress line to stderr this often.
    pub progress: Option<Duration>,
    /// Cancelled: stop sending and report what was done (Ctrl-C).
    pub stop: CancellationToken,
    /// Timer messages: each send carries `TIMER_DELAY_MS` with this value.
    pub timer_delay_ms: Option<u64>,
}

impl Default for ProduceOptions {
    fn default() -> Self {
        Self {
            namesrv: "127.0.0.1:9876".into(),
            topic: "BenchTopic".into(),
            size: 1024,
            limit: Limit::Time(Duration::from_secs(10)),
            in_flight: 256,
            connections: 4,
            mode: SendMode::Sync,
            batch: 32,
            queues: 8,
            producer_group: "ferrocket_bench_producer".into(),
            timeout: Duration::from_secs(3),
            progress: None,
            stop: CancellationToken::new(),
            timer_delay_ms: None,
        }
    }
}

/// Sends until the limit, then reports. Errors only when the run cannot start.
pub async fn produce(opts: ProduceOptions) -> Result<Summary, BenchError> {
    validate(&opts)?;
    let namesrv = first_namesrv(&opts.namesrv)?;
    let conn_tracker = TaskTracker::new();
    let conn_shutdown = CancellationToken::new();
    let result = run(&opts, &namesrv, &conn_tracker, &conn_shutdown).await;
    conn_shutdown.cancel();
    conn_tracker.close();
    result
}

fn validate(opts: &ProduceOptions) -> Result<(), BenchError> {
    let usage = |m: &str| Err(BenchError::Usage(m.to_owned()));
    if opts.in_flight == 0 || opts.connections == 0 || opts.queues <= 0 {
        return usage("--in-flight, --connections and --queues must be at least 1");
    }
    if opts.mode == SendMode::Batch && opts.batch == 0 {
        return usage("--batch must be at least 1");
    }
    if opts.limit == Limit::Count(0) || opts.limit == Limit::Time(Duration::ZERO) {
        return usage("--count and --seconds must be at least 1");
    }
    Ok(())
}

async fn run(
    opts: &ProduceOptions,
    namesrv: &str,
    tracker: &TaskTracker,
    shutdown: &CancellationToken,
) -> Result<Summary, BenchError> {
    let ns = new_client(tracker, shutdown);
    let route = ensure_route(&ns, namesrv, opts).await?;
    let ctx = Arc::new(Ctx::connect(opts, &route, tracker, shutdown).await?);
    let recorder = Arc::new(Recorder::default());
    let start = Instant::now();
    let budget = Arc::new(Budget::new(opts.limit, start, opts.stop.clone()));
    let senders = TaskTracker::new();
    for _ in 0..opts.in_flight {
        senders.spawn(sender(ctx.clone(), recorder.clone(), budget.clone()));
    }
    senders.close();
    let work = async {
        senders.wait().await;
        if ctx.mode == SendMode::Oneway {
            ctx.flush().await;
        }
    };
    let ((), timeline) = drive(&recorder, start, opts.progress, work).await;
    Ok(timeline.summary(Role::Produce, None))
}

/// The route of the topic, creating the topic on every master first if it has none.
async fn ensure_route(ns: &Client, namesrv: &str, opts: &ProduceOptions) -> Result<TopicRouteData, BenchError> {
    let topic = &opts.topic;
    let writable =
        |r: &TopicRouteData| r.queue_datas.iter().any(|q| perm::is_writeable(q.perm) && q.write_queue_nums > 0);
    if let Some(r) = route(ns, namesrv, topic).await? {
        if writable(&r) {
            return Ok(r);
        }
    }
    let masters = masters(ns, namesrv).await?;
    if masters.is_empty() {
        return Err(BenchError::NoRoute {
            topic: topic.clone(),
            why: format!("it does not exist and no master broker is registered with {namesrv} to create it on"),
        });
    }
    for (name, addr) in &masters {
        let header = CreateTopicRequestHeader {
            topic: topic.clone(),
            default_topic: Some("TBW102".into()),
            read_queue_nums: opts.queues,
            write_queue_nums: opts.queues,
            perm: perm::READ | perm::WRITE,
            topic_filter_type: Some("SINGLE_TAG".into()),
            topic_sys_flag: Some(0),
            order: false,
            attributes: None,
        };
        let mut req = RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC);
        header.encode(&mut req.ext_fields);
        call(ns, addr, req, &format!("create topic {topic} on {name} ({addr})")).await?;
        tracing::info!(topic = %topic, broker = %name, queues = opts.queues, "created topic");
    }
    // The brokers register the new topic with the NameServer right after creating it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(r) = route(ns, namesrv, topic).await? {
            let names: Vec<&str> = r.queue_datas.iter().map(|q| q.broker_name.as_str()).collect();
            if writable(&r) && masters.iter().all(|(m, _)| names.contains(&m.as_str())) {
                return Ok(r);
            }
        }
        if Instant::now() > deadline {
            return Err(BenchError::NoRoute {
                topic: topic.clone(),
                why: format!("created on {} master(s) but {namesrv} has no full route after 30 s", masters.len()),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One master and its sockets.
struct Broker {
    name: String,
    addr: String,
    clients: Vec<Client>,
}

/// A write queue: (index into `Ctx::brokers`, queue id).
struct Target {
    broker: usize,
    queue_id: i32,
}

/// What every sender shares.
struct Ctx {
    brokers: Vec<Broker>,
    targets: Vec<Target>,
    next: AtomicUsize,
    mode: SendMode,
    per_request: u64,
    body: Bytes,
    topic: String,
    group: String,
    timeout: Duration,
    uniq: UniqId,
    timer_delay_ms: Option<String>,
}

impl Ctx {
    /// Plans the write queues of every master in the route and opens the sockets.
    async fn connect(
        opts: &ProduceOptions,
        route: &TopicRouteData,
        tracker: &TaskTracker,
        shutdown: &CancellationToken,
    ) -> Result<Self, BenchError> {
        let mut brokers: Vec<Broker> = Vec::new();
        let mut targets = Vec::new();
        for q in route.queue_datas.iter().filter(|q| perm::is_writeable(q.perm)) {
            let Some(addr) =
                route.broker_datas.iter().find(|b| b.broker_name == q.broker_name).and_then(|b| b.master_addr())
            else {
                continue;
            };
            let broker = match brokers.iter().position(|b| b.addr == addr) {
                Some(i) => i,
                None => {
                    let mut clients = Vec::with_capacity(opts.connections);
                    for _ in 0..opts.connections {
                        let client = new_client(tracker, shutdown);
                        client.connection(addr).await.map_err(|source| BenchError::Transport {
                            what: format!("connect to broker {} at {addr}", q.broker_name),
                            source,
                        })?;
                        clients.push(client);
                    }
                    brokers.push(Broker { name: q.broker_name.clone(), addr: addr.to_owned(), clients });
                    brokers.len() - 1
                }
            };
            targets.extend((0..q.write_queue_nums).map(|queue_id| Target { broker, queue_id }));
        }
        if targets.is_empty() {
            return Err(BenchError::NoRoute {
                topic: opts.topic.clone(),
                why: "no writable queue on a master broker".into(),
            });
        }
        let per_request = if opts.mode == SendMode::Batch { opts.batch as u64 } else { 1 };
        let body: Bytes = (0..opts.size).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>().into();
        Ok(Self {
            brokers,
            targets,
            next: AtomicUsize::new(0),
            mode: opts.mode,
            per_request,
            body,
            topic: opts.topic.clone(),
            group: opts.producer_group.clone(),
            timeout: opts.timeout,
            uniq: UniqId::new(),
            timer_delay_ms: opts.timer_delay_ms.map(|d| d.to_string()),
        })
    }

    /// A SEND_MESSAGE_V2 of `n` messages to `target`, with the header the Java client builds
    /// (`MQClientAPIImpl.sendMessage`, `SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2`).
    fn request(&self, target: &Target, n: u64) -> Result<RemotingCommand, String> {
        let now = now_ms();
        let wait = (property::WAIT, "true");
        let (properties, body, batch) = match self.mode {
            SendMode::Batch => {
                let entries: Vec<BatchEntry> = (0..n)
                    .map(|_| {
                        let id = self.uniq.next(now);
                        BatchEntry {
                            flag: 0,
                            body: self.body.clone(),
                            properties: properties_to_string([wait, (property::UNIQ_KEY, id.as_str())]),
                        }
                    })
                    .collect();
                (properties_to_string([wait]), Bytes::from(encode_batch(&entries)?), true)
            }
            _ => {
                let id = self.uniq.next(now);
                let mut props = vec![wait, (property::UNIQ_KEY, id.as_str())];
                if let Some(d) = &self.timer_delay_ms {
                    props.push((property::TIMER_DELAY_MS, d.as_str()));
                }
                (properties_to_string(props), self.body.clone(), false)
            }
        };
        let header = SendMessageRequestHeaderV2 {
            producer_group: self.group.clone(),
            topic: self.topic.clone(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: target.queue_id,
            sys_flag: 0,
            born_timestamp: now,
            flag: 0,
            properties: Some(properties),
            reconsume_times: Some(0),
            unit_mode: Some(false),
            max_reconsume_times: None,
            batch: Some(batch),
            broker_name: self.brokers.get(target.broker).map(|b| b.name.clone()),
        };
        let mut req = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2).with_body(body);
        header.encode(&mut req.ext_fields);
        Ok(req)
    }

    /// Waits until every socket has carried what the oneway senders queued: the answer to a
    /// request sent behind them comes only after the broker read them.
    async fn flush(&self) {
        for b in &self.brokers {
            for c in &b.clients {
                let mut req = RemotingCommand::request(RequestCode::GET_MAX_OFFSET);
                TopicQueueHeader { topic: self.topic.clone(), queue_id: 0 }.encode(&mut req.ext_fields);
                let _ = c.invoke(&b.addr, req, self.timeout).await;
            }
        }
    }
}

/// How many more messages may be started.
struct Budget {
    deadline: Option<Instant>,
    left: AtomicU64,
    stop: CancellationToken,
}

impl Budget {
    fn new(limit: Limit, start: Instant, stop: CancellationToken) -> Self {
        match limit {
            Limit::Time(d) => Self { deadline: Some(start + d), left: AtomicU64::new(u64::MAX), stop },
            Limit::Count(n) => Self { deadline: None, left: AtomicU64::new(n), stop },
        }
    }

    /// Claims up to `want` messages; 0 means stop.
    fn claim(&self, want: u64) -> u64 {
        if self.stop.is_cancelled() || self.deadline.is_some_and(|d| Instant::now() >= d) {
            return 0;
        }
        match self.left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(want.min(left))) {
            Ok(left) => want.min(left),
            Err(_) => 0,
        }
    }
}

async fn sender(ctx: Arc<Ctx>, recorder: Arc<Recorder>, budget: Arc<Budget>) {
    loop {
        let n = budget.claim(ctx.per_request);
        if n == 0 {
            return;
        }
        let k = ctx.next.fetch_add(1, Ordering::Relaxed);
        let Some(target) = ctx.targets.get(k % ctx.targets.len()) else { return };
        let Some(broker) = ctx.brokers.get(target.broker) else { return };
        let Some(client) = broker.clients.get((k / ctx.targets.len()) % broker.clients.len()) else { return };
        let bytes = n * ctx.body.len() as u64;
        let req = match ctx.request(target, n) {
            Ok(r) => r,
            Err(why) => {
                recorder.failure(&format!("unencodable batch: {why}"), n);
                continue;
            }
        };
        let t = Instant::now();
        let outcome = if ctx.mode == SendMode::Oneway {
            client.invoke_oneway(&broker.addr, req).await.map(|()| None)
        } else {
            client.invoke(&broker.addr, req, ctx.timeout).await.map(|r| Some(r.response_code()))
        };
        match outcome {
            Ok(None) => recorder.success(n, bytes, &[]),
            Ok(Some(ResponseCode::SUCCESS)) => {
                let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
                recorder.success(n, bytes, &[us]);
            }
            Ok(Some(code)) => recorder.failure(&code.to_string(), n),
            Err(e) => {
                recorder.failure(cause(&e), n);
                if !matches!(e, RemotingError::Timeout { .. }) {
                    // The broker is gone or going: do not spin on a dead socket.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_budget_hands_out_exactly_the_count() {
        let b = Budget::new(Limit::Count(70), Instant::now(), CancellationToken::new());
        assert_eq!((b.claim(32), b.claim(32), b.claim(32), b.claim(32)), (32, 32, 6, 0));
        let stop = CancellationToken::new();
        let b = Budget::new(Limit::Time(Duration::from_secs(60)), Instant::now(), stop.clone());
        assert_eq!(b.claim(1), 1);
        stop.cancel();
        assert_eq!(b.claim(1), 0);
        let b = Budget::new(Limit::Time(Duration::ZERO), Instant::now(), CancellationToken::new());
        assert_eq!(b.claim(1), 0);
    }
}
