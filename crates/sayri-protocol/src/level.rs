//! Sandbox levels: the isolation a command runs under, from 0 (nothing runs) to 4 (the host,
//! as root). A level runs a command only when the kernel gives everything it promises.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How isolated a model-proposed command is. Serialised by its name (`"LEVEL_1_READONLY"`),
/// as agent profiles and gateway messages of the original Sayri spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SandboxLevel {
    /// Conversation only: nothing is ever executed.
    #[serde(rename = "LEVEL_0_NO_EXEC")]
    NoExec = 0,
    /// Read-only filesystem, private throw-away `/tmp`, no secrets readable, network off unless allowed.
    #[serde(rename = "LEVEL_1_READONLY")]
    ReadOnly = 1,
    /// As level 1 plus a persistent per-agent workspace, the only writable place.
    #[serde(rename = "LEVEL_2_ISOLATED_DEV")]
    IsolatedDev = 2,
    /// The user's own environment with an environment policy and `no_new_privs`.
    #[serde(rename = "LEVEL_3_HOST_USER")]
    HostUser = 3,
    /// As level 3, elevated through `pkexec` (a Polkit dialog the user must approve).
    #[serde(rename = "LEVEL_4_HOST_ROOT")]
    HostRoot = 4,
}

impl SandboxLevel {
    /// All levels, lowest first.
    pub const ALL: [SandboxLevel; 5] = [
        SandboxLevel::NoExec,
        SandboxLevel::ReadOnly,
        SandboxLevel::IsolatedDev,
        SandboxLevel::HostUser,
        SandboxLevel::HostRoot,
    ];

    /// The canonical name, e.g. `LEVEL_3_HOST_USER`.
    pub fn name(self) -> &'static str {
        match self {
            SandboxLevel::NoExec => "LEVEL_0_NO_EXEC",
            SandboxLevel::ReadOnly => "LEVEL_1_READONLY",
            SandboxLevel::IsolatedDev => "LEVEL_2_ISOLATED_DEV",
            SandboxLevel::HostUser => "LEVEL_3_HOST_USER",
            SandboxLevel::HostRoot => "LEVEL_4_HOST_ROOT",
        }
    }

    /// The number 0–4.
    pub fn number(self) -> u8 {
        self as u8
    }
}

impl fmt::Display for SandboxLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for a string that names no level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLevel(pub String);

impl fmt::Display for UnknownLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown isolation level: {:?} (use 0-4, a name such as LEVEL_1_READONLY, or no_exec/readonly/isolated/host/root)",
            self.0
        )
    }
}

impl std::error::Error for UnknownLevel {}

impl FromStr for SandboxLevel {
    type Err = UnknownLevel;

    /// Accepts `0`–`4`, the canonical names (any case), and the short aliases the CLI offers
    /// (`no_exec`, `readonly`, `isolated`, `host`, `root`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let level = match t.as_str() {
            "0" | "level_0_no_exec" | "no_exec" | "noexec" => SandboxLevel::NoExec,
            "1" | "level_1_readonly" | "readonly" | "read_only" => SandboxLevel::ReadOnly,
            "2" | "level_2_isolated_dev" | "isolated" | "isolated_dev" => SandboxLevel::IsolatedDev,
            "3" | "level_3_host_user" | "host" | "host_user" => SandboxLevel::HostUser,
            "4" | "level_4_host_root" | "root" | "host_root" => SandboxLevel::HostRoot,
            _ => return Err(UnknownLevel(s.to_string())),
        };
        Ok(level)
    }
}
