//! The `ferrocket` command: `standalone`, `namesrv`, `broker`, `admin`, `store`, `bench`.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use ferrocket::broker::BrokerConfig;
use ferrocket::namesrv::{NameServer, NamesrvConfig};
use ferrocket::node::BrokerNode;

/// mimalloc instead of glibc's malloc: the request path allocates small short-lived buffers and
/// maps on tokio's worker threads, where glibc spent ~11% of the broker's CPU (perf, 1 KiB sync
/// sends from the Java client) in `_int_malloc`/`_int_free`/`malloc_consolidate`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "ferrocket", version, about = "Apache RocketMQ compatible NameServer and Broker")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a NameServer (9876) and a Broker (10911) in one process, data under $HOME/store and
    /// $HOME/namesrv, no config needed.
    Standalone {
        /// A Java broker.conf for the broker (optional).
        #[arg(short = 'c', long = "config-file")]
        config_file: Option<PathBuf>,
        /// A Java namesrv.conf for the NameServer (optional).
        #[arg(long = "namesrv-config")]
        namesrv_config: Option<PathBuf>,
        /// Print the effective configuration and exit.
        #[arg(short = 'p', long = "print-config")]
        print_config: bool,
    },
    /// Runs a Broker.
    Broker {
        /// NameServer addresses, `host:port[;host:port]` (overrides namesrvAddr).
        #[arg(short = 'n', long = "namesrv-addr")]
        namesrv_addr: Option<String>,
        /// A Java broker.conf (properties) file.
        #[arg(short = 'c', long = "config-file")]
        config_file: Option<PathBuf>,
        /// Print every configuration key and exit.
        #[arg(short = 'p', long = "print-config")]
        print_config: bool,
        /// Print the important configuration keys and exit.
        #[arg(short = 'm', long = "print-important-config")]
        print_important: bool,
    },
    /// Administers a cluster through its NameServer (like mqadmin).
    Admin {
        /// NameServer address, `host:port`.
        #[arg(short = 'n', long = "namesrv-addr", default_value = "127.0.0.1:9876")]
        namesrv_addr: String,
        #[command(subcommand)]
        command: ferrocket::tools::admin_cmd::AdminCommand,
    },
    /// Load generator: `produce` sends to a topic, `consume` pulls it back; throughput and
    /// latency per second, a final table, `--json`, `--report FILE.html`.
    Bench {
        #[command(subcommand)]
        command: ferrocket::tools::bench::cli::BenchCommand,
    },
    /// Inspects or fills a store directory (Java layout): `dump` prints every message as JSON
    /// lines, `load` appends JSON lines read from stdin.
    Store {
        #[command(subcommand)]
        action: StoreAction,
    },
    /// Runs the NameServer.
    Namesrv {
        /// A Java namesrv.conf (properties) file.
        #[arg(short = 'c', long = "config-file")]
        config_file: Option<PathBuf>,
        /// Print the effective configuration and exit.
        #[arg(short = 'p', long = "print-config")]
        print_config: bool,
    },
}

#[derive(Subcommand)]
enum StoreAction {
    Dump(StoreArgs),
    Load(StoreArgs),
}

#[derive(clap::Args)]
struct StoreArgs {
    /// The store root (Java's storePathRootDir).
    #[arg(long)]
    dir: PathBuf,
    /// mappedFileSizeCommitLog of the store.
    #[arg(long, default_value_t = 1024 * 1024 * 1024)]
    commit_log_file_size: usize,
    /// mappedFileSizeConsumeQueue of the store.
    #[arg(long, default_value_t = 6_000_000)]
    consume_queue_file_size: usize,
    /// maxHashSlotNum of the store's index files.
    #[arg(long, default_value_t = 5_000_000)]
    max_hash_slot_num: usize,
    /// maxIndexNum of the store's index files.
    #[arg(long, default_value_t = 20_000_000)]
    max_index_num: usize,
}

fn store_tool(action: StoreAction) -> anyhow::Result<()> {
    let (args, load) = match action {
        StoreAction::Dump(a) => (a, false),
        StoreAction::Load(a) => (a, true),
    };
    let config = ferrocket::store::StoreConfig {
        store_path_root_dir: args.dir.clone(),
        mapped_file_size_commit_log: args.commit_log_file_size,
        mapped_file_size_consume_queue: args.consume_queue_file_size,
        max_hash_slot_num: args.max_hash_slot_num,
        max_index_num: args.max_index_num,
        flush_disk_type: ferrocket::store::FlushDiskType::SyncFlush,
        ..Default::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let store = ferrocket::store::MessageStore::open(config)
            .with_context(|| format!("cannot open the store at {}", args.dir.display()))?;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let n = if load {
            ferrocket::tools::store::load(&store, std::io::stdin().lock(), &mut out).await?
        } else {
            ferrocket::tools::store::dump(&store, &mut out)?
        };
        std::io::Write::flush(&mut out)?;
        store.shutdown()?;
        tracing::info!(messages = n, "done");
        Ok(())
    })
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // The whole cause chain on one line each, no backtrace: these are operator errors.
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FERROCKET_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Store { action } => store_tool(action),
        Command::Admin { namesrv_addr, command } => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let out = runtime.block_on(ferrocket::tools::admin_cmd::run(&namesrv_addr, command))?;
            print!("{out}");
            Ok(())
        }
        Command::Bench { command } => {
            let line = std::env::args().collect::<Vec<_>>().join(" ");
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            print!("{}", runtime.block_on(ferrocket::tools::bench::cli::run(command, &line))?);
            Ok(())
        }
        Command::Namesrv { config_file, print_config } => {
            let config = load_namesrv(config_file.as_deref())?;
            if print_config {
                print!("{}", ferrocket::properties::to_properties(&config.entries()));
                return Ok(());
            }
            serve(|shutdown| async move {
                let namesrv = NameServer::bind(config).await.context("namesrv failed to start")?;
                namesrv.run(shutdown).await;
                Ok(())
            })
        }
        Command::Broker { namesrv_addr, config_file, print_config, print_important } => {
            let config = load_broker(config_file.as_deref(), namesrv_addr.as_deref())?;
            if print_config || print_important {
                let entries = if print_important { config.important_entries() } else { config.entries() };
                print!("{}", ferrocket::properties::to_properties(&entries));
                return Ok(());
            }
            serve(|shutdown| async move {
                let broker = BrokerNode::bind(config).await.context("broker failed to start")?;
                broker.run(shutdown).await;
                Ok(())
            })
        }
        Command::Standalone { config_file, namesrv_config, print_config } => {
            let ns = load_namesrv(namesrv_config.as_deref())?;
            let namesrv_addr = format!("127.0.0.1:{}", ns.listen_port);
            let mut broker = load_broker(config_file.as_deref(), None)?;
            if broker.namesrv_addr.is_empty() {
                broker.namesrv_addr = namesrv_addr;
            }
            if print_config {
                print!("# namesrv\n{}", ferrocket::properties::to_properties(&ns.entries()));
                print!("# broker\n{}", ferrocket::properties::to_properties(&broker.entries()));
                return Ok(());
            }
            serve(|shutdown| async move {
                // The NameServer outlives the broker so the broker can unregister from it.
                let ns_shutdown = CancellationToken::new();
                let namesrv = NameServer::bind(ns).await.context("namesrv failed to start")?;
                let ns_task = tokio::spawn(namesrv.run(ns_shutdown.clone()));
                let result = match BrokerNode::bind(broker).await {
                    Ok(broker) => {
                        broker.run(shutdown).await;
                        Ok(())
                    }
                    Err(e) => Err(anyhow::Error::new(e).context("broker failed to start")),
                };
                ns_shutdown.cancel();
                let _ = ns_task.await;
                result
            })
        }
    }
}

fn load_namesrv(file: Option<&std::path::Path>) -> anyhow::Result<NamesrvConfig> {
    NamesrvConfig::load(file).with_context(|| match file {
        Some(p) => format!("invalid namesrv configuration in {}", p.display()),
        None => "invalid namesrv configuration".to_owned(),
    })
}

fn load_broker(file: Option<&std::path::Path>, namesrv: Option<&str>) -> anyhow::Result<BrokerConfig> {
    BrokerConfig::load(file, namesrv).with_context(|| match file {
        Some(p) => format!("invalid broker configuration in {}", p.display()),
        None => "invalid broker configuration".to_owned(),
    })
}

/// Runs `f` on a multi-threaded runtime until SIGINT/SIGTERM.
fn serve<F, Fut>(f: F) -> anyhow::Result<()>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        tokio::spawn(ferrocket::shutdown::cancel_on_signal(shutdown.clone()));
        f(shutdown).await
    })
}
