//! Property: composing an allowed command with a denied one — any separator, any wrapper stack,
//! any quoting of the command word — never yields `allow`.

use super::common::decide_at;
use proptest::prelude::*;
use sayri_permissions::Effect;
use sayri_protocol::SandboxLevel;

const RULES: &str = r#"[
  {"action":"shell","resource":"*","effect":"allow"},
  {"action":"shell","resource":"rm *","effect":"deny"},
  {"action":"shell","resource":"git clean*","effect":"deny"},
  {"action":"shell","resource":"chmod *","effect":"deny"}]"#;

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn allowed() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "ls -la",
        "echo hi",
        "git status",
        "cat README.md",
        "true",
        "cd /tmp",
        "make -j2",
        "printf 'a b'",
        "grep -n x file",
    ])
    .prop_map(String::from)
}

fn denied() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        ("rm", "-rf /tmp/sayri-x"),
        ("git", "clean -fdx"),
        ("dd", "if=/dev/zero of=/dev/sdz"),
        ("chmod", "-R 777 /home/u"),
        ("mkfs.ext4", "/dev/sdz1"),
    ]);
    let spelling = 0usize..8;
    (word, spelling).prop_map(|((prog, args), how)| {
        let w = match how {
            0 => prog.to_string(),
            1 => format!("\\{prog}"),
            2 => format!("'{prog}'"),
            3 => format!("\"{prog}\""),
            4 => format!("/usr/bin/{prog}"),
            5 => {
                // Line continuation inside the program name.
                let (a, b) = prog.split_at(1);
                format!("{a}\\\n{b}")
            }
            6 => format!("$'{prog}'"),
            _ => {
                let (a, b) = prog.split_at(1);
                format!("{a}''{b}")
            }
        };
        format!("{w} {args}")
    })
}

fn wrap(cmd: String, how: usize) -> String {
    match how {
        0 => format!("sudo {cmd}"),
        1 => format!("env -i PATH=/usr/bin {cmd}"),
        2 => format!("nice -n 5 {cmd}"),
        3 => format!("timeout 5 {cmd}"),
        4 => format!("nohup {cmd}"),
        5 => format!("command {cmd}"),
        6 => format!("stdbuf -o0 {cmd}"),
        7 => format!("busybox {cmd}"),
        8 => format!("time {cmd}"),
        9 => format!("setsid {cmd}"),
        10 => format!("ionice -c3 {cmd}"),
        11 => format!("doas {cmd}"),
        12 => format!("flock /tmp/l {cmd}"),
        13 => format!("bash -c {}", quote(&cmd)),
        14 => format!("sh -c {}", quote(&cmd)),
        15 => format!("eval {}", quote(&cmd)),
        // The spaces keep `$( (…) )` a command substitution (`$((…))` is arithmetic).
        16 => format!("echo $( {cmd} )"),
        17 => format!("( {cmd} )"),
        18 => format!("{{ {cmd}; }}"),
        19 => format!("echo `{cmd}`"),
        20 => format!("cat <({cmd})"),
        21 => format!("if true; then {cmd}; fi"),
        22 => format!("taskset -c 0 {cmd}"),
        23 => format!("exec {cmd}"),
        24 => format!("watch -n 1 {}", quote(&cmd)),
        25 => format!("su -c {}", quote(&cmd)),
        26 => format!("systemd-run --user {cmd}"),
        27 => format!("bash <<< {}", quote(&cmd)),
        _ => format!("chrt -f 1 {cmd}"),
    }
}

fn composed() -> impl Strategy<Value = String> {
    let seps = prop::sample::select(vec!["; ", " && ", " || ", " | ", " & ", "\n", " |& ", ";"]);
    (
        allowed(),
        denied(),
        prop::collection::vec(0usize..29, 0..3),
        seps,
        any::<bool>(),
    )
        .prop_map(|(ok, bad, wrappers, sep, bad_first)| {
            let bad = wrappers.into_iter().fold(bad, wrap);
            if bad_first {
                format!("{bad}{sep}{ok}")
            } else {
                format!("{ok}{sep}{bad}")
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn allowed_plus_denied_is_never_allowed(cmd in composed()) {
        let d = decide_at(SandboxLevel::HostUser, RULES, &cmd);
        prop_assert_ne!(d.effect, Effect::Allow, "`{}` was allowed: {}", cmd, d.reason);
    }
}

#[test]
fn the_allowed_half_alone_is_allowed() {
    // Control: the property is not vacuous — the allowed halves do pass on their own.
    for ok in [
        "ls -la",
        "echo hi",
        "git status",
        "cat README.md",
        "cd /tmp; make -j2",
    ] {
        assert_eq!(
            decide_at(SandboxLevel::HostUser, RULES, ok).effect,
            Effect::Allow,
            "{ok}"
        );
    }
}
