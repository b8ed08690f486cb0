//! Linux namespaces for levels 1–2: a fresh user namespace (so no privilege is needed) owning new
//! mount, pid, ipc, uts and — unless the network is allowed — network namespaces.

use nix::sched::{CloneFlags, unshare};

/// The namespaces a level-1/2 command gets.
pub fn flags(allow_network: bool) -> CloneFlags {
    let mut f = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS;
    if !allow_network {
        f |= CloneFlags::CLONE_NEWNET;
    }
    f
}

/// How a failure to create the namespaces begins (the explanation is chosen by it).
pub const NAMESPACES_STEP: &str = "cannot create";

/// Enters the new namespaces (the calling process must be single-threaded) and maps the caller's
/// uid and gid to themselves inside, so files in the workspace keep their owner.
///
/// # Errors
/// [`NamespaceError`]: which step failed and the kernel's answer; `host_restrictions` adds the
/// cause and the fix.
pub fn enter(allow_network: bool) -> Result<(), NamespaceError> {
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    unshare(flags(allow_network)).map_err(|source| NamespaceError::Unshare {
        net: !allow_network,
        source,
    })?;
    write_file("/proc/self/setgroups", "deny")?;
    write_file("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
    write_file("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))?;
    Ok(())
}

/// A namespace step that failed; its text begins with [`NAMESPACES_STEP`] when the namespaces
/// themselves could not be created.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    /// `unshare(2)` refused the namespaces.
    #[error(
        "{NAMESPACES_STEP} user/mount/pid/ipc/uts{} namespaces: {source}",
        if *.net { "/net" } else { "" }
    )]
    Unshare {
        /// Whether a network namespace was asked for too.
        net: bool,
        /// The kernel's answer.
        source: nix::errno::Errno,
    },
    /// A `/proc/self` mapping file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The sandbox's hostname could not be set.
    #[error("cannot set the sandbox hostname: {0}")]
    Hostname(nix::errno::Errno),
}

fn write_file(path: &'static str, content: &str) -> Result<(), NamespaceError> {
    std::fs::write(path, content).map_err(|source| NamespaceError::Write { path, source })
}

/// Sets the hostname inside the new uts namespace.
///
/// # Errors
/// [`NamespaceError::Hostname`].
pub fn set_hostname(name: &str) -> Result<(), NamespaceError> {
    nix::unistd::sethostname(name).map_err(NamespaceError::Hostname)
}
