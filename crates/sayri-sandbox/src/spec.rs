//! What the launcher tells the exec helper (two frames on the socket it gets as stdin, see
//! [`crate::spec_pipe`]: first the [`HelperSpec`], then the [`HelperEnv`]) and what the helper
//! reports back (JSON lines on the same socket, which it moves to file descriptor 3, the
//! *status socket*).

use crate::settings::ResourceLimits;
use sayri_protocol::SandboxLevel;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// File descriptor number to which the helper moves the socket it got as stdin: it reads its
/// frames from it and writes its reports to it.
pub const STATUS_FD: i32 = 3;

/// One command for the exec helper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelperSpec {
    /// Isolation level (1–4; level 0 never reaches the helper).
    pub level: SandboxLevel,
    /// Command text for `bash -c`.
    pub command: String,
    /// Level 2: the writable workspace (absolute, existing). Level 3–4: the working directory.
    pub workspace: Option<PathBuf>,
    /// Working directory of the command.
    pub cwd: PathBuf,
    /// Wall-clock limit in milliseconds.
    pub timeout_ms: u64,
    /// Levels 1–2: whether the command keeps the host's network.
    pub allow_network: bool,
    /// Levels 1–2: paths hidden from the command.
    pub deny_read: Vec<PathBuf>,
    /// Levels 1–2: when given, the only places the command reads besides the system
    /// directories and its writable places (see [`crate::landlock::SYSTEM_READABLE`]); the
    /// hidden paths stay hidden inside them.
    #[serde(default)]
    pub readable: Option<Vec<PathBuf>>,
    /// Root of default workspaces (may lie inside a hidden path; re-exposed for the workspace only).
    pub sandboxes_root: PathBuf,
    /// Levels 3–4: run detached and report the pid (declared background launch).
    pub background: bool,
    /// Resource limits.
    pub limits: ResourceLimits,
    /// Pid of the launcher: the helper asks for `SIGTERM` when it dies and refuses to run when
    /// its parent is already another process. Required (never 0): the launcher starts the
    /// helper without a parent-death hook, so this check is the only one.
    pub parent_pid: u32,
    /// Levels 1–2: the cap the launcher's [`crate::landlock::MAX_ABI_VAR`] puts on the Landlock
    /// ABI (the helper's environment is cleared, so it comes here); `None`: the kernel's.
    #[serde(default)]
    pub landlock_abi_cap: Option<i32>,
    /// A stdio program (an MCP server): after the environment frame the launcher passes one
    /// more descriptor on the socket (`SCM_RIGHTS`, see [`crate::spec_pipe::send_fd`]), the read
    /// end of a pipe that becomes the command's stdin; the command's stdout and stderr are the
    /// helper's. `false`: stdin is `/dev/null`.
    #[serde(default)]
    pub stdio: bool,
}

/// The command's complete environment (already filtered by the environment policy, with the
/// agent's secrets): the second frame. Levels 1–2 read it only once their namespaces are set up,
/// when the helper is non-dumpable again.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HelperEnv {
    /// `NAME=value` pairs, in order.
    pub vars: Vec<(String, String)>,
}

impl std::fmt::Debug for HelperEnv {
    /// Names only: the values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.vars.iter().map(|(k, _)| k))
            .finish()
    }
}

/// How the helper saw the command end. The helper writes one JSON line per event to fd 3; the
/// launcher gives a `Refused` line precedence over everything else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HelperReport {
    /// Isolation could not be set up in full; the command did not run.
    Refused {
        /// What is missing and what to do.
        reason: String,
    },
    /// The command's main process exited with `code`.
    Exited {
        /// Exit code 0–255.
        code: i32,
    },
    /// The command's main process was killed by `signal` (not by the helper).
    Signaled {
        /// Signal number.
        signal: i32,
    },
    /// The timeout expired; the whole tree was killed.
    Timeout,
    /// The launcher cancelled the command; the whole tree was killed.
    Killed,
    /// A declared background launch is running detached.
    Background {
        /// Its pid in the host pid namespace.
        pid: u32,
    },
}
