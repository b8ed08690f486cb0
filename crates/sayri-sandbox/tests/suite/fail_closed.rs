//! Fail closed: when a mechanism a level needs is missing, levels 1-2 refuse (126, reason named) and
//! nothing runs; levels 0 and 3 are unaffected. The kernel refusals are real: the CLI runs under a
//! seccomp filter that makes `landlock_create_ruleset` fail with ENOSYS or `unshare` with EPERM,
//! which is what a kernel without Landlock or with user namespaces disabled answers.

use super::common::*;
use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::Command;

fn under_kernel_refusal(syscall: i64, errno: i32) -> impl FnOnce(&mut Command) {
    move |c: &mut Command| {
        let mut rules = BTreeMap::new();
        rules.insert(syscall, vec![]);
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            TargetArch::try_from(std::env::consts::ARCH).unwrap(),
        )
        .unwrap();
        let prog: seccompiler::BpfProgram = filter.try_into().unwrap();
        // SAFETY: prctl and seccomp installation between fork and exec.
        unsafe {
            c.pre_exec(move || {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                seccompiler::apply_filter(&prog).map_err(std::io::Error::other)
            });
        }
    }
}

fn refused(syscall: i64, errno: i32, needle: &str) {
    let f = Fixture::new(User::Root);
    let marker = f.home.join("sayri-failclosed-marker");
    let cmd = format!("touch {}; echo done", marker.display());
    for level in ["LEVEL_1_READONLY", "LEVEL_2_ISOLATED_DEV"] {
        let o = f.run_with(level, &[], &cmd, under_kernel_refusal(syscall, errno));
        assert_eq!(o.status, "denied", "{level}: {o:?}");
        assert_eq!(o.exit_code, Some(126));
        assert!(
            o.output.contains(needle),
            "{level}: reason should name {needle}: {o:?}"
        );
        assert!(o.output.contains("did not run"), "{o:?}");
        assert!(!o.output.contains("done"));
        assert!(!marker.exists(), "{level} ran on the host");
    }
    // Level 3 is unaffected; level 0 never runs.
    let o = f.run_with("3", &[], &cmd, under_kernel_refusal(syscall, errno));
    assert_eq!(o.status, "success", "{o:?}");
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    let o = f.run_with("0", &[], &cmd, under_kernel_refusal(syscall, errno));
    assert_eq!((o.status.as_str(), o.exit_code), ("denied", Some(126)));
    assert!(o.output.contains("LEVEL_0_NO_EXEC"));
    assert!(!marker.exists());
}

#[test]
fn no_landlock_refuses_levels_1_and_2() {
    refused(libc::SYS_landlock_create_ruleset, libc::ENOSYS, "Landlock");
}

#[test]
fn no_user_namespaces_refuses_levels_1_and_2() {
    refused(libc::SYS_unshare, libc::EPERM, "namespaces");
}

#[test]
fn check_reports_missing_mechanisms() {
    let bin = env!("CARGO_BIN_EXE_sayri-sandbox");
    let ok = Command::new(bin).arg("check").output().unwrap();
    assert!(ok.status.success(), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok.stdout).contains("1 LEVEL_1_READONLY: guaranteed"));
    let mut c = Command::new(bin);
    c.arg("check");
    under_kernel_refusal(libc::SYS_landlock_create_ruleset, libc::ENOSYS)(&mut c);
    let bad = c.output().unwrap();
    let text = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1));
    assert!(text.contains("1 LEVEL_1_READONLY: UNAVAILABLE"), "{text}");
    assert!(text.contains("missing: Landlock"), "{text}");
}

#[test]
fn refusal_exits_126_with_reason_on_stderr() {
    let bin = env!("CARGO_BIN_EXE_sayri-sandbox");
    let out = Command::new(bin)
        .args(["run", "--level", "0", "--", "echo", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("LEVEL_0_NO_EXEC"));
}
