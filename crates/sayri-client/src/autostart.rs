//! Starting the daemon on demand: every client command that needs one makes sure it runs.
//!
//! When no daemon listens and Sayri is installed as a systemd user service (`sayri.service` in
//! a user unit directory, a user manager answering at `$XDG_RUNTIME_DIR/systemd/private`, and
//! no `SAYRI_CONFIG_DIR`/`SAYRI_STATE_DIR` pointing this client elsewhere), the client runs
//! `systemctl --user start sayri.service`, so the daemon runs as the service: restarted on
//! failure, logging to the journal, stopped at logout. Otherwise (or when `systemctl` cannot be
//! run) the client re-executes its own binary as `sayri daemon`, detached in
//! a new session, stdin from `/dev/null`, stdout and stderr appended to `$STATE/daemon.log`,
//! says so on stderr, and polls the socket until the daemon greets with `ready` (5 s at most). If
//! the daemon exits first (invalid config, …), its last log line becomes the error.

use crate::client::{CONNECT_TIMEOUT, Client, ClientError};
use crate::paths::{Paths, ensure_private_dir};
use anyhow::{Context, bail};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long to wait for a freshly started daemon.
pub const START_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the daemon; starts it first when it is not running and `allow_start` is set.
pub async fn connect_or_start(paths: &Paths, allow_start: bool) -> anyhow::Result<Client> {
    let socket = paths.socket();
    match Client::connect(&socket, CONNECT_TIMEOUT).await {
        Ok(c) => return Ok(c),
        Err(ClientError::NotRunning { .. }) if allow_start => {}
        Err(e) => return Err(e.into()),
    }
    // One client starts the daemon; others racing it wait on the lock and then find it
    // running, so "started it" is said once.
    let _starting = start_lock(paths).await?;
    if let Ok(c) = Client::connect(&socket, CONNECT_TIMEOUT).await {
        return Ok(c);
    }
    if let Some(unit) = installed_unit() {
        match start_unit(paths, unit).await {
            Ok(Some(c)) => return Ok(c),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
    }
    let mut child = spawn_daemon(paths)?;
    eprintln!(
        "sayri: daemon was not running; started it in the background (pid {}, log {})",
        child.id(),
        paths.log_file().display()
    );
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match Client::connect(&socket, CONNECT_TIMEOUT).await {
            Ok(c) => return Ok(c),
            Err(ClientError::NotRunning { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        if let Ok(Some(status)) = child.try_wait() {
            let last = last_log_line(paths).unwrap_or_else(|| format!("exit status {status}"));
            bail!(
                "the daemon failed to start: {last} (full log: {})",
                paths.log_file().display()
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "the daemon did not become ready within {} s; see {}",
                START_TIMEOUT.as_secs(),
                paths.log_file().display()
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An exclusive lock on `$STATE/autostart.lock`, held while this client starts the daemon
/// (released when dropped). Waits for another starting client at most [`START_TIMEOUT`] plus a
/// second.
async fn start_lock(paths: &Paths) -> anyhow::Result<std::fs::File> {
    ensure_private_dir(&paths.state_dir)?;
    let path = paths.state_dir.join("autostart.lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let deadline = Instant::now() + START_TIMEOUT + Duration::from_secs(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(std::fs::TryLockError::WouldBlock) => bail!(
                "another sayri client has been starting the daemon for too long; see {}",
                paths.log_file().display()
            ),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
    }
}

/// The systemd user unit's name.
pub const UNIT_NAME: &str = "sayri.service";

/// Where a systemd user manager looks for units, the user's own first: `$XDG_CONFIG_HOME`
/// (or `~/.config`), `/etc`, `$XDG_DATA_HOME` (or `~/.local/share`), then the packaged ones.
fn unit_dirs() -> Vec<std::path::PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from);
    let xdg = |var: &str, fallback: &str| {
        std::env::var_os(var)
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home.as_ref().map(|h| h.join(fallback)))
    };
    let mut dirs = Vec::new();
    dirs.extend(xdg("XDG_CONFIG_HOME", ".config").map(|d| d.join("systemd/user")));
    dirs.push("/etc/systemd/user".into());
    dirs.extend(xdg("XDG_DATA_HOME", ".local/share").map(|d| d.join("systemd/user")));
    dirs.push("/usr/local/lib/systemd/user".into());
    dirs.push("/usr/lib/systemd/user".into());
    dirs
}

/// [`UNIT_NAME`] when a systemd user manager of this user answers and knows the unit, and
/// this client uses the daemon the service would run (no `SAYRI_CONFIG_DIR`,
/// `SAYRI_STATE_DIR` of its own).
pub(crate) fn installed_unit() -> Option<&'static str> {
    let own_dirs = ["SAYRI_CONFIG_DIR", "SAYRI_STATE_DIR"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
    if own_dirs {
        return None;
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty())?;
    let manager = std::path::Path::new(&runtime).join("systemd/private");
    if !manager.exists() {
        return None;
    }
    unit_dirs()
        .iter()
        .any(|d| d.join(UNIT_NAME).is_file())
        .then_some(UNIT_NAME)
}

/// Starts the daemon as the service `unit` and connects to it. `Ok(None)` when `systemctl`
/// cannot be run (the caller starts the daemon itself).
async fn start_unit(paths: &Paths, unit: &str) -> anyhow::Result<Option<Client>> {
    let mut cmd = tokio::process::Command::new("systemctl");
    cmd.args(["--user", "start", unit])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let Ok(child) = cmd.spawn() else {
        return Ok(None);
    };
    eprintln!("sayri: daemon was not running; starting it: systemctl --user start {unit}");
    let journal = format!("journalctl --user -u {unit} -n 50");
    let waited = tokio::time::timeout(START_TIMEOUT, child.wait_with_output()).await;
    match waited {
        Err(_) => bail!(
            "`systemctl --user start {unit}` did not finish within {} s; see `{journal}`",
            START_TIMEOUT.as_secs()
        ),
        Ok(Err(e)) => bail!("cannot run `systemctl --user start {unit}`: {e}"),
        Ok(Ok(out)) if !out.status.success() => {
            let why = String::from_utf8_lossy(&out.stderr);
            bail!(
                "the daemon failed to start as {unit}: {} (see `{journal}`)",
                why.trim()
            )
        }
        Ok(Ok(_)) => {}
    }
    // Type=notify: systemctl returns once the daemon said it accepts clients.
    match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => Ok(Some(c)),
        Err(e) => Err(anyhow::anyhow!(
            "{unit} started but its socket does not answer: {e}; is the unit another installation's? see `{journal}`"
        )),
    }
}

/// The variable that may hold a passphrase vault's passphrase for the `sayri vault` commands
/// (`sayri_vault::cli::PASSPHRASE_ENV`); an autostarted daemon does not inherit it.
pub(crate) const VAULT_PASSPHRASE_ENV: &str = "SAYRI_VAULT_PASSPHRASE";

fn spawn_daemon(paths: &Paths) -> anyhow::Result<std::process::Child> {
    ensure_private_dir(&paths.state_dir)?;
    let log_path = paths.log_file();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .with_context(|| format!("cannot open the daemon log {}", log_path.display()))?;
    let exe =
        std::env::current_exe().context("cannot find the sayri executable to start the daemon")?;
    let mut cmd = Command::new(exe);
    // The daemon never uses a vault passphrase (it opens the vault from the keyring or the key
    // file only), so one this client was given for itself stays out of the daemon's
    // environment, which lasts as long as the daemon runs.
    cmd.arg("daemon")
        .env_remove(VAULT_PASSPHRASE_ENV)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe and touches no memory; it only detaches the child
    // from our session so a terminal hangup or Ctrl-C does not stop the daemon.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn().context("cannot start `sayri daemon`")
}

fn last_log_line(paths: &Paths) -> Option<String> {
    let text = std::fs::read_to_string(paths.log_file()).ok()?;
    text.lines().rev().find(|l| !l.trim().is_empty()).map(|l| {
        let l = l.trim();
        // The daemon's own "sayri: error: " prefix would repeat ours.
        l.strip_prefix("sayri: error: ").unwrap_or(l).to_string()
    })
}
