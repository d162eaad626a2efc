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

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FERROCKET_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let (config_file, print_config) = match &cli.command {
        Command::Standalone { print_config } => (None, *print_config),
        Command::Namesrv { config_file, print_config } => (config_file.clone(), *print_config),
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
