//! Level 3: environment policy, own session, no_new_privs (setuid binaries do not elevate).

use super::common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

#[test]
fn level3_environment_policy() {
    let f = Fixture::new(User::Root);
    let o = f.run("3", &["--env", "API_KEY=k1"], "env | sort | tr '\\n' ' '");
    assert_eq!(o.status, "success");
    assert!(!o.output.contains("SECRET_TOKEN"), "{o:?}");
    assert!(o.output.contains("API_KEY=k1"));
    assert!(o.output.contains("PATH="));
    assert!(o.output.contains(&format!("HOME={}", f.home.display())));
}

#[test]
fn level3_runs_in_its_own_session_with_no_new_privs() {
    let f = Fixture::new(User::Nobody);
    let my_sid = nix::unistd::getsid(None).unwrap().as_raw();
    let o = f.run(
        "3",
        &[],
        "grep NoNewPrivs /proc/self/status; ps -o sid= -p $$ 2>/dev/null || awk '{print $6}' /proc/$$/stat",
    );
    assert!(o.output.contains("NoNewPrivs:\t1"), "{o:?}");
    let sid: i32 = o.output.lines().last().unwrap().trim().parse().unwrap();
    assert_ne!(sid, my_sid);
}

#[test]
fn level3_setuid_binaries_do_not_elevate() {
    let f = Fixture::new(User::Nobody);
    // A setuid-root copy of `id`: elevates outside the sandbox (control), not inside.
    let suid = f
        .outside
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("suid-id");
    std::fs::copy("/usr/bin/id", &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let control = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&suid)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&control.stdout).contains("euid=0"),
        "control: {control:?}"
    );
    for level in ["1", "2", "3"] {
        let o = f.run(
            level,
            &[],
            &format!("{}; su -c true root; echo su=$?", suid.display()),
        );
        assert!(!o.output.contains("euid=0"), "level {level}: {o:?}");
        assert!(o.output.contains("uid=65534"), "level {level}: {o:?}");
        assert!(o.output.contains("su=1"), "level {level}: {o:?}");
    }
}
