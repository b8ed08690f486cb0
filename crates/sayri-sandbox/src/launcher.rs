//! The daemon side: [`LinuxSandbox`] validates a request, starts the exec helper with one pipe for
//! the interleaved output and one status pipe (fd 3), collects capped output, and turns the
//! helper's report into an [`ExecResult`]. It returns when the helper exits — the helper has
//! already killed every process the command left behind — not when the last pipe holder closes.

use crate::capabilities::{self, CapabilityReport, KernelFeatures};
use crate::output::OutputCapture;
use crate::settings::LinuxSandboxSettings;
use crate::spec::{HelperReport, HelperSpec};
use crate::{background, env_policy, pkexec};
use futures::future::BoxFuture;
use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use sayri_core::ports::{ExecRequest, ExecResult, ExecStatus, Sandbox};
use sayri_protocol::SandboxLevel;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
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
        "cannot start the sandbox helper {program}: {source}; check `helper_program` in the sandbox settings"
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
        let out = tokio::process::Command::new(&s.helper_program)
            .args(&s.helper_args)
            .arg("probe")
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .await
            .map_err(|source| ProbeError::Spawn {
                program: s.helper_program.clone(),
                source,
            })?;
        let k: KernelFeatures =
            serde_json::from_slice(&out.stdout).map_err(|e| ProbeError::Decode(e.to_string()))?;
        Ok(capabilities::assess(&k))
    }

    /// Turns `req` into the helper's spec, or the reason it is refused.
    pub fn helper_spec(&self, req: &ExecRequest) -> Result<HelperSpec, String> {
        let s = &self.settings;
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let deny_read: Vec<PathBuf> = s.deny_read_paths().iter().map(|p| canon(p)).collect();
        let sandboxes_root = canon(&s.sandboxes_root());
        let level = req.level;
        let workspace = match level {
            SandboxLevel::NoExec => {
                return Err(
                    "LEVEL_0_NO_EXEC: this agent may not execute commands. Raise the \
                            agent's sandbox level to run commands."
                        .into(),
                );
            }
            SandboxLevel::ReadOnly => None,
            SandboxLevel::IsolatedDev => {
                let ws = match &req.workspace {
                    Some(w) => w.clone(),
                    None => s.default_workspace(&req.agent_id).ok_or_else(|| {
                        format!(
                            "agent id {:?} cannot name a workspace directory; use a plain name",
                            req.agent_id
                        )
                    })?,
                };
                if !ws.is_absolute() {
                    return Err(format!(
                        "workspace {} must be an absolute path",
                        ws.display()
                    ));
                }
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .create(&ws)
                    .map_err(|e| format!("cannot create workspace {}: {e}", ws.display()))?;
                let ws = std::fs::canonicalize(&ws)
                    .map_err(|e| format!("cannot resolve workspace {}: {e}", ws.display()))?;
                for d in &deny_read {
                    if d.starts_with(&ws) {
                        return Err(format!(
                            "workspace {} contains the protected path {}; choose a dedicated directory",
                            ws.display(),
                            d.display()
                        ));
                    }
                    if ws.starts_with(d) && !ws.starts_with(&sandboxes_root) {
                        return Err(format!(
                            "workspace {} lies inside the protected path {}; choose another directory",
                            ws.display(),
                            d.display()
                        ));
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
        Ok(HelperSpec {
            level,
            command: req.command.clone(),
            workspace,
            cwd,
            timeout_ms: (req.timeout.as_millis() as u64).max(1),
            allow_network: req.allow_network,
            env: env_policy::build_env(level, parent_env, &req.env),
            deny_read,
            sandboxes_root,
            background: level >= SandboxLevel::HostUser
                && background::is_background_launch(&req.command),
            limits: s.limits,
        })
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
        status: ExecStatus::Denied,
        exit_code: Some(EXIT_DENIED),
        output: reason,
        duration: start.elapsed(),
        background_pid: None,
    }
}

fn pipe_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(std::io::Error::from)
}

impl LinuxSandbox {
    async fn run_inner(&self, req: ExecRequest, cancel: CancellationToken) -> ExecResult {
        let start = Instant::now();
        let level = req.level;
        let spec = match self.helper_spec(&req) {
            Ok(s) => s,
            Err(reason) => return denied(reason, start),
        };
        if cancel.is_cancelled() {
            return ExecResult {
                status: ExecStatus::Killed,
                exit_code: None,
                output: "cancelled before it started".into(),
                duration: start.elapsed(),
                background_pid: None,
            };
        }
        let json = match serde_json::to_string(&spec) {
            Ok(j) => j,
            Err(e) => return denied(format!("cannot encode the helper spec: {e}"), start),
        };
        let s = &self.settings;
        let (program, args): (OsString, Vec<OsString>) = if level == SandboxLevel::HostRoot {
            pkexec::command(&s.helper_program, &s.helper_args, &json)
        } else {
            let mut a = s.helper_args.clone();
            a.push("exec".into());
            a.push(json.into());
            (s.helper_program.clone().into_os_string(), a)
        };
        let limit = if req.output_limit == 0 {
            s.default_output_limit
        } else {
            req.output_limit
        };

        let ((out_r, out_w), (st_r, st_w)) = match (pipe_pair(), pipe_pair()) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return denied(format!("cannot create pipes: {e}"), start),
        };
        let out_w2 = match out_w.try_clone() {
            Ok(f) => f,
            Err(e) => return denied(format!("cannot duplicate a pipe: {e}"), start),
        };
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&args)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::from(out_w))
            .stderr(Stdio::from(out_w2))
            .kill_on_drop(true);
        let st_raw = st_w.as_raw_fd();
        // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if st_raw == crate::spec::STATUS_FD {
                    if libc::fcntl(st_raw, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(st_raw, crate::spec::STATUS_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let spawned = cmd.spawn();
        drop(cmd);
        drop(st_w);
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                return denied(
                    format!(
                        "cannot start the sandbox helper {}: {e}; the command did not run",
                        program.to_string_lossy()
                    ),
                    start,
                );
            }
        };
        let helper_pid = child.id().map(|p| p as i32);
        let mut out = match pipe::Receiver::from_file(std::fs::File::from(out_r)) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("cannot watch the output pipe: {e}");
                None
            }
        };
        let status_reader = tokio::spawn(async move {
            let mut text = String::new();
            if let Ok(mut r) = pipe::Receiver::from_file(std::fs::File::from(st_r)) {
                let _ = r.read_to_string(&mut text).await;
            }
            text
        });

        let mut capture = OutputCapture::new(limit);
        let mut chunk = vec![0u8; 16 * 1024];
        let backstop = tokio::time::sleep(req.timeout + Duration::from_secs(3));
        tokio::pin!(backstop);
        let mut exit: Option<std::process::ExitStatus> = None;
        let mut cancelled = false;
        let mut backstopped = false;
        let mut grace: Option<tokio::time::Instant> = None;
        loop {
            let grace_sleep = async {
                match grace {
                    Some(g) => tokio::time::sleep_until(g).await,
                    None => futures::future::pending().await,
                }
            };
            tokio::select! {
                r = async { match out.as_mut() { Some(o) => o.read(&mut chunk).await, None => futures::future::pending().await } }, if out.is_some() => {
                    match r {
                        Ok(0) | Err(_) => out = None,
                        Ok(n) => capture.push(&chunk[..n]),
                    }
                }
                st = child.wait(), if exit.is_none() => {
                    exit = Some(st.unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(255 << 8)));
                    grace = Some(tokio::time::Instant::now() + Duration::from_millis(100));
                }
                _ = cancel.cancelled(), if !cancelled && exit.is_none() => {
                    cancelled = true;
                    if let Some(p) = helper_pid {
                        let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
                    }
                }
                _ = &mut backstop, if !backstopped && exit.is_none() => {
                    backstopped = true;
                    if let Some(p) = helper_pid {
                        let _ = killpg(Pid::from_raw(p), Signal::SIGKILL);
                        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
                    }
                }
                _ = grace_sleep => break,
            }
            if exit.is_some() && out.is_none() {
                break;
            }
        }
        if let (Some(p), Some(_)) = (helper_pid, exit) {
            crate::cgroup::remove_for(p as u32);
        }
        let status_text = tokio::time::timeout(Duration::from_secs(1), status_reader)
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
        let reports: Vec<HelperReport> = status_text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let mut output = capture.finish();
        let duration = start.elapsed();
        let mut result = ExecResult {
            status: ExecStatus::Failed,
            exit_code: None,
            output: String::new(),
            duration,
            background_pid: None,
        };
        if let Some(reason) = reports.iter().find_map(|r| match r {
            HelperReport::Refused { reason } => Some(reason.clone()),
            _ => None,
        }) {
            return ExecResult {
                output: format!(
                    "Sandbox unavailable for {level}: {reason}. The command did not run."
                ),
                ..denied(String::new(), start)
            };
        }
        let helper_code = exit.and_then(|e| {
            use std::os::unix::process::ExitStatusExt;
            e.code().or(e.signal().map(|s| 128 + s))
        });
        match reports.last() {
            Some(HelperReport::Exited { code }) => {
                result.exit_code = Some(*code);
                result.status = if *code == 0 {
                    ExecStatus::Success
                } else {
                    ExecStatus::Failed
                };
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
                    result.status = if helper_code == Some(0) {
                        ExecStatus::Success
                    } else {
                        ExecStatus::Failed
                    };
                }
            }
        }
        if result.status == ExecStatus::Timeout {
            if !output.is_empty() && !output.ends_with('\n') {
                output.push('\n');
            }
            output.push_str(&format!(
                "[timed out after {:.1} s; the whole process tree was killed]",
                req.timeout.as_secs_f64()
            ));
        }
        result.output = output;
        result
    }
}
