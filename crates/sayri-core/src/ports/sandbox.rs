//! The `Sandbox` port: run one command at an isolation level.

use futures::future::BoxFuture;
use sayri_protocol::SandboxLevel;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What to run and how. Its `Debug` shows the names of [`ExecRequest::env`], never the values
/// (they are secrets).
#[derive(Clone, PartialEq)]
pub struct ExecRequest {
    /// Command text, run by `bash -c`.
    pub command: String,
    /// Isolation level.
    pub level: SandboxLevel,
    /// Agent the command runs for (names its default level-2 workspace).
    pub agent_id: String,
    /// Level-2 workspace; `None` means the adapter's default for `agent_id`.
    pub workspace: Option<PathBuf>,
    /// Wall-clock limit; the whole process tree is killed when it expires.
    pub timeout: Duration,
    /// Whether the command may use the network (levels 1–2 only; 3–4 always have it).
    pub allow_network: bool,
    /// Extra environment variables (the adapter adds the values of
    /// [`ExecRequest::allowed_secrets`] here just before the command starts).
    pub env: Vec<(String, String)>,
    /// Names of the vault secrets the command may hold in its environment: the running agent's
    /// `allowed_secrets` as the engine holds its profile for this turn (the sandbox adapter
    /// never re-reads the profile; an agent file edited mid-turn changes the next turn).
    pub allowed_secrets: Vec<String>,
    /// Cap on captured output in bytes (stdout and stderr interleaved).
    pub output_limit: usize,
    /// Levels 1–2: `Some` limits what the command reads to these paths, the operating
    /// system's directories and its writable places (an MCP server reads what it was given);
    /// `None` reads everywhere but the hidden paths (an agent's command).
    pub readable: Option<Vec<PathBuf>>,
}

impl std::fmt::Debug for ExecRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecRequest")
            .field("command", &self.command)
            .field("level", &self.level)
            .field("agent_id", &self.agent_id)
            .field("workspace", &self.workspace)
            .field("timeout", &self.timeout)
            .field("allow_network", &self.allow_network)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("allowed_secrets", &self.allowed_secrets)
            .field("output_limit", &self.output_limit)
            .field("readable", &self.readable)
            .finish()
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecStatus {
    /// Exit code 0 (or a declared background launch that started).
    Success,
    /// Non-zero exit code or killed by a signal of its own making.
    Failed,
    /// Refused before running (level 0, sandbox unavailable, …).
    Denied,
    /// The timeout expired; the tree was killed.
    Timeout,
    /// Cancelled by the caller (interrupt); the tree was killed.
    Killed,
}

impl ExecStatus {
    /// The name clients and tool rows use (`success`, `failed`, `denied`, `timeout`, `killed`),
    /// the same as its serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecStatus::Success => "success",
            ExecStatus::Failed => "failed",
            ExecStatus::Denied => "denied",
            ExecStatus::Timeout => "timeout",
            ExecStatus::Killed => "killed",
        }
    }
}

/// A size of command output: bytes and line breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputSize {
    /// Bytes.
    pub bytes: u64,
    /// Line breaks (`\n`); a final line without one is not counted.
    pub lines: u64,
}

impl OutputSize {
    /// The size of `text`.
    pub fn of(text: &str) -> OutputSize {
        OutputSize {
            bytes: text.len() as u64,
            lines: text.bytes().filter(|b| *b == b'\n').count() as u64,
        }
    }

    /// Whether nothing is counted.
    pub fn is_zero(&self) -> bool {
        self.bytes == 0 && self.lines == 0
    }
}

impl std::ops::Add for OutputSize {
    type Output = OutputSize;
    fn add(self, o: OutputSize) -> OutputSize {
        OutputSize {
            bytes: self.bytes + o.bytes,
            lines: self.lines + o.lines,
        }
    }
}

/// The result of one command.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecResult {
    /// How it ended.
    pub status: ExecStatus,
    /// Exit code when the process exited (126 for refusals, 124 for timeouts by convention).
    pub exit_code: Option<i32>,
    /// stdout and stderr interleaved in order: all of it, or — when it was longer than the
    /// request's `output_limit` — its beginning (cut after a line break where there is one).
    pub output: String,
    /// When the output was longer than `output_limit`: its end (starting after a line break
    /// where there is one); empty otherwise.
    pub output_tail: String,
    /// What was left out between [`ExecResult::output`] and [`ExecResult::output_tail`]
    /// (zero when the output is whole).
    pub omitted: OutputSize,
    /// Wall time from start to end.
    pub duration: Duration,
    /// For a declared background launch (levels 3–4): the pid left running.
    pub background_pid: Option<u32>,
}

impl ExecResult {
    /// This result with its output redacted as it may leave the daemon. A long output was cut
    /// into a head and a tail where a secret may straddle either cut, so the head's end and the
    /// tail's start are redacted as cut texts (a piece of a secret at the cut is replaced too).
    pub fn redacted(mut self, redactor: &dyn crate::ports::Redactor) -> ExecResult {
        if self.omitted.is_zero() && self.output_tail.is_empty() {
            self.output = redactor.redact(&self.output);
        } else {
            self.output = redactor.redact_cut(&self.output);
            self.output_tail = redactor.redact_cut_start(&self.output_tail);
        }
        self
    }

    /// A result with `output` whole (nothing omitted), no duration and no background pid.
    pub fn new(status: ExecStatus, exit_code: Option<i32>, output: impl Into<String>) -> Self {
        ExecResult {
            status,
            exit_code,
            output: output.into(),
            output_tail: String::new(),
            omitted: OutputSize::default(),
            duration: Duration::ZERO,
            background_pid: None,
        }
    }

    /// The output as one text: [`ExecResult::output`], then — when something was left out —
    /// a marker line saying how much (see [`crate::domain::observation::omitted_marker`]) and
    /// [`ExecResult::output_tail`].
    pub fn output_text(&self) -> String {
        crate::domain::observation::join(&self.output, &self.output_tail, self.omitted)
    }

    /// The size of the whole output as the command wrote it.
    pub fn output_size(&self) -> OutputSize {
        OutputSize::of(&self.output) + self.omitted + OutputSize::of(&self.output_tail)
    }
}

/// Runs commands in isolation. The only way model-proposed commands get executed.
pub trait Sandbox: Send + Sync {
    /// Runs `request`; cancelling `cancel` kills the whole process tree at once and yields
    /// [`ExecStatus::Killed`].
    fn run(
        &self,
        request: ExecRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ExecResult>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requests_debug_form_names_its_secrets_without_their_values() {
        let req = ExecRequest {
            command: "echo $API_TOKEN".into(),
            level: SandboxLevel::HostUser,
            agent_id: "a".into(),
            workspace: None,
            timeout: Duration::from_secs(1),
            allow_network: false,
            env: vec![("API_TOKEN".into(), "s3cr3t-value-9f2".into())],
            allowed_secrets: vec!["API_TOKEN".into()],
            output_limit: 10,
            readable: None,
        };
        let shown = format!("{req:?}");
        assert!(shown.contains("API_TOKEN"), "{shown}");
        assert!(!shown.contains("s3cr3t-value-9f2"), "{shown}");
    }
}
