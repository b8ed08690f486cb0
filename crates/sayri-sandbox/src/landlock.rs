//! The Landlock ruleset of levels 1–2: read (and execute) everywhere — or, for a request that
//! lists what it may read (an MCP server), only the system directories ([`SYSTEM_READABLE`]),
//! those paths and its writable places — write only in the private `/tmp`, the workspace and a
//! few harmless device nodes; no TCP bind/connect when the network is off; no abstract Unix
//! sockets or signals outside the sandbox (scopes).
//!
//! Landlock checks the *resolved* file, so symlinks planted in the workspace that point outside
//! stay read-only, and linking or renaming a file into a more permissive place fails (`EXDEV`).

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, path_beneath_rules,
};
use std::path::PathBuf;

/// The Landlock ABI whose features levels 1–2 require: filesystem rights incl. `Refer`,
/// `Truncate` and `IoctlDev` (ABI 5), TCP rights (ABI 4), abstract-socket and signal scopes (ABI 6).
pub const REQUIRED_ABI: i32 = 6;

/// The test override that lowers — never raises — the Landlock ABI Sayri takes the kernel to
/// offer (`SAYRI_SANDBOX_MAX_LANDLOCK_ABI=N`), so a host with an older Landlock can be tried on a
/// newer kernel. Levels 1–2 need [`REQUIRED_ABI`], so any `N` below it makes them refuse; a value
/// that is not a number refuses them too.
pub const MAX_ABI_VAR: &str = "SAYRI_SANDBOX_MAX_LANDLOCK_ABI";

/// Why levels 1–2 cannot have the Landlock they promise; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// [`MAX_ABI_VAR`] holds something else than a whole number.
    #[error("{MAX_ABI_VAR}={0:?} is not a Landlock ABI number; unset it or give a whole number")]
    BadCap(String),
    /// The kernel has no Landlock (`ENOSYS`).
    #[error("Landlock is not built into this kernel (ENOSYS)")]
    NotBuiltIn,
    /// Landlock is built in but not enabled (`EOPNOTSUPP`).
    #[error("Landlock is built in but disabled (add `landlock` to the `lsm=` boot parameter)")]
    Disabled,
    /// Another error from `landlock_create_ruleset`.
    #[error("Landlock is unavailable: {0}")]
    Unavailable(std::io::Error),
    /// The ABI offered (or lowered by [`MAX_ABI_VAR`]) is below [`REQUIRED_ABI`].
    #[error("{}, this level needs ABI >= {REQUIRED_ABI} (Linux 6.7+)", offered(*.abi, *.lowered))]
    TooOld {
        /// The usable ABI.
        abi: i32,
        /// Whether [`MAX_ABI_VAR`] lowered it to that.
        lowered: bool,
    },
    /// The ruleset could not be built.
    #[error("Landlock ruleset could not be built: {0}")]
    Build(RulesetError),
    /// The ruleset could not be enforced.
    #[error(
        "Landlock could not be enforced ({0}); this level needs Landlock ABI >= \
         {REQUIRED_ABI} (Linux 6.7 or newer with `landlock` in the `lsm=` boot parameter)"
    )]
    Restrict(RulesetError),
    /// Only part of the ruleset is enforced.
    #[error(
        "Landlock is only partially enforced on this kernel; this level needs ABI >= \
         {REQUIRED_ABI} (Linux 6.7 or newer)"
    )]
    Partial,
    /// None of the ruleset is enforced.
    #[error(
        "Landlock is not enforced on this kernel; enable it (`lsm=...,landlock`) or use a \
         kernel with Landlock ABI >= 6"
    )]
    NotEnforced,
}

fn offered(abi: i32, lowered: bool) -> String {
    if lowered {
        format!("{MAX_ABI_VAR} lowers Landlock to ABI {abi}")
    } else {
        format!("the kernel offers Landlock ABI {abi}")
    }
}

/// The cap [`MAX_ABI_VAR`] sets in this process's environment (`None` when it is unset or empty).
///
/// # Errors
/// [`LandlockError::BadCap`]: the value is not a whole number from 0 up.
pub fn abi_cap_from_env() -> Result<Option<i32>, LandlockError> {
    let Some(raw) = std::env::var_os(MAX_ABI_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let text = raw.to_string_lossy();
    match text.trim().parse::<i32>() {
        Ok(n) if n >= 0 => Ok(Some(n)),
        _ => Err(LandlockError::BadCap(text.into_owned())),
    }
}

/// The Landlock ABI levels 1–2 may use: the kernel's, lowered to `cap` when one is given.
///
/// # Errors
/// Landlock is unavailable (see [`kernel_abi`]).
pub fn usable_abi(cap: Option<i32>) -> Result<i32, LandlockError> {
    let abi = kernel_abi()?;
    Ok(cap.map_or(abi, |c| abi.min(c)))
}

/// The running kernel's Landlock ABI.
///
/// # Errors
/// Why Landlock is unavailable ([`LandlockError::NotBuiltIn`], [`LandlockError::Disabled`],
/// [`LandlockError::Unavailable`]).
pub fn kernel_abi() -> Result<i32, LandlockError> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    if v < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => LandlockError::NotBuiltIn,
            Some(libc::EOPNOTSUPP) => LandlockError::Disabled,
            _ => LandlockError::Unavailable(e),
        });
    }
    Ok(v as i32)
}

/// The directories a command limited to what it may read still reads: the operating system's
/// programs, libraries, configuration and kernel interfaces (never a home directory, `/var`,
/// `/run` or `/mnt`).
pub const SYSTEM_READABLE: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/sys", "/dev",
];

/// What a command may read: everywhere (`None`), or the system directories, the files that
/// `/etc/resolv.conf` and `/etc/localtime` link to, and `readable` (those that exist).
fn read_roots(readable: Option<&[PathBuf]>) -> Vec<PathBuf> {
    let Some(extra) = readable else {
        return vec![PathBuf::from("/")];
    };
    let mut roots: Vec<PathBuf> = SYSTEM_READABLE.iter().map(PathBuf::from).collect();
    for link in ["/etc/resolv.conf", "/etc/localtime"] {
        if let Ok(target) = std::fs::canonicalize(link) {
            roots.push(target);
        }
    }
    roots.extend(extra.iter().cloned());
    roots.retain(|p| p.exists());
    roots
}

/// Restricts the calling process (and every later child) and requires full enforcement.
/// `writable` are directories granted every filesystem right; `readable`, when given, limits
/// reading to it and the system directories (see [`SYSTEM_READABLE`]); `network_off` also
/// denies TCP.
///
/// # Errors
/// [`LandlockError`] naming the missing feature and what to do.
pub fn restrict(
    writable: &[PathBuf],
    readable: Option<&[PathBuf]>,
    network_off: bool,
) -> Result<(), LandlockError> {
    let abi = ABI::V6;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(LandlockError::Build)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(LandlockError::Build)?;
    if network_off {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(LandlockError::Build)?;
    }
    let devices = ["/dev/null", "/dev/zero", "/dev/full"];
    let status = ruleset
        .create()
        .map_err(LandlockError::Build)?
        .add_rules(path_beneath_rules(
            read_roots(readable),
            AccessFs::from_read(abi),
        ))
        .map_err(LandlockError::Build)?
        .add_rules(path_beneath_rules(
            devices.iter().filter(|p| std::path::Path::new(p).exists()),
            AccessFs::from_file(abi),
        ))
        .map_err(LandlockError::Build)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        .map_err(LandlockError::Build)?
        .restrict_self()
        .map_err(LandlockError::Restrict)?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        RulesetStatus::PartiallyEnforced => Err(LandlockError::Partial),
        RulesetStatus::NotEnforced => Err(LandlockError::NotEnforced),
    }
}
