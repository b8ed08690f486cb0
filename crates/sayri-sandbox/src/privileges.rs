//! Privilege hygiene before `exec`: `no_new_privs` (setuid/setgid bits and file capabilities stop
//! working, so `sudo`, `su`, `pkexec` cannot elevate) and dropping every capability the helper
//! holds inside its user namespace.

/// A privilege step the kernel refused; the command is then not run.
#[derive(Debug, thiserror::Error)]
pub enum PrivilegeError {
    /// `PR_SET_NO_NEW_PRIVS` failed.
    #[error("prctl(PR_SET_NO_NEW_PRIVS) failed: {0}")]
    NoNewPrivs(std::io::Error),
    /// One step of dropping the capabilities failed.
    #[error("{step} failed: {source}")]
    Capabilities {
        /// The step, e.g. `locking the securebits`.
        step: &'static str,
        /// The kernel's answer.
        source: std::io::Error,
    },
}

/// Sets `PR_SET_NO_NEW_PRIVS`; irreversible for the process and its descendants.
///
/// # Errors
/// [`PrivilegeError::NoNewPrivs`].
pub fn set_no_new_privs() -> Result<(), PrivilegeError> {
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if rc != 0 {
        return Err(PrivilegeError::NoNewPrivs(std::io::Error::last_os_error()));
    }
    Ok(())
}

const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// Drops all capabilities for good: clears the ambient set, empties the bounding set, locks the
/// securebits so uid 0 inside the namespace gains nothing at `exec`, and empties the effective,
/// permitted and inheritable sets. Needs `CAP_SETPCAP` (held inside a fresh user namespace).
///
/// # Errors
/// [`PrivilegeError::Capabilities`] naming the step.
pub fn drop_all_capabilities() -> Result<(), PrivilegeError> {
    let err = |step: &'static str| PrivilegeError::Capabilities {
        step,
        source: std::io::Error::last_os_error(),
    };
    // SAFETY: prctl/syscall calls with integer or properly sized struct arguments.
    unsafe {
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ) != 0
        {
            return Err(err("clearing the ambient capability set"));
        }
        let last: libc::c_ulong = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63);
        for cap in 0..=last {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
                && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
            {
                return Err(err("dropping the capability bounding set"));
            }
        }
        let bits = SECBIT_NOROOT
            | SECBIT_NOROOT_LOCKED
            | SECBIT_NO_SETUID_FIXUP
            | SECBIT_NO_SETUID_FIXUP_LOCKED
            | SECBIT_KEEP_CAPS_LOCKED
            | SECBIT_NO_CAP_AMBIENT_RAISE
            | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        if libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) != 0 {
            return Err(err("locking the securebits"));
        }
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let mut header = Header {
            version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) != 0 {
            return Err(err("capset"));
        }
    }
    Ok(())
}
