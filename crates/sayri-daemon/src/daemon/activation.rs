//! Socket activation: the listening sockets the service manager passed (`LISTEN_FDS`,
//! `LISTEN_FDNAMES`; `sayri.socket` and `sayri-legacy.socket`, or `systemd-socket-activate`).
//!
//! * **Matched by name, never by position.** `sayri-daemon.sock` is the control socket,
//!   `sayri.sock` the legacy gateway socket (`FileDescriptorName=` in the units `sayri install
//!   --user --socket-activation` writes). One socket without a name (`unknown`, or the unit's
//!   own name `sayri.socket` from units written before names) is taken as the control socket.
//!   A socket with any other name is closed and logged.
//! * **Each checked before use**: a listening Unix stream socket (a TCP socket is refused: Sayri
//!   serves only its Unix sockets), bound at the path where clients look for it, a socket file
//!   owned by our uid. Anything else stops the start with what to fix.
//! * **Made private**: a socket whose mode was looser than 0600 (other users could connect; the
//!   peer-uid check still refuses them) is set to 0600, and a warning says so in the log and in
//!   `status` (`sayri doctor` repeats it), with the `SocketMode=` to fix.
//! * **Kept, never unlinked**: the daemon leaves both paths in place at exit, for the next
//!   activation; the service manager owns them.
//!
//! The descriptors are taken, and the `LISTEN_*` variables removed from the environment, before
//! any thread starts (`sayri::cli::main`); every adopted descriptor is close-on-exec, so no child
//! inherits a socket meant for the daemon.

use super::listener::ListenError;
use sayri_client::paths::euid;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use tokio::net::UnixListener;

/// `FileDescriptorName=` of the control socket.
pub const CONTROL_NAME: &str = "sayri-daemon.sock";
/// `FileDescriptorName=` of the legacy gateway socket.
pub const LEGACY_NAME: &str = "sayri.sock";
/// Names a socket gets without `FileDescriptorName=`: systemd's "no name", and the unit's name.
const UNNAMED: &[&str] = &["unknown", "sayri.socket", ""];

/// What was adopted.
#[derive(Default)]
pub struct Adopted {
    /// The control socket, when one was passed.
    pub control: Option<UnixListener>,
    /// The legacy socket, when one was passed.
    pub legacy: Option<UnixListener>,
    /// Warnings for the log and `status` (looser modes, closed unknown sockets).
    pub warnings: Vec<String>,
}

/// Which socket a passed descriptor is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Control,
    Legacy,
}

fn fail(reason: impl Into<String>) -> ListenError {
    ListenError::Passed {
        reason: reason.into(),
    }
}

/// Adopts `passed` (descriptor and name each) as the control socket at `control` and the
/// legacy socket at `legacy` (see the module rules).
///
/// # Errors
/// A socket Sayri cannot use, two sockets for one role, or several without names.
pub fn adopt(
    passed: Vec<(OwnedFd, String)>,
    control: &Path,
    legacy: &Path,
) -> Result<Adopted, ListenError> {
    let mut out = Adopted::default();
    let mut roles: Vec<(Role, OwnedFd)> = Vec::new();
    let mut unnamed = Vec::new();
    for (fd, name) in passed {
        match name.as_str() {
            CONTROL_NAME => roles.push((Role::Control, fd)),
            LEGACY_NAME => roles.push((Role::Legacy, fd)),
            n if UNNAMED.contains(&n) => unnamed.push(fd),
            other => {
                let w = format!(
                    "closed a socket the service manager passed with the unknown name {other:?} (Sayri uses {CONTROL_NAME} and {LEGACY_NAME})"
                );
                tracing::warn!("{w}");
                out.warnings.push(w);
            }
        }
    }
    if !unnamed.is_empty() {
        if unnamed.len() > 1 || roles.iter().any(|(r, _)| *r == Role::Control) {
            return Err(fail(format!(
                "{} sockets were passed without a name; give each socket unit FileDescriptorName={CONTROL_NAME} or FileDescriptorName={LEGACY_NAME}",
                unnamed.len() + roles.len()
            )));
        }
        roles.extend(unnamed.into_iter().map(|fd| (Role::Control, fd)));
    }
    for (role, fd) in roles {
        let (path, slot) = match role {
            Role::Control => (control, &mut out.control),
            Role::Legacy => (legacy, &mut out.legacy),
        };
        if slot.is_some() {
            return Err(fail(format!(
                "two sockets were passed for {}; each socket unit must have its own FileDescriptorName=",
                path.display()
            )));
        }
        let (listener, warning) = check_and_take(fd, path)?;
        out.warnings.extend(warning);
        *slot = Some(listener);
    }
    Ok(out)
}

/// Checks one passed socket against `path` and turns it into a listener; a warning when its
/// mode was looser than 0600.
fn check_and_take(fd: OwnedFd, path: &Path) -> Result<(UnixListener, Option<String>), ListenError> {
    use nix::sys::socket::{
        AddressFamily, SockType, SockaddrLike, SockaddrStorage, getsockname, getsockopt, sockopt,
    };
    let addr = getsockname::<SockaddrStorage>(fd.as_raw_fd()).ok();
    let family = addr.as_ref().and_then(SockaddrLike::family);
    if matches!(family, Some(AddressFamily::Inet | AddressFamily::Inet6)) {
        return Err(fail(format!(
            "file descriptor {} is a TCP socket, and Sayri serves only its Unix socket {} (ListenStream= must be a path)",
            fd.as_raw_fd(),
            path.display()
        )));
    }
    let is_stream = getsockopt(&fd, sockopt::SockType).is_ok_and(|t| t == SockType::Stream);
    let listening = getsockopt(&fd, sockopt::AcceptConn).unwrap_or(false);
    if !is_stream || !listening {
        return Err(fail(format!(
            "file descriptor {} is not a listening stream socket (ListenStream= in the socket unit)",
            fd.as_raw_fd()
        )));
    }
    let bound: Option<PathBuf> = addr
        .as_ref()
        .and_then(|a| a.as_unix_addr())
        .and_then(|u| u.path())
        .map(Path::to_path_buf);
    if bound.as_deref() != Some(path) {
        return Err(fail(format!(
            "it is bound at {}, but clients look for it at {} (ListenStream=%t/sayri/{})",
            bound.map_or_else(|| "no path".into(), |b| b.display().to_string()),
            path.display(),
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        )));
    }
    let warning = make_private(path)?;
    let io_err = |source| ListenError::Io {
        what: "use socket",
        path: path.to_path_buf(),
        source,
    };
    let listener = std::os::unix::net::UnixListener::from(fd);
    listener.set_nonblocking(true).map_err(io_err)?;
    let listener = UnixListener::from_std(listener).map_err(io_err)?;
    Ok((listener, warning))
}

/// Checks that `path` is a socket file of ours and makes it 0600; the warning when it was
/// looser.
fn make_private(path: &Path) -> Result<Option<String>, ListenError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let io_err = |what, source| ListenError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    // The path must be a socket itself, not a symlink: chmod would follow a link to its target.
    // (A socket's fd reports the socket file system's inode, not the path's, so the two cannot
    // be compared; the bound address was checked before.)
    let meta = std::fs::symlink_metadata(path).map_err(|e| io_err("inspect socket", e))?;
    if !meta.file_type().is_socket() {
        return Err(fail(format!(
            "{} is not a socket (a symlink or another file is there); remove it and restart the socket unit",
            path.display()
        )));
    }
    if meta.uid() != euid() {
        return Err(fail(format!(
            "{} belongs to uid {}, not to uid {}",
            path.display(),
            meta.uid(),
            euid()
        )));
    }
    let mode = meta.mode() & 0o777;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io_err("chmod 0600 socket", e))?;
    if mode & 0o077 == 0 {
        return Ok(None);
    }
    let what = if mode & 0o022 != 0 {
        "so other users could connect to it (the peer-uid check refused them)"
    } else {
        "looser than the 0600 Sayri asks for"
    };
    let w = format!(
        "the socket the service manager passed at {} had mode {mode:04o}, {what}; Sayri set it to 0600. Set SocketMode=0600 in its socket unit (`sayri install --user --socket-activation` writes it)",
        path.display()
    );
    tracing::warn!("{w}");
    Ok(Some(w))
}
