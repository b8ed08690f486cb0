//! Long-running stdio programs inside the sandbox (MCP servers): the same exec helper and the
//! same policy per level as a command, but the program's stdin and stdout are pipes to the
//! caller, which speaks a protocol over them, and its stderr is a third pipe (for a log).
//!
//! The program's stdin reaches the helper as a descriptor passed on the instruction socket
//! after the environment frame ([`crate::spec_pipe::send_fd`]); the helper's stdout and stderr
//! are the program's. Nothing else is inherited: the helper closes every other descriptor
//! first thing, and the instruction socket is close-on-exec.
//!
//! A level the kernel cannot give refuses the program exactly as it refuses a command: the
//! helper reports `Refused` and exits 126 without running anything, and
//! [`StdioProgram::finish`] returns the reason. The program is never started on the host
//! instead.

use crate::LinuxSandbox;
use crate::launcher::RequestRefused;
use crate::spec::HelperReport;
use crate::spec_pipe;
use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use sayri_core::ports::ExecRequest;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// How long [`StdioProgram::finish`] waits for the helper to exit and its report to arrive.
const FINISH_WAIT: Duration = Duration::from_secs(5);

/// A stdio program running inside the sandbox.
pub struct StdioProgram {
    /// Writes to the program's stdin.
    pub stdin: Option<pipe::Sender>,
    /// Reads the program's stdout.
    pub stdout: Option<pipe::Receiver>,
    /// Reads the program's stderr (and the helper's own messages).
    pub stderr: Option<pipe::Receiver>,
    child: tokio::process::Child,
    pid: Option<i32>,
    _record: Option<crate::child_registry::Recorded>,
    status: tokio::task::JoinHandle<String>,
}

/// How a stdio program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdioEnd {
    /// The sandbox refused to start it; the reason names what is missing.
    Refused(String),
    /// It ran and ended (the helper's reports, e.g. `exited with code 1`).
    Ended(String),
}

impl StdioProgram {
    /// The helper's pid (the program's is a child of it).
    pub fn helper_pid(&self) -> Option<i32> {
        self.pid
    }

    /// Stops the program (its whole tree: the helper kills it on `SIGTERM`), waits for the
    /// helper and says how the program ended. A refused start is reported as
    /// [`StdioEnd::Refused`] whether or not the caller noticed it.
    pub async fn finish(mut self) -> StdioEnd {
        drop(self.stdin.take());
        let exited = tokio::time::timeout(Duration::from_millis(300), self.child.wait()).await;
        if exited.is_err() {
            if let Some(p) = self.pid {
                let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
            }
            if tokio::time::timeout(FINISH_WAIT, self.child.wait())
                .await
                .is_err()
            {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
            }
        }
        if let Some(p) = self.pid {
            crate::cgroup::remove_for(p as u32);
        }
        let text = tokio::time::timeout(FINISH_WAIT, &mut self.status)
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
        let reports: Vec<HelperReport> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        describe_end(&reports)
    }
}

impl Drop for StdioProgram {
    /// An abandoned program is stopped: the helper gets `SIGTERM` and kills the program's tree.
    fn drop(&mut self) {
        if let (Ok(None), Some(pid)) = (self.child.try_wait(), self.pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
}

/// The end the helper's reports describe: a refusal wins over everything else.
fn describe_end(reports: &[HelperReport]) -> StdioEnd {
    if let Some(reason) = reports.iter().find_map(|r| match r {
        HelperReport::Refused { reason } => Some(reason.clone()),
        _ => None,
    }) {
        return StdioEnd::Refused(reason);
    }
    let text = match reports.last() {
        Some(HelperReport::Exited { code }) => format!("exited with code {code}"),
        Some(HelperReport::Signaled { signal }) => format!("killed by signal {signal}"),
        Some(HelperReport::Timeout) => "stopped at its time limit".to_string(),
        Some(HelperReport::Killed) => "stopped".to_string(),
        Some(HelperReport::Background { .. }) => "detached (unexpected)".to_string(),
        Some(HelperReport::Refused { .. }) | None => "ended without a report".to_string(),
    };
    StdioEnd::Ended(text)
}

/// Why a stdio program was not started; each says what to change or what failed.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The request itself is refused (level 0, a bad workspace, …).
    #[error(transparent)]
    Refused(#[from] RequestRefused),
    /// A trailing `&` asks for a background launch.
    #[error("a stdio program cannot be a background launch (remove the trailing &)")]
    Background,
    /// Level 4 is not offered to stdio programs.
    #[error("a stdio program cannot run at level 4 (LEVEL_4_HOST_ROOT); choose level 1, 2 or 3")]
    HostRoot,
    /// The helper's spec could not be encoded.
    #[error("cannot encode the helper spec: {0}")]
    Encode(std::io::Error),
    /// A pipe could not be created.
    #[error("cannot create a pipe: {0}")]
    Pipe(nix::errno::Errno),
    /// The helper's socket could not be created.
    #[error("cannot create the helper's socket: {0}")]
    Socket(std::io::Error),
    /// The helper program could not be started.
    #[error("cannot start the sandbox helper {program}: {source}; the program did not run")]
    Start {
        /// The helper program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The helper's instructions could not be written.
    #[error("cannot hand the helper its instructions: {0}")]
    Instructions(std::io::Error),
    /// The program's stdin could not be passed to the helper.
    #[error("cannot hand the helper the program's stdin: {0}")]
    PassStdin(std::io::Error),
    /// The helper's socket could not be watched.
    #[error("cannot watch the helper's socket: {0}")]
    WatchSocket(std::io::Error),
    /// The program's stdin could not be opened for writing.
    #[error("cannot write to the program's stdin: {0}")]
    WriteStdin(std::io::Error),
    /// A pipe could not be watched.
    #[error("cannot watch a pipe: {0}")]
    WatchPipe(std::io::Error),
}

fn pipe_pair() -> Result<(OwnedFd, OwnedFd), StdioError> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(StdioError::Pipe)
}

fn receiver(fd: OwnedFd) -> Result<pipe::Receiver, StdioError> {
    pipe::Receiver::from_file(std::fs::File::from(fd)).map_err(StdioError::WatchPipe)
}

impl LinuxSandbox {
    /// Starts `request.command` (a `bash -c` text; an MCP server's `exec PROGRAM ARGS…`) at
    /// `request.level` with its stdin, stdout and stderr on pipes to the caller. The request's
    /// timeout bounds the program's whole life. `Err` is a refusal found before anything
    /// started (level 0, a bad workspace, the helper missing); a refusal of the kernel arrives
    /// as the program's stdout closing, and [`StdioProgram::finish`] then gives the reason.
    ///
    /// # Errors
    /// [`StdioError`]: the request is refused or the helper cannot be started.
    pub async fn spawn_stdio(&self, request: &ExecRequest) -> Result<StdioProgram, StdioError> {
        let (mut spec, env) = self.helper_spec(request)?;
        if spec.background {
            return Err(StdioError::Background);
        }
        spec.stdio = true;
        let frames = vec![
            spec_pipe::frame_json(&spec).map_err(StdioError::Encode)?,
            spec_pipe::frame_json(&env).map_err(StdioError::Encode)?,
        ];
        drop(env);
        if request.level == sayri_protocol::SandboxLevel::HostRoot {
            return Err(StdioError::HostRoot);
        }
        let (program, args) = self.stdio_helper_command();
        let (in_r, in_w) = pipe_pair()?;
        let (out_r, out_w) = pipe_pair()?;
        let (err_r, err_w) = pipe_pair()?;
        let (st_r, st_w) = spec_pipe::socket_pair().map_err(StdioError::Socket)?;
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&args)
            .env_clear()
            .stdin(Stdio::from(st_w))
            .stdout(Stdio::from(out_w))
            .stderr(Stdio::from(err_w));
        let child = crate::parent_death::spawn_self_arming(cmd)
            .await
            .map_err(|source| StdioError::Start {
                program: program.to_string_lossy().into_owned(),
                source,
            })?;
        let pid = child.id().map(|p| p as i32);
        let record = self.settings().child_registry.as_ref().and_then(|reg| {
            reg.record(crate::child_registry::ChildKind::ExecHelper, "stdio", pid?)
                .map_err(|e| tracing::warn!("cannot record the stdio helper: {e}"))
                .ok()
        });
        // The frames and the descriptor are a few kilobytes: they fit the socket's buffer, so
        // these writes never wait for the helper.
        let sock = std::os::unix::net::UnixStream::from(st_r);
        {
            use std::io::Write;
            let mut w = &sock;
            for f in &frames {
                w.write_all(f).map_err(StdioError::Instructions)?;
            }
        }
        spec_pipe::send_fd(sock.as_raw_fd(), in_r.as_raw_fd()).map_err(StdioError::PassStdin)?;
        drop(in_r);
        let _ = sock.shutdown(std::net::Shutdown::Write);
        sock.set_nonblocking(true)
            .map_err(StdioError::WatchSocket)?;
        let mut reports =
            tokio::net::UnixStream::from_std(sock).map_err(StdioError::WatchSocket)?;
        let status = tokio::spawn(async move {
            let mut bytes = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = reports.read(&mut chunk).await {
                bytes.extend_from_slice(&chunk[..n]);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        });
        let stdin =
            pipe::Sender::from_file(std::fs::File::from(in_w)).map_err(StdioError::WriteStdin)?;
        Ok(StdioProgram {
            stdin: Some(stdin),
            stdout: Some(receiver(out_r)?),
            stderr: Some(receiver(err_r)?),
            child,
            pid,
            _record: record,
            status,
        })
    }

    /// The helper in `exec` mode (level 4, through `pkexec`, is not offered to stdio programs).
    fn stdio_helper_command(&self) -> (std::ffi::OsString, Vec<std::ffi::OsString>) {
        let s = self.settings();
        let mut a = s.helper_args.clone();
        a.push(crate::exec_helper::EXEC_MODE.into());
        (s.helper_program.clone().into_os_string(), a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_wins_over_the_exit_code() {
        let r = [
            HelperReport::Refused {
                reason: "Landlock ABI 3".into(),
            },
            HelperReport::Exited { code: 126 },
        ];
        assert_eq!(describe_end(&r), StdioEnd::Refused("Landlock ABI 3".into()));
        assert_eq!(
            describe_end(&[HelperReport::Exited { code: 2 }]),
            StdioEnd::Ended("exited with code 2".into())
        );
    }
}
