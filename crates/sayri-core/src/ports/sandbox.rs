//! The `Sandbox` port: run one command at an isolation level.

use futures::future::BoxFuture;
use sayri_protocol::SandboxLevel;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What to run and how.
#[derive(Debug, Clone, PartialEq)]
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
    /// Extra environment variables (e.g. the secrets an agent may use).
    pub env: Vec<(String, String)>,
    /// Cap on captured output in bytes (stdout and stderr interleaved).
    pub output_limit: usize,
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

/// The result of one command.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecResult {
    /// How it ended.
    pub status: ExecStatus,
    /// Exit code when the process exited (126 for refusals, 124 for timeouts by convention).
    pub exit_code: Option<i32>,
    /// stdout and stderr interleaved in order, capped, with a `[truncated N bytes]` marker.
    pub output: String,
    /// Wall time from start to end.
    pub duration: Duration,
    /// For a declared background launch (levels 3–4): the pid left running.
    pub background_pid: Option<u32>,
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
