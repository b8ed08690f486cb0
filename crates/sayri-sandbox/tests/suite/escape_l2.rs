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

/// A level-2 command given what it may read (`--read`, as an MCP server is) reads the system,
/// its workspace and those paths, and nothing else of the home: not a sibling directory, not
/// the home itself, not through a symlink planted in its workspace; the hidden paths stay
/// hidden even inside a readable path.
fn level2_reads_only_what_it_was_given(user: User) {
    let f = Fixture::new(user);
    let h = f.home.display().to_string();
    let given = f.home.join("given");
    std::fs::create_dir_all(&given).unwrap();
    std::fs::write(given.join("note.txt"), "given text").unwrap();
    if user == User::Nobody {
        std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&given)
            .status()
            .unwrap();
    }
    let read = ["--read", given.to_str().unwrap()];
    let o = f.run("2", &[], &format!("cat {h}/given/note.txt"));
    assert_eq!(o.output.trim(), "given text", "without --read: {o:?}");
    let o = f.run(
        "2",
        &read,
        &format!("cat {h}/given/note.txt; head -c 4 /etc/passwd; echo"),
    );
    assert!(o.output.contains("given text"), "{o:?}");
    assert!(
        o.output.contains("root"),
        "the system stays readable: {o:?}"
    );
    let denied = &["Permission denied"][..];
    run_all(
        &f,
        "2",
        &read,
        &[
            attempt(
                "a sibling of the given path",
                format!("cat {h}/sayri-outside/victim.txt"),
                denied,
            ),
            attempt("the home itself", format!("ls {h}"), denied),
            attempt(
                "a symlink in the workspace to outside",
                format!("ln -sfn {h}/sayri-outside out; cat out/victim.txt"),
                denied,
            ),
            attempt("/var", "ls /var/tmp", denied),
            attempt(
                "the workspace stays writable",
                "echo w > w.txt && cat w.txt",
                &["w"],
            ),
        ],
    );
    let o = f.run(
        "2",
        &["--read", &h],
        &format!("cat {h}/.ssh/id_ed25519; cat {h}/sayri-outside/victim.txt"),
    );
    assert!(!o.output.contains("PRIVATE KEY"), "{o:?}");
    assert!(o.output.contains("original"), "{o:?}");
}

#[test]
fn level2_reads_only_what_it_was_given_as_root() {
    level2_reads_only_what_it_was_given(User::Root);
}

#[test]
fn level2_reads_only_what_it_was_given_as_unprivileged_user() {
    level2_reads_only_what_it_was_given(User::Nobody);
}
