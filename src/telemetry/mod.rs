//! Metrics (Prometheus): the `metrics` facade over `metrics-exporter-prometheus`'s recorder,
//! served at `http://<metricsPromExporterHost>:<metricsPromExporterPort>/metrics` (Java 5.x's
//! keys, `metricsExporterType=PROM`), with Java's metric names and labels where Java has them
//! (`names`).
//!
//! ```text
//! hot paths (send, pull, every request) -- cached handles (`handles`), atomics only --> registry
//! scrape: GET /metrics --> on_scrape collectors set gauges from broker state --> render
//! ```
//! One recorder per process (the facade's is global): a standalone process's NameServer and
//! broker, or the brokers of a test process, share it and are told apart by their labels.
//! The recorder keeps every histogram sample until upkeep folds it into its buckets: a thread
//! runs upkeep every 5 s, so memory stays flat when nobody scrapes.
//!
//! May import: nothing of ferrocket's (the remoting layer, the broker and the NameServer call in).

pub mod handles;
pub mod http;
pub mod names;

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use metrics::Label;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub use handles::{flow_control_refused, messages_in, messages_out, rpc_latency, MessageType, Protocol};

/// Labels every metric of one node carries (Java's `BrokerMetricsManager.LABEL_MAP`), and an id
/// the hot-path caches key their handles by.
#[derive(Debug)]
pub struct Node {
    id: u64,
    labels: Vec<Label>,
}

impl Node {
    /// `node_type` (`broker` / `nameserver`), `cluster` (unless empty), `node_id`, then
    /// `metricsLabel`'s `k:v,k:v` pairs (a malformed pair is skipped, as Java does).
    pub fn new(node_type: &'static str, cluster: &str, node_id: &str, extra: &str) -> Arc<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let mut labels = vec![Label::new(names::LABEL_NODE_TYPE, node_type)];
        if !cluster.is_empty() {
            labels.push(Label::new(names::LABEL_CLUSTER_NAME, cluster.to_owned()));
        }
        labels.push(Label::new(names::LABEL_NODE_ID, node_id.to_owned()));
        for pair in extra.split(',').filter(|p| !p.is_empty()) {
            if let Some((k, v)) = pair.split_once(':').filter(|(k, v)| !k.is_empty() && !v.contains(':')) {
                labels.push(Label::new(k.to_owned(), v.to_owned()));
            }
        }
        Arc::new(Self { id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed), labels })
    }

    /// This node's labels followed by `more`.
    pub fn labels(&self, more: impl IntoIterator<Item = Label>) -> Vec<Label> {
        self.labels.iter().cloned().chain(more).collect()
    }
}

/// `metricsExporterType` (Java's `MetricsExporterType`, by name or number): whether to serve
/// Prometheus metrics, or why the value is refused.
pub fn exporter_enabled(value: &str) -> Result<bool, &'static str> {
    match value.trim().to_ascii_uppercase().as_str() {
        "PROM" | "2" => Ok(true),
        "DISABLE" | "0" => Ok(false),
        "OTLP_GRPC" | "1" | "LOG" | "3" => {
            Err("the OTLP_GRPC and LOG exporters are not implemented; use PROM or DISABLE")
        }
        _ => Err("must be DISABLE, OTLP_GRPC, PROM or LOG"),
    }
}

/// The process's recorder, installed on first use; `None` when something else installed a
/// global recorder first (then nothing is recorded here).
pub fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let mut b = PrometheusBuilder::new();
            for (name, buckets) in names::BUCKETS {
                b = b.set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets).ok()?;
            }
            let handle = b.install_recorder().ok()?;
            let upkeep = handle.clone();
            if let Err(e) = run_every("ferrocket-metrics-upkeep", UPKEEP_INTERVAL, move || upkeep.run_upkeep()) {
                tracing::warn!(error = %e, "cannot start the metrics upkeep thread; histogram samples are kept until a scrape");
            }
            Some(handle)
        })
        .as_ref()
}

/// How often pending histogram samples are folded into their buckets (the exporter's default
/// upkeep timeout). `install_recorder` leaves this to its caller: without it every sample of
/// `rocketmq_message_size` or `rocketmq_rpc_latency` stays in memory until the next scrape.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Runs `f` every `interval` on a thread of its own, for the life of the process.
fn run_every(name: &str, interval: Duration, f: impl Fn() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.to_owned()).spawn(move || loop {
        std::thread::sleep(interval);
        f();
    })?;
    Ok(())
}

type Collector = dyn Fn() + Send + Sync;

fn collectors() -> &'static Mutex<Vec<Weak<Collector>>> {
    static COLLECTORS: OnceLock<Mutex<Vec<Weak<Collector>>>> = OnceLock::new();
    COLLECTORS.get_or_init(Mutex::default)
}

/// Runs `f` before every scrape (Java's observable gauges), for as long as the caller keeps the
/// returned `Arc`.
pub fn on_scrape(f: impl Fn() + Send + Sync + 'static) -> Arc<Collector> {
    let f: Arc<Collector> = Arc::new(f);
    let mut all = collectors().lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|c| c.strong_count() > 0);
    all.push(Arc::downgrade(&f));
    f
}

/// The scrape answer: collectors run, then the registry is rendered in Prometheus text format.
pub fn render() -> String {
    let Some(handle) = handle() else { return String::new() };
    let live: Vec<Arc<Collector>> =
        collectors().lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect();
    for c in live {
        c();
    }
    handle.run_upkeep();
    handle.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upkeep_runs_again_and_again_without_a_scrape() {
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = runs.clone();
        run_every("upkeep-test", Duration::from_millis(5), move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while runs.load(std::sync::atomic::Ordering::Relaxed) < 3 {
            assert!(std::time::Instant::now() < deadline, "the periodic task ran {runs:?} times in 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn exporter_types_as_java_names_or_numbers() {
        assert_eq!(exporter_enabled("PROM"), Ok(true));
        assert_eq!(exporter_enabled("2"), Ok(true));
        assert_eq!(exporter_enabled("disable"), Ok(false));
        assert!(exporter_enabled("OTLP_GRPC").unwrap_err().contains("not implemented"));
        assert!(exporter_enabled("LOG").is_err());
        assert!(exporter_enabled("graphite").unwrap_err().contains("must be"));
    }

    #[test]
    fn node_labels_then_metrics_label_pairs() {
        let n = Node::new("broker", "C", "b-a", "env:prod,bad,x:y:z,,zone:z1");
        let got: Vec<(String, String)> =
            n.labels([Label::new("topic", "T")]).iter().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
        let want = [
            ("node_type", "broker"),
            ("cluster", "C"),
            ("node_id", "b-a"),
            ("env", "prod"),
            ("zone", "z1"),
            ("topic", "T"),
        ];
        assert_eq!(got, want.map(|(k, v)| (k.to_owned(), v.to_owned())));
        let ns = Node::new("nameserver", "", "h:9876", "");
        assert_eq!(ns.labels([]).len(), 2, "no empty cluster label");
        assert_ne!(n.id, ns.id);
    }
}
