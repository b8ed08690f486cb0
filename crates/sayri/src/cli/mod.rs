//! The `sayri` command line (clap). Exit codes: 0 ok, 1 error (one line on stderr), 2 usage.
//!
//! Client commands connect to the daemon, starting it in the background when it is not running
//! (see [`autostart`]), unless `--no-start` is given.

pub mod autostart;
pub mod config;
pub mod ping;
pub mod quit;
pub mod status;

use crate::paths::Paths;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Sayri: a local AI assistant for the Linux desktop.
#[derive(Debug, Parser)]
#[command(name = "sayri", version, about, propagate_version = true)]
pub struct Cli {
    /// Do not start the daemon when it is not running; fail instead.
    #[arg(long, global = true)]
    pub no_start: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground (logs to stderr; stop with Ctrl-C or `sayri quit`).
    Daemon,
    /// Check that the daemon answers (prints "pong").
    Ping,
    /// Show the daemon's status.
    Status {
        /// Print the raw status object as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read or change settings (sayri.toml).
    Config {
        /// get, set or list.
        #[command(subcommand)]
        action: config::ConfigAction,
    },
    /// Stop the daemon.
    Quit,
}

/// Parses the command line, runs it, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("sayri: error: {msg}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let paths = Paths::from_env()?;
    if let Command::Daemon = cli.command {
        crate::logging::init("info");
        return Ok(crate::daemon::run_foreground(paths)?);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        match cli.command {
            Command::Daemon => Ok(()),
            Command::Ping => ping::run(&paths, !cli.no_start).await,
            Command::Status { json } => status::run(&paths, !cli.no_start, json).await,
            Command::Config { action } => config::run(&paths, !cli.no_start, action).await,
            Command::Quit => quit::run(&paths).await,
        }
    })
}
