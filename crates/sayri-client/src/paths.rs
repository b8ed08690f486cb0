//! Where Sayri keeps things. This module is the only place that computes Sayri's directories;
//! the daemon and every CLI subcommand use [`Paths::from_env`].
//!
//! * config dir: `$SAYRI_CONFIG_DIR`, else `$XDG_CONFIG_HOME/sayri` (when that is an absolute
//!   path), else `~/.config/sayri` — `sayri.toml`, `agents/`, the vault.
//! * state dir: `$SAYRI_STATE_DIR`, else `~/.local/share/sayri` — `daemon.log`, databases,
//!   `logs/` of supervised children, `children/` records of running children.
//! * runtime dir: `$XDG_RUNTIME_DIR/sayri` when `XDG_RUNTIME_DIR` is set (absolute), else the
//!   state dir — `sayri-daemon.sock`, its lock file, and the legacy `sayri.sock`. When it is
//!   not the state dir the daemon also answers at the original paths in the state dir
//!   ([`Paths::original_socket`], [`Paths::original_legacy_socket`]).
//!
//! Every directory is created with mode 0700 and re-chmodded 0700 when the daemon starts; a
//! directory owned by another user is refused (fail closed). Computing paths never creates
//! anything, so clients can look for the socket without side effects.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// File name of the daemon control socket.
pub const DAEMON_SOCKET: &str = "sayri-daemon.sock";
/// File name of the legacy gateway socket (the original gateway protocol).
pub const LEGACY_SOCKET: &str = "sayri.sock";
/// File name of the lock that makes the daemon a singleton.
pub const DAEMON_LOCK: &str = "sayri-daemon.lock";
/// Longest path a Unix socket address can hold (`sun_path` minus the NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Errors locating or preparing Sayri's directories.
#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    /// Neither the override variable nor `$HOME` is available.
    #[error("cannot find your home directory; set HOME, or SAYRI_CONFIG_DIR and SAYRI_STATE_DIR")]
    NoHome,
    /// A directory variable holds a relative path (it would follow the working directory).
    #[error(
        "{var} is the relative path {value:?}; it must be an absolute path (for example {var}=$HOME/sayri-test), or unset to use the default"
    )]
    Relative {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: PathBuf,
    },
    /// Creating or chmodding a directory failed.
    #[error("cannot prepare directory {path}: {source}; check its permissions")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A directory exists but belongs to someone else.
    #[error(
        "directory {path} belongs to uid {owner}, not to you (uid {me}); remove it or point SAYRI_STATE_DIR/SAYRI_CONFIG_DIR elsewhere"
    )]
    NotOwner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        me: u32,
    },
}

/// The resolved directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// `$SAYRI_CONFIG_DIR`, `$XDG_CONFIG_HOME/sayri` or `~/.config/sayri`.
    pub config_dir: PathBuf,
    /// `$SAYRI_STATE_DIR` or `~/.local/share/sayri`.
    pub state_dir: PathBuf,
    /// `$XDG_RUNTIME_DIR/sayri` or the state dir.
    pub runtime_dir: PathBuf,
}

/// `$name` when set and not empty; a relative value is refused (`PathsError::Relative`).
fn env_dir(name: &'static str) -> Result<Option<PathBuf>, PathsError> {
    match std::env::var_os(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => {
            let p = PathBuf::from(v);
            if p.is_absolute() {
                Ok(Some(p))
            } else {
                Err(PathsError::Relative {
                    var: name,
                    value: p,
                })
            }
        }
    }
}

/// `$name` when set to an absolute path: the XDG base directory rules ignore a relative value.
fn xdg_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

impl Paths {
    /// Resolves the directories from the environment. Creates nothing.
    ///
    /// # Errors
    /// `SAYRI_CONFIG_DIR` or `SAYRI_STATE_DIR` is relative ([`PathsError::Relative`]); no home
    /// directory is found when one is needed ([`PathsError::NoHome`]).
    pub fn from_env() -> Result<Paths, PathsError> {
        let home = || {
            directories::BaseDirs::new()
                .map(|b| b.home_dir().to_path_buf())
                .ok_or(PathsError::NoHome)
        };
        let config_dir = match (env_dir("SAYRI_CONFIG_DIR")?, xdg_dir("XDG_CONFIG_HOME")) {
            (Some(p), _) => p,
            (None, Some(xdg)) => xdg.join("sayri"),
            (None, None) => home()?.join(".config/sayri"),
        };
        let state_dir = match env_dir("SAYRI_STATE_DIR")? {
            Some(p) => p,
            None => home()?.join(".local/share/sayri"),
        };
        let runtime_dir = match xdg_dir("XDG_RUNTIME_DIR") {
            Some(p) => p.join("sayri"),
            None => state_dir.clone(),
        };
        Ok(Paths {
            config_dir,
            state_dir,
            runtime_dir,
        })
    }

    /// `runtime/sayri-daemon.sock`.
    pub fn socket(&self) -> PathBuf {
        self.runtime_dir.join(DAEMON_SOCKET)
    }
    /// `runtime/sayri.sock` (the legacy gateway socket).
    pub fn legacy_socket(&self) -> PathBuf {
        self.runtime_dir.join(LEGACY_SOCKET)
    }
    /// `state/sayri-daemon.sock`, where the original clients look for the control socket, when
    /// it is not [`Paths::socket`] (the runtime dir is elsewhere); the daemon answers there too.
    pub fn original_socket(&self) -> Option<PathBuf> {
        (self.runtime_dir != self.state_dir).then(|| self.state_dir.join(DAEMON_SOCKET))
    }
    /// `state/sayri.sock`, where the original gateways look for the legacy socket, when it is
    /// not [`Paths::legacy_socket`]; the daemon answers there too.
    pub fn original_legacy_socket(&self) -> Option<PathBuf> {
        (self.runtime_dir != self.state_dir).then(|| self.state_dir.join(LEGACY_SOCKET))
    }
    /// `runtime/sayri-daemon.lock`.
    pub fn lock_file(&self) -> PathBuf {
        self.runtime_dir.join(DAEMON_LOCK)
    }
    /// `config/agents` (one `<id>.json` profile per agent).
    pub fn agents_dir(&self) -> PathBuf {
        self.config_dir.join("agents")
    }
    /// `config/skills` (one folder per installed skill, records in `.records/`).
    pub fn skills_dir(&self) -> PathBuf {
        self.config_dir.join("skills")
    }
    /// `state/sessions.db` (sessions, messages, approvals, preferences).
    pub fn database(&self) -> PathBuf {
        self.state_dir.join("sessions.db")
    }
    /// `config/sayri.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("sayri.toml")
    }
    /// `state/daemon.log` (where a backgrounded daemon logs).
    pub fn log_file(&self) -> PathBuf {
        self.state_dir.join("daemon.log")
    }
    /// `state/logs` (one `<name>.log` per supervised child).
    pub fn logs_dir(&self) -> PathBuf {
        self.state_dir.join("logs")
    }
    /// `state/children` (a record per running child, for the clean-up after a crash).
    pub fn children_dir(&self) -> PathBuf {
        self.state_dir.join("children")
    }

    /// `state/models` (installed local chat models, `<name>.gguf`; see `sayri models`).
    pub fn models_dir(&self) -> PathBuf {
        self.state_dir.join("models")
    }
    /// `state/llm-server` (the local model server's runtime: `node_modules/node-llama-cpp`,
    /// optionally `bin/node`; the daemon writes `server.mjs` there).
    pub fn llm_server_dir(&self) -> PathBuf {
        self.state_dir.join("llm-server")
    }

    /// Creates config, state and runtime dirs with mode 0700 (re-chmodding existing ones).
    pub fn ensure_dirs(&self) -> Result<(), PathsError> {
        ensure_private_dir(&self.config_dir)?;
        ensure_private_dir(&self.state_dir)?;
        ensure_private_dir(&self.runtime_dir)
    }
}

/// Our effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates `dir` (and parents) with mode 0700, then makes sure it is ours and 0700.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PathsError> {
    let err = |source| PathsError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    // A symlink planted by another user (in a shared, world-writable parent) could be swapped
    // for one to their directory after the checks below.
    if let Ok(link) = std::fs::symlink_metadata(dir)
        && link.file_type().is_symlink()
        && link.uid() != euid()
        && link.uid() != 0
    {
        return Err(PathsError::NotOwner {
            path: dir.to_path_buf(),
            owner: link.uid(),
            me: euid(),
        });
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    let meta = std::fs::metadata(dir).map_err(err)?;
    if meta.uid() != euid() {
        return Err(PathsError::NotOwner {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            me: euid(),
        });
    }
    if meta.permissions().mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}
