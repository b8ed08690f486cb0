//! One run of a supervised program: its keeper process (see `sayri_sandbox::keeper`), the socket
//! that carries the keeper's spec and then the program's stdin, the secrets socket, the
//! descriptors it inherits, the pipe that carries its stdout and stderr into the log, and its
//! record in the child registry.
//!
//! Descriptors of the program: 0 stdin (`/dev/null`, or the rest of the keeper's spec socket),
//! 1–2 the log pipe, then from 3 on the secrets socket (when it has secrets,
//! `SAYRI_SECRETS_FD=3`) and the spec's passed descriptors in order, each announced in its
//! environment variable. Nothing else: the keeper closes every other descriptor.

use super::ChildSpec;
use super::log::RotatingLog;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use sayri_core::sync::lock;
use sayri_protocol::child_secrets::{self, SECRETS_FD_ENV};
use sayri_sandbox::child_registry::{ChildKind, ChildRegistry, Recorded};
use sayri_sandbox::keeper::{EXIT_EXEC, EXIT_SETUP, KEEP_MODE, KeeperSpec};
use sayri_sandbox::spec_pipe;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
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
        let secrets = secrets_for(spec)?;
        let (secrets_ours, passed) = passed_fds(spec, secrets.is_some())?;
        let keeper = KeeperSpec {
            program: spec.program.clone(),
            args: spec.args.clone(),
            cwd: spec.cwd.clone(),
            stop_grace_ms: u64::try_from(spec.stop_grace.as_millis()).unwrap_or(u64::MAX),
            parent_pid: std::process::id(),
            stdin: spec.stdin.is_some(),
            passed_fds: u32::try_from(passed.len()).unwrap_or(u32::MAX),
        };
        let mut frames = vec![spec_pipe::frame_json(&keeper).map_err(|e| e.to_string())?];
        if let Some(bytes) = &spec.stdin {
            frames.push(zeroize::Zeroizing::new(bytes.clone()));
        }
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| format!("cannot create the log pipe: {e}"))?;
        let write2 = write
            .try_clone()
            .map_err(|e| format!("cannot create the log pipe: {e}"))?;
        let (spec_ours, spec_theirs) =
            spec_pipe::socket_pair().map_err(|e| format!("cannot create a socket: {e}"))?;
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .arg(KEEP_MODE)
            .env_clear()
            .envs(inherited_env())
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .envs(fd_env(spec, secrets.is_some()))
            .stdin(Stdio::from(spec_theirs))
            .stdout(Stdio::from(write))
            .stderr(Stdio::from(write2));
        place_fds(&mut cmd, passed);
        let mut child = sayri_sandbox::parent_death::spawn_tied(cmd, libc::SIGTERM)
            .await
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        let keeper_pid = child.id().unwrap_or(0);
        let record = self.record(spec, keeper_pid);
        if let Err(e) = spec_pipe::send_frames(spec_ours, frames) {
            let _ = child.start_kill();
            return Err(format!("cannot hand the keeper its spec: {e}"));
        }
        if let (Some(ours), Some(json)) = (secrets_ours, secrets)
            && let Err(e) = spec_pipe::send_frames(ours, vec![json])
        {
            let _ = child.start_kill();
            return Err(format!("cannot hand the program its secrets: {e}"));
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

/// The JSON the secrets socket carries for this start (`None`: the spec has no secrets).
fn secrets_for(spec: &ChildSpec) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, String> {
    let mut pairs: Vec<(String, String)> = spec
        .secrets
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    if let Some(make) = &spec.fresh_secrets {
        pairs.extend(make()?.into_iter().map(|(k, v)| (k, v.to_string())));
    }
    if pairs.is_empty() {
        return Ok(None);
    }
    let json = zeroize::Zeroizing::new(child_secrets::encode(&pairs));
    for (_, v) in &mut pairs {
        zeroize::Zeroize::zeroize(v);
    }
    Ok(Some(json))
}

/// The descriptors the keeper passes on, in order: the secrets socket's far end (when there are
/// secrets; its near end is returned first) and duplicates of the spec's descriptors.
fn passed_fds(spec: &ChildSpec, secrets: bool) -> Result<(Option<OwnedFd>, Vec<OwnedFd>), String> {
    let mut passed = Vec::new();
    let mut ours = None;
    if secrets {
        let (a, b) =
            spec_pipe::socket_pair().map_err(|e| format!("cannot create a socket: {e}"))?;
        ours = Some(a);
        passed.push(b);
    }
    for (name, fd) in &spec.fds {
        passed.push(
            fd.try_clone()
                .map_err(|e| format!("cannot duplicate the descriptor for {name}: {e}"))?,
        );
    }
    Ok((ours, passed))
}

/// `NAME=N` for the secrets descriptor and every passed descriptor (numbered from 3).
fn fd_env(spec: &ChildSpec, secrets: bool) -> Vec<(String, String)> {
    let names = secrets
        .then(|| SECRETS_FD_ENV.to_string())
        .into_iter()
        .chain(spec.fds.iter().map(|(k, _)| k.clone()));
    names
        .enumerate()
        .map(|(i, k)| (k, (3 + i).to_string()))
        .collect()
}

/// Puts `fds` at 3, 4, … in the keeper (without close-on-exec), after stdio is set up. They are
/// first moved above any number they could collide with.
fn place_fds(cmd: &mut tokio::process::Command, fds: Vec<OwnedFd>) {
    if fds.is_empty() {
        return;
    }
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let high = 3 + raw.len() as RawFd;
    // SAFETY: the hook only calls fcntl and dup2, both async-signal-safe; the vector was
    // allocated before the fork. `fds` is moved into the hook so the descriptors stay open
    // until the spawn (the Command is dropped after it).
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &fds;
            let mut moved = [0 as RawFd; 16];
            if raw.len() > moved.len() {
                return Err(std::io::Error::from_raw_os_error(libc::EMFILE));
            }
            for (i, fd) in raw.iter().enumerate() {
                let m = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, high);
                if m < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                moved[i] = m;
            }
            for (i, m) in moved[..raw.len()].iter().enumerate() {
                if libc::dup2(*m, 3 + i as RawFd) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
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
