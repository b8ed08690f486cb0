//! The private filesystem view of levels 1–2, built inside the new mount namespace by the
//! sandbox's pid 1 before it execs the command:
//!
//! * every mount becomes private (nothing propagates back to the host);
//! * `/tmp` is a fresh, size-limited tmpfs (which also hides `/tmp/.X11-unix`);
//! * `/run` (and a real `/var/run`) become empty tmpfs, hiding D-Bus, Wayland, PulseAudio, docker
//!   and systemd-resolved sockets;
//! * `/dev` is a minimal tmpfs with `null`, `zero`, `full`, `random`, `urandom` and `tty` bound in
//!   (no raw disks, no `/dev/shm`);
//! * `/proc` is a fresh procfs of the new pid namespace;
//! * every existing deny-read path is covered: directories by an empty, read-only, mode-000 tmpfs,
//!   files by an empty mode-000 file, so opening them fails with `EACCES`;
//! * the workspace (level 2) is bound back at its own path even when a hidden directory (the state
//!   dir, `/tmp`) contains it.
//!
//! Mounts cannot be undone afterwards: the command has no capabilities, `mount`/`umount2` are
//! denied by seccomp, and Landlock forbids changing the mount topology.

use nix::mount::{MsFlags, mount};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why the filesystem view could not be built; each names the failing step and path.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// `mount(2)` on `target` failed.
    #[error("mount on {} failed: {source}", target.display())]
    Mount {
        /// Where the mount was made.
        target: PathBuf,
        /// The kernel's answer.
        source: nix::errno::Errno,
    },
    /// A path held before anything is hidden could not be opened.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A mount point, directory or `/dev` symlink could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The blank file bound over deny-read files could not be created or removed.
    #[error("cannot {action} the blank file: {source}")]
    BlankFile {
        /// `create` or `remove`.
        action: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A path to change the mount attributes of holds a NUL byte.
    #[error("{} contains a NUL byte", path.display())]
    NulByte {
        /// The path.
        path: PathBuf,
    },
    /// `mount_setattr(2)` failed (it needs Linux 5.12 or later).
    #[error("cannot change the mount attributes of {}: {source} (needs Linux 5.12+)", path.display())]
    SetAttr {
        /// The mount's path.
        path: PathBuf,
        /// The kernel's answer.
        source: std::io::Error,
    },
}

/// Device nodes bound into the private `/dev`.
pub const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

fn mnt(
    src: Option<&str>,
    target: &Path,
    fstype: Option<&str>,
    flags: MsFlags,
    data: Option<&str>,
) -> Result<(), MountError> {
    mount(src, target, fstype, flags, data).map_err(|source| MountError::Mount {
        target: target.to_path_buf(),
        source,
    })
}

fn open_path(p: &Path) -> Result<File, MountError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(p)
        .map_err(|source| MountError::Open {
            path: p.to_path_buf(),
            source,
        })
}

fn fd_path(f: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()))
}

/// Builds the filesystem view (see the module docs). Runs as pid 1 of the new pid namespace,
/// with full capabilities inside the new user namespace.
///
/// # Errors
/// The failing step, with its path ([`MountError`]).
pub fn setup(
    workspace: Option<&Path>,
    deny_read: &[PathBuf],
    tmp_size_bytes: u64,
    keep_resolv_conf: bool,
) -> Result<(), MountError> {
    mnt(
        None,
        Path::new("/"),
        None,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None,
    )?;
    let held = HeldPaths::open(workspace, keep_resolv_conf)?;
    // Everything inherited becomes read-only (also stops chmod/chown/utimes/xattr changes, which
    // Landlock does not cover) and nosuid.
    set_attr(
        Path::new("/"),
        true,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        0,
    )?;
    mount_private_tmp(tmp_size_bytes)?;
    hide_runtime_sockets(held.resolv_conf.as_ref())?;
    mount_minimal_dev(&held.devices)?;
    let hidden_dirs = hide_deny_read(deny_read, workspace)?;
    // The workspace, at its own path, on top of whatever hides its parents.
    if let (Some(ws), Some(f)) = (workspace, &held.workspace) {
        mkdirs(ws)?;
        mnt(fd_path(f).to_str(), ws, None, MsFlags::MS_BIND, None)?;
        set_attr(ws, false, 0, MOUNT_ATTR_RDONLY)?;
    }
    for d in &hidden_dirs {
        mnt(
            None,
            d,
            None,
            MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | NODEV | MsFlags::MS_NOEXEC,
            None,
        )?;
    }
    // procfs of the new pid namespace (after the last /proc/self/fd use above).
    mnt(
        Some("proc"),
        Path::new("/proc"),
        Some("proc"),
        NODEV | MsFlags::MS_NOEXEC,
        None,
    )?;
    Ok(())
}

/// `nosuid` and `nodev`, the flags of every tmpfs the view mounts.
const NODEV: MsFlags = MsFlags::MS_NOSUID.union(MsFlags::MS_NODEV);

/// `O_PATH` handles taken before anything is hidden, bound back afterwards through
/// `/proc/self/fd`: the workspace, the device nodes, and `/etc/resolv.conf`'s target when it lives
/// under `/run` (kept only when the command has network).
struct HeldPaths {
    workspace: Option<File>,
    devices: Vec<(PathBuf, File)>,
    resolv_conf: Option<(PathBuf, File)>,
}

impl HeldPaths {
    fn open(workspace: Option<&Path>, keep_resolv_conf: bool) -> Result<Self, MountError> {
        let workspace = workspace.map(open_path).transpose()?;
        let mut devices = Vec::new();
        for d in DEVICES {
            let p = Path::new("/dev").join(d);
            if p.exists() {
                devices.push((p.clone(), open_path(&p)?));
            }
        }
        let resolv_conf = if keep_resolv_conf {
            std::fs::canonicalize("/etc/resolv.conf")
                .ok()
                .filter(|p| p.starts_with("/run") || p.starts_with("/var/run"))
                .and_then(|p| open_path(&p).ok().map(|f| (p, f)))
        } else {
            None
        };
        Ok(HeldPaths {
            workspace,
            devices,
            resolv_conf,
        })
    }
}

/// A fresh, size-limited tmpfs on `/tmp` (world-writable with the sticky bit).
fn mount_private_tmp(tmp_size_bytes: u64) -> Result<(), MountError> {
    mnt(
        Some("tmpfs"),
        Path::new("/tmp"),
        Some("tmpfs"),
        NODEV,
        Some(&format!("size={tmp_size_bytes},mode=1777")),
    )
}

/// Empty tmpfs over `/run` and a real `/var/run` (hiding the host's sockets), then the held
/// `resolv.conf` target bound back at its own path.
fn hide_runtime_sockets(resolv_conf: Option<&(PathBuf, File)>) -> Result<(), MountError> {
    for run in ["/run", "/var/run"] {
        let p = Path::new(run);
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => mnt(
                Some("tmpfs"),
                p,
                Some("tmpfs"),
                NODEV | MsFlags::MS_NOEXEC,
                Some("size=1m,mode=755"),
            )?,
            _ => {}
        }
    }
    if let Some((path, f)) = resolv_conf {
        if let Some(parent) = path.parent() {
            mkdirs(parent)?;
        }
        File::create(path).map_err(|source| MountError::Create {
            path: path.clone(),
            source,
        })?;
        mnt(fd_path(f).to_str(), path, None, MsFlags::MS_BIND, None)?;
    }
    Ok(())
}

/// A small tmpfs on `/dev` with the held device nodes bound in and the `fd`, `stdin`, `stdout`,
/// `stderr` symlinks.
fn mount_minimal_dev(devices: &[(PathBuf, File)]) -> Result<(), MountError> {
    mnt(
        Some("tmpfs"),
        Path::new("/dev"),
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("size=64k,mode=755"),
    )?;
    for (p, f) in devices {
        File::create(p).map_err(|source| MountError::Create {
            path: p.clone(),
            source,
        })?;
        mnt(fd_path(f).to_str(), p, None, MsFlags::MS_BIND, None)?;
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        let link = Path::new("/dev").join(name);
        std::os::unix::fs::symlink(target, &link)
            .map_err(|source| MountError::Create { path: link, source })?;
    }
    Ok(())
}

/// Covers every existing deny-read path: a directory with an empty tmpfs (mode 000, or 711 when
/// it contains the workspace so the workspace stays reachable), a file with an empty, read-only,
/// mode-000 file. Returns the covered directories, which are made read-only once the workspace is
/// bound back.
fn hide_deny_read(
    deny_read: &[PathBuf],
    workspace: Option<&Path>,
) -> Result<Vec<PathBuf>, MountError> {
    let blank = Path::new("/tmp/.sayri-denied");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o000)
        .open(blank)
        .map_err(|source| MountError::BlankFile {
            action: "create",
            source,
        })?;
    let mut hidden_dirs = Vec::new();
    for p in deny_read {
        let Ok(meta) = std::fs::metadata(p) else {
            continue; // absent: nothing to hide (it cannot appear: the filesystem is read-only)
        };
        if meta.is_dir() {
            let mode = match workspace {
                Some(ws) if ws.starts_with(p) => "711",
                _ => "000",
            };
            mnt(
                Some("tmpfs"),
                p,
                Some("tmpfs"),
                NODEV | MsFlags::MS_NOEXEC,
                Some(&format!("size=64k,nr_inodes=64,mode={mode}")),
            )?;
            hidden_dirs.push(p.clone());
        } else {
            mnt(blank.to_str(), p, None, MsFlags::MS_BIND, None)?;
            mnt(
                None,
                p,
                None,
                MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY,
                None,
            )?;
        }
    }
    std::fs::remove_file(blank).map_err(|source| MountError::BlankFile {
        action: "remove",
        source,
    })?;
    Ok(hidden_dirs)
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const AT_RECURSIVE: u32 = 0x8000;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `mount_setattr(2)` on the mount at `path` (and below it when `recursive`).
fn set_attr(path: &Path, recursive: bool, set: u64, clear: u64) -> Result<(), MountError> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
        MountError::NulByte {
            path: path.to_path_buf(),
        }
    })?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: valid C string and a correctly sized mount_attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(MountError::SetAttr {
            path: path.to_path_buf(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

fn mkdirs(p: &Path) -> Result<(), MountError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(p)
        .map_err(|source| MountError::Create {
            path: p.to_path_buf(),
            source,
        })
}
