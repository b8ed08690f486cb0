//! Level 1 escape suite, as root and as uid 65534: no write outside the private `/tmp`, no network
//! (TCP, UDP, loopback services or a DNS lookup carrying data out) unless allowed, no secrets, no
//! host sockets; and a write that the read-only filesystem refuses fails without stopping the
//! command.

use super::common::*;

fn level1(user: User) {
    let f = Fixture::new(user);
    let l = Listeners::new();
    let mut attempts = sandbox_attempts(
        &f,
        l.tcp.local_addr().unwrap().port(),
        l.udp.local_addr().unwrap().port(),
    );
    attempts.push(attempt(
        "private tmp starts empty and is writable",
        "ls -A /tmp | wc -l; echo hi > /tmp/x && cat /tmp/x",
        &["0\nhi"],
    ));
    attempts.push(attempt(
        "hard link into tmp",
        "ln /etc/passwd /tmp/pw",
        &["Invalid cross-device link"],
    ));
    run_all(&f, "1", &[], &attempts);
    l.assert_untouched();
    f.victim_intact();
    assert!(!f.home.join("pwned").exists());
    assert!(!f.outside.join("new.txt").exists());

    // With every mechanism present the command runs: the write fails, `done` is printed.
    let marker = f.home.join("sayri-failclosed-marker");
    let o = f.run(
        "LEVEL_1_READONLY",
        &[],
        &format!("touch {}; echo done", marker.display()),
    );
    assert_eq!(o.status, "success");
    assert!(o.output.contains("Read-only file system") || o.output.contains("Permission denied"));
    assert!(o.output.contains("done"));
    assert!(!marker.exists());

    // Nothing written to /tmp survives: the next run sees an empty /tmp.
    let o = f.run("1", &[], "ls -A /tmp | wc -l");
    assert_eq!(o.output.trim(), "0");
}

#[test]
fn level1_escapes_are_blocked_as_root() {
    level1(User::Root);
}

#[test]
fn level1_escapes_are_blocked_as_unprivileged_user() {
    level1(User::Nobody);
}

#[test]
fn level1_with_network_allowed_still_hides_sockets_and_secrets() {
    let f = Fixture::new(User::Nobody);
    let l = Listeners::new();
    let port = l.tcp.local_addr().unwrap().port();
    let o = f.run(
        "1",
        &["--network"],
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    );
    assert!(o.output.contains("connected"), "{o:?}");
    let o = f.run(
        "1",
        &["--network"],
        &format!(
            "{PY} -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}')\"; cat {}/.ssh/id_ed25519",
            f.host_socket.display(),
            f.home.display()
        ),
    );
    assert!(o.output.contains("PermissionError"), "{o:?}");
    assert!(o.output.contains("Permission denied"), "{o:?}");
    assert!(!o.output.contains("PRIVATE KEY"));
}
