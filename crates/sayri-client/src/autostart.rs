//! Starting the daemon on demand: every client command that needs one makes sure it runs.
//!
//! When no daemon listens, the client re-executes its own binary as `sayri daemon`, detached in
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
    cmd.arg("daemon")
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
