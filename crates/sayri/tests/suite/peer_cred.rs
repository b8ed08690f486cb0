//! SO_PEERCRED: a peer with another uid is closed without being read, even when file modes
//! would let it connect. The test opens the directory and socket modes itself (as the owner, from
//! outside the daemon), so the refusal can only come from the credential check.

use super::support::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn chmod(p: &std::path::Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_peer_with_another_uid_is_refused() {
    // SAFETY: getuid/geteuid take no arguments, touch no memory and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run a helper as uid 65534 (setpriv)");
        return;
    }
    let env = Env::new();
    let d = env.start_daemon();
    // Let uid 65534 reach the socket file: the only remaining barrier is SO_PEERCRED.
    chmod(env.dir.path(), 0o711);
    chmod(&env.state_dir(), 0o711);
    chmod(&env.socket(), 0o666);

    let as_nobody = |extra: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(BIN)
            .args(extra)
            .env("SAYRI_CONFIG_DIR", env.config_dir())
            .env("SAYRI_STATE_DIR", env.state_dir())
            .env_remove("XDG_RUNTIME_DIR")
            .output()
            .expect("setpriv (util-linux) must be installed")
    };
    let o = as_nobody(&["ping", "--no-start"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("closed the connection without greeting"),
        "the helper connected (file modes allowed it) but must be cut off by the daemon: {err}"
    );
    assert!(
        eventually(std::time::Duration::from_secs(5), || d
            .log_text()
            .contains("refused connection from uid 65534")),
        "{}",
        d.log_text()
    );
    // Control: the owner, same path and modes, is served.
    let o = env.run(&["ping", "--no-start"]);
    assert_eq!(stdout(&o), "pong\n", "{}", stderr(&o));
}
