//! What the kernel offers and, per level, whether its promise can be kept (`sayri sandbox check`).
//!
//! The probe runs in a single-threaded process (the exec helper's `probe` mode) because it enters
//! namespaces: a forked child performs a complete level-1 setup dry run — namespaces, the private
//! filesystem view, `no_new_privs`, capability drop, Landlock and seccomp — and reports the first
//! step that failed.

use crate::exec_helper::StepError;
use crate::guarantees::{self, Guarantee};
use crate::host_restrictions::{self as host, HostFacts};
use crate::{landlock, mounts, namespaces, privileges, seccomp};
use nix::unistd::{ForkResult, fork};
use sayri_protocol::SandboxLevel;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// Facts about the running kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFeatures {
    /// Landlock ABI version, `None` when unavailable.
    pub landlock_abi: Option<i32>,
    /// Why Landlock is unavailable, if it is.
    pub landlock_error: Option<String>,
    /// The cap [`landlock::MAX_ABI_VAR`] set when it lowered the kernel's ABI to
    /// `landlock_abi` (a test override; `None` otherwise).
    #[serde(default)]
    pub landlock_abi_cap: Option<i32>,
    /// Whether seccomp filters are supported (`PR_GET_SECCOMP` answers).
    pub seccomp_filter: bool,
    /// `Ok` when user, mount, pid, ipc, uts and net namespaces can be created unprivileged.
    pub namespaces: Result<(), String>,
    /// `Ok` when a complete level-1 setup (everything but `exec`) succeeded.
    pub level1_dry_run: Result<(), String>,
    /// Whether `pkexec` is on `PATH` (level 4).
    pub pkexec: bool,
    /// Whether the probe ran as root (process limits then come from a pids cgroup).
    pub root: bool,
    /// Whether a pids cgroup could be created (root only).
    pub pids_cgroup: bool,
    /// Whether the kernel still lets a process type into its terminal with `TIOCSTI`.
    #[serde(default)]
    pub legacy_tiocsti: LegacyTiocsti,
    /// What the host says about user namespaces, AppArmor and inherited filters.
    #[serde(default)]
    pub host: HostFacts,
}

/// Whether the kernel lets a process push input into its controlling terminal with `TIOCSTI`
/// (`dev.tty.legacy_tiocsti`). Sayri blocks it either way: commands run without a controlling
/// terminal at every level, and levels 1–2 refuse the ioctl with seccomp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LegacyTiocsti {
    /// `dev.tty.legacy_tiocsti = 1`: any process may type into its own terminal.
    Allowed,
    /// `dev.tty.legacy_tiocsti = 0`: only a process with `CAP_SYS_ADMIN` may.
    Refused,
    /// The setting does not exist: the kernel predates it (before 6.2) and always allows it.
    AllowedWithoutSetting,
    /// The setting could not be read.
    #[default]
    Unknown,
}

/// The sysctl that decides [`LegacyTiocsti`].
pub const LEGACY_TIOCSTI_SYSCTL: &str = "/proc/sys/dev/tty/legacy_tiocsti";

/// Reads [`LEGACY_TIOCSTI_SYSCTL`].
pub fn legacy_tiocsti() -> LegacyTiocsti {
    match std::fs::read_to_string(LEGACY_TIOCSTI_SYSCTL) {
        Ok(v) if v.trim() == "0" => LegacyTiocsti::Refused,
        Ok(v) if v.trim() == "1" => LegacyTiocsti::Allowed,
        Ok(_) => LegacyTiocsti::Unknown,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // `/proc/sys/dev/tty` exists on every kernel with ttys; without the entry the kernel
            // is older than the setting.
            if std::path::Path::new("/proc/sys/dev/tty").is_dir() {
                LegacyTiocsti::AllowedWithoutSetting
            } else {
                LegacyTiocsti::Unknown
            }
        }
        Err(_) => LegacyTiocsti::Unknown,
    }
}

impl LegacyTiocsti {
    /// The wire name (`allowed`, `refused`, `allowed_without_setting`, `unknown`).
    pub fn name(&self) -> &'static str {
        match self {
            LegacyTiocsti::Allowed => "allowed",
            LegacyTiocsti::Refused => "refused",
            LegacyTiocsti::AllowedWithoutSetting => "allowed_without_setting",
            LegacyTiocsti::Unknown => "unknown",
        }
    }

    /// One line for `sayri sandbox check`: what the kernel allows and how Sayri blocks it.
    pub fn describe(&self) -> String {
        let kernel = match self {
            LegacyTiocsti::Allowed => {
                "the kernel allows it (dev.tty.legacy_tiocsti = 1)".to_string()
            }
            LegacyTiocsti::Refused => {
                "the kernel refuses it (dev.tty.legacy_tiocsti = 0)".to_string()
            }
            LegacyTiocsti::AllowedWithoutSetting => {
                "the kernel allows it (it predates dev.tty.legacy_tiocsti)".to_string()
            }
            LegacyTiocsti::Unknown => format!("unknown ({LEGACY_TIOCSTI_SYSCTL} unreadable)"),
        };
        format!(
            "{kernel}; Sayri blocks it anyway: every command runs without a controlling terminal, \
             and levels 1-2 refuse TIOCSTI and TIOCLINUX with seccomp (EPERM)"
        )
    }
}

/// Whether one level's guarantees hold on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelSupport {
    /// The level.
    pub level: SandboxLevel,
    /// True when every guarantee of the level is enforced.
    pub guaranteed: bool,
    /// What is missing (empty when guaranteed).
    pub missing: Vec<String>,
    /// What to do about it, or remarks.
    pub advice: Vec<String>,
    /// Each promise of the level and the mechanism that keeps it.
    #[serde(default)]
    pub guarantees: Vec<Guarantee>,
}

/// The `sayri sandbox check` report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityReport {
    /// The CPU architecture (`x86_64`, `aarch64`).
    #[serde(default)]
    pub arch: String,
    /// The architecture the seccomp filter is built for, and how other ABIs are handled.
    #[serde(default)]
    pub seccomp_arch: String,
    /// Kernel facts.
    pub kernel: KernelFeatures,
    /// One entry per level, 0 to 4.
    pub levels: Vec<LevelSupport>,
}

/// Runs `f` in a forked child. `Err` is the text of the child's error as it came back over a
/// pipe (the probe's report carries it as text).
fn in_child<E: std::fmt::Display>(f: impl FnOnce() -> Result<(), E>) -> Result<(), String> {
    let (r, w) = nix::unistd::pipe().map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: called only from the single-threaded helper.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(r);
            let mut w = std::fs::File::from(w);
            let code = match f() {
                Ok(()) => 0,
                Err(e) => {
                    let _ = w.write_all(e.to_string().as_bytes());
                    1
                }
            };
            // SAFETY: immediate exit of the forked child.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(w);
            let mut msg = String::new();
            let _ = std::fs::File::from(r).read_to_string(&mut msg);
            let st = nix::sys::wait::waitpid(child, None);
            match st {
                Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(()),
                _ if !msg.is_empty() => Err(msg),
                other => Err(format!("probe child ended with {other:?}")),
            }
        }
        Err(e) => Err(format!("fork: {e}")),
    }
}

/// Probes the kernel. Must run in a single-threaded process (the helper's `probe` mode).
pub fn probe_here() -> KernelFeatures {
    let (landlock_abi, landlock_error, landlock_abi_cap) =
        match (landlock::abi_cap_from_env(), landlock::kernel_abi()) {
            (Err(e), _) | (Ok(_), Err(e)) => (None, Some(e.to_string()), None),
            (Ok(cap), Ok(v)) => (
                Some(cap.map_or(v, |c| v.min(c))),
                None,
                cap.filter(|c| *c < v),
            ),
        };
    // SAFETY: prctl with integer arguments.
    let seccomp_filter = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } >= 0;
    let namespaces = in_child(|| namespaces::enter(false));
    let level1_dry_run = in_child(|| {
        namespaces::enter(false).map_err(|e| e.to_string())?;
        in_child(|| -> Result<(), StepError> {
            mounts::setup(None, &[], 1 << 20, false)?;
            privileges::set_no_new_privs()?;
            privileges::drop_all_capabilities()?;
            landlock::restrict(&["/tmp".into()], None, true)?;
            Ok(seccomp::install(&seccomp::build()?)?)
        })
    });
    let root = nix::unistd::getuid().is_root();
    let pids_cgroup = root && crate::cgroup::PidsCgroup::create(8).is_some();
    let pkexec = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("pkexec").is_file()))
        .unwrap_or(false)
        || std::path::Path::new("/usr/bin/pkexec").is_file();
    KernelFeatures {
        landlock_abi,
        landlock_error,
        landlock_abi_cap,
        seccomp_filter,
        namespaces,
        level1_dry_run,
        pkexec,
        root,
        pids_cgroup,
        legacy_tiocsti: legacy_tiocsti(),
        host: host::facts(),
    }
}

/// What levels 1–2 miss of Landlock on `k`, and the fix; `None` when its ABI suffices.
fn landlock_shortfall(k: &KernelFeatures) -> Option<(String, String)> {
    let required = landlock::REQUIRED_ABI;
    let var = landlock::MAX_ABI_VAR;
    Some(match (k.landlock_abi, &k.landlock_error) {
        (Some(v), _) if v >= required => return None,
        (Some(v), _) if k.landlock_abi_cap == Some(v) => (
            format!(
                "Landlock ABI {v}, as {var} sets it (need >= {required}: filesystem, TCP and \
                 scope restrictions)"
            ),
            format!("unset {var} (a test override; the kernel offers more)"),
        ),
        (Some(v), _) => (
            format!(
                "Landlock ABI {v} (need >= {required}: filesystem, TCP and scope restrictions)"
            ),
            "upgrade to Linux 6.7 or newer".into(),
        ),
        (None, Some(e)) if e.contains(var) => (
            format!("Landlock: {e}"),
            format!("unset {var} or fix its value"),
        ),
        (None, e) => {
            let x = host::landlock_refused(e.as_deref().unwrap_or("unavailable"), &k.host);
            (format!("Landlock: {}", x.cause), x.fix)
        }
    })
}

/// Decides per level from `k` (pure; no I/O).
pub fn assess(k: &KernelFeatures) -> CapabilityReport {
    let mut sandbox_missing = Vec::new();
    let mut sandbox_advice = Vec::new();
    if let Some((missing, advice)) = landlock_shortfall(k) {
        sandbox_missing.push(missing);
        sandbox_advice.push(advice);
    }
    if !k.seccomp_filter {
        let x = host::seccomp_refused("PR_GET_SECCOMP is not answered", &k.host);
        sandbox_missing.push(x.cause);
        sandbox_advice.push(x.fix);
    }
    if let Err(e) = &k.namespaces {
        let x = host::namespaces_refused(e, &k.host);
        sandbox_missing.push(format!("user namespaces: {}", x.cause));
        sandbox_advice.push(x.fix);
    } else if let Err(e) = &k.level1_dry_run {
        let x = host::explain(e, &k.host);
        sandbox_missing.push(format!("sandbox setup: {}", x.cause));
        sandbox_advice.push(x.fix);
    }
    if k.root && !k.pids_cgroup {
        sandbox_advice.push(
            "running as root without a writable pids cgroup: the process count is bounded only \
             by the timeout (RLIMIT_NPROC does not apply to uid 0)"
                .into(),
        );
    }
    let ok = sandbox_missing.is_empty();
    let mut levels = vec![LevelSupport {
        level: SandboxLevel::NoExec,
        guaranteed: true,
        missing: vec![],
        advice: vec!["never executes anything".into()],
        guarantees: guarantees::of(SandboxLevel::NoExec, k),
    }];
    for level in [SandboxLevel::ReadOnly, SandboxLevel::IsolatedDev] {
        levels.push(LevelSupport {
            level,
            guaranteed: ok,
            missing: sandbox_missing.clone(),
            advice: if ok {
                sandbox_advice.clone()
            } else {
                let mut a = sandbox_advice.clone();
                a.push(format!(
                    "{level} refuses every command until this is fixed (exit 126); choose \
                     LEVEL_0_NO_EXEC or, knowingly, LEVEL_3_HOST_USER"
                ));
                a
            },
            guarantees: guarantees::of(level, k),
        });
    }
    levels.push(LevelSupport {
        level: SandboxLevel::HostUser,
        guaranteed: true,
        missing: vec![],
        advice: vec![
            "host user with an environment allow-list, own session, no_new_privs, rlimits; the \
             process tree is killed through a child subreaper"
                .into(),
        ],
        guarantees: guarantees::of(SandboxLevel::HostUser, k),
    });
    levels.push(LevelSupport {
        level: SandboxLevel::HostRoot,
        guaranteed: k.pkexec,
        missing: if k.pkexec {
            vec![]
        } else {
            vec!["pkexec (Polkit) is not installed".into()]
        },
        advice: vec![if k.pkexec {
            "each command needs approval in a Polkit dialog (needs a graphical session)".into()
        } else {
            "install the Debian package `pkexec` (policykit-1) and a Polkit agent".into()
        }],
        guarantees: guarantees::of(SandboxLevel::HostRoot, k),
    });
    CapabilityReport {
        arch: std::env::consts::ARCH.into(),
        seccomp_arch: guarantees::filter_arch(),
        kernel: k.clone(),
        levels,
    }
}

/// Human-readable report, one block per level.
pub fn render(r: &CapabilityReport) -> String {
    let k = &r.kernel;
    let mut s = String::new();
    s.push_str(&format!(
        "architecture: {} (seccomp filter: {})\n",
        r.arch, r.seccomp_arch
    ));
    s.push_str(&format!(
        "Landlock ABI: {}\nseccomp filters: {}\nuser/mount/pid/ipc/uts/net namespaces: {}\nlevel-1 \
         setup dry run: {}\npkexec: {}\nterminal input injection (TIOCSTI): {}\n\n",
        match (k.landlock_abi, k.landlock_abi_cap) {
            (Some(v), Some(_)) => format!("{v} (lowered by {})", landlock::MAX_ABI_VAR),
            (Some(v), None) => v.to_string(),
            (None, _) => k.landlock_error.clone().unwrap_or_default(),
        },
        if k.seccomp_filter { "yes" } else { "no" },
        k.namespaces
            .as_ref()
            .map(|_| "yes".to_string())
            .unwrap_or_else(|e| e.clone()),
        k.level1_dry_run
            .as_ref()
            .map(|_| "ok".to_string())
            .unwrap_or_else(|e| e.clone()),
        if k.pkexec { "yes" } else { "no" },
        k.legacy_tiocsti.describe(),
    ));
    for l in &r.levels {
        s.push_str(&format!(
            "{} {}: {}\n",
            l.level.number(),
            l.level,
            if l.guaranteed {
                "guaranteed"
            } else {
                "UNAVAILABLE"
            }
        ));
        for m in &l.missing {
            s.push_str(&format!("    missing: {m}\n"));
        }
        for a in &l.advice {
            s.push_str(&format!("    note: {a}\n"));
        }
        if l.guaranteed {
            for g in &l.guarantees {
                s.push_str(&format!(
                    "    {}: {}\n",
                    g.promise,
                    g.mechanisms.join(" + ")
                ));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> KernelFeatures {
        KernelFeatures {
            landlock_abi: Some(7),
            landlock_error: None,
            landlock_abi_cap: None,
            seccomp_filter: true,
            namespaces: Ok(()),
            level1_dry_run: Ok(()),
            pkexec: false,
            root: false,
            pids_cgroup: false,
            legacy_tiocsti: LegacyTiocsti::Allowed,
            host: HostFacts::default(),
        }
    }

    #[test]
    fn a_landlock_abi_lowered_by_the_override_refuses_levels_1_and_2_naming_the_override() {
        let mut k = good();
        k.landlock_abi = Some(5);
        k.landlock_abi_cap = Some(5);
        let r = assess(&k);
        for l in &r.levels[1..=2] {
            assert!(!l.guaranteed);
            assert!(
                l.missing[0].contains("Landlock ABI 5, as SAYRI_SANDBOX_MAX_LANDLOCK_ABI sets it"),
                "{:?}",
                l.missing
            );
        }
        assert!(r.levels[3].guaranteed);
        assert!(render(&r).contains("Landlock ABI: 5 (lowered by SAYRI_SANDBOX_MAX_LANDLOCK_ABI)"));
    }

    #[test]
    fn old_landlock_makes_levels_1_and_2_unavailable_and_says_why() {
        let mut k = good();
        k.landlock_abi = Some(3);
        let r = assess(&k);
        for l in &r.levels[1..=2] {
            assert!(!l.guaranteed);
            assert!(l.missing[0].contains("Landlock ABI 3"), "{:?}", l.missing);
        }
        assert!(r.levels[3].guaranteed);
    }

    #[test]
    fn missing_namespaces_are_named() {
        let mut k = good();
        k.namespaces = Err("cannot create user namespaces: EPERM".into());
        let r = assess(&k);
        assert!(!r.levels[1].guaranteed);
        assert!(r.levels[1].missing[0].contains("EPERM"));
        assert!(render(&r).contains("UNAVAILABLE"));
    }

    #[test]
    fn the_report_says_whether_the_kernel_allows_legacy_tiocsti_and_that_sayri_blocks_it() {
        let text = render(&assess(&good()));
        assert!(
            text.contains("TIOCSTI): the kernel allows it (dev.tty.legacy_tiocsti = 1); Sayri blocks it anyway"),
            "{text}"
        );
        let mut k = good();
        k.legacy_tiocsti = LegacyTiocsti::Refused;
        assert!(render(&assess(&k)).contains("refuses it (dev.tty.legacy_tiocsti = 0)"));
        assert!(
            text.contains("terminal, and levels 1-2 refuse TIOCSTI and TIOCLINUX"),
            "{text}"
        );
        // The probe reads the real setting of this kernel.
        let here = legacy_tiocsti();
        match std::fs::read_to_string(LEGACY_TIOCSTI_SYSCTL) {
            Ok(v) if v.trim() == "1" => assert_eq!(here, LegacyTiocsti::Allowed),
            Ok(v) if v.trim() == "0" => assert_eq!(here, LegacyTiocsti::Refused),
            _ => assert_ne!(here, LegacyTiocsti::Allowed),
        }
    }

    #[test]
    fn all_present_means_guaranteed() {
        let r = assess(&good());
        assert!(r.levels[..4].iter().all(|l| l.guaranteed));
        assert!(!r.levels[4].guaranteed, "no pkexec on this report");
    }
}
