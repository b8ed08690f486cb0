//! Which mechanism gives each promise of each level, for `sayri sandbox check --json`. Where two
//! mechanisms are listed, each alone keeps the promise; a level runs only when every one of its
//! mechanisms is in place (the probe decides that), so this table says what a person may rely
//! on, not what might be missing.

use crate::capabilities::KernelFeatures;
use sayri_protocol::SandboxLevel;
use serde::{Deserialize, Serialize};

/// One promise of a level and the mechanisms behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guarantee {
    /// The promise, in words.
    pub promise: String,
    /// What enforces it.
    pub mechanisms: Vec<String>,
}

fn g(promise: &str, mechanisms: &[&str]) -> Guarantee {
    Guarantee {
        promise: promise.into(),
        mechanisms: mechanisms.iter().map(|m| m.to_string()).collect(),
    }
}

/// The seccomp filter's architecture as the report names it.
pub fn filter_arch() -> String {
    if cfg!(target_arch = "x86_64") {
        "x86_64 (audit arch checked; x32 numbers refused with ENOSYS; i386 entry refused by the arch check)".into()
    } else {
        format!("{} (audit arch checked)", std::env::consts::ARCH)
    }
}

/// The promises of `level` and their mechanisms on a kernel with `k`.
pub fn of(level: SandboxLevel, k: &KernelFeatures) -> Vec<Guarantee> {
    let landlock = format!(
        "Landlock (ABI {})",
        k.landlock_abi
            .map_or_else(|| "none".into(), |v| v.to_string())
    );
    let seccomp = format!("seccomp filter for {}", filter_arch());
    let writes = match level {
        SandboxLevel::ReadOnly => "writes nothing that persists (a private /tmp only)",
        _ => "writes only inside its workspace (and a private /tmp)",
    };
    match level {
        SandboxLevel::NoExec => vec![g("runs nothing", &["Sayri never starts a process"])],
        SandboxLevel::ReadOnly | SandboxLevel::IsolatedDev => vec![
            g(
                "reads no secret path (~/.ssh, ~/.gnupg, browser profiles) and nothing of Sayri's own (config, vault, database, sockets)",
                &[&landlock, "private mount view (mount namespace)"],
            ),
            g(writes, &[&landlock, "read-only mounts of the rest"]),
            g(
                "cannot truncate a file it may not write",
                &["Landlock truncate right (ABI 3+)", "read-only mounts"],
            ),
            g(
                "no network unless the agent allows it",
                &[
                    "network namespace without interfaces",
                    "Landlock TCP rules (ABI 4+)",
                ],
            ),
            g(
                "cannot reach abstract Unix sockets or signal processes outside",
                &["Landlock scopes (ABI 6+)", "network and pid namespaces"],
            ),
            g(
                "cannot connect to a pathname Unix socket of the host (D-Bus, Sayri's socket)",
                &["seccomp: socket(AF_UNIX) refused", &landlock],
            ),
            g(
                "cannot mount, ptrace, load modules, use keyrings, bpf or io_uring, or type into a terminal",
                &[&seccomp],
            ),
            g(
                "cannot gain privileges",
                &["no_new_privs", "every capability dropped"],
            ),
            g(
                "its whole process tree ends with it",
                &["pid namespace", "process-group kill", "child subreaper"],
            ),
            g(
                "bounded CPU, memory, files and processes",
                if k.root && k.pids_cgroup {
                    &["rlimits", "pids cgroup"]
                } else {
                    &["rlimits"]
                },
            ),
        ],
        SandboxLevel::HostUser => vec![
            g(
                "sees only allowed environment variables",
                &["environment allow-list"],
            ),
            g("cannot gain privileges", &["no_new_privs"]),
            g(
                "its whole process tree ends with it",
                &["own session and process group", "child subreaper"],
            ),
            g("bounded CPU, memory and files", &["rlimits"]),
        ],
        SandboxLevel::HostRoot => vec![g(
            "runs as root only after a person approves each command",
            &["pkexec (Polkit dialog)"],
        )],
    }
}
