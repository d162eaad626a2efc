//! The `ferrocket` command: `standalone`, `namesrv` (and, in later releases, `broker`).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use ferrocket::namesrv::{NameServer, NamesrvConfig};

#[derive(Parser)]
#[command(name = "ferrocket", version, about = "Apache RocketMQ compatible NameServer and Broker")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs everything in one process with embedded defaults (today: the NameServer on 9876).
    Standalone {
        /// Print the effective configuration and exit.
        #[arg(short = 'p', long = "print-config")]
        print_config: bool,
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

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FERROCKET_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let (config_file, print_config) = match cli.command {
        Command::Standalone { print_config } => (None, print_config),
        Command::Namesrv { config_file, print_config } => (config_file, print_config),
        Command::Store { action } => return store_tool(action),
    };
    let config = NamesrvConfig::load(config_file.as_deref()).with_context(|| match &config_file {
        Some(p) => format!("invalid namesrv configuration in {}", p.display()),
        None => "invalid namesrv configuration".to_owned(),
    })?;
    if print_config {
        print!("{}", ferrocket::config::to_properties(&config.entries()));
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let shutdown = CancellationToken::new();
        tokio::spawn(ferrocket::shutdown::cancel_on_signal(shutdown.clone()));
        let namesrv = NameServer::bind(config).await.context("namesrv failed to start")?;
        namesrv.run(shutdown).await;
        Ok(())
    })
}
