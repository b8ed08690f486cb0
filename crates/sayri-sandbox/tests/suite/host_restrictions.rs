//! When the host withholds a mechanism, levels 1–2 refuse before anything runs and the message
//! names the cause and a fix that does not weaken the machine. The refusals are real kernel
//! answers: the CLI runs under a seccomp filter shaped like each host restriction —
//! user namespaces denied (`unshare`/`clone` with `CLONE_NEWUSER` → `EPERM`, `clone3` →
//! `ENOSYS`), or the namespace allowed but every mount and `sethostname` inside it denied (the
//! shape of AppArmor's unprivileged-userns restriction). `sandbox check --json` reports the
//! architecture and the mechanism behind each promise of each level.

use super::common::*;
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::Command;

const CLONE_NEWUSER: u64 = libc::CLONE_NEWUSER as u64;

#[derive(Clone, Copy)]
enum Host {
    /// User namespaces cannot be created.
    NoUserNamespaces,
    /// They can, but nothing may be mounted inside them.
    NoCapabilitiesInside,
}

/// Installs the filter of `host` on `c` (between fork and exec, with `no_new_privs`).
fn under(host: Host) -> impl FnOnce(&mut Command) {
    move |c: &mut Command| {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        let eperm = SeccompAction::Errno(libc::EPERM as u32);
        let mut actions = Vec::new();
        match host {
            Host::NoUserNamespaces => {
                for nr in [libc::SYS_unshare, libc::SYS_clone] {
                    let cond = SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(CLONE_NEWUSER),
                        CLONE_NEWUSER,
                    )
                    .unwrap();
                    rules.insert(nr, vec![SeccompRule::new(vec![cond]).unwrap()]);
                }
                actions.push((libc::SYS_clone3, SeccompAction::Errno(libc::ENOSYS as u32)));
            }
            Host::NoCapabilitiesInside => {
                for nr in [
                    libc::SYS_mount,
                    libc::SYS_umount2,
                    libc::SYS_pivot_root,
                    libc::SYS_move_mount,
                    libc::SYS_open_tree,
                    libc::SYS_fsopen,
                    libc::SYS_fsmount,
                    libc::SYS_mount_setattr,
                    libc::SYS_sethostname,
                ] {
                    rules.insert(nr, vec![]);
                }
            }
        }
        let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
        let main: seccompiler::BpfProgram =
            SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch)
                .unwrap()
                .try_into()
                .unwrap();
        let extra: Vec<seccompiler::BpfProgram> = actions
            .into_iter()
            .map(|(nr, action)| {
                let mut r = BTreeMap::new();
                r.insert(nr, vec![]);
                SeccompFilter::new(r, SeccompAction::Allow, action, arch)
                    .unwrap()
                    .try_into()
                    .unwrap()
            })
            .collect();
        // SAFETY: prctl and seccomp installation between fork and exec.
        unsafe {
            c.pre_exec(move || {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                seccompiler::apply_filter(&main).map_err(std::io::Error::other)?;
                for p in &extra {
                    seccompiler::apply_filter(p).map_err(std::io::Error::other)?;
                }
                Ok(())
            });
        }
    }
}

fn check_json(tweak: impl FnOnce(&mut Command)) -> Value {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sayri-sandbox"));
    c.args(["check", "--json"]);
    tweak(&mut c);
    let out = c.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn level(report: &Value, n: usize) -> &Value {
    &report["levels"][n]
}

/// Every promise of levels 1–2 still fails under `host`: the command is refused before it runs,
/// the message names `cause` and a fix, and level 3 is unaffected.
fn refused_naming(host: Host, cause: &str, extra_env: Option<(&str, &std::path::Path)>) -> String {
    let f = Fixture::new(User::Root);
    let marker = f.home.join("sayri-host-restriction-marker");
    let cmd = format!("touch {}; echo done", marker.display());
    let mut last = String::new();
    for lvl in ["LEVEL_1_READONLY", "LEVEL_2_ISOLATED_DEV"] {
        let o = f.run_with(lvl, &[], &cmd, |c| {
            if let Some((k, v)) = extra_env {
                c.env(k, v);
            }
            under(host)(c)
        });
        assert_eq!(
            (o.status.as_str(), o.exit_code),
            ("denied", Some(126)),
            "{lvl}: {o:?}"
        );
        assert!(
            o.output.contains(cause),
            "{lvl}: should name {cause:?}: {}",
            o.output
        );
        assert!(o.output.contains("To fix:"), "{}", o.output);
        assert!(
            !o.output.contains("done") && !marker.exists(),
            "{lvl} ran: {o:?}"
        );
        last = o.output;
    }
    let o = f.run_with("3", &[], &cmd, under(host));
    assert_eq!(o.status, "success", "{o:?}");
    last
}

#[test]
fn namespaces_denied_by_an_inherited_filter_refuse_levels_1_and_2_naming_it_and_the_fix() {
    let said = refused_naming(Host::NoUserNamespaces, "seccomp filter inherited", None);
    assert!(said.contains("EPERM"), "{said}");
    // At start-up already: the probe says so before any command.
    let r = check_json(under(Host::NoUserNamespaces));
    for n in [1, 2] {
        let l = level(&r, n);
        assert_eq!(l["guaranteed"], false, "{l}");
        assert!(
            l["missing"][0]
                .as_str()
                .unwrap()
                .contains("user namespaces"),
            "{l}"
        );
    }
    assert_eq!(level(&r, 3)["guaranteed"], true);
}

#[test]
fn capabilities_denied_inside_the_namespace_are_found_by_the_probe_before_any_command() {
    let r = check_json(under(Host::NoCapabilitiesInside));
    for n in [1, 2] {
        let l = level(&r, n);
        assert_eq!(l["guaranteed"], false, "{l}");
        let missing = l["missing"][0].as_str().unwrap();
        assert!(
            missing.contains("sandbox setup") && missing.contains("EPERM"),
            "{l}"
        );
    }
    refused_naming(
        Host::NoCapabilitiesInside,
        "denies the sandbox's setup",
        None,
    );
}

#[test]
fn apparmors_restriction_is_named_with_the_shipped_profile_and_never_by_switching_it_off() {
    // The sysctl as Ubuntu 24.04 sets it (read through the documented test override); the
    // refusal itself is real (mounts inside the namespace denied, as AppArmor does).
    let fake = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(fake.path().join("kernel")).unwrap();
    std::fs::write(
        fake.path()
            .join("kernel/apparmor_restrict_unprivileged_userns"),
        "1\n",
    )
    .unwrap();
    let said = refused_naming(
        Host::NoCapabilitiesInside,
        "kernel.apparmor_restrict_unprivileged_userns = 1",
        Some(("SAYRI_SANDBOX_PROC_SYS", fake.path())),
    );
    assert!(said.contains("sayri doctor --fix-apparmor"), "{said}");
    assert!(said.contains("/etc/apparmor.d/sayri-exec"), "{said}");
    assert!(
        !said.contains("userns=0") && !said.contains("userns = 0"),
        "{said}"
    );
}

#[test]
fn check_json_reports_the_architecture_and_the_mechanism_behind_each_promise() {
    let r = check_json(|_| {});
    assert_eq!(r["arch"], std::env::consts::ARCH);
    let filter = r["seccomp_arch"].as_str().unwrap();
    assert!(filter.starts_with(std::env::consts::ARCH), "{filter}");
    let l1 = level(&r, 1);
    assert_eq!(l1["guaranteed"], true, "{l1}");
    let mechanisms: Vec<String> = l1["guarantees"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["mechanisms"].as_array().unwrap().clone())
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    for want in [
        "Landlock (ABI",
        "seccomp filter for",
        "network namespace",
        "pid namespace",
    ] {
        assert!(
            mechanisms.iter().any(|m| m.contains(want)),
            "{want}: {mechanisms:?}"
        );
    }
    let l3 = level(&r, 3);
    assert!(
        l3["guarantees"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["mechanisms"][0] == "environment allow-list"),
        "{l3}"
    );
}

#[test]
fn a_landlock_abi_below_the_one_levels_1_and_2_need_refuses_them_before_anything_runs() {
    let f = Fixture::new(User::Root);
    let keep = f.home.join("sayri-landlock-abi-keep.txt");
    std::fs::write(&keep, "keep").unwrap();
    // G5's truncate (ABI 3) outside the workspace, and a marker: neither may happen.
    let marker = f.home.join("sayri-landlock-abi-marker");
    let cmd = format!(
        "truncate -s0 {}; touch {}; echo done",
        keep.display(),
        marker.display()
    );
    for abi in 1..landlock_required() {
        let cap = abi.to_string();
        let r = check_json(|c| {
            c.env("SAYRI_SANDBOX_MAX_LANDLOCK_ABI", &cap);
        });
        assert_eq!(r["kernel"]["landlock_abi"], abi, "{}", r["kernel"]);
        for n in [1, 2] {
            let l = level(&r, n);
            assert_eq!(l["guaranteed"], false, "{l}");
            let missing = l["missing"][0].as_str().unwrap();
            assert!(missing.contains(&format!("Landlock ABI {abi}")), "{l}");
        }
        assert_eq!(level(&r, 3)["guaranteed"], true);
        for lvl in ["LEVEL_1_READONLY", "LEVEL_2_ISOLATED_DEV"] {
            let o = f.run_with(lvl, &[], &cmd, |c| {
                c.env("SAYRI_SANDBOX_MAX_LANDLOCK_ABI", &cap);
            });
            assert_eq!(
                (o.status.as_str(), o.exit_code),
                ("denied", Some(126)),
                "ABI {abi}, {lvl}: {o:?}"
            );
            assert!(
                o.output.contains(&format!("lowers Landlock to ABI {abi}")),
                "{}",
                o.output
            );
            assert!(o.output.contains("To fix:"), "{}", o.output);
            assert!(!o.output.contains("done") && !marker.exists(), "{o:?}");
            assert_eq!(std::fs::read_to_string(&keep).unwrap(), "keep");
        }
    }
    // A value that is no number refuses too; the override can never raise the ABI.
    let o = f.run_with("LEVEL_1_READONLY", &[], &cmd, |c| {
        c.env("SAYRI_SANDBOX_MAX_LANDLOCK_ABI", "lots");
    });
    assert_eq!(o.status, "denied", "{o:?}");
    assert!(
        o.output.contains("is not a Landlock ABI number"),
        "{}",
        o.output
    );
    let r = check_json(|c| {
        c.env("SAYRI_SANDBOX_MAX_LANDLOCK_ABI", "99");
    });
    let kernel = check_json(|_| {})["kernel"]["landlock_abi"].clone();
    assert_eq!(r["kernel"]["landlock_abi"], kernel);
    assert_eq!(level(&r, 1)["guaranteed"], true, "{}", level(&r, 1));
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "keep");
}

/// The Landlock ABI levels 1–2 need.
fn landlock_required() -> i64 {
    sayri_sandbox::landlock::REQUIRED_ABI.into()
}
