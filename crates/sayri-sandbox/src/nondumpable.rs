//! Keeping a process's memory its own: not dumpable, and no core file.
//!
//! The daemon, the exec helper, the keeper, the gateways and `sayri web` hold secrets (vault
//! values, tokens, launch secrets). Each calls [`protect`] first thing, before it reads one:
//!
//! * `prctl(PR_SET_DUMPABLE, 0)`: the kernel then refuses every other process of the same user
//!   (without `CAP_SYS_PTRACE`) `ptrace` attach, `/proc/PID/mem`, `/proc/PID/environ`,
//!   `process_vm_readv` and `pidfd_getfd`, and writes no core file of it;
//! * `RLIMIT_CORE` 0, soft and hard, so no core file is written even where a core handler would
//!   ignore the dumpable flag, and nothing the process starts can raise it again.
//!
//! **What `execve` does.** An ordinary program started with `execve` is dumpable again (the kernel
//! resets the flag for every program the user may read), so the commands Sayri runs, the programs
//! under a keeper and the tools they start are normal processes: debuggers, `strace` and
//! `/proc/self` work in them as usual. The core limit 0 *is* inherited: a crashing command leaves
//! no core file that could hold the secrets in its environment. A process that must stay
//! protected after `execve` (a gateway, the helper) calls [`protect`] again itself.
//!
//! A non-dumpable process's own `/proc/self` files belong to root, so an unprivileged process
//! cannot write its `uid_map` after `unshare(CLONE_NEWUSER)`: the exec helper turns the flag on
//! around that step ([`set_dumpable`]) while it holds no secret yet.

use std::io;

/// The kernel's Yama ptrace setting.
pub const YAMA_PTRACE_SCOPE: &str = "/proc/sys/kernel/yama/ptrace_scope";

/// What could not be set; the process should then refuse to handle secrets.
#[derive(Debug, thiserror::Error)]
pub enum DumpableError {
    /// `PR_SET_DUMPABLE` failed.
    #[error("prctl(PR_SET_DUMPABLE, {}) failed: {source}", u8::from(*.on))]
    Flag {
        /// The value asked for.
        on: bool,
        /// The kernel's answer.
        source: io::Error,
    },
    /// `RLIMIT_CORE` could not be set to 0.
    #[error("cannot set the core size limit to 0: {0}")]
    CoreLimit(io::Error),
}

/// Makes the calling process non-dumpable and sets its core limit to 0 (see the module rules).
///
/// # Errors
/// [`DumpableError`]: what failed; the process should then refuse to handle secrets.
pub fn protect() -> Result<(), DumpableError> {
    set_dumpable(false)?;
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit with a valid struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) } != 0 {
        return Err(DumpableError::CoreLimit(io::Error::last_os_error()));
    }
    Ok(())
}

/// Turns the dumpable flag on or off for the calling process.
///
/// # Errors
/// [`DumpableError::Flag`]: the `prctl` error.
pub fn set_dumpable(on: bool) -> Result<(), DumpableError> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, libc::c_ulong::from(on), 0, 0, 0) } != 0 {
        return Err(DumpableError::Flag {
            on,
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Whether the calling process is dumpable.
pub fn is_dumpable() -> bool {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) == 1 }
}

/// The Yama ptrace scope (0–3), or `None` when the kernel has no Yama.
pub fn yama_ptrace_scope() -> Option<u8> {
    std::fs::read_to_string(YAMA_PTRACE_SCOPE)
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// What `scope` (from [`yama_ptrace_scope`]) adds on top of Sayri's own protection, for a person.
pub fn describe_yama(scope: Option<u8>) -> String {
    let own = "Sayri's own processes are non-dumpable either way";
    match scope {
        None => format!(
            "the kernel has no Yama ptrace restriction: any program of yours may attach to your other dumpable programs (the commands Sayri runs, the local model server); {own}"
        ),
        Some(0) => format!(
            "Yama ptrace_scope is 0 (classic): any program of yours may attach to your other dumpable programs (the commands Sayri runs, the local model server); {own}. `sysctl kernel.yama.ptrace_scope=1` limits attaching to a program's own descendants"
        ),
        Some(1) => format!(
            "Yama ptrace_scope is 1 (restricted): a program may attach only to its own descendants; {own}"
        ),
        Some(2) => format!(
            "Yama ptrace_scope is 2 (admin-only): only processes with CAP_SYS_PTRACE may attach; {own}"
        ),
        Some(3) => format!(
            "Yama ptrace_scope is 3 (no attach): no process may attach to another until reboot; {own}"
        ),
        Some(n) => format!("Yama ptrace_scope is {n} (unknown value); {own}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_yama_value_is_explained() {
        for s in [None, Some(0), Some(1), Some(2), Some(3)] {
            let text = describe_yama(s);
            assert!(text.contains("non-dumpable"), "{text}");
        }
        assert!(describe_yama(Some(1)).contains("descendants"));
        assert!(describe_yama(None).contains("no Yama"));
    }
}
