//! `sayri-gateway-telegram`: Sayri's reference channel gateway, a Telegram bot.
//!
//! The daemon starts it (one process per gateway instance, see `sayri gateway create
//! telegram`) with its bot token `TELEGRAM_BOT_TOKEN` on the secrets descriptor named by
//! `SAYRI_SECRETS_FD` (see `sayri_protocol::child_secrets`; started by hand, it takes the
//! variable `TELEGRAM_BOT_TOKEN` instead), the legacy socket in `SAYRI_GATEWAY_SOCKET`, its
//! instance id in `SAYRI_GATEWAY_INSTANCE_ID`, its outbox directory in
//! `SAYRI_GATEWAY_STATE_DIR`, and its options as arguments (`--api-base URL`,
//! `--poll-timeout SECS`). It makes itself non-dumpable before it reads the token (no other
//! process of the user can read its memory, and it leaves no core file). It:
//!
//! * long-polls the Bot API ([`run`]) and passes every update's raw facts to the daemon
//!   ([`updates`], [`daemon`]) — the daemon alone decides who is answered;
//! * keeps every update in an outbox on disk ([`outbox`]) from before it is acknowledged until
//!   its reply is delivered, so a killed gateway answers it after its restart, once;
//! * delivers the daemon's answer ([`deliver`]): Markdown as text and entities ([`format`]),
//!   split at 4096 UTF-16 units on line or word boundaries, never inside a surrogate pair or an
//!   entity ([`split`]), falling back to plain text when Telegram refuses the formatting, with
//!   every refused send logged, and tries again after rate limits and failures by the rules of
//!   [`retry`] (`retry_after`, else the description, else exponentially);
//! * shows "typing…" while a turn runs.
//!
//! Its output (stderr) is the gateway's log, `$STATE/logs/gateway-<id>.log`.

pub mod bot_api;
pub mod daemon;
pub mod deliver;
mod delivery;
pub mod format;
pub mod outbox;
pub mod retry;
pub mod run;
pub mod split;
pub mod updates;

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Exit status for a setting that is missing or invalid.
pub const EXIT_USAGE: u8 = 2;
/// Exit status when Telegram refuses the token or the gateway cannot run.
pub const EXIT_FATAL: u8 = 3;

/// Command-line options (the instance's `options`). The token is never an argument.
#[derive(Debug, Parser)]
#[command(name = "sayri-gateway-telegram", version, about)]
pub struct Args {
    /// Bot API base URL.
    #[arg(long, default_value = "https://api.telegram.org")]
    pub api_base: String,
    /// Long-polling timeout of `getUpdates`, in seconds.
    #[arg(long, default_value_t = 50)]
    pub poll_timeout: u64,
    /// Milliseconds between two typing indicators while a turn runs.
    #[arg(long, default_value_t = 4000)]
    pub typing_interval_ms: u64,
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| {
            format!("{name} is not set; this program is started by the Sayri daemon (`sayri gateway start ID`)")
        })
}

/// Makes this process non-dumpable with a core limit of 0: other processes of the user cannot
/// read its memory or attach to it, and a crash leaves no core file holding the token.
///
/// # Errors
/// What failed.
pub fn protect_memory() -> Result<(), String> {
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| format!("cannot make the gateway non-dumpable: {e}"))?;
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0)
        .map_err(|e| format!("cannot set the core size limit to 0: {e}"))
}

/// The secrets the daemon passed on the descriptor named by `SAYRI_SECRETS_FD` (read to its
/// end, then closed); empty when the variable is not set.
///
/// # Errors
/// The descriptor cannot be read or does not hold the daemon's JSON.
pub fn passed_secrets() -> Result<std::collections::BTreeMap<String, String>, String> {
    use sayri_protocol::child_secrets::{SECRETS_FD_ENV, decode};
    use std::io::Read;
    let Some(fd) = std::env::var(SECRETS_FD_ENV).ok() else {
        return Ok(Default::default());
    };
    let fd: i32 = fd
        .parse()
        .ok()
        .filter(|n| *n > 2)
        .ok_or_else(|| format!("{SECRETS_FD_ENV}={fd:?} is not a descriptor number"))?;
    let dup = nix::unistd::dup(unsafe_borrow(fd))
        .map_err(|e| format!("cannot read the secrets on descriptor {fd}: {e}"))?;
    let _ = nix::unistd::close(fd);
    let mut bytes = Vec::new();
    std::fs::File::from(dup)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the secrets on descriptor {fd}: {e}"))?;
    let out = decode(&bytes).map_err(|e| e.to_string());
    bytes.iter_mut().for_each(|b| *b = 0);
    out
}

/// `fd` borrowed for a `dup`.
fn unsafe_borrow(fd: i32) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: the daemon passed `fd` open to this process, and nothing else here owns it; it is
    // only duplicated and then closed.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

/// The settings from `args`, the passed secrets and the environment.
///
/// # Errors
/// A missing variable or an invalid option, named.
pub fn settings(args: Args) -> Result<run::Settings, String> {
    let passed = passed_secrets()?;
    let token = match passed.get("TELEGRAM_BOT_TOKEN") {
        Some(t) if !t.trim().is_empty() => t.trim().to_string(),
        _ => env("TELEGRAM_BOT_TOKEN")?.trim().to_string(),
    };
    let ok_base = args.api_base.starts_with("https://") || args.api_base.starts_with("http://");
    if !ok_base {
        return Err(format!(
            "--api-base {:?}: give an http:// or https:// URL",
            args.api_base
        ));
    }
    Ok(run::Settings {
        api_base: args.api_base,
        token,
        socket: PathBuf::from(env("SAYRI_GATEWAY_SOCKET")?),
        instance_id: env("SAYRI_GATEWAY_INSTANCE_ID")?,
        poll_timeout: args.poll_timeout.min(600),
        typing_every: Duration::from_millis(args.typing_interval_ms.clamp(100, 60_000)),
        state_dir: std::env::var_os("SAYRI_GATEWAY_STATE_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
    })
}

/// The program: parses its settings, runs until stopped, maps the outcome to an exit status.
pub fn main() -> ExitCode {
    use tracing_subscriber::prelude::*;
    // `Targets` directives (`info`, `debug,sayri_gateway_telegram=trace`); a filter that does
    // not parse falls back to `info`.
    let filter: tracing_subscriber::filter::Targets = std::env::var("SAYRI_GATEWAY_LOG")
        .ok()
        .and_then(|f| f.parse().ok())
        .or_else(|| "info".parse().ok())
        .unwrap_or_default();
    let output = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(output)
        .with(filter)
        .try_init();
    if let Err(e) = protect_memory() {
        tracing::error!("{e}");
        return ExitCode::from(EXIT_FATAL);
    }
    let settings = match settings(Args::parse()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FATAL);
        }
    };
    match rt.block_on(run::run(settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(run::Fatal(e)) => {
            tracing::error!("{e}");
            ExitCode::from(EXIT_FATAL)
        }
    }
}
