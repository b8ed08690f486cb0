//! A sandboxed command must not type into the user's terminal (`TIOCSTI`) or paste into the
//! console (`TIOCLINUX`), as root and as an unprivileged user.
//!
//! * The levels 1–2 seccomp filter refuses both ioctls with `EPERM` *on a real controlling
//!   terminal*, also with bits set above the low 32 of the request (the kernel ignores them, so
//!   such a request is the same call): a child that owns a pty gets the filter installed and
//!   tries; without the filter the same child types into the pty.
//! * In an interactive `bash` on a pty (its controlling terminal), a probe run directly types a
//!   `touch` command the shell then runs (the positive control — skipped rows when the kernel
//!   refuses legacy `TIOCSTI`), while the same probe through `sayri-sandbox run` at levels 1, 2
//!   and 3 finds no terminal (`/dev/tty` cannot be opened: no controlling terminal, or Landlock)
//!   and no marker appears; at levels 1–2 even a request with high bits set is refused by
//!   seccomp, not merely by the missing terminal.

use super::common::{NOBODY, User};
use sayri_testkit::terminal::{Pty, TIOCSTI_PROBE_PY, own_terminal};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// `inject MARKER MODE`: MODE is `tiocsti`, `hibit` (TIOCSTI with bit 32 set), `linux` (the
/// TIOCLINUX paste subcode) or `linux-hibit`. Tries fds 0–2 (tty or not) and `/dev/tty`.
const INJECT_C: &str = r#"#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char *ename(int e) {
    switch (e) {
    case EPERM: return "EPERM";
    case ENOTTY: return "ENOTTY";
    case EIO: return "EIO";
    case EINVAL: return "EINVAL";
    case ENXIO: return "ENXIO";
    case EACCES: return "EACCES";
    default: return strerror(e);
    }
}

static void attempt(int fd, const char *label, unsigned long req, const char *payload, int paste) {
    if (paste) {
        char sub[2] = {3, 0}; /* TIOCL_PASTESEL */
        if (ioctl(fd, req, sub) == 0) printf("%s: PASTED\n", label);
        else printf("%s: %s\n", label, ename(errno));
        return;
    }
    for (const char *p = payload; *p; p++) {
        if (ioctl(fd, req, p) != 0) {
            printf("%s: %s\n", label, ename(errno));
            return;
        }
    }
    printf("%s: INJECTED\n", label);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    char payload[600];
    snprintf(payload, sizeof payload, "touch %s\n", argv[1]);
    int paste = strncmp(argv[2], "linux", 5) == 0;
    unsigned long req = paste ? TIOCLINUX : TIOCSTI;
    if (strstr(argv[2], "hibit")) req |= 1UL << 32;
    for (int fd = 0; fd < 3; fd++) {
        char label[8];
        snprintf(label, sizeof label, "fd%d", fd);
        attempt(fd, label, req, payload, paste);
    }
    int t = open("/dev/tty", O_RDWR | O_NOCTTY);
    if (t < 0) {
        printf("/dev/tty: open %s\n", ename(errno));
    } else {
        attempt(t, "/dev/tty", req, payload, paste);
        close(t);
    }
    fflush(stdout);
    return 0;
}
"#;

/// The probe and the compiled injector in a directory every user can read, and a marker
/// directory every user can write.
struct Programs {
    dir: tempfile::TempDir,
    probe: PathBuf,
    inject: PathBuf,
    markers: PathBuf,
}

fn programs() -> Programs {
    let dir = tempfile::Builder::new()
        .prefix("sy-tty-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let probe = dir.path().join("probe.py");
    std::fs::write(&probe, TIOCSTI_PROBE_PY).unwrap();
    let src = dir.path().join("inject.c");
    std::fs::write(&src, INJECT_C).unwrap();
    let inject = dir.path().join("inject");
    let cc = Command::new("cc")
        .arg("-O0")
        .arg("-o")
        .arg(&inject)
        .arg(&src)
        .output()
        .expect("a C compiler (`cc`, Debian package build-essential) builds the test program");
    assert!(cc.status.success(), "cc: {cc:?}");
    for f in [&probe, &inject] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let markers = dir.path().join("markers");
    std::fs::create_dir(&markers).unwrap();
    std::fs::set_permissions(&markers, std::fs::Permissions::from_mode(0o777)).unwrap();
    Programs {
        dir,
        probe,
        inject,
        markers,
    }
}

/// Whether the kernel lets an unprivileged process use `TIOCSTI` on its own terminal.
fn kernel_allows_legacy_tiocsti() -> bool {
    std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").map_or(true, |v| v.trim() == "1")
}

/// `as_uid` for [`own_terminal`].
fn uid(user: User) -> Option<u32> {
    (user == User::Nobody).then_some(NOBODY)
}

/// A pty for `user` (its slave owned by that user).
fn pty_for(user: User) -> Pty {
    let p = Pty::open();
    if let Some(id) = uid(user) {
        p.chown_slave(id);
    }
    p
}

/// Runs `inject MARKER MODE` with a pty as its controlling terminal and stdio, the levels 1–2
/// seccomp filters installed when `filtered`; returns its output.
fn inject_on_a_terminal(p: &Programs, user: User, mode: &str, filtered: bool) -> String {
    let pty = pty_for(user);
    let progs = sayri_sandbox::seccomp::build().unwrap();
    let marker = p.markers.join(format!("direct-{mode}-{filtered}"));
    let mut c = Command::new(&p.inject);
    c.arg(&marker).arg(mode).env_clear();
    let (i, o, e) = pty.stdio();
    c.stdin(i).stdout(o).stderr(e);
    // SAFETY: `own_terminal` makes async-signal-safe calls only; installing a seccomp filter
    // is prctl/seccomp syscalls on programs compiled before the fork.
    unsafe {
        own_terminal(&mut c, uid(user));
        if filtered {
            c.pre_exec(move || {
                sayri_sandbox::seccomp::install(&progs).map_err(std::io::Error::other)
            });
        }
    }
    let status = c.status().unwrap();
    assert!(status.success(), "{mode}: {status:?}");
    assert!(
        pty.wait_for("/dev/tty: ", Duration::from_secs(5)),
        "{}",
        pty.screen()
    );
    assert!(
        !marker.exists(),
        "nothing reads the pty's input, so nothing ran"
    );
    let injected = pty.input_queue_len() > 0;
    let out = pty.screen();
    assert_eq!(
        injected,
        out.contains("INJECTED"),
        "the input queue holds what was typed: {out}"
    );
    out
}

fn direct_filter_check(user: User) {
    let p = programs();
    for mode in ["tiocsti", "hibit", "linux", "linux-hibit"] {
        let out = inject_on_a_terminal(&p, user, mode, true);
        for target in ["fd0", "fd1", "fd2", "/dev/tty"] {
            assert!(
                out.contains(&format!("{target}: EPERM")),
                "{user:?} {mode}: {target} not refused by seccomp:\n{out}"
            );
        }
        assert!(
            !out.contains("INJECTED") && !out.contains("PASTED"),
            "{out}"
        );
    }
    // Control: the same program without the filter does type into its terminal, with or
    // without high bits (so the high-bit request is a real attack, not a no-op).
    if kernel_allows_legacy_tiocsti() {
        for mode in ["tiocsti", "hibit"] {
            let out = inject_on_a_terminal(&p, user, mode, false);
            assert!(
                out.contains("/dev/tty: INJECTED"),
                "{user:?} {mode}:\n{out}"
            );
        }
    }
    drop(p.dir);
}

#[test]
fn seccomp_refuses_tiocsti_and_tioclinux_on_a_real_terminal_whatever_the_high_bits_as_root() {
    direct_filter_check(User::Root);
}

#[test]
fn seccomp_refuses_tiocsti_and_tioclinux_on_a_real_terminal_whatever_the_high_bits_as_nobody() {
    direct_filter_check(User::Nobody);
}

// ---------------------------------------------------------------------------------------------
// Probes typed into an interactive shell

/// An interactive `bash` on a pty that is its controlling terminal.
struct Shell {
    child: Child,
    pty: Pty,
    keyboard: std::fs::File,
    next: u32,
}

impl Shell {
    fn start(user: User, home: &Path) -> Shell {
        let pty = pty_for(user);
        let mut c = Command::new("bash");
        c.args(["--norc", "--noprofile", "-i"])
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", home)
            .env("TERM", "dumb")
            .env("PS1", "$ ")
            .env("LANG", "C");
        let (i, o, e) = pty.stdio();
        c.stdin(i).stdout(o).stderr(e);
        // SAFETY: `own_terminal` makes async-signal-safe calls only.
        unsafe { own_terminal(&mut c, uid(user)) };
        let child = c.spawn().unwrap();
        let keyboard = pty.keyboard();
        let mut shell = Shell {
            child,
            pty,
            keyboard,
            next: 0,
        };
        shell.sync();
        shell
    }

    /// Types `line`, waits until it finished, then until the shell has read and run whatever
    /// the line pushed into the terminal's input (it comes before the next typed line).
    /// Returns what the screen showed for the line.
    fn type_line(&mut self, line: &str) -> String {
        let before = self.pty.screen().len();
        self.next += 1;
        let n = self.next;
        // The shell prints the number, not the typed `$((…))`, so the echo does not match.
        writeln!(self.keyboard, "{line}; echo __done_$(({n}+1000))__").unwrap();
        let done = format!("__done_{}__", n + 1000);
        assert!(
            self.pty.wait_for(&done, Duration::from_secs(60)),
            "{line} did not finish:\n{}",
            self.pty.screen()
        );
        self.sync();
        self.pty.screen()[before..].to_string()
    }

    fn sync(&mut self) {
        self.next += 1;
        let n = self.next;
        writeln!(self.keyboard, "echo __sync_$(({n}+1000))__").unwrap();
        let token = format!("__sync_{}__", n + 1000);
        assert!(
            self.pty.wait_for(&token, Duration::from_secs(30)),
            "the shell did not answer:\n{}",
            self.pty.screen()
        );
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `path` as one shell word (single-quoted).
fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// Results `sayri-sandbox run --json` printed on the screen: the `output` field.
fn sandbox_output(screen: &str) -> String {
    let line = screen
        .lines()
        .find(|l| l.trim_start().starts_with("{\"") && l.contains("\"status\""))
        .unwrap_or_else(|| panic!("no JSON result on the screen:\n{screen}"));
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(v["exit_code"], 0, "{v}");
    v["output"].as_str().unwrap_or_default().to_string()
}

fn interactive_rows(user: User) {
    let p = programs();
    let home = p.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let ws = p.dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    for f in [&p.probe, &p.inject] {
        std::fs::copy(f, ws.join(f.file_name().unwrap())).unwrap();
    }
    if user == User::Nobody {
        for d in [&home, &ws] {
            let st = Command::new("chown")
                .args(["-R", &format!("{NOBODY}:{NOBODY}")])
                .arg(d)
                .status()
                .unwrap();
            assert!(st.success());
        }
    }
    let mut sh = Shell::start(user, &home);
    let marker = |name: &str| p.markers.join(name);
    // Every path typed into the shell is quoted: the checkout may lie in a path with spaces.
    let bin = sh_quote(Path::new(env!("CARGO_BIN_EXE_sayri-sandbox")));
    let probe = sh_quote(&p.probe);

    // Row 1, positive control: the probe run straight from the shell types into it.
    let m = marker("control");
    sh.type_line(&format!("python3 {probe} {}", sh_quote(&m)));
    if !m.exists() {
        assert!(
            !kernel_allows_legacy_tiocsti(),
            "the kernel allows legacy TIOCSTI but the probe did not inject:\n{}",
            sh.pty.screen()
        );
        eprintln!("SKIPPED: this kernel refuses legacy TIOCSTI; the sandbox rows prove nothing");
        return;
    }
    // ... and so does a request with bit 32 set, which the kernel treats as TIOCSTI.
    let m = marker("control-hibit");
    sh.type_line(&format!("{} {} hibit", sh_quote(&p.inject), sh_quote(&m)));
    assert!(m.exists(), "{}", sh.pty.screen());

    let run = |level: &str, extra: &str| format!("{bin} run --json --level {level} {extra} --");
    let rows: Vec<(String, String, PathBuf, &[&str])> = vec![
        (
            "level 1".into(),
            format!("{} python3 {probe}", run("1", "")),
            marker("l1"),
            &[
                "not-a-tty",
                "EPERM",
                "/dev/tty: open ENXIO",
                "/dev/tty: open EACCES",
            ][..],
        ),
        (
            "level 2".into(),
            format!(
                "{} python3 probe.py",
                run("2", &format!("--workspace {}", sh_quote(&ws)))
            ),
            marker("l2"),
            &[
                "not-a-tty",
                "EPERM",
                "/dev/tty: open ENXIO",
                "/dev/tty: open EACCES",
            ][..],
        ),
        (
            "level 3".into(),
            format!("{} python3 {probe}", run("3", "")),
            marker("l3"),
            &["not-a-tty", "/dev/tty: open ENXIO"][..],
        ),
    ];
    for (what, cmd, m, allowed) in rows {
        let screen = sh.type_line(&format!("{cmd} {}", sh_quote(&m)));
        let out = sandbox_output(&screen);
        assert!(
            !m.exists(),
            "{user:?} {what}: the marker appeared:\n{screen}"
        );
        assert!(!out.contains("INJECTED"), "{user:?} {what}: {out}");
        for line in out.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                allowed.iter().any(|a| line.ends_with(a)),
                "{user:?} {what}: unexpected {line:?} in {out}"
            );
        }
        assert_eq!(out.lines().count(), 4, "{user:?} {what}: {out}");
    }
    // Row 4: the high-bit request at levels 1–2 is refused by seccomp itself (EPERM even on a
    // descriptor that is no terminal), TIOCLINUX too; at level 3 nothing filters, and the
    // missing terminal is what stops it.
    for (level, extra, inject, refused) in [
        ("1", String::new(), sh_quote(&p.inject), true),
        (
            "2",
            format!("--workspace {}", sh_quote(&ws)),
            "./inject".into(),
            true,
        ),
        ("3", String::new(), sh_quote(&p.inject), false),
    ] {
        for mode in ["hibit", "linux", "linux-hibit"] {
            let m = marker(&format!("l{level}-{mode}"));
            let screen = sh.type_line(&format!(
                "{} {inject} {} {mode}",
                run(level, &extra),
                sh_quote(&m)
            ));
            let out = sandbox_output(&screen);
            assert!(!m.exists(), "{user:?} level {level} {mode}:\n{screen}");
            let fd0 = out
                .lines()
                .find(|l| l.starts_with("fd0: "))
                .unwrap_or_default();
            assert_eq!(
                fd0 == "fd0: EPERM",
                refused,
                "{user:?} level {level} {mode}: {out}"
            );
            // No controlling terminal (ENXIO); Landlock may refuse the open first (EACCES).
            assert!(
                out.contains("/dev/tty: open ENXIO") || out.contains("/dev/tty: open EACCES"),
                "{out}"
            );
        }
    }
    // Nothing the probes pushed reached the shell: only our own lines ran.
    let entries: Vec<_> = std::fs::read_dir(&p.markers)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut entries = entries;
    entries.sort();
    assert_eq!(entries, ["control", "control-hibit"]);
}

#[test]
fn probes_through_the_sandbox_never_type_into_an_interactive_shell_as_root() {
    interactive_rows(User::Root);
}

#[test]
fn probes_through_the_sandbox_never_type_into_an_interactive_shell_as_nobody() {
    interactive_rows(User::Nobody);
}
