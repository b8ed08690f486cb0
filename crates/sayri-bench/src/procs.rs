//! Processes the harness starts: the `sayri` binaries next to the harness, an isolated
//! configuration per run, and a guard that stops every child however the harness ends (the
//! children also get `SIGKILL` if the harness itself dies).

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// Sets up `command` to die with the harness (`PR_SET_PDEATHSIG`).
pub fn die_with_parent(command: &mut Command) -> &mut Command {
    // SAFETY: prctl with integer arguments is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        })
    }
}

/// An isolated Sayri installation: config and state directories in a temp dir, a
/// `sayri.toml` pointing at `base_url`.
pub struct Install {
    /// The temp dir (removed on drop).
    pub dir: tempfile::TempDir,
    /// The `sayri` binary.
    pub bin: PathBuf,
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
        })
    }

    /// Starts and stops the daemon once, so the vault, the database and the sandbox
    /// workspace exist (what a first start creates is then not measured).
    pub fn prepare(&self) -> Result<(), String> {
        let (daemon, _) = self.start_daemon()?;
        drop(daemon);
        Ok(())
    }

    /// A `sayri` command in this installation.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.env("SAYRI_CONFIG_DIR", self.dir.path().join("config"))
            .env("SAYRI_STATE_DIR", self.dir.path().join("state"))
            .env("HOME", self.dir.path())
            .env_remove("XDG_RUNTIME_DIR")
            .env("SAYRI_LOG", "warn")
            .stdin(Stdio::null());
        die_with_parent(&mut c);
        c
    }

    /// The daemon socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("state/sayri-daemon.sock")
    }

    /// Starts `sayri daemon` and waits for a client to get the `ready` greeting. Returns the
    /// daemon and the time from spawn to ready.
    pub fn start_daemon(&self) -> Result<(Daemon, Duration), String> {
        let t = Instant::now();
        let child = self
            .cmd()
            .arg("daemon")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
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

/// A running daemon; stopped (SIGTERM, then SIGKILL after 5 s) when dropped.
pub struct Daemon {
    child: Child,
}

impl Daemon {
    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
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

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
