//! The Landlock ruleset of levels 1–2: read (and execute) everywhere, write only in the private
//! `/tmp`, the workspace and a few harmless device nodes; no TCP bind/connect when the network is
//! off; no abstract Unix sockets or signals outside the sandbox (scopes).
//!
//! Landlock checks the *resolved* file, so symlinks planted in the workspace that point outside
//! stay read-only, and linking or renaming a file into a more permissive place fails (`EXDEV`).

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use std::path::PathBuf;

/// The Landlock ABI whose features levels 1–2 require: filesystem rights incl. `Refer`,
/// `Truncate` and `IoctlDev` (ABI 5), TCP rights (ABI 4), abstract-socket and signal scopes (ABI 6).
pub const REQUIRED_ABI: i32 = 6;

/// The running kernel's Landlock ABI, or the errno text when Landlock is unavailable.
pub fn kernel_abi() -> Result<i32, String> {
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
            Some(libc::ENOSYS) => "Landlock is not built into this kernel (ENOSYS)".into(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built in but disabled (add `landlock` to the `lsm=` boot parameter)"
                    .into()
            }
            _ => format!("Landlock is unavailable: {e}"),
        });
    }
    Ok(v as i32)
}

/// Restricts the calling process (and every later child) and requires full enforcement.
/// `writable` are directories granted every filesystem right; `network_off` also denies TCP.
/// Errors name the missing feature and what to do.
pub fn restrict(writable: &[PathBuf], network_off: bool) -> Result<(), String> {
    let abi = ABI::V6;
    let fail = |e: &dyn std::fmt::Display| format!("Landlock ruleset could not be built: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail(&e))?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(|e| fail(&e))?;
    if network_off {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| fail(&e))?;
    }
    let devices = ["/dev/null", "/dev/zero", "/dev/full"];
    let status = ruleset
        .create()
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(
            devices.iter().filter(|p| std::path::Path::new(p).exists()),
            AccessFs::from_file(abi),
        ))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        .map_err(|e| fail(&e))?
        .restrict_self()
        .map_err(|e| {
            format!(
                "Landlock could not be enforced ({e}); this level needs Landlock ABI >= \
                 {REQUIRED_ABI} (Linux 6.7 or newer with `landlock` in the `lsm=` boot parameter)"
            )
        })?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        RulesetStatus::PartiallyEnforced => Err(format!(
            "Landlock is only partially enforced on this kernel; this level needs ABI >= \
             {REQUIRED_ABI} (Linux 6.7 or newer)"
        )),
        RulesetStatus::NotEnforced => Err(
            "Landlock is not enforced on this kernel; enable it (`lsm=...,landlock`) or use a \
             kernel with Landlock ABI >= 6"
                .to_string(),
        ),
    }
}
