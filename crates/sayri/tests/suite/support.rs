//! Test support: isolated directories, a real daemon process, and a line-oriented raw client.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_sayri");

/// The programs the daemon finds next to its own executable: the sandbox's exec helper (a
/// binary of `sayri-sandbox`) and the Telegram gateway (of `sayri-gateway-telegram`).
const COMPANIONS: [(&str, &str); 2] = [
    ("sayri-sandbox", "sayri-exec"),
    ("sayri-gateway-telegram", "sayri-gateway-telegram"),
];

/// Builds the [`COMPANIONS`] next to [`BIN`], once per test process. They belong to other
/// packages, so cargo builds them for this package's tests only under
/// `cargo test --workspace`; this runs `cargo build` for them with the same profile and target
/// directory as [`BIN`] (a quick no-op when they are fresh), so `cargo test -p sayri` never
/// runs a stale helper. Panics naming the command when the build fails.
pub fn companions() {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let profile_dir = Path::new(BIN).parent().unwrap();
        let target_dir = profile_dir.parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
        let mut cmd = Command::new(cargo);
        cmd.arg("build")
            .arg("--manifest-path")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(other) => {
                cmd.args(["--profile", other]);
            }
            None => panic!("cannot tell the profile of {BIN}"),
        }
        for (package, bin) in COMPANIONS {
            cmd.args(["-p", package, "--bin", bin]);
        }
        let status = cmd
            .status()
            .expect("run cargo build for the companion programs");
        assert!(status.success(), "{cmd:?} failed: {status}");
    });
}

/// The sandbox's exec helper next to [`BIN`] (built by [`companions`]).
pub fn exec_bin() -> PathBuf {
    companions();
    Path::new(BIN).with_file_name("sayri-exec")
}

/// How long processes of a finished test may take to exit on their own (a daemon told to
/// `quit` drains its clients for up to a second) before they count as leaked.
const LEAK_GRACE: Duration = Duration::from_secs(5);

/// Temp config/state dirs; never the real home.
///
/// Dropping it checks that the test left no process behind: every process the test started
/// gets the temp dir in its environment (and passes it on), so any live process still
/// mentioning it after [`LEAK_GRACE`] — a daemon the CLI started in the background and nobody
/// stopped, a command that daemon left running — is killed and fails the test, naming it
/// (see `sayri_testkit::procs`).
pub struct Env {
    pub dir: tempfile::TempDir,
    /// The config dir is found through `XDG_CONFIG_HOME` (no `SAYRI_CONFIG_DIR`).
    pub xdg_config: bool,
    /// The config dir is the standard `$HOME/.config/sayri` (no `SAYRI_CONFIG_DIR`, no
    /// `XDG_CONFIG_HOME`), where the baseline policy protects it.
    pub home_config: bool,
}

impl Env {
    pub fn new() -> Env {
        Env::new_in("/tmp")
    }
    /// As [`Env::new`], but commands find the config dir as `$XDG_CONFIG_HOME/sayri`.
    pub fn with_xdg_config() -> Env {
        let mut env = Env::new();
        env.xdg_config = true;
        env
    }
    /// As [`Env::new_in`], with the config dir at the standard `$HOME/.config/sayri`.
    pub fn with_home_config(base: &str) -> Env {
        let mut env = Env::new_in(base);
        env.home_config = true;
        env
    }
    /// A `bin` directory in this environment holding a copy of [`BIN`] and its companion
    /// programs, as an install lays them out: for commands that must find `sayri` from inside a
    /// sandbox, which sees the environment's directory but not necessarily the build
    /// directory (a checkout under `/tmp` is hidden by the sandbox's private `/tmp`).
    pub fn installed_bin_dir(&self) -> PathBuf {
        let dir = self.dir.path().join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let programs = std::iter::once("sayri").chain(COMPANIONS.iter().map(|(_, bin)| *bin));
        for program in programs {
            let to = dir.join(program);
            if !to.exists() {
                std::fs::copy(Path::new(BIN).with_file_name(program), &to)
                    .unwrap_or_else(|e| panic!("copy {program} into {}: {e}", dir.display()));
            }
        }
        dir
    }
    pub fn config_dir(&self) -> PathBuf {
        if self.home_config {
            self.dir.path().join(".config/sayri")
        } else if self.xdg_config {
            self.xdg_config_home().join("sayri")
        } else {
            self.dir.path().join("config")
        }
    }
    pub fn xdg_config_home(&self) -> PathBuf {
        self.dir.path().join("xdg-config")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }
    pub fn socket(&self) -> PathBuf {
        self.state_dir().join("sayri-daemon.sock")
    }
    /// The shared folder (`SAYRI_SHARED_DIR`): system plugins are in its `plugins`, so the
    /// machine's own `/usr/share/sayri/plugins` never reaches a test.
    pub fn shared_dir(&self) -> PathBuf {
        self.dir.path().join("share")
    }
    pub fn daemon_log(&self) -> PathBuf {
        self.dir.path().join("daemon-foreground.log")
    }
    /// A `sayri` command with this environment.
    pub fn cmd(&self) -> Command {
        self.cmd_for(Path::new(BIN))
    }
    /// `program` with this environment (the directories, `HOME`, no runtime dir).
    pub fn cmd_for(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        if self.home_config {
            c.env_remove("SAYRI_CONFIG_DIR")
                .env_remove("XDG_CONFIG_HOME");
        } else if self.xdg_config {
            c.env_remove("SAYRI_CONFIG_DIR")
                .env("XDG_CONFIG_HOME", self.xdg_config_home());
        } else {
            c.env("SAYRI_CONFIG_DIR", self.config_dir())
                .env_remove("XDG_CONFIG_HOME");
        }
        c.env("SAYRI_STATE_DIR", self.state_dir())
            .env("SAYRI_SHARED_DIR", self.shared_dir())
            .env("HOME", self.dir.path())
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("SAYRI_LOG")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null());
        c
    }
    /// `program PRE_ARGS… sayri` with this environment (e.g. `strace … sayri`, `sh -c …`);
    /// append sayri's own arguments.
    pub fn wrapped(&self, program: &str, pre_args: &[&str]) -> Command {
        let plain = self.cmd();
        let mut c = Command::new(program);
        for (k, v) in plain.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c.args(pre_args).arg(BIN).stdin(Stdio::null());
        c
    }
    /// Runs `sayri ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }
    /// Starts `sayri daemon` in the foreground and waits until it greets.
    pub fn start_daemon(&self) -> Daemon {
        self.start_daemon_logging("info")
    }
    /// As [`Env::start_daemon`] with `RUST_LOG=filter` (its stderr goes to `daemon_log()`).
    pub fn start_daemon_logging(&self, filter: &str) -> Daemon {
        self.start_daemon_with(filter, &[])
    }
    /// As [`Env::start_daemon_logging`] with extra environment variables `vars`.
    pub fn start_daemon_with(&self, filter: &str, vars: &[(&str, &str)]) -> Daemon {
        let mut c = self.cmd();
        c.envs(vars.iter().copied()).env("RUST_LOG", filter);
        self.start_daemon_cmd(c)
    }
    /// Starts `c daemon` (a command from [`Env::cmd`] with more environment) and waits until it
    /// greets.
    pub fn start_daemon_cmd(&self, mut c: Command) -> Daemon {
        let log = std::fs::File::create(self.daemon_log()).unwrap();
        let child = c
            .arg("daemon")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut d = Daemon {
            child: Some(child),
            log: self.daemon_log(),
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(c) = RawClient::try_connect(&self.socket()) {
                drop(c);
                return d;
            }
            if let Some(st) = d.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("daemon exited early ({st}): {}", d.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "daemon did not start: {}",
                d.log_text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let left = sayri_testkit::procs::stop_leftovers(self.dir.path(), LEAK_GRACE);
        if !left.is_empty() && !std::thread::panicking() {
            panic!(
                "the test left {} process(es) running after it ended (now killed): {left:?} — \
                 stop every daemon it starts (`sayri quit`, or keep the `Daemon` handle until the end)",
                left.len()
            );
        }
    }
}

/// A daemon child process; terminated (SIGTERM, then SIGKILL) when dropped.
pub struct Daemon {
    pub child: Option<Child>,
    pub log: PathBuf,
}

impl Daemon {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
    /// Sends SIGTERM and waits up to `limit` for the exit status.
    pub fn terminate(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        // SAFETY: kill takes plain integers and touches no memory of this process.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return Some(st);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    /// Resident set size in KiB, from /proc.
    pub fn rss_kib(&self) -> u64 {
        proc_status_kib(self.pid(), "VmRSS:")
    }
    /// Number of open file descriptors.
    pub fn fd_count(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }
}

pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap()
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(5));
    }
}

/// Every event the daemon sends is exactly its type of `sayri_protocol::event` (read into it and
/// written again, the same text): every socket test that reads through [`RawClient`] checks it
/// on every event it sees, and [`RawClient::call`] does the same for every successful reply
/// with its command's reply type.
pub fn assert_typed(line: &str) {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return;
    };
    if v.get("event").is_some_and(Value::is_string) {
        let frame: sayri_protocol::Event = serde_json::from_value(v).unwrap();
        if let Err(e) = sayri_protocol::event::conforms(&frame) {
            panic!("{e}");
        }
    }
}

/// A blocking client speaking raw NDJSON, for byte-level tests.
pub struct RawClient {
    pub reader: BufReader<UnixStream>,
    pub writer: UnixStream,
}

impl RawClient {
    /// Connects and consumes the `ready` greeting.
    pub fn try_connect(socket: &Path) -> std::io::Result<RawClient> {
        let s = UnixStream::connect(socket)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut c = RawClient {
            reader: BufReader::new(s.try_clone()?),
            writer: s,
        };
        // A connection that ends before the greeting is an error to retry, not a panic: while a
        // killed daemon's child still holds its listening socket (between fork and exec), a
        // connect can succeed and then be reset.
        let mut line = String::new();
        if c.reader.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed before the ready greeting",
            ));
        }
        let greeting: Value = serde_json::from_str(&line).map_err(std::io::Error::other)?;
        assert_eq!(greeting["event"], "ready", "{greeting}");
        assert_typed(&line);
        Ok(c)
    }
    pub fn connect(socket: &Path) -> RawClient {
        Self::try_connect(socket).unwrap()
    }
    pub fn write(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
    }
    /// Reads one raw line including its `\n`.
    pub fn read_line_raw(&mut self) -> String {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).unwrap();
        assert!(n > 0, "connection closed");
        assert!(line.ends_with('\n'), "partial line: {line:?}");
        assert_typed(&line);
        line
    }
    pub fn read_value(&mut self) -> Value {
        serde_json::from_str(&self.read_line_raw()).unwrap()
    }
    /// Reads the next response (skipping events), as the raw line.
    pub fn read_response_raw(&mut self) -> String {
        loop {
            let line = self.read_line_raw();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("event").is_none() {
                return line;
            }
        }
    }
    pub fn read_response(&mut self) -> Value {
        serde_json::from_str(&self.read_response_raw()).unwrap()
    }
    /// Sends one request and returns its response.
    pub fn call(&mut self, cmd: &str, params: Value, id: u64) -> Value {
        let line = serde_json::json!({"cmd": cmd, "params": params, "id": id}).to_string() + "\n";
        self.write(line.as_bytes());
        let r = self.read_response();
        assert_eq!(r["id"], id, "{r}");
        if r["ok"] == true
            && let Err(e) = sayri_protocol::reply::conforms(cmd, &r["result"])
        {
            panic!("{e}");
        }
        r
    }
    /// Reads until EOF; returns everything read.
    pub fn read_to_end(&mut self) -> Vec<u8> {
        let mut v = Vec::new();
        self.reader.read_to_end(&mut v).unwrap();
        v
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Polls `f` until it returns true or `limit` passes.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

impl Env {
    /// Like [`Env::new`], under `base` instead of `/tmp`. Sandbox levels 1–2 give commands a
    /// private `/tmp`, so tests that look at files from inside a sandbox use `/var/tmp`.
    pub fn new_in(base: &str) -> Env {
        companions();
        Env {
            dir: tempfile::Builder::new()
                .prefix("sy")
                .tempdir_in(base)
                .unwrap(),
            xdg_config: false,
            home_config: false,
        }
    }
}

pub use sayri_testkit::procs::{alive, processes_with};
