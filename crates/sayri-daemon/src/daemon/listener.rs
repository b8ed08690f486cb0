//! The control socket: singleton lock, stale-socket replacement, 0600 mode, peer credentials.
//!
//! 1. The daemon takes an exclusive lock on `sayri-daemon.lock` in the runtime dir (0700) and
//!    keeps it for its lifetime. If another process holds it, a daemon is running: refuse.
//! 2. Holding the lock, any existing socket file is stale (its daemon died); it is removed.
//! 3. The socket is bound under umask 0177 and chmodded 0600 before the first `accept`.
//! 4. Every accepted connection's `SO_PEERCRED` uid must equal our effective uid; otherwise it is
//!    closed without reading a byte. If the credentials cannot be read, it is refused too.
//!
//! Under socket activation (`sayri.socket`, or `systemd-socket-activate`) steps 2–3 are replaced
//! by [`super::activation::adopt`]: the service manager's sockets, matched by name, are used
//! only when each is a listening Unix stream socket bound at its path, chmodded 0600 (whatever
//! `SocketMode=` said) and ours, before the first `accept`; step 4 applies unchanged.
//!
//! The same functions serve the legacy gateway socket `sayri.sock`.
//!
//! **Original paths.** When the sockets live in `$XDG_RUNTIME_DIR/sayri`, the daemon also
//! answers at the paths the original clients look in, `$STATE/sayri-daemon.sock` and
//! `$STATE/sayri.sock` ([`bind_alias`]): second listeners, bound 0600 like the first and
//! served by the same accept loop (peer uid, gateway ancestry), removed at exit only while the
//! path is still the socket this daemon bound. A path that holds anything else is never
//! followed, replaced or removed: not a socket (a file, a directory, a symlink — whatever it
//! points to), a socket of another uid, or a live socket (another program answers on it);
//! only a socket file of ours that refuses connections (its daemon died) is replaced. Each
//! refusal is a warning in the log and in `status`.

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
    Ok(DaemonLock { _file: file })
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

/// Most connections one listening socket serves at once. Every client the daemon has (CLI,
/// orb, web bubble, gateways, original clients) needs one or two; the cap keeps a flood of
/// half-open connections on one socket from taking every descriptor the daemon may open
/// (SQLite, the sandbox's pipes and the other sockets keep theirs).
pub const MAX_CONNECTIONS_PER_SOCKET: usize = 256;

/// A connection's place in its socket's [`MAX_CONNECTIONS_PER_SOCKET`]: held by the task that
/// serves the connection, freed when it is dropped.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code)] tokio::sync::OwnedSemaphorePermit);

/// The accept loop of both sockets: accepts connections on `listener` until `shutdown` is
/// cancelled and hands each one whose peer is of our uid ([`peer_is_us`]) to `serve` with its
/// [`Slot`]; others are closed unread. A connection beyond [`MAX_CONNECTIONS_PER_SOCKET`] is
/// closed at once, unread (the peer sees the end of the stream, or a reset when it had sent
/// bytes), and that is logged at most once a minute. A failed accept (out of descriptors, …)
/// is logged with `label` and retried after 50 ms.
pub async fn accept_until(
    listener: &UnixListener,
    shutdown: &tokio_util::sync::CancellationToken,
    label: &str,
    mut serve: impl FnMut(UnixStream, Slot),
) {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS_PER_SOCKET));
    let mut last_full_warning: Option<std::time::Instant> = None;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                if !peer_is_us(&stream) {
                    continue;
                }
                match slots.clone().try_acquire_owned() {
                    Ok(permit) => serve(stream, Slot(permit)),
                    Err(_) => {
                        if last_full_warning.is_none_or(|t| t.elapsed().as_secs() >= 60) {
                            last_full_warning = Some(std::time::Instant::now());
                            tracing::warn!(
                                "{label}{MAX_CONNECTIONS_PER_SOCKET} connections are open; new ones are closed until some end (a program of this user opens connections and leaves them)"
                            );
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!("{label}accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// A listener at an original path ([`bind_alias`]) and the file it made there.
pub struct AliasSocket {
    /// The listener.
    pub listener: UnixListener,
    /// Where it is bound.
    pub path: PathBuf,
    /// Device and inode of the socket file this daemon made, to remove only that file.
    id: (u64, u64),
}

impl AliasSocket {
    /// Removes the socket file if the path still holds the one this daemon made.
    pub fn remove(&self) {
        use std::os::unix::fs::MetadataExt;
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if (m.dev(), m.ino()) == self.id => {
                let _ = std::fs::remove_file(&self.path);
            }
            Ok(_) => tracing::info!(
                "left {} in place: it is no longer the socket this daemon made",
                self.path.display()
            ),
            Err(_) => {}
        }
    }
}

/// Binds a second listener at `path`, an original client's path (see the module rules): 0600,
/// replacing only a stale socket file of ours. `Err` is the warning saying why nothing was
/// bound (the path is left as it was).
pub fn bind_alias(path: &Path) -> Result<AliasSocket, String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if path.as_os_str().as_bytes().len() > MAX_SOCKET_PATH {
        return Err(format!(
            "original clients cannot reach Sayri at {}: the path is longer than {MAX_SOCKET_PATH} bytes",
            path.display()
        ));
    }
    let left = |why: String| {
        format!(
            "original clients cannot reach Sayri at {}: {why}; Sayri left it alone (remove it if it is not yours and restart the daemon)",
            path.display()
        )
    };
    let mut replaced = false;
    loop {
        match bind_new(path) {
            Ok(listener) => {
                let meta = std::fs::symlink_metadata(path)
                    .map_err(|e| left(format!("cannot inspect the new socket: {e}")))?;
                return Ok(AliasSocket {
                    listener,
                    path: path.to_path_buf(),
                    id: (meta.dev(), meta.ino()),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && !replaced => {}
            Err(e) => return Err(left(format!("cannot bind it: {e}"))),
        }
        // Something is there. Only a socket file of ours that nobody answers on is replaced.
        let meta =
            std::fs::symlink_metadata(path).map_err(|e| left(format!("cannot inspect it: {e}")))?;
        if !meta.file_type().is_socket() {
            return Err(left(
                "it is not a socket (a file, directory or symlink is there)".into(),
            ));
        }
        if meta.uid() != euid() {
            return Err(left(format!("it is a socket of uid {}", meta.uid())));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(left("another program answers on it".into()));
        }
        std::fs::remove_file(path)
            .map_err(|e| left(format!("cannot remove the stale socket: {e}")))?;
        tracing::info!("removed stale socket {}", path.display());
        replaced = true;
    }
}

/// Binds `path` (which must not exist) under umask 0177 and chmods it 0600.
fn bind_new(path: &Path) -> io::Result<UnixListener> {
    // SAFETY: umask only swaps the process file-mode mask; no memory is involved.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    // SAFETY: as above, restoring the previous mask.
    unsafe { libc::umask(old) };
    let listener = bound?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}
