//! Processes the harness starts: the `sayri` binaries next to the harness, an isolated
//! configuration per run, and guards that stop every child however the harness ends: the
//! daemon is a [`ChildGuard`] (stopped on drop, also while an error or a panic unwinds), every
//! process gets `SIGTERM` should the harness itself die, clients never start a daemon of their
//! own, and each installation checks that nothing mentioning its directory outlives it
//! ([`Install::check_no_leftovers`]; anything left is killed when the installation drops).

use sayri_testkit::procs::{ChildGuard, stop_leftovers, tie_to_this_process};
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon gets to exit after `SIGTERM`, and processes of a finished run to exit on
/// their own, before they are killed.
const GRACE: Duration = Duration::from_secs(5);

/// The `sayri` binary next to this harness (`target/release/`), checked once.
pub fn sayri_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the harness: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for name in ["sayri", "sayri-exec"] {
        if !dir.join(name).is_file() {
            return Err(format!(
                "{} is missing: build it first with `cargo build --release -p sayri` (or run ./scripts/bench, which does)",
                dir.join(name).display()
            ));
        }
    }
    Ok(dir.join("sayri"))
}

/// An isolated Sayri installation: config and state directories in a temp dir, a
/// `sayri.toml` pointing at `base_url`.
pub struct Install {
    /// The temp dir (removed on drop).
    pub dir: tempfile::TempDir,
    /// The `sayri` binary.
    pub bin: PathBuf,
    /// Extra environment of every `sayri` process of this installation (name, value).
    env: Vec<(String, std::ffi::OsString)>,
}

impl Install {
    /// A fresh installation talking to `base_url`, with `extra` appended to `sayri.toml`.
    pub fn new(bin: &Path, base_url: &str, extra: &str) -> Result<Install, String> {
        let dir = tempfile::Builder::new()
            .prefix("sybench")
            .tempdir_in("/var/tmp")
            .map_err(|e| format!("cannot create a temp dir: {e}"))?;
        let config = dir.path().join("config");
        std::fs::create_dir_all(config.join("agents")).map_err(|e| e.to_string())?;
        std::fs::write(
            config.join("sayri.toml"),
            format!(
                "[provider]\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\nretries = 0\n{extra}"
            ),
        )
        .map_err(|e| e.to_string())?;
        Ok(Install {
            dir,
            bin: bin.to_path_buf(),
            env: Vec::new(),
        })
    }

    /// Sets `name` to `value` in the environment of every `sayri` process started from now on.
    pub fn with_env(mut self, name: &str, value: impl Into<std::ffi::OsString>) -> Install {
        self.env.push((name.to_string(), value.into()));
        self
    }

    /// Starts and stops the daemon once, so the vault, the database and the sandbox
    /// workspace exist (what a first start creates is then not measured).
    pub fn prepare(&self) -> Result<(), String> {
        let (daemon, _) = self.start_daemon()?;
        daemon.stop()
    }

    /// A `sayri` process in this installation, tied to the harness.
    fn sayri(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.env("SAYRI_CONFIG_DIR", self.dir.path().join("config"))
            .env("SAYRI_STATE_DIR", self.dir.path().join("state"))
            .env("HOME", self.dir.path())
            .env_remove("XDG_RUNTIME_DIR")
            .env("SAYRI_LOG", "warn")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        tie_to_this_process(&mut c);
        c
    }

    /// A `sayri` client command in this installation (`--no-start`: it never starts a daemon
    /// in the background, which the harness could not stop).
    pub fn cmd(&self) -> Command {
        let mut c = self.sayri();
        c.arg("--no-start");
        c
    }

    /// Fails naming every process that still mentions this installation's directory (a
    /// daemon, a command it started) after [`GRACE`]; those are killed.
    pub fn check_no_leftovers(&self) -> Result<(), String> {
        let left = stop_leftovers(self.dir.path(), GRACE);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the benchmark left processes running (now killed): {left:?}"
            ))
        }
    }

    /// The daemon socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("state/sayri-daemon.sock")
    }

    /// Starts `sayri daemon` and waits for a client to get the `ready` greeting. Returns the
    /// daemon and the time from spawn to ready.
    pub fn start_daemon(&self) -> Result<(Daemon, Duration), String> {
        let t = Instant::now();
        let child = ChildGuard::spawn_tied(
            self.sayri()
                .arg("daemon")
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            GRACE,
        )
        .map_err(|e| format!("cannot start the daemon: {e}"))?;
        let daemon = Daemon { child };
        loop {
            if let Some(_client) = connect_ready(&self.socket()) {
                return Ok((daemon, t.elapsed()));
            }
            if t.elapsed() > Duration::from_secs(15) {
                return Err("the daemon did not get ready within 15 s".into());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Connects to a daemon socket and reads the `ready` greeting.
pub fn connect_ready(socket: &Path) -> Option<BufReader<UnixStream>> {
    let s = UnixStream::connect(socket).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    line.contains("\"ready\"").then_some(r)
}

/// A running daemon; stopped (SIGTERM, then SIGKILL after [`GRACE`]) when dropped.
pub struct Daemon {
    child: ChildGuard,
}

impl Daemon {
    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it (SIGTERM) and fails unless it exits cleanly within [`GRACE`].
    pub fn stop(mut self) -> Result<(), String> {
        match self.child.stop() {
            Some(st) if st.success() => Ok(()),
            Some(st) => Err(format!("the daemon exited with {st} on SIGTERM")),
            None => Err(format!(
                "the daemon did not stop within {} s of SIGTERM (killed)",
                GRACE.as_secs()
            )),
        }
    }

    /// A `/proc/PID/status` field in KiB (`VmRSS`, `VmHWM`, `RssAnon`, `RssFile`).
    pub fn status_kib(&self, field: &str) -> Option<f64> {
        proc_status_kib(self.pid(), field)
    }

    /// `/proc/PID/smaps_rollup`.
    pub fn smaps_rollup(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/smaps_rollup", self.pid())).unwrap_or_default()
    }
}

/// A `/proc/PID/status` field in KiB.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(&format!("{field}:")))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

impl Drop for Install {
    /// Whatever still mentions the installation's directory is stopped before the directory
    /// goes (also when a run ends early with an error).
    fn drop(&mut self) {
        let _ = stop_leftovers(self.dir.path(), GRACE);
    }
}
