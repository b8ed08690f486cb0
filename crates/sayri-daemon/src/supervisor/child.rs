//! One run of a supervised program: its keeper process (see `sayri_sandbox::keeper`), the pipe
//! that carries its stdout and stderr into the log, its stdin, and its record in the child
//! registry.

use super::ChildSpec;
use super::log::RotatingLog;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use sayri_core::sync::lock;
use sayri_sandbox::child_registry::{ChildKind, ChildRegistry, Recorded};
use sayri_sandbox::keeper::{EXIT_EXEC, EXIT_SETUP, KEEP_MODE, KeeperSpec};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

/// Variables a supervised program inherits from the daemon's environment; everything else it
/// gets comes from its [`ChildSpec`].
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
];

/// How long past its own grace period a keeper may take to exit before it is killed.
const KEEPER_MARGIN: Duration = Duration::from_secs(2);
/// How long the rest of the output is copied after the keeper exited.
const LOG_DRAIN: Duration = Duration::from_secs(1);

/// The keeper program (`sayri-exec`) and where runs are recorded.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// Program that runs the keeper.
    pub program: PathBuf,
    /// Arguments before the keeper's own (none for `sayri-exec`; `[EXEC_HELPER_ARG]` for a
    /// program that nests the helper).
    pub args: Vec<OsString>,
    /// Where running keepers are written down (`None`: nowhere).
    pub registry: Option<ChildRegistry>,
}

/// A running keeper.
pub struct Running {
    child: tokio::process::Child,
    /// The keeper's pid (the program is its only direct child).
    pub keeper_pid: u32,
    _record: Option<Recorded>,
    log_task: JoinHandle<()>,
}

type SharedLog = Arc<Mutex<RotatingLog>>;

/// Writes `text` as a Sayri line into `log`; a failing log is not worth stopping for.
pub fn note(log: &SharedLog, text: &str) {
    let mut l = lock(log);
    let _ = l.note(text);
}

impl Launcher {
    /// Starts one run of `spec` with its output going to `log`. Errors are the reason, for the
    /// child's `last_error`.
    pub async fn launch(&self, spec: &ChildSpec, log: &SharedLog) -> Result<Running, String> {
        let keeper = KeeperSpec {
            program: spec.program.clone(),
            args: spec.args.clone(),
            cwd: spec.cwd.clone(),
            stop_grace_ms: u64::try_from(spec.stop_grace.as_millis()).unwrap_or(u64::MAX),
            parent_pid: std::process::id(),
        };
        let json = serde_json::to_string(&keeper).map_err(|e| e.to_string())?;
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| format!("cannot create the log pipe: {e}"))?;
        let write2 = write
            .try_clone()
            .map_err(|e| format!("cannot create the log pipe: {e}"))?;
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .arg(KEEP_MODE)
            .arg(json)
            .env_clear()
            .envs(inherited_env())
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .envs(spec.secret_env.iter().map(|(k, v)| (k, v)))
            .stdin(if spec.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::from(write))
            .stderr(Stdio::from(write2));
        let mut child = sayri_sandbox::parent_death::spawn_tied(cmd, libc::SIGTERM)
            .await
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        let keeper_pid = child.id().unwrap_or(0);
        let record = self.record(spec, keeper_pid);
        if let (Some(bytes), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
            tokio::spawn(async move {
                let _ = stdin.write_all(&bytes).await;
            });
        }
        let log_task = tokio::spawn(copy_output(std::fs::File::from(read), log.clone()));
        Ok(Running {
            child,
            keeper_pid,
            _record: record,
            log_task,
        })
    }

    fn record(&self, spec: &ChildSpec, pid: u32) -> Option<Recorded> {
        let reg = self.registry.as_ref()?;
        let pid = i32::try_from(pid).ok()?;
        match reg.record(ChildKind::Supervised, &spec.name, pid) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(
                    "cannot record supervised child {} (pid {pid}) in {}: {e}",
                    spec.name,
                    reg.dir().display()
                );
                None
            }
        }
    }
}

/// The inherited part of a child's environment (see [`INHERITED_ENV`]).
fn inherited_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| INHERITED_ENV.contains(&k)))
        .collect()
}

/// Copies everything written to the pipe into the log until every writer closed it.
async fn copy_output(read: std::fs::File, log: SharedLog) {
    let Ok(mut rx) = tokio::net::unix::pipe::Receiver::from_file(read) else {
        note(&log, "cannot read the child's output; it is lost");
        return;
    };
    let mut buf = vec![0u8; 8192];
    loop {
        match rx.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut l = lock(&log);
                let _ = l.write(&buf[..n]);
            }
        }
    }
}

impl Running {
    /// Waits until the keeper exits on its own.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let st = self.child.wait().await;
        self.drain_log().await;
        st
    }

    /// Stops the run: `SIGTERM` to the keeper (it gives the program `grace`, then kills its
    /// whole tree), `SIGKILL` if the keeper itself is still there [`KEEPER_MARGIN`] later.
    pub async fn stop(&mut self, grace: Duration) -> std::io::Result<ExitStatus> {
        let pid = Pid::from_raw(self.keeper_pid as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let st = match tokio::time::timeout(grace + KEEPER_MARGIN, self.child.wait()).await {
            Ok(st) => st,
            Err(_) => {
                let _ = kill(pid, Signal::SIGKILL);
                self.child.wait().await
            }
        };
        self.drain_log().await;
        st
    }

    async fn drain_log(&mut self) {
        let _ = tokio::time::timeout(LOG_DRAIN, &mut self.log_task).await;
    }
}

impl Drop for Running {
    /// A run abandoned without a stop (its task was dropped) still ends with its whole tree.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = kill(Pid::from_raw(self.keeper_pid as i32), Signal::SIGTERM);
        }
        self.log_task.abort();
    }
}

/// What an exit on its own means, for `last_error`.
pub fn describe_exit(st: &std::io::Result<ExitStatus>, spec: &ChildSpec, log: &str) -> String {
    let st = match st {
        Ok(st) => st,
        Err(e) => return format!("lost track of the process: {e}"),
    };
    match (st.code(), st.signal()) {
        (Some(0), _) => format!("exited on its own with code 0 (see {log})"),
        (Some(EXIT_SETUP), _) => format!("could not be started (see {log})"),
        (Some(EXIT_EXEC), _) => format!("cannot execute {} (see {log})", spec.program.display()),
        (Some(code), _) => format!("exited with code {code} (see {log})"),
        (None, Some(sig)) => {
            let name = Signal::try_from(sig).map_or_else(|_| sig.to_string(), |s| s.to_string());
            format!("killed by {name} (see {log})")
        }
        (None, None) => format!("ended in an unknown way (see {log})"),
    }
}
