//! The daemon side: [`LinuxSandbox`] validates a request, starts the exec helper with one pipe for
//! the interleaved output and a socket as its stdin (see [`crate::spec_pipe`]) that carries the
//! helper's instructions to it and its reports back, collects capped output, and turns the
//! helper's report into an [`ExecResult`]. The helper's arguments are its mode word only: the
//! command and its environment (which holds the agent's secrets) never appear in a process's
//! command line. It returns when the helper exits — the helper has already killed every process
//! the command left behind — not when the last pipe holder closes.
//!
//! Helpers die with the launcher: they are started from the long-lived spawner thread by
//! [`crate::parent_death::spawn_self_arming`] and ask for the parent-death signal `SIGTERM`
//! themselves, first thing, checking that their parent is still this process (on `SIGTERM` a
//! helper kills its command's tree); the probe is forked by [`crate::parent_death::spawn_tied`].
//! Each running helper is written down in the settings'
//! [`crate::child_registry::ChildRegistry`] so that the next daemon can kill what a crash left
//! behind.

use crate::capabilities::{self, CapabilityReport, KernelFeatures};
use crate::output::{Captured, OutputCapture};
use crate::settings::LinuxSandboxSettings;
use crate::spec::{HelperEnv, HelperReport, HelperSpec};
use crate::{background, env_policy, pkexec, spec_pipe};
use futures::future::BoxFuture;
use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use sayri_core::ports::{ExecRequest, ExecResult, ExecStatus, Sandbox};
use sayri_protocol::SandboxLevel;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio_util::sync::CancellationToken;

/// Errors of [`LinuxSandbox::capabilities`].
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The helper program could not be started.
    #[error(
        "cannot start the sandbox helper {program}: {source}; {}",
        helper_hint(source)
    )]
    Spawn {
        /// Helper path.
        program: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The helper answered something unreadable.
    #[error(
        "the sandbox helper's probe answer is unreadable ({0}); is the helper the same version as the daemon?"
    )]
    Decode(String),
}

/// What to do when the helper program cannot be started.
fn helper_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            "the helper is not installed: build or install `sayri-exec` next to `sayri` (`cargo build --release -p sayri` builds both)"
        }
        std::io::ErrorKind::PermissionDenied => {
            "the helper is not executable: reinstall it, or check the mount it lives on (noexec?)"
        }
        _ => "check the helper program in the sandbox settings",
    }
}

/// Why a request is refused before the helper starts (the command did not run); each says what
/// to change.
#[derive(Debug, thiserror::Error)]
pub enum RequestRefused {
    /// Level 0 never executes.
    #[error(
        "LEVEL_0_NO_EXEC: this agent may not execute commands. Raise the agent's sandbox level to run commands."
    )]
    NoExec,
    /// The agent id cannot name a workspace directory.
    #[error("agent id {0:?} cannot name a workspace directory; use a plain name")]
    AgentId(String),
    /// The workspace is a relative path.
    #[error("workspace {} must be an absolute path", .0.display())]
    RelativeWorkspace(PathBuf),
    /// The workspace cannot be created.
    #[error("cannot create workspace {}: {source}", path.display())]
    CreateWorkspace {
        /// The workspace.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The workspace cannot be resolved.
    #[error("cannot resolve workspace {}: {source}", path.display())]
    ResolveWorkspace {
        /// The workspace.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The workspace holds a path levels 1–2 must not read.
    #[error(
        "workspace {} contains the protected path {}; choose a dedicated directory",
        workspace.display(),
        protected.display()
    )]
    ContainsProtected {
        /// The workspace (resolved).
        workspace: PathBuf,
        /// The protected path inside it.
        protected: PathBuf,
    },
    /// The workspace lies inside a protected path.
    #[error(
        "workspace {} lies inside the protected path {}; choose another directory",
        workspace.display(),
        protected.display()
    )]
    InsideProtected {
        /// The workspace (resolved).
        workspace: PathBuf,
        /// The protected path around it.
        protected: PathBuf,
    },
    /// The Landlock test override is unreadable.
    #[error(transparent)]
    Landlock(#[from] crate::landlock::LandlockError),
}

/// Why the helper could not be started (the command did not run).
#[derive(Debug, thiserror::Error)]
enum SpawnError {
    /// The status socket or output pipe.
    #[error("cannot create the helper's pipes: {0}")]
    Pipes(std::io::Error),
    /// The output pipe's copy for stderr.
    #[error("cannot duplicate a pipe: {0}")]
    Duplicate(std::io::Error),
    /// The helper program.
    #[error(
        "cannot start the sandbox helper {program}: {source}; the command did not run ({})",
        helper_hint(source)
    )]
    Start {
        /// The helper program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Runs commands at levels 0–4 on Linux. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LinuxSandbox {
    settings: Arc<LinuxSandboxSettings>,
}

/// Exit code of refusals.
pub const EXIT_DENIED: i32 = 126;
/// Exit code of timeouts.
pub const EXIT_TIMEOUT: i32 = 124;

impl LinuxSandbox {
    /// A sandbox with `settings`. Nothing is checked here: every run fails closed on its own, and
    /// [`Self::capabilities`] reports up front.
    pub fn new(settings: LinuxSandboxSettings) -> Self {
        LinuxSandbox {
            settings: Arc::new(settings),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &LinuxSandboxSettings {
        &self.settings
    }

    /// Probes the kernel through the helper (a single-threaded process) and assesses each level.
    pub async fn capabilities(&self) -> Result<CapabilityReport, ProbeError> {
        let s = &self.settings;
        let mut cmd = tokio::process::Command::new(&s.helper_program);
        cmd.args(&s.helper_args)
            .arg("probe")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let spawn_error = |source| ProbeError::Spawn {
            program: s.helper_program.clone(),
            source,
        };
        let out = crate::parent_death::spawn_tied(cmd, libc::SIGKILL)
            .await
            .map_err(spawn_error)?
            .wait_with_output()
            .await
            .map_err(spawn_error)?;
        let k: KernelFeatures =
            serde_json::from_slice(&out.stdout).map_err(|e| ProbeError::Decode(e.to_string()))?;
        Ok(capabilities::assess(&k))
    }

    /// Turns `req` into the helper's spec and the command's environment.
    ///
    /// # Errors
    /// [`RequestRefused`]: the reason it is refused.
    pub fn helper_spec(
        &self,
        req: &ExecRequest,
    ) -> Result<(HelperSpec, HelperEnv), RequestRefused> {
        let s = &self.settings;
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let deny_read: Vec<PathBuf> = s.deny_read_paths().iter().map(|p| canon(p)).collect();
        let sandboxes_root = canon(&s.sandboxes_root());
        let level = req.level;
        let workspace = match level {
            SandboxLevel::NoExec => return Err(RequestRefused::NoExec),
            SandboxLevel::ReadOnly => None,
            SandboxLevel::IsolatedDev => {
                let ws = match &req.workspace {
                    Some(w) => w.clone(),
                    None => s
                        .default_workspace(&req.agent_id)
                        .ok_or_else(|| RequestRefused::AgentId(req.agent_id.clone()))?,
                };
                if !ws.is_absolute() {
                    return Err(RequestRefused::RelativeWorkspace(ws));
                }
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .create(&ws)
                    .map_err(|source| RequestRefused::CreateWorkspace {
                        path: ws.clone(),
                        source,
                    })?;
                let ws = std::fs::canonicalize(&ws).map_err(|source| {
                    RequestRefused::ResolveWorkspace {
                        path: ws.clone(),
                        source,
                    }
                })?;
                for d in &deny_read {
                    if d.starts_with(&ws) {
                        return Err(RequestRefused::ContainsProtected {
                            workspace: ws,
                            protected: d.clone(),
                        });
                    }
                    if ws.starts_with(d) && !ws.starts_with(&sandboxes_root) {
                        return Err(RequestRefused::InsideProtected {
                            workspace: ws,
                            protected: d.clone(),
                        });
                    }
                }
                Some(ws)
            }
            SandboxLevel::HostUser | SandboxLevel::HostRoot => {
                req.workspace.clone().filter(|w| w.is_dir())
            }
        };
        let cwd = match level {
            SandboxLevel::ReadOnly => PathBuf::from("/tmp"),
            _ => workspace.clone().unwrap_or_else(|| s.home_dir.clone()),
        };
        let parent_env = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        // Level 2's home is its workspace; elsewhere the user's real home (read-only at level 1).
        let home = match (level, &workspace) {
            (SandboxLevel::IsolatedDev, Some(ws)) => ws.to_str().map(str::to_string),
            _ => s.home_dir.to_str().map(str::to_string),
        };
        let env = HelperEnv {
            vars: env_policy::build_env(level, parent_env, home.as_deref(), &req.env),
        };
        let spec = HelperSpec {
            level,
            command: req.command.clone(),
            workspace,
            cwd,
            timeout_ms: (req.timeout.as_millis() as u64).max(1),
            allow_network: req.allow_network,
            deny_read,
            readable: match level {
                SandboxLevel::ReadOnly | SandboxLevel::IsolatedDev => req
                    .readable
                    .as_ref()
                    .map(|r| r.iter().map(|p| canon(p)).collect()),
                _ => None,
            },
            sandboxes_root,
            background: level >= SandboxLevel::HostUser
                && background::is_background_launch(&req.command),
            limits: s.limits,
            parent_pid: std::process::id(),
            landlock_abi_cap: match level {
                SandboxLevel::ReadOnly | SandboxLevel::IsolatedDev => {
                    crate::landlock::abi_cap_from_env()?
                }
                _ => None,
            },
            stdio: false,
        };
        Ok((spec, env))
    }
}

impl Sandbox for LinuxSandbox {
    fn run(
        &self,
        request: ExecRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ExecResult> {
        let this = self.clone();
        Box::pin(async move { this.run_inner(request, cancel).await })
    }
}

fn denied(reason: String, start: Instant) -> ExecResult {
    ExecResult {
        duration: start.elapsed(),
        ..ExecResult::new(ExecStatus::Denied, Some(EXIT_DENIED), reason)
    }
}

fn pipe_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(std::io::Error::from)
}

/// How long the launcher waits past the request's timeout before it kills the helper itself (the
/// helper enforces the timeout; this only catches a helper that hangs).
const BACKSTOP_MARGIN: Duration = Duration::from_secs(3);
/// How long output is still read after the helper exited (a descendant that escaped the kill may
/// hold the pipe open; it is not waited for).
const OUTPUT_GRACE: Duration = Duration::from_millis(100);
/// How long the launcher waits for the rest of the status socket after the helper exited.
const STATUS_WAIT: Duration = Duration::from_secs(1);

impl LinuxSandbox {
    /// Validates, starts the helper, supervises it and interprets its reports.
    async fn run_inner(&self, req: ExecRequest, cancel: CancellationToken) -> ExecResult {
        let start = Instant::now();
        let (spec, env) = match self.helper_spec(&req) {
            Ok(s) => s,
            Err(reason) => return denied(reason.to_string(), start),
        };
        if cancel.is_cancelled() {
            return ExecResult {
                duration: start.elapsed(),
                ..ExecResult::new(ExecStatus::Killed, None, "cancelled before it started")
            };
        }
        let frames = match (spec_pipe::frame_json(&spec), spec_pipe::frame_json(&env)) {
            (Ok(a), Ok(b)) => vec![a, b],
            (Err(e), _) | (_, Err(e)) => {
                return denied(format!("cannot encode the helper spec: {e}"), start);
            }
        };
        drop(env);
        let (program, args) = self.helper_command(req.level);
        let mut helper = match RunningHelper::spawn(&program, &args, frames, self.settings()).await
        {
            Ok(h) => h,
            Err(reason) => return denied(reason.to_string(), start),
        };
        let end = helper
            .supervise(self.output_limit(&req), req.timeout, &cancel)
            .await;
        let reports = helper.reports().await;
        interpret(req.level, req.timeout, &reports, end, start)
    }

    /// Program and arguments that run the helper in `exec` mode (its instructions come on stdin):
    /// the helper program itself, or `pkexec` in front of it at level 4.
    fn helper_command(&self, level: SandboxLevel) -> (OsString, Vec<OsString>) {
        let s = &self.settings;
        if level == SandboxLevel::HostRoot {
            pkexec::command(&s.helper_program, &s.helper_args)
        } else {
            let mut a = s.helper_args.clone();
            a.push(crate::exec_helper::EXEC_MODE.into());
            (s.helper_program.clone().into_os_string(), a)
        }
    }

    /// The request's output cap in bytes, or the settings' default when it asks for 0.
    fn output_limit(&self, req: &ExecRequest) -> usize {
        if req.output_limit == 0 {
            self.settings.default_output_limit
        } else {
            req.output_limit
        }
    }
}

/// A started exec helper: its process, the read end of the shared stdout/stderr pipe, and a task
/// collecting everything written to the status socket.
struct RunningHelper {
    child: tokio::process::Child,
    pid: Option<i32>,
    /// The helper's record in the child registry, removed when the helper has been waited for.
    _record: Option<crate::child_registry::Recorded>,
    output: Option<pipe::Receiver>,
    status: tokio::task::JoinHandle<String>,
}

/// How supervision saw the helper end: its exit status (always set once supervision returns),
/// whether the launcher cancelled it or had to kill it at the backstop, and the captured output.
struct HelperEnd {
    exit: Option<std::process::ExitStatus>,
    cancelled: bool,
    backstopped: bool,
    output: Captured,
}

impl RunningHelper {
    /// Starts `program args…` with an empty environment, one end of a socket pair as stdin (the
    /// helper moves it to fd 3, reads `frames` from it and writes its reports to it), stdout
    /// and stderr on one pipe, and records it in the settings' child registry. Nothing runs
    /// between fork and exec, so the standard library starts the helper with `posix_spawn` (a
    /// `vfork`: no copy of the daemon's page tables per command), from the long-lived spawner
    /// thread; the helper arms its own parent-death signal against this process's pid (see
    /// [`crate::parent_death`]). Errors are the refusal for the caller.
    async fn spawn(
        program: &OsString,
        args: &[OsString],
        frames: Vec<zeroize::Zeroizing<Vec<u8>>>,
        settings: &LinuxSandboxSettings,
    ) -> Result<Self, SpawnError> {
        let ((out_r, out_w), (st_r, st_w)) = match (pipe_pair(), spec_pipe::socket_pair()) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return Err(SpawnError::Pipes(e)),
        };
        let out_w2 = out_w.try_clone().map_err(SpawnError::Duplicate)?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .env_clear()
            .stdin(Stdio::from(st_w))
            .stdout(Stdio::from(out_w))
            .stderr(Stdio::from(out_w2));
        // The spawner thread drops `cmd` after the spawn, closing this process's copies of the
        // pipes' write ends.
        let spawned = crate::parent_death::spawn_self_arming(cmd).await;
        let child = spawned.map_err(|source| SpawnError::Start {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
        let pid = child.id().map(|p| p as i32);
        let record = record_helper(settings, pid);
        let output = match pipe::Receiver::from_file(std::fs::File::from(out_r)) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("cannot watch the output pipe: {e}");
                None
            }
        };
        let reader = spec_pipe::send_frames(st_r, frames);
        let status = tokio::spawn(async move {
            // Read chunk by chunk, keeping what arrived: a helper that refused before reading
            // its second frame ends the socket with ECONNRESET after its report.
            let mut bytes = Vec::new();
            if let Ok(mut r) = reader {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = r.read(&mut chunk).await {
                    bytes.extend_from_slice(&chunk[..n]);
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        });
        Ok(RunningHelper {
            child,
            pid,
            _record: record,
            output,
            status,
        })
    }

    /// Reads output (keeping the first and the last `limit / 2` bytes) until the helper has exited and the pipe is
    /// closed, or [`OUTPUT_GRACE`] after the exit. On `cancel` the helper gets SIGTERM (it kills
    /// the command's tree and reports `Killed`); `timeout` + [`BACKSTOP_MARGIN`] after the start
    /// the helper's process group is SIGKILLed. Removes the cgroup the helper may have left.
    async fn supervise(
        &mut self,
        limit: usize,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> HelperEnd {
        let mut capture = OutputCapture::new(limit);
        let mut chunk = vec![0u8; 16 * 1024];
        let backstop = tokio::time::sleep(timeout + BACKSTOP_MARGIN);
        tokio::pin!(backstop);
        let mut end = HelperEnd {
            exit: None,
            cancelled: false,
            backstopped: false,
            output: Captured::default(),
        };
        let mut grace: Option<tokio::time::Instant> = None;
        loop {
            let grace_sleep = async {
                match grace {
                    Some(g) => tokio::time::sleep_until(g).await,
                    None => futures::future::pending().await,
                }
            };
            let out = &mut self.output;
            tokio::select! {
                r = async { match out.as_mut() { Some(o) => o.read(&mut chunk).await, None => futures::future::pending().await } }, if out.is_some() => {
                    match r {
                        Ok(0) | Err(_) => *out = None,
                        Ok(n) => capture.push(&chunk[..n]),
                    }
                }
                st = self.child.wait(), if end.exit.is_none() => {
                    end.exit = Some(st.unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(255 << 8)));
                    grace = Some(tokio::time::Instant::now() + OUTPUT_GRACE);
                }
                _ = cancel.cancelled(), if !end.cancelled && end.exit.is_none() => {
                    end.cancelled = true;
                    if let Some(p) = self.pid {
                        let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
                    }
                }
                _ = &mut backstop, if !end.backstopped && end.exit.is_none() => {
                    end.backstopped = true;
                    if let Some(p) = self.pid {
                        let _ = killpg(Pid::from_raw(p), Signal::SIGKILL);
                        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
                    }
                }
                _ = grace_sleep => break,
            }
            if end.exit.is_some() && self.output.is_none() {
                break;
            }
        }
        if let (Some(p), Some(_)) = (self.pid, end.exit) {
            crate::cgroup::remove_for(p as u32);
        }
        end.output = capture.finish();
        end
    }

    /// The JSON lines the helper wrote to the status socket (unreadable lines skipped), waiting
    /// at most [`STATUS_WAIT`] for it to close.
    async fn reports(&mut self) -> Vec<HelperReport> {
        let status_text = tokio::time::timeout(STATUS_WAIT, &mut self.status)
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
        status_text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for RunningHelper {
    /// A helper abandoned mid-run (the caller's future was dropped, e.g. at daemon shutdown)
    /// gets `SIGTERM`, on which it kills the command's whole tree itself (`SIGKILL` would kill
    /// only the helper and orphan the command's backgrounded processes at levels 3–4).
    fn drop(&mut self) {
        if let (Ok(None), Some(pid)) = (self.child.try_wait(), self.pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
}

/// Writes the helper `pid` into the settings' child registry, if there is one. A failure is
/// logged, not fatal: the helper still dies with this process; only the clean-up after a crash
/// loses its record.
fn record_helper(
    settings: &LinuxSandboxSettings,
    pid: Option<i32>,
) -> Option<crate::child_registry::Recorded> {
    let (registry, pid) = (settings.child_registry.as_ref()?, pid?);
    match registry.record(crate::child_registry::ChildKind::ExecHelper, "command", pid) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(
                "cannot record the command's helper (pid {pid}) in {}: {e}",
                registry.dir().display()
            );
            None
        }
    }
}

/// A command the helper refused to run: the cause and the fix, from what the host says.
fn refused(level: SandboxLevel, reason: &str, start: Instant) -> ExecResult {
    let why = crate::host_restrictions::explain(reason, &crate::host_restrictions::facts());
    ExecResult {
        output: format!(
            "Sandbox unavailable for {level}: {}. The command did not run. To fix: {}.",
            why.cause, why.fix
        ),
        ..denied(String::new(), start)
    }
}

/// Ends `output` (the part of a timed-out command's output that is kept last) with the note that
/// the command timed out and its process tree was killed, on a line of its own.
fn append_timeout_note(end: &mut String, timeout: Duration) {
    if !end.is_empty() && !end.ends_with('\n') {
        end.push('\n');
    }
    end.push_str(&format!(
        "[timed out after {:.1} s; the whole process tree was killed]",
        timeout.as_secs_f64()
    ));
}

/// Turns the helper's reports and how it ended into the result. A `Refused` report wins over
/// everything; otherwise the last report decides. Without one (the helper died, was cancelled or
/// killed at the backstop, or `pkexec` refused) the launcher's own view and the helper's exit code
/// decide. A timeout appends a note to the output.
fn interpret(
    level: SandboxLevel,
    timeout: Duration,
    reports: &[HelperReport],
    end: HelperEnd,
    start: Instant,
) -> ExecResult {
    let HelperEnd {
        exit,
        cancelled,
        backstopped,
        output,
    } = end;
    let Captured {
        head: mut output,
        tail: mut output_tail,
        omitted,
    } = output;
    let duration = start.elapsed();
    if let Some(reason) = reports.iter().find_map(|r| match r {
        HelperReport::Refused { reason } => Some(reason.clone()),
        _ => None,
    }) {
        return refused(level, &reason, start);
    }
    let helper_code = exit.and_then(|e| {
        use std::os::unix::process::ExitStatusExt;
        e.code().or(e.signal().map(|s| 128 + s))
    });
    let by_code = |code: Option<i32>| {
        if code == Some(0) {
            ExecStatus::Success
        } else {
            ExecStatus::Failed
        }
    };
    let mut result = ExecResult {
        duration,
        ..ExecResult::new(ExecStatus::Failed, None, "")
    };
    match reports.last() {
        Some(HelperReport::Exited { code }) => {
            result.exit_code = Some(*code);
            result.status = by_code(Some(*code));
        }
        Some(HelperReport::Signaled { signal }) => {
            result.exit_code = Some(128 + signal);
            result.status = ExecStatus::Failed;
        }
        Some(HelperReport::Timeout) => {
            result.exit_code = Some(EXIT_TIMEOUT);
            result.status = ExecStatus::Timeout;
        }
        Some(HelperReport::Killed) => {
            result.status = ExecStatus::Killed;
        }
        Some(HelperReport::Background { pid }) => {
            result.status = ExecStatus::Success;
            result.exit_code = Some(0);
            result.background_pid = Some(*pid);
            output = format!("started in background (pid {pid})");
            output_tail.clear();
        }
        Some(HelperReport::Refused { .. }) | None => {
            if cancelled {
                result.status = ExecStatus::Killed;
            } else if backstopped {
                result.status = ExecStatus::Timeout;
                result.exit_code = Some(EXIT_TIMEOUT);
            } else if level == SandboxLevel::HostRoot
                && helper_code.is_some_and(|c| pkexec::PKEXEC_DENIED_CODES.contains(&c))
            {
                return ExecResult {
                    output: pkexec::DENIED_MESSAGE.into(),
                    ..denied(String::new(), start)
                };
            } else {
                result.exit_code = helper_code;
                result.status = by_code(helper_code);
            }
        }
    }
    if result.status == ExecStatus::Timeout {
        let end = if omitted.is_zero() {
            &mut output
        } else {
            &mut output_tail
        };
        append_timeout_note(end, timeout);
    }
    result.output = output;
    result.output_tail = output_tail;
    result.omitted = omitted;
    result
}
