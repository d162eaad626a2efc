//! The `ferrocket bench` subcommands: flags to options, Ctrl-C to a clean stop, and the output
//! (table or JSON on stdout, progress on stderr, the HTML report).
//!
//! May import: nothing outside `tools/` (the area's rule: docs/architecture.md).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::{
    consume, html_report, produce, BenchError, ConsumeOptions, Limit, ProduceOptions, SendMode, StartFrom, Summary,
};

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Sends messages to a topic (created on every master if missing) and reports throughput
    /// and send latency.
    Produce(ProduceArgs),
    /// Pulls a topic's messages back and reports the time to the first message and the drain rate.
    Consume(ConsumeArgs),
}

#[derive(Args, Debug)]
pub struct Common {
    /// NameServer address, `host:port`.
    #[arg(short = 'n', long, default_value = "127.0.0.1:9876")]
    namesrv: String,
    /// The topic to send to or pull from.
    #[arg(short = 't', long)]
    topic: String,
    /// Run this many seconds.
    #[arg(long, conflicts_with = "count")]
    seconds: Option<u64>,
    /// Stop after this many messages.
    #[arg(long)]
    count: Option<u64>,
    /// One line of JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write an HTML page with throughput and latency over time.
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
}

impl Common {
    fn limit(&self) -> Option<Limit> {
        match (self.seconds, self.count) {
            (Some(s), _) => Some(Limit::Time(Duration::from_secs(s))),
            (None, Some(n)) => Some(Limit::Count(n)),
            (None, None) => None,
        }
    }
}

#[derive(Args, Debug)]
pub struct ProduceArgs {
    #[command(flatten)]
    common: Common,
    /// Body bytes per message.
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Requests outstanding in total.
    #[arg(long, default_value_t = 256)]
    in_flight: usize,
    /// TCP connections per broker.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// sync: one message per request; oneway: no answers (throughput only); batch: --batch
    /// messages per request.
    #[arg(long, value_enum, default_value_t = SendMode::Sync)]
    send: SendMode,
    /// Messages per request with --send batch.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Read and write queues of the topic when it has to be created.
    #[arg(long, default_value_t = 8)]
    queues: i32,
    /// Milliseconds before an unanswered send counts as failed.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
    /// The producer group the sends name.
    #[arg(long, default_value = "ferrocket_bench_producer")]
    group: String,
    /// Send timer messages due this many milliseconds after they are sent (TIMER_DELAY_MS);
    /// `bench consume` then reports how late they were stored on the topic.
    #[arg(long, value_name = "MS")]
    timer_delay_ms: Option<u64>,
}

#[derive(Args, Debug)]
pub struct ConsumeArgs {
    #[command(flatten)]
    common: Common,
    /// Consumer group the pulls name.
    #[arg(short = 'g', long)]
    group: String,
    /// Start at offset 0, or at each queue's end (then --seconds or --count is needed). Without
    /// --seconds or --count the run drains what the queues held at the start.
    #[arg(long, value_enum, default_value_t = StartFrom::Earliest)]
    from: StartFrom,
    /// Messages asked for per pull (maxMsgNums).
    #[arg(long, default_value_t = 32)]
    pull_batch: i32,
}

/// Runs one bench; returns what goes to stdout. `command_line` is shown in the report.
pub async fn run(cmd: BenchCommand, command_line: &str) -> Result<String, BenchError> {
    let stop = tokio_util::sync::CancellationToken::new();
    let on_signal = stop.clone();
    // Ctrl-C stops the run and still reports what was measured.
    let signal = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("stopping: Ctrl-C");
            on_signal.cancel();
        }
    });
    let progress = Some(Duration::from_secs(if std::io::stderr().is_terminal() { 1 } else { 5 }));
    let (summary, common) = match cmd {
        BenchCommand::Produce(a) => {
            let opts = ProduceOptions {
                namesrv: a.common.namesrv.clone(),
                topic: a.common.topic.clone(),
                size: a.size,
                limit: a.common.limit().unwrap_or(Limit::Time(Duration::from_secs(10))),
                in_flight: a.in_flight,
                connections: a.connections,
                mode: a.send,
                batch: a.batch,
                queues: a.queues,
                producer_group: a.group,
                timeout: Duration::from_millis(a.timeout_ms),
                progress,
                stop,
                timer_delay_ms: a.timer_delay_ms,
            };
            if a.timer_delay_ms.is_some() && a.send == SendMode::Batch {
                return Err(BenchError::Usage("--timer-delay-ms needs --send sync or oneway".into()));
            }
            (produce(opts).await, a.common)
        }
        BenchCommand::Consume(a) => {
            let opts = ConsumeOptions {
                namesrv: a.common.namesrv.clone(),
                topic: a.common.topic.clone(),
                group: a.group,
                limit: a.common.limit(),
                from: a.from,
                pull_batch: a.pull_batch,
                progress,
                stop,
            };
            (consume(opts).await, a.common)
        }
    };
    signal.abort();
    output(&summary?, &common, command_line)
}

fn output(summary: &Summary, common: &Common, command_line: &str) -> Result<String, BenchError> {
    if let Some(path) = &common.report {
        let page = html_report(summary, command_line)?;
        std::fs::write(path, page).map_err(|source| BenchError::Report { path: path.display().to_string(), source })?;
        eprintln!("report written to {}", path.display());
    }
    Ok(if common.json { summary.to_json() + "\n" } else { summary.table() })
}
