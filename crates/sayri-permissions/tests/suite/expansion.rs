//! Expansions in command words and targets: `$IFS`, brace expansion, ANSI-C quoting, tilde,
//! `..` and globs are expanded as bash expands them, so a denied program or a denied read target
//! reached through one is denied (or asked, where the result is only known at run time), never
//! allowed; quoted text that bash leaves alone stays literal.
//!
//! Every spelling is first run by the real `/bin/bash` in a scratch directory (its `bin/rm`
//! only records that it ran; `secret/key.txt` holds a canary), proving that bash really runs
//! `rm` or really reads the key; then the engine judges it.

use super::common::decide_at;
use sayri_permissions::Effect;
use sayri_protocol::SandboxLevel;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Everything allowed except `rm` and reading the scratch key.
const RULES: &str = r#"[
    {"action": "shell", "resource": "*", "effect": "allow"},
    {"action": "shell", "resource": "rm", "effect": "deny"},
    {"action": "shell", "resource": "rm *", "effect": "deny"},
    {"action": "read", "resource": "*secret/key.txt", "effect": "deny"}
]"#;

const CANARY: &str = "sayri-expansion-canary";

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A scratch directory: `bin/rm` appends to `log`; `secret/key.txt` holds the canary; `x/` is
/// an empty directory (for `x/..`).
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sayri-expansion-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for d in ["bin", "secret", "x"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let shim = dir.join("bin/rm");
    std::fs::write(
        &shim,
        format!("#!/bin/sh\necho ran >> '{}'\n", dir.join("log").display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("secret/key.txt"), CANARY).unwrap();
    dir
}

/// Runs `text` with the real bash in `dir` (`HOME` is `dir`, `PATH` starts with `dir/bin`):
/// whether the fake `rm` ran, and the standard output.
fn bash(dir: &Path, text: &str) -> (bool, String) {
    let _ = std::fs::remove_file(dir.join("log"));
    let out = Command::new("/bin/bash")
        .arg("-c")
        .arg(text)
        .current_dir(dir)
        .env("HOME", dir)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", dir.join("bin").display()),
        )
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash for {text:?}: {e}"));
    (
        dir.join("log").exists(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Each spelling must make bash do the forbidden thing (`proves`) and the engine must give
/// `expected` (deny, or ask where the value is only known at run time).
fn check(cases: &[(&str, Effect)], proves: fn(bool, &str) -> bool) -> usize {
    let dir = scratch();
    let mut failures = Vec::new();
    for (text, expected) in cases {
        let (ran, out) = bash(&dir, text);
        assert!(
            proves(ran, &out),
            "bash does not do it for {text:?}; the case proves nothing"
        );
        let d = decide_at(SandboxLevel::HostUser, RULES, text);
        if d.effect != *expected {
            failures.push(format!(
                "{text:?} → {} (expected {expected}): {}",
                d.effect, d.reason
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} spellings wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    cases.len()
}

#[test]
fn a_denied_program_reached_through_an_expansion_is_denied() {
    use Effect::{Ask, Deny};
    let n = check(
        &[
            // $IFS and ${IFS…}
            ("rm${IFS}victim", Deny),
            ("rm${IFS}-f${IFS}victim", Deny),
            ("rm$IFS'victim'", Deny),
            ("${IFS}rm victim", Deny),
            ("rm${IFS:0:1}victim", Deny),
            ("rm${IFS::1}victim", Deny),
            ("rm${IFS%??}victim", Deny),
            ("bash -c 'rm${IFS}victim'", Deny),
            // brace expansion
            ("{rm,victim}", Deny),
            ("{rm,-f,victim}", Deny),
            ("{r,}m victim", Deny),
            ("r{m,} victim", Deny),
            ("{rm,victim,}", Deny),
            ("true && {rm,victim}", Deny),
            ("echo a; {rm,victim}", Deny),
            // ANSI-C quoting
            ("$'\\x72\\x6d' victim", Deny),
            ("$'\\162\\155' victim", Deny),
            ("$'r\\u006d' victim", Deny),
            ("{$'\\x72m',victim}", Deny),
            // `..`, `.` and tilde in a path to the program
            ("./bin/../bin/rm victim", Deny),
            ("./bin/./rm victim", Deny),
            ("~/bin/rm victim", Deny),
            ("~/x/../bin/rm victim", Deny),
            // globs naming the program
            ("./b?n/r? victim", Deny),
            ("./bin/r[m] victim", Deny),
            ("./bin/r* victim", Deny),
            ("./*/rm victim", Deny),
            // known only at run time: asked
            ("x=$IFS; rm${x}victim", Ask),
            ("$(printf rm) victim", Ask),
            ("IFS=,; c=rm,victim; $c", Ask),
        ],
        |ran, _| ran,
    );
    assert!(n >= 20, "{n} spellings");
}

#[test]
fn a_denied_read_target_reached_through_an_expansion_is_denied() {
    use Effect::{Ask, Deny};
    let n = check(
        &[
            ("cat secret/{key.txt,nothing}", Deny),
            ("cat {./secret,/nonexistent}/key.txt", Deny),
            ("cat secret/key{.txt,}", Deny),
            ("cat secret/ke{y,z}.txt", Deny),
            ("cat $'secret/\\x6bey.txt'", Deny),
            ("cat secret/key.txt${IFS}", Deny),
            ("cat ${IFS}secret/key.txt", Deny),
            ("cat secret/k?y.txt", Deny),
            ("cat secret/*.txt", Deny),
            ("cat secret/[k]ey.txt", Deny),
            ("cat s*/key.txt", Deny),
            ("cat ~/secret/key.txt", Deny),
            ("cat secret/../secret/key.txt", Deny),
            ("cat x/../secret/key.txt", Deny),
            ("cat ./secret//key.txt", Deny),
            ("cd secret && cat key.txt", Deny),
            ("cd ~/secret && cat ./key.txt", Deny),
            ("cat \"$HOME/secret/key.txt\"", Deny),
            // The run-time part cannot change what the literal tail names.
            ("cat ../\"${PWD##*/}\"/secret/key.txt", Deny),
            ("cat < secret/k*.txt", Deny),
            // known only at run time: asked
            ("cat \"$(echo secret)/key.txt\"", Ask),
            ("f=key; cat secret/$f.txt", Ask),
            ("cat secret/$(echo key).txt", Ask),
        ],
        |_, out| out.contains(CANARY),
    );
    assert!(n >= 10, "{n} spellings");
}

#[test]
fn quoted_text_bash_does_not_expand_stays_literal() {
    let dir = scratch();
    for text in [
        "echo 'rm${IFS}victim'",
        "echo \"{rm,victim}\"",
        "echo '{rm,victim}'",
        "echo \\{rm,victim\\}",
        "echo \"rm\\${IFS}victim\"",
        "printf '%s\\n' '$IFS' 'rm'",
        "echo 'cat secret/k?y.txt'",
        "echo \"secret/{key.txt,x}\"",
        "echo secret/key.txt",
        "echo ~/secret/key.txt",
    ] {
        let (ran, out) = bash(&dir, text);
        assert!(!ran && !out.contains(CANARY), "{text:?} is not harmless");
        let d = decide_at(SandboxLevel::HostUser, RULES, text);
        assert_eq!(d.effect, Effect::Allow, "{text:?}: {}", d.reason);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
