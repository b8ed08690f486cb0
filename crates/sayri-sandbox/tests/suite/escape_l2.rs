//! Level 2 escape suite, as root and as uid 65534: the workspace is the only writable place, and
//! symlinks or hard links planted in it lead nowhere outside.

use super::common::*;

fn level2(user: User) {
    let f = Fixture::new(user);
    let l = Listeners::new();
    let h = f.home.display().to_string();
    let mut attempts = sandbox_attempts(
        &f,
        l.tcp.local_addr().unwrap().port(),
        l.udp.local_addr().unwrap().port(),
    );
    let denied = &[
        "Permission denied",
        "Read-only file system",
        "No such file or directory",
    ][..];
    attempts.extend([
        attempt("workspace is writable", "echo data > mine.txt && cat mine.txt", &["data"]),
        attempt(
            "symlink final component",
            format!("ln -sf {h}/sayri-outside/victim.txt notes.md; printf OWNED > notes.md"),
            denied,
        ),
        attempt(
            "dangling symlink creates outside file",
            format!("ln -sf {h}/sayri-outside/not-yet.txt draft.txt; printf NEW > draft.txt"),
            denied,
        ),
        attempt(
            "symlinked ancestor",
            format!("ln -sfn {h}/sayri-outside link; mkdir -p link/newdir && printf X > link/newdir/f.txt"),
            denied,
        ),
        attempt(
            "autostart through symlink",
            format!("ln -sfn {h}/.config/autostart autostart; printf '[Desktop Entry]\\nExec=id\\n' > autostart/x.desktop"),
            denied,
        ),
        attempt(
            "read through symlink",
            format!("ln -sfn {h}/.ssh keys; cat keys/id_ed25519"),
            &["Permission denied"],
        ),
        attempt(
            "hard link to outside file",
            format!("ln {h}/sayri-outside/victim.txt hard.txt"),
            &["Invalid cross-device link", "Operation not permitted"],
        ),
        attempt(
            "rename workspace file outside",
            format!("echo y > m2 && mv m2 {h}/sayri-outside/m2"),
            &["Permission denied", "Read-only file system", "Invalid cross-device link"],
        ),
        attempt("state dir shows no secrets", format!("ls -A {}", f.state.display()), &["sandboxes"]),
    ]);
    run_all(&f, "2", &[], &attempts);
    l.assert_untouched();
    f.victim_intact();
    assert!(!f.outside.join("not-yet.txt").exists());
    assert!(!f.outside.join("newdir").exists());
    assert!(!f.outside.join("m2").exists());
    assert!(!f.home.join(".config/autostart/x.desktop").exists());
    // The workspace persists between runs and belongs to the user.
    let o = f.run("2", &[], "cat mine.txt");
    assert_eq!(o.output.trim(), "data");
    assert!(f.workspace().join("mine.txt").exists());
}

#[test]
fn level2_escapes_are_blocked_as_root() {
    level2(User::Root);
}

#[test]
fn level2_escapes_are_blocked_as_unprivileged_user() {
    level2(User::Nobody);
}

#[test]
fn level2_refuses_a_workspace_that_exposes_protected_paths() {
    let f = Fixture::new(User::Root);
    let ws = f.home.display().to_string();
    let o = f.run("2", &["--workspace", &ws], "echo ran");
    assert_eq!(o.status, "denied");
    assert_eq!(o.exit_code, Some(126));
    assert!(o.output.contains("contains the protected path"), "{o:?}");
    let inside = format!("{}/.ssh/ws", f.home.display());
    let o = f.run("2", &["--workspace", &inside], "echo ran");
    assert_eq!(o.status, "denied");
    assert!(!o.output.contains("ran"));
}
