//! Red-team regressions: shell texts that make real bash run a denied program while the
//! analysis once let them through as `allow`.
//!
//! Every case is first run by the real `/bin/bash` with a `rm` on `PATH` that only records its
//! arguments, proving the text really runs `rm`; then the engine must not allow it under
//! `[shell * allow, shell rm * deny]`.

use super::common::decide_at;
use sayri_permissions::Effect;
use sayri_protocol::SandboxLevel;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

const RULES: &str = r#"[
    {"action": "shell", "resource": "*", "effect": "allow"},
    {"action": "shell", "resource": "rm", "effect": "deny"},
    {"action": "shell", "resource": "rm *", "effect": "deny"}
]"#;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A scratch directory with `bin/rm` that appends its arguments to `log`.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sayri-evasion-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let shim = dir.join("bin/rm");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\n",
            dir.join("log").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Runs `text` with the real bash (only `rm` is faked) and says whether `rm` ran.
fn bash_runs_rm(dir: &Path, text: &str) -> bool {
    let _ = std::fs::remove_file(dir.join("log"));
    let status = Command::new("/bin/bash")
        .arg("-c")
        .arg(text)
        .current_dir(dir)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", dir.join("bin").display()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(status.is_ok(), "cannot run bash for {text:?}");
    dir.join("log").exists()
}

fn assert_not_allowed(cases: &[&str], expect_deny: bool) {
    let dir = scratch();
    let mut failures = Vec::new();
    for text in cases {
        assert!(
            bash_runs_rm(&dir, text),
            "bash does not run rm for {text:?}; the case proves nothing"
        );
        let d = decide_at(SandboxLevel::HostUser, RULES, text);
        let bad = if expect_deny {
            d.effect != Effect::Deny
        } else {
            d.effect == Effect::Allow
        };
        if bad {
            failures.push(format!("{text:?} → {}: {}", d.effect, d.reason));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "evasions:\n{}", failures.join("\n"));
}

#[test]
fn backquotes_the_grammar_leaves_as_text_are_analysed() {
    // tree-sitter-bash keeps these backquotes as plain text; bash runs them.
    assert_not_allowed(
        &[
            "echo ${x:=`rm victim`}",
            "echo ${x:-`rm victim`}",
            "echo \"${x:-`rm victim`}\"",
            "[[ -n ${x:-`rm victim`} ]]",
            "x[`rm victim`]=1",
            "cat <<EOF\n`rm victim`\nEOF",
            "cat <<-EOF\n\t`rm victim`\n\tEOF",
            "cat <<EOF | cat\n`rm victim`\nEOF",
            "cat <<EOF\n${x:-`rm victim`}\nEOF",
        ],
        true,
    );
}

#[test]
fn quoted_backquotes_stay_literal() {
    // Single quotes, escapes and quoted heredoc delimiters keep backquotes literal: no `rm`.
    for text in [
        "echo '`rm victim`'",
        "echo \\`rm victim\\`",
        "cat <<'EOF'\n`rm victim`\nEOF",
        "echo \"\\`rm victim\\`\"",
    ] {
        let d = decide_at(SandboxLevel::HostUser, RULES, text);
        assert_eq!(d.effect, Effect::Allow, "{text:?}: {}", d.reason);
    }
}

#[test]
fn array_subscripts_that_run_substitutions_are_not_allowed() {
    // Assignment subscripts are expanded; quoted `a[$(…)]` text is expanded again by builtins
    // that evaluate it as a variable reference.
    assert_not_allowed(&["a[$(rm victim)]=1"], true);
    assert_not_allowed(
        &[
            "declare -a a; a['$(rm victim)']=1",
            "printf -v 'a[$(rm victim)]' x",
            "read 'a[$(rm victim)]' <<< x",
            "[[ -v 'a[$(rm victim)]' ]]",
            "test -v 'a[$(rm victim)]'",
            "let 'a[$(rm victim)]=1'",
        ],
        false,
    );
}

#[test]
fn wrapper_options_without_a_separate_argument_do_not_hide_the_program() {
    assert_not_allowed(
        &[
            "env --default-signal rm victim",
            "env --ignore-signal rm victim",
            "env --block-signal rm victim",
            "echo | xargs --eof rm victim",
            "unshare --propagation private -m rm victim",
        ],
        true,
    );
}

#[test]
fn command_options_after_positional_arguments_are_seen() {
    // `script` and `su` parse options anywhere (GNU getopt permutation).
    assert_not_allowed(&["script -q /dev/null -c 'rm victim'"], true);
    for text in ["su root -c 'rm victim'", "runuser root -c 'rm victim'"] {
        let d = decide_at(SandboxLevel::HostUser, RULES, text);
        assert_eq!(d.effect, Effect::Deny, "{text:?}: {}", d.reason);
    }
}

#[test]
fn builtins_that_run_command_strings_are_not_allowed() {
    assert_not_allowed(
        &[
            "mapfile -C 'rm' -c 1 x <<< victim",
            "compgen -C 'rm victim' x",
        ],
        true,
    );
    assert_not_allowed(&["history -s 'rm victim'; fc -s"], false);
}

/// Runs `f` on a thread with the default stack of a tokio worker (2 MiB).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .expect("analysis overflowed a 2 MiB stack")
}

#[test]
fn hostile_nesting_neither_overflows_the_stack_nor_is_allowed() {
    let cases = [
        format!("{}rm x{}", "$(".repeat(3000), ")".repeat(3000)),
        format!("echo {}y{}", "${x:-".repeat(3000), "}".repeat(3000)),
        format!("{}ls{}", "{ ".repeat(3000), "; }".repeat(3000)),
        format!("{}ls{}", "(".repeat(5000), ")".repeat(5000)),
        format!("echo {}`rm x`{}", "${x:-".repeat(3000), "}".repeat(3000)),
    ];
    for text in cases {
        let shown = text[..40].to_string();
        let d = on_small_stack(move || decide_at(SandboxLevel::HostUser, RULES, &text));
        assert_ne!(d.effect, Effect::Allow, "{shown}…: {}", d.reason);
    }
}

#[test]
fn deepest_analysed_nesting_fits_a_small_stack() {
    // Just inside the depth limit the text is still analysed (rm found and denied).
    let mut levels = 1;
    loop {
        let text = format!("{}rm x{}", "$(".repeat(levels + 1), ")".repeat(levels + 1));
        let a = sayri_permissions::shell::analyse(&text);
        if a.opaque.iter().any(|r| r.contains("nested more than")) {
            break;
        }
        levels += 1;
    }
    assert!(levels > 20, "only {levels} levels are analysed");
    let text = format!("{}rm x{}", "$(".repeat(levels), ")".repeat(levels));
    let d = on_small_stack(move || decide_at(SandboxLevel::HostUser, RULES, &text));
    assert_eq!(d.effect, Effect::Deny, "{}", d.reason);
}

#[test]
fn protected_paths_are_found_through_globs_dot_segments_procfs_and_cd() {
    // Baseline only: reading /etc/shadow is denied however the path is spelled.
    for text in [
        "cat /etc/shad?w",
        "cat /etc/s*w",
        "cat /etc/shado[w]",
        "cat /etc/*",
        "cat /*/shadow",
        "cat /etc/./shadow",
        "cat //etc//shadow",
        "cat /etc/../etc/shadow",
        "cat /proc/self/root/etc/shadow",
        "cat /proc/1/root/etc/shadow",
        "cd /etc && cat shadow",
        "cd /etc; cat ./shadow",
        "echo x > /dev/s?a",
        "echo x > /dev/../dev/sda",
    ] {
        let d = decide_at(SandboxLevel::HostUser, "[]", text);
        assert_eq!(d.effect, Effect::Deny, "{text:?}: {}", d.reason);
    }
    // The baseline asks before SSH private keys, also through globs and `..`.
    for text in ["cat ~/.ss?/id_rsa", "cat /home/u/.ssh/../.ssh/id_rsa"] {
        let d = decide_at(SandboxLevel::HostUser, "[]", text);
        assert_eq!(d.effect, Effect::Ask, "{text:?}: {}", d.reason);
    }
    // Globs and paths that cannot name a protected file stay allowed.
    for text in [
        "cat /etc/shado[!w]",
        "cat /etc/pass*",
        "cat *.txt",
        "cat /tmp/*",
        "cd /tmp && cat notes.txt",
        "ls /etc",
        "cat /proc/self/status",
    ] {
        let d = decide_at(SandboxLevel::HostUser, "[]", text);
        assert_eq!(d.effect, Effect::Allow, "{text:?}: {}", d.reason);
    }
}

#[test]
fn every_spelling_of_a_root_system_or_home_wipe_is_denied_by_the_baseline() {
    for text in [
        "rm -rf /*",
        "rm -rf //",
        "rm -rf /.",
        "rm --recursive --force /",
        "rm -rf /usr /etc",
        "rm -rf ${HOME}",
        "rm -rf /home/*",
        "cd /tmp && rm -r -f /usr/../",
        "sudo rm -rf -- /",
    ] {
        let d = decide_at(
            SandboxLevel::HostUser,
            r#"[{"action":"shell","resource":"*","effect":"allow"}]"#,
            text,
        );
        assert_eq!(d.effect, Effect::Deny, "{text:?}: {}", d.reason);
        assert_eq!(d.source, "baseline", "{text:?}");
    }
    let d = decide_at(SandboxLevel::HostUser, "[]", "rm -rf ./target /tmp/build");
    assert_eq!(d.effect, Effect::Allow, "{}", d.reason);
}
