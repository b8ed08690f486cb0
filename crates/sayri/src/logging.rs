//! Logging: `tracing` to stderr with a `RUST_LOG`-style filter (`SAYRI_LOG` wins over
//! `RUST_LOG`; default `info`). A backgrounded daemon has its stderr redirected to
//! `$STATE/daemon.log` by whoever started it, so the same setup logs to that file; colours are
//! used only on a terminal.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Safe to call once; later calls are ignored.
pub fn init(default_filter: &str) {
    let filter = std::env::var("SAYRI_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}
