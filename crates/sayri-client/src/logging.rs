//! Logging: `tracing` to stderr with a `RUST_LOG`-style filter of `target=level` directives
//! (`SAYRI_LOG` wins over `RUST_LOG`; default `info`; e.g. `debug` or `info,sayri_llm=debug`).
//! A backgrounded daemon has its stderr redirected to `$STATE/daemon.log` by whoever started it,
//! so the same setup logs to that file; colours are used only on a terminal.
//!
//! The filter is `tracing_subscriber`'s `Targets`, which parses without compiling regular
//! expressions (the daemon's start-up stays small); a filter that does not parse falls back to
//! the default.

use std::io::IsTerminal;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// Installs the global subscriber. Safe to call once; later calls are ignored.
pub fn init(default_filter: &str) {
    let filter: Targets = std::env::var("SAYRI_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| f.parse().ok())
        .or_else(|| default_filter.parse().ok())
        .unwrap_or_default();
    let output = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let _ = tracing_subscriber::registry()
        .with(output)
        .with(filter)
        .try_init();
}
