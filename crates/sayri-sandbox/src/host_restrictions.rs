//! Why the host withholds a sandbox mechanism, and the fix that does not weaken the machine.
//!
//! Levels 1–2 refuse every command when their setup fails (that decision is made elsewhere and
//! never changes here). This file only turns the failing step into a cause and a fix, from what
//! the host says about itself:
//!
//! | what the host says | cause named | fix given |
//! |---|---|---|
//! | `user.max_user_namespaces = 0` | user namespaces disabled | raise it (`sysctl`), or level 0 / 3 |
//! | `kernel.unprivileged_userns_clone = 0` | unprivileged user namespaces disabled (Debian) | set it to 1 |
//! | `kernel.apparmor_restrict_unprivileged_userns = 1`, no `sayri-exec` profile loaded | AppArmor's restriction (namespace denied, or created without capabilities) | load the `sayri-exec` profile Sayri ships (`sayri doctor --fix-apparmor`); the restriction stays on for every other program |
//! | this process runs under a seccomp filter (`Seccomp: 2` in `/proc/self/status`) | a filter inherited from whoever started Sayri | run Sayri outside that sandbox, or allow the call in its policy |
//! | Landlock listed in `/sys/kernel/security/lsm` but answering `ENOSYS` | a filter hiding Landlock | as above |
//!
//! `SAYRI_SANDBOX_PROC_SYS` names a directory read instead of `/proc/sys` (tests fake the
//! sysctls with it). It changes the words of the message only: whether a level may run is
//! decided by the probe, which goes through the real setup steps.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The AppArmor profile Sayri ships for its exec helper (`/etc/apparmor.d/sayri-exec`): it
/// lets only `sayri-exec` create user namespaces with their capabilities, as Ubuntu's own
/// profiles do for browsers and `bwrap`. `@EXEC@` is the helper's path.
pub const APPARMOR_PROFILE_TEMPLATE: &str = include_str!("../data/apparmor/sayri-exec");
/// Where the profile is installed.
pub const APPARMOR_PROFILE_PATH: &str = "/etc/apparmor.d/sayri-exec";
/// The packaged helper's path.
pub const PACKAGED_EXEC: &str = "/usr/bin/sayri-exec";

/// The profile for the helper at `exec`.
pub fn apparmor_profile(exec: &Path) -> String {
    APPARMOR_PROFILE_TEMPLATE.replace("@EXEC@", &exec.display().to_string())
}

/// What the host says about the mechanisms levels 1–2 need.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// `kernel.apparmor_restrict_unprivileged_userns` (Ubuntu 24.04+), when present.
    pub apparmor_restrict_unprivileged_userns: Option<bool>,
    /// Whether an AppArmor profile named `sayri-exec` is loaded.
    pub apparmor_profile_loaded: bool,
    /// `user.max_user_namespaces`.
    pub max_user_namespaces: Option<u64>,
    /// `kernel.unprivileged_userns_clone` (Debian's switch), when present.
    pub unprivileged_userns_clone: Option<bool>,
    /// This process already runs under a seccomp filter it inherited.
    pub inherited_seccomp_filter: bool,
    /// The kernel lists Landlock among its security modules.
    pub landlock_listed: bool,
}

fn proc_sys() -> PathBuf {
    std::env::var_os("SAYRI_SANDBOX_PROC_SYS")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/proc/sys"), PathBuf::from)
}

fn read_number(rel: &str) -> Option<u64> {
    std::fs::read_to_string(proc_sys().join(rel))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Reads the host's facts (see the module table).
pub fn facts() -> HostFacts {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let seccomp_mode = status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .map(str::trim);
    let profiles =
        std::fs::read_to_string("/sys/kernel/security/apparmor/profiles").unwrap_or_default();
    HostFacts {
        apparmor_restrict_unprivileged_userns: read_number(
            "kernel/apparmor_restrict_unprivileged_userns",
        )
        .map(|v| v == 1),
        apparmor_profile_loaded: profiles
            .lines()
            .any(|l| l.split_whitespace().next() == Some("sayri-exec")),
        max_user_namespaces: read_number("user/max_user_namespaces"),
        unprivileged_userns_clone: read_number("kernel/unprivileged_userns_clone").map(|v| v == 1),
        inherited_seccomp_filter: seccomp_mode == Some("2"),
        landlock_listed: std::fs::read_to_string("/sys/kernel/security/lsm")
            .is_ok_and(|l| l.split(',').any(|m| m.trim() == "landlock")),
    }
}

/// A cause and the fix for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    /// What withholds the mechanism.
    pub cause: String,
    /// What to do (never "turn the protection off for everyone" where a narrower fix exists).
    pub fix: String,
}

const OTHER_LEVELS: &str = "until then levels 1–2 refuse every command; choose LEVEL_0_NO_EXEC or, knowingly, LEVEL_3_HOST_USER";

fn apparmor_fix() -> String {
    format!(
        "load the AppArmor profile Sayri ships for its sandbox helper, which lets only sayri-exec \
         use user namespaces: `sayri doctor --fix-apparmor` (or `sudo apparmor_parser -r \
         {APPARMOR_PROFILE_PATH}` where the package installed it); the restriction stays on for \
         every other program"
    )
}

fn inherited_filter_fix(what: &str) -> String {
    format!(
        "run Sayri outside the sandbox or container that started it, or allow {what} in that \
         sandbox's seccomp policy; {OTHER_LEVELS}"
    )
}

/// Why creating the namespaces failed with `error`, the first step of levels 1–2.
pub fn namespaces_refused(error: &str, f: &HostFacts) -> Explanation {
    if f.max_user_namespaces == Some(0) {
        return Explanation {
            cause: "user namespaces are disabled on this machine (user.max_user_namespaces = 0)"
                .into(),
            fix: format!(
                "allow them: `sudo sysctl -w user.max_user_namespaces=15000` (and the same line in \
                 /etc/sysctl.d/ to keep it); {OTHER_LEVELS}"
            ),
        };
    }
    if f.unprivileged_userns_clone == Some(false) {
        return Explanation {
            cause:
                "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
                    .into(),
            fix: format!(
                "`sudo sysctl -w kernel.unprivileged_userns_clone=1` (and in /etc/sysctl.d/); \
                 {OTHER_LEVELS}"
            ),
        };
    }
    if f.apparmor_restrict_unprivileged_userns == Some(true) && !f.apparmor_profile_loaded {
        return Explanation {
            cause: "AppArmor restricts unprivileged user namespaces \
                    (kernel.apparmor_restrict_unprivileged_userns = 1) and no profile for \
                    sayri-exec is loaded"
                .into(),
            fix: apparmor_fix(),
        };
    }
    if f.inherited_seccomp_filter {
        return Explanation {
            cause: format!(
                "a seccomp filter inherited from the program that started Sayri denies user \
                 namespaces ({})",
                errno_of(error)
            ),
            fix: inherited_filter_fix("unshare(CLONE_NEWUSER)"),
        };
    }
    Explanation {
        cause: format!(
            "the kernel refused to create user namespaces ({})",
            errno_of(error)
        ),
        fix: format!(
            "check the kernel's user-namespace settings (user.max_user_namespaces, and the \
             security modules in /sys/kernel/security/lsm); {OTHER_LEVELS}"
        ),
    }
}

/// Why the setup inside the new namespaces (mounts, the private view) failed with `error`.
pub fn setup_refused(error: &str, f: &HostFacts) -> Explanation {
    if f.apparmor_restrict_unprivileged_userns == Some(true) && !f.apparmor_profile_loaded {
        return Explanation {
            cause: format!(
                "AppArmor lets the user namespace be created but denies the capabilities inside \
                 it (kernel.apparmor_restrict_unprivileged_userns = 1): {error}"
            ),
            fix: apparmor_fix(),
        };
    }
    if f.inherited_seccomp_filter {
        return Explanation {
            cause: format!(
                "a seccomp filter inherited from the program that started Sayri denies the \
                 sandbox's setup inside its namespaces: {error}"
            ),
            fix: inherited_filter_fix("mount, pivot_root and sethostname"),
        };
    }
    Explanation {
        cause: format!(
            "a security module or container policy forbids the sandbox's setup inside its user \
             namespace: {error}"
        ),
        fix: format!(
            "check the host's security modules (AppArmor, SELinux) and container policy; {OTHER_LEVELS}"
        ),
    }
}

/// Why Landlock is missing (`error` from the kernel probe).
pub fn landlock_refused(error: &str, f: &HostFacts) -> Explanation {
    if f.landlock_listed && f.inherited_seccomp_filter {
        return Explanation {
            cause: format!(
                "the kernel has Landlock, but a seccomp filter inherited from the program that \
                 started Sayri hides it: {error}"
            ),
            fix: inherited_filter_fix("the landlock_* system calls"),
        };
    }
    Explanation {
        cause: error.to_string(),
        fix: format!(
            "use a kernel with CONFIG_SECURITY_LANDLOCK=y and `landlock` in the `lsm=` boot \
             parameter (Linux 6.7 or newer for every rule levels 1–2 use); {OTHER_LEVELS}"
        ),
    }
}

/// Why installing the seccomp filter failed (`error`).
pub fn seccomp_refused(error: &str, f: &HostFacts) -> Explanation {
    if f.inherited_seccomp_filter {
        return Explanation {
            cause: format!(
                "seccomp filters cannot be installed: a filter inherited from the program that \
                 started Sayri refuses them ({error})"
            ),
            fix: inherited_filter_fix("seccomp()"),
        };
    }
    Explanation {
        cause: format!("seccomp filters cannot be installed ({error})"),
        fix: format!("use a kernel with CONFIG_SECCOMP_FILTER=y; {OTHER_LEVELS}"),
    }
}

/// The cause and fix of a refusal `reason` reported by the exec helper or the probe: the step
/// it names decides which explanation applies.
pub fn explain(reason: &str, f: &HostFacts) -> Explanation {
    if !host_refusal(reason) {
        return Explanation {
            cause: reason.to_string(),
            fix: "see `sayri sandbox check` for what this machine gives each level".into(),
        };
    }
    if reason.starts_with(crate::namespaces::NAMESPACES_STEP) {
        namespaces_refused(reason, f)
    } else if reason.contains("Landlock") || reason.contains("landlock") {
        landlock_refused(reason, f)
    } else if reason.contains("seccomp") {
        seccomp_refused(reason, f)
    } else {
        setup_refused(reason, f)
    }
}

/// Whether `reason` is the kernel (or a policy over it) refusing a step, rather than Sayri's own
/// error: it carries a refusal errno.
fn host_refusal(reason: &str) -> bool {
    [
        "EPERM",
        "EACCES",
        "ENOSYS",
        "EOPNOTSUPP",
        "EINVAL",
        "ENOSPC",
        "Operation not permitted",
        "Permission denied",
        "not implemented",
        "Function not implemented",
        "not supported",
    ]
    .iter()
    .any(|m| reason.contains(m))
}

/// The errno name in a message (`EPERM`, `ENOSPC`, …), or the message.
fn errno_of(error: &str) -> String {
    error
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() > 2 && w.starts_with('E') && w.chars().all(|c| c.is_ascii_uppercase()))
        .map_or_else(|| error.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apparmor_is_named_with_the_profile_fix_and_never_by_turning_the_restriction_off() {
        let f = HostFacts {
            apparmor_restrict_unprivileged_userns: Some(true),
            ..HostFacts::default()
        };
        for e in [
            namespaces_refused("unshare: EPERM: Operation not permitted", &f),
            setup_refused("mount on / failed: EPERM", &f),
        ] {
            assert!(
                e.cause
                    .contains("apparmor_restrict_unprivileged_userns = 1"),
                "{e:?}"
            );
            assert!(e.fix.contains("sayri doctor --fix-apparmor"), "{e:?}");
            assert!(!e.fix.contains("=0"), "{e:?}");
        }
        let loaded = HostFacts {
            apparmor_profile_loaded: true,
            ..f
        };
        assert!(
            !namespaces_refused("EPERM", &loaded)
                .cause
                .contains("AppArmor")
        );
    }

    #[test]
    fn disabled_namespaces_and_inherited_filters_are_told_apart() {
        let off = HostFacts {
            max_user_namespaces: Some(0),
            ..HostFacts::default()
        };
        assert!(
            namespaces_refused("ENOSPC", &off)
                .cause
                .contains("max_user_namespaces = 0")
        );
        let debian = HostFacts {
            unprivileged_userns_clone: Some(false),
            ..HostFacts::default()
        };
        assert!(
            namespaces_refused("EPERM", &debian)
                .cause
                .contains("unprivileged_userns_clone")
        );
        let filtered = HostFacts {
            inherited_seccomp_filter: true,
            landlock_listed: true,
            ..HostFacts::default()
        };
        let e = namespaces_refused("cannot create …: EPERM: Operation not permitted", &filtered);
        assert!(
            e.cause.contains("seccomp filter inherited") && e.cause.contains("EPERM"),
            "{e:?}"
        );
        assert!(
            landlock_refused("ENOSYS", &filtered)
                .cause
                .contains("hides it")
        );
    }

    #[test]
    fn the_profile_names_the_helper_and_allows_user_namespaces() {
        let p = apparmor_profile(Path::new("/opt/sayri/bin/sayri-exec"));
        assert!(
            p.contains("profile sayri-exec /opt/sayri/bin/sayri-exec"),
            "{p}"
        );
        assert!(p.contains("userns,"), "{p}");
        assert!(!p.contains("@EXEC@"));
    }
}
