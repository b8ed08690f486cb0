//! The control socket: singleton lock, stale-socket replacement, 0600 mode, peer credentials.
//!
//! 1. The daemon takes an exclusive lock on `sayri-daemon.lock` in the runtime dir (0700) and
//!    keeps it for its lifetime. If another process holds it, a daemon is running: refuse.
//! 2. Holding the lock, any existing socket file is stale (its daemon died); it is removed.
//! 3. The socket is bound under umask 0177 and chmodded 0600 before the first `accept`.
//! 4. Every accepted connection's `SO_PEERCRED` uid must equal our effective uid; otherwise it is
//!    closed without reading a byte. If the credentials cannot be read, it is refused too.
//!
//! Under socket activation (`sayri.socket`, or `systemd-socket-activate`) step 3 is replaced by
//! [`adopt_passed`]: the service manager's socket is used only when it is a listening Unix
//! stream socket bound at the daemon's socket path, and it is chmodded 0600 (whatever
//! `SocketMode=` said) and must belong to our uid before the first `accept`; step 4 applies
//! unchanged.
//!
//! The same functions serve the legacy gateway socket `sayri.sock`.

use sayri_client::paths::{MAX_SOCKET_PATH, euid};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::{UnixListener, UnixStream};

/// Errors setting the socket up.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Another daemon holds the lock.
    #[error(
        "another Sayri daemon is already running (lock {lock} is held{pid}); stop it with `sayri quit` or use it as is"
    )]
    AlreadyRunning {
        /// The lock file.
        lock: PathBuf,
        /// ", pid N" when known.
        pid: String,
    },
    /// The socket path is too long for `sun_path`.
    #[error(
        "socket path {path} is longer than {MAX_SOCKET_PATH} bytes; use a shorter SAYRI_STATE_DIR or XDG_RUNTIME_DIR"
    )]
    PathTooLong {
        /// The path.
        path: PathBuf,
    },
    /// The service manager passed sockets this daemon cannot use.
    #[error(
        "the service manager passed a socket Sayri cannot use: {reason}; run `sayri install --user --socket-activation` to rewrite sayri.socket, or stop sayri.socket (`systemctl --user disable --now sayri.socket`)"
    )]
    Passed {
        /// What is wrong with it.
        reason: String,
    },
    /// Any OS error, with what we were doing.
    #[error("could not {what} {path}: {source}")]
    Io {
        /// What failed.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// OS error.
        source: io::Error,
    },
}

/// The held singleton lock; released when dropped (or when the process dies).
pub struct DaemonLock {
    _file: File,
    path: PathBuf,
}

impl DaemonLock {
    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes the singleton lock at `path` and writes our pid into it.
pub fn acquire_lock(path: &Path) -> Result<DaemonLock, ListenError> {
    let io_err = |what, source| ListenError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|e| io_err("open lock file", e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .map(|s| format!(" by pid {s}"))
                .unwrap_or_default();
            return Err(ListenError::AlreadyRunning {
                lock: path.to_path_buf(),
                pid,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io_err("lock", e)),
    }
    file.set_len(0)
        .map_err(|e| io_err("truncate lock file", e))?;
    writeln!(file, "{}", std::process::id()).map_err(|e| io_err("write lock file", e))?;
    Ok(DaemonLock {
        _file: file,
        path: path.to_path_buf(),
    })
}

/// Binds `path` as a 0600 listening socket, replacing a stale file. Call with the lock held.
pub fn bind_private(path: &Path) -> Result<UnixListener, ListenError> {
    if path.as_os_str().as_bytes().len() > MAX_SOCKET_PATH {
        return Err(ListenError::PathTooLong {
            path: path.to_path_buf(),
        });
    }
    let io_err = |what, source| ListenError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    match std::fs::remove_file(path) {
        Ok(()) => tracing::info!("removed stale socket {}", path.display()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("remove stale socket", e)),
    }
    // SAFETY: umask only swaps the process file-mode mask; no memory is involved.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    // SAFETY: as above, restoring the previous mask.
    unsafe { libc::umask(old) };
    let listener = bound.map_err(|e| io_err("bind socket", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io_err("chmod 0600 socket", e))?;
    Ok(listener)
}

/// Takes over the listening sockets the service manager passed (`fds`, from `LISTEN_FDS`):
/// exactly one, a listening Unix stream socket bound at `path` (where clients look), owned by
/// our uid; it is made 0600 before it is used. `Ok(None)` when none was passed.
pub fn adopt_passed(
    fds: Vec<std::os::fd::OwnedFd>,
    path: &Path,
) -> Result<Option<UnixListener>, ListenError> {
    use nix::sys::socket::{SockType, UnixAddr, getsockname, getsockopt, sockopt};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let fail = |reason: String| ListenError::Passed { reason };
    let mut fds = fds.into_iter();
    let Some(fd) = fds.next() else {
        return Ok(None);
    };
    let extra = fds.len();
    if extra > 0 {
        return Err(fail(format!(
            "{} sockets were passed, and Sayri listens on exactly one (one ListenStream= in sayri.socket)",
            extra + 1
        )));
    }
    let is_stream = getsockopt(&fd, sockopt::SockType).is_ok_and(|t| t == SockType::Stream);
    let listening = getsockopt(&fd, sockopt::AcceptConn).unwrap_or(false);
    let addr = getsockname::<UnixAddr>(fd.as_raw_fd()).ok();
    let bound = addr.as_ref().and_then(|a| a.path()).map(Path::to_path_buf);
    if !is_stream || !listening {
        return Err(fail(format!(
            "file descriptor {} is not a listening stream socket (ListenStream= in sayri.socket)",
            fd.as_raw_fd()
        )));
    }
    if bound.as_deref() != Some(path) {
        return Err(fail(format!(
            "it is bound at {}, but clients look for the daemon at {} (ListenStream=%t/sayri/sayri-daemon.sock)",
            bound.map_or_else(|| "no path".into(), |b| b.display().to_string()),
            path.display()
        )));
    }
    let io_err = |what, source| ListenError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    // The path must be a socket itself, not a symlink: chmod would follow a link to its target.
    // (A socket's fd reports the socket file system's inode, not the path's, so the two cannot
    // be compared; the bound address was checked above.)
    let meta = std::fs::symlink_metadata(path).map_err(|e| io_err("inspect socket", e))?;
    {
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_socket() {
            return Err(fail(format!(
                "{} is not a socket (a symlink or another file is there); remove it and restart sayri.socket",
                path.display()
            )));
        }
    }
    if meta.uid() != euid() {
        return Err(fail(format!(
            "{} belongs to uid {}, not to uid {}",
            path.display(),
            meta.uid(),
            euid()
        )));
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io_err("chmod 0600 socket", e))?;
    let listener = std::os::unix::net::UnixListener::from(fd);
    listener
        .set_nonblocking(true)
        .map_err(|e| io_err("use socket", e))?;
    UnixListener::from_std(listener)
        .map(Some)
        .map_err(|e| io_err("use socket", e))
}

/// Whether `stream`'s peer is us. Logs and returns `false` otherwise (fail closed).
pub fn peer_is_us(stream: &UnixStream) -> bool {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == euid() => true,
        Ok(cred) => {
            tracing::warn!(
                "refused connection from uid {} (pid {:?}): only uid {} may use this socket",
                cred.uid(),
                cred.pid(),
                euid()
            );
            false
        }
        Err(e) => {
            tracing::warn!("refused connection: cannot read peer credentials: {e}");
            false
        }
    }
}

/// The accept loop of both sockets: accepts connections on `listener` until `shutdown` is
/// cancelled and hands each one whose peer is of our uid ([`peer_is_us`]) to `serve`; others
/// are closed unread. A failed accept (out of descriptors, …) is logged with `label` and
/// retried after 50 ms.
pub async fn accept_until(
    listener: &UnixListener,
    shutdown: &tokio_util::sync::CancellationToken,
    label: &str,
    mut serve: impl FnMut(UnixStream),
) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                if peer_is_us(&stream) {
                    serve(stream);
                }
            }
            Err(e) => {
                tracing::warn!("{label}accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}
