//! Test fixture: a fake home outside /tmp (so the private /tmp is not what hides it), owned by the
//! user under test, with secrets, an outside directory and host Unix sockets; and a runner that
//! drives the real `sayri-sandbox` binary, optionally under `setpriv` as uid 65534.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const NOBODY: u32 = 65534;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum User {
    Root,
    Nobody,
}

pub struct Fixture {
    pub user: User,
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub state: PathBuf,
    pub config: PathBuf,
    pub outside: PathBuf,
    pub host_socket: PathBuf,
    pub state_socket: PathBuf,
    _listeners: Vec<std::os::unix::net::UnixListener>,
}

#[derive(Debug)]
pub struct Outcome {
    pub status: String,
    pub exit_code: Option<i64>,
    pub output: String,
    pub wall: Duration,
}

fn chown_r(p: &Path, uid: u32) {
    let st = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

impl Fixture {
    pub fn new(user: User) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("sayri-sbx-test-")
            .tempdir_in("/var/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let home = dir.path().join("home");
        let state = home.join(".local/share/sayri");
        let config = home.join(".config/sayri");
        let outside = home.join("sayri-outside");
        for d in [
            &state,
            &config,
            &outside,
            &home.join(".ssh"),
            &home.join(".config/autostart"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        std::fs::write(config.join("vault.json"), "{\"secret\":1}").unwrap();
        std::fs::write(config.join("sayri.conf"), "api_key=sk-test").unwrap();
        std::fs::write(state.join("sessions.db"), "SQLite format 3").unwrap();
        std::fs::write(outside.join("victim.txt"), "original").unwrap();
        let host_socket = outside.join("app.sock");
        let state_socket = state.join("sayri-daemon.sock");
        let l1 = std::os::unix::net::UnixListener::bind(&host_socket).unwrap();
        let l2 = std::os::unix::net::UnixListener::bind(&state_socket).unwrap();
        if user == User::Nobody {
            chown_r(&home, NOBODY);
        }
        Fixture {
            user,
            _dir: dir,
            home,
            state,
            config,
            outside,
            host_socket,
            state_socket,
            _listeners: vec![l1, l2],
        }
    }

    pub fn workspace(&self) -> PathBuf {
        self.state.join("sandboxes/cli")
    }

    /// Runs `sayri-sandbox run --json <args> -- <cmd>`.
    pub fn run(&self, level: &str, extra: &[&str], cmd: &str) -> Outcome {
        self.run_with(level, extra, cmd, |_| {})
    }

    pub fn run_with(
        &self,
        level: &str,
        extra: &[&str],
        cmd: &str,
        tweak: impl FnOnce(&mut Command),
    ) -> Outcome {
        let mut c = self.command(level, extra, cmd);
        tweak(&mut c);
        let t = Instant::now();
        let out = c.output().unwrap();
        let wall = t.elapsed();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no JSON from the CLI ({e}): stdout={:?} stderr={:?}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        Outcome {
            status: v["status"].as_str().unwrap_or_default().to_string(),
            exit_code: v["exit_code"].as_i64(),
            output: v["output"].as_str().unwrap_or_default().to_string(),
            wall,
        }
    }

    /// `sayri-sandbox run --json --level <level> <extra> -- <cmd>` as the fixture's user, with a
    /// clean environment, not started yet.
    pub fn command(&self, level: &str, extra: &[&str], cmd: &str) -> Command {
        let bin = env!("CARGO_BIN_EXE_sayri-sandbox");
        let mut c = match self.user {
            User::Root => Command::new(bin),
            User::Nobody => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
                c
            }
        };
        c.env_clear()
            .env("HOME", &self.home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("LANG", "C")
            .env("SECRET_TOKEN", "leaky")
            .args(["run", "--json", "--level", level])
            .args(extra)
            .arg("--")
            .arg(cmd);
        c
    }

    pub fn victim_intact(&self) {
        assert_eq!(
            std::fs::read_to_string(self.outside.join("victim.txt")).unwrap(),
            "original"
        );
        let m = std::fs::metadata(self.outside.join("victim.txt")).unwrap();
        assert_eq!(m.mode() & 0o777, 0o644, "mode of the victim changed");
    }
}

/// One escape attempt: the command, and texts of which at least one must appear in its output.
pub struct Attempt {
    pub what: &'static str,
    pub cmd: String,
    pub expect_any: Vec<&'static str>,
}

pub fn attempt(what: &'static str, cmd: impl Into<String>, expect_any: &[&'static str]) -> Attempt {
    Attempt {
        what,
        cmd: cmd.into(),
        expect_any: expect_any.to_vec(),
    }
}

/// Runs every attempt at `level`; each must run (status success/failed, not denied) and show one
/// of its expected refusal texts.
pub fn run_all(f: &Fixture, level: &str, extra: &[&str], attempts: &[Attempt]) {
    let mut failures = Vec::new();
    for a in attempts {
        let o = f.run(level, extra, &a.cmd);
        let ok = (o.status == "success" || o.status == "failed")
            && a.expect_any.iter().any(|e| o.output.contains(e));
        if !ok {
            failures.push(format!(
                "[{}] {}: status={} output={:?}",
                a.what, a.cmd, o.status, o.output
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} attempts not refused as expected ({:?} at {level}):\n{}",
        failures.len(),
        attempts.len(),
        f.user,
        failures.join("\n")
    );
}

pub const PY: &str = "/usr/bin/python3";

/// Forks sleeping children until fork fails, then prints why.
pub const FORK_BOMB: &str = "import os, time
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
    print(\"not contained\", n)
except OSError as e:
    print(\"stopped after\", n, e.strerror)
";

/// The level-1/2 escape attempts common to both levels.
pub fn sandbox_attempts(f: &Fixture, tcp_port: u16, udp_port: u16) -> Vec<Attempt> {
    let h = f.home.display();
    let cfg = f.config.display();
    let st = f.state.display();
    let out = f.outside.display();
    let hs = f.host_socket.display();
    let ss = f.state_socket.display();
    let me = std::process::id();
    let denied = &["Permission denied", "Read-only file system"][..];
    vec![
        attempt("write home", format!("echo x > {h}/pwned"), denied),
        attempt("write /etc", "echo x > /etc/sayri-pwned", denied),
        attempt(
            "write via /proc/self/root",
            format!("echo x > /proc/self/root{h}/pwned"),
            denied,
        ),
        attempt(
            "write via ..",
            format!("cd {out} && echo x > ../../home/pwned2"),
            denied,
        ),
        attempt(
            "write via /proc/self/fd",
            format!("exec 7<{out}; echo x > /proc/self/fd/7/new.txt"),
            denied,
        ),
        attempt(
            "overwrite victim",
            format!("printf OWNED > {out}/victim.txt"),
            denied,
        ),
        attempt(
            "chmod outside",
            format!("chmod 777 {out}/victim.txt"),
            &["Read-only file system", "Operation not permitted"],
        ),
        attempt(
            "utimes outside",
            format!("touch -d 2001-01-01 {out}/victim.txt"),
            denied,
        ),
        attempt(
            "read ssh key",
            format!("cat {h}/.ssh/id_ed25519"),
            &["Permission denied"],
        ),
        attempt(
            "list ssh dir",
            format!("ls {h}/.ssh"),
            &["Permission denied"],
        ),
        attempt(
            "read vault",
            format!("cat {cfg}/vault.json"),
            &["Permission denied"],
        ),
        attempt(
            "read config",
            format!("cat {cfg}/sayri.conf"),
            &["Permission denied"],
        ),
        attempt(
            "read sessions db",
            format!("cat {st}/sessions.db"),
            &["Permission denied", "No such file"],
        ),
        attempt(
            "read /etc/shadow",
            "cat /etc/shadow",
            &["Permission denied"],
        ),
        attempt(
            "tcp to host loopback",
            format!("exec 3<>/dev/tcp/127.0.0.1/{tcp_port}; echo connected"),
            &["Permission denied", "Network is unreachable"],
        ),
        attempt(
            "udp to host loopback",
            format!("echo x > /dev/udp/127.0.0.1/{udp_port} && echo sent"),
            &["Network is unreachable"],
        ),
        attempt(
            "dns canary",
            "getent hosts c4n4ry-7f3a.example.invalid; echo rc=$?",
            &["rc=2"],
        ),
        attempt(
            "interfaces",
            "cat /proc/net/dev | awk 'NR>2{print $1}' | tr '\\n' ' '; echo end",
            &["lo: end"],
        ),
        attempt(
            "host unix socket",
            format!(
                "{PY} -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{hs}')\""
            ),
            &["PermissionError"],
        ),
        attempt(
            "sayri daemon socket",
            format!(
                "{PY} -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{ss}')\""
            ),
            &["PermissionError"],
        ),
        attempt("runtime dir sockets hidden", "ls -A /run | wc -l", &["0"]),
        attempt(
            "signal a host process",
            format!("kill -0 {me}"),
            &["No such process"],
        ),
        attempt(
            "ptrace",
            format!(
                "{PY} -c \"import ctypes,os; l=ctypes.CDLL(None, use_errno=True); r=l.ptrace(16, 1, 0, 0); print('ptrace', r, os.strerror(ctypes.get_errno()))\""
            ),
            &["ptrace -1 Operation not permitted"],
        ),
        attempt(
            "mount",
            format!(
                "{PY} -c \"import ctypes,os; l=ctypes.CDLL(None, use_errno=True); r=l.mount(b'none', b'/tmp', b'tmpfs', 0, None); print('mount', r, os.strerror(ctypes.get_errno()))\""
            ),
            &["mount -1 Operation not permitted"],
        ),
        attempt(
            "new user namespace",
            "unshare -Ur true",
            &["Operation not permitted"],
        ),
        attempt(
            "capabilities",
            "grep CapEff /proc/self/status",
            &["0000000000000000"],
        ),
        attempt(
            "raw disk device",
            "ls /dev | tr '\\n' ' '",
            &["fd full null random stderr stdin stdout tty urandom zero"],
        ),
        attempt(
            "memory exhaustion",
            format!("{PY} -c 'x = bytearray(6 << 30)'"),
            &["MemoryError"],
        ),
        attempt(
            "fork bomb",
            format!("{PY} -c '{FORK_BOMB}'"),
            &["Resource temporarily unavailable"],
        ),
        attempt(
            "fill private tmp",
            "head -c 400M /dev/zero > /tmp/big",
            &["No space left on device", "File too large"],
        ),
        attempt(
            "inherited fds",
            "ls /proc/self/fd | tr '\\n' ' '",
            &["0 1 2 3 "],
        ),
        attempt("environment secrets", "env | grep -c SECRET_TOKEN", &["0"]),
    ]
}

pub struct Listeners {
    pub tcp: std::net::TcpListener,
    pub udp: std::net::UdpSocket,
}

impl Listeners {
    pub fn new() -> Listeners {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        Listeners { tcp, udp }
    }

    /// Asserts that nothing reached the host listeners.
    pub fn assert_untouched(&self) {
        assert!(
            self.tcp.accept().is_err(),
            "a TCP connection reached the host"
        );
        let mut b = [0u8; 16];
        assert!(
            self.udp.recv_from(&mut b).is_err(),
            "a datagram reached the host"
        );
    }
}

pub fn wait_gone(pattern: &str) -> bool {
    let out = Command::new("pgrep").args(["-f", pattern]).output();
    match out {
        Ok(o) => o.stdout.is_empty(),
        Err(_) => !std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(pattern))
                .unwrap_or(false)
        }),
    }
}
