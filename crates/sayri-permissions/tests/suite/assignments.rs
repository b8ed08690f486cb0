//! `NAME=value` before a command is not part of the matched text, but assignments that change
//! what runs (`LD_*`, `PATH`, `BASH_ENV`, substitutions, …) ask.

use super::common::{ALLOW_ALL, L3, check_table};
use sayri_permissions::Effect::{Allow, Ask, Deny};
use sayri_protocol::SandboxLevel;

#[test]
fn leading_assignments_are_not_matched_but_dangerous_ones_ask() {
    let set1 = r#"[{"action":"shell","resource":"*","effect":"allow"},
      {"action":"shell","resource":"aws *","effect":"ask"},
      {"action":"shell","resource":"terraform destroy*","effect":"deny"}]"#;
    check_table(
        set1,
        L3,
        &[
            (
                "1",
                "AWS_PROFILE=prod aws ec2 terminate-instances --instance-ids i-0abc",
                Ask,
            ),
            ("2", "TF_LOG=debug terraform destroy -auto-approve", Deny),
            ("3", "A=1 B=2 terraform destroy", Deny),
        ],
    );
    let set2 = r#"[{"action":"shell","resource":"*","effect":"ask"},
      {"action":"shell","resource":"npm --version","effect":"allow"},
      {"action":"shell","resource":"ls *","effect":"allow"}]"#;
    check_table(
        set2,
        L3,
        &[
            ("4", "npm --version", Allow),
            ("5", "CI=1 npm --version", Allow),
            ("6", "X=`touch /tmp/sayri-pwn` npm --version", Ask),
            ("7", "X=$(touch /tmp/sayri-pwn) npm --version", Ask),
            ("8", "NODE_OPTIONS=--require=/tmp/p.cjs npm --version", Ask),
            ("9", "LD_PRELOAD=/tmp/x.so ls -la", Ask),
            ("10", "PATH=/tmp/evil:$PATH ls -la", Ask),
            ("11", "BASH_ENV=/tmp/rc bash -c 'ls -la'", Ask),
        ],
    );
    // The substitution inside an assignment is itself a subject: a deny on it wins.
    let touch_denied = r#"[{"action":"shell","resource":"*","effect":"allow"},
      {"action":"shell","resource":"touch *","effect":"deny"}]"#;
    check_table(
        touch_denied,
        L3,
        &[("6/deny", "X=`touch /tmp/sayri-pwn` npm --version", Deny)],
    );
}

#[test]
fn dangerous_assignments_ask() {
    check_table(
        ALLOW_ALL,
        L3,
        &[
            ("export-path", "export PATH=/tmp:$PATH; ls", Ask),
            ("standalone-path", "PATH=/tmp/evil; ls", Ask),
            (
                "git-ssh-command",
                "GIT_SSH_COMMAND='sh -c id' git fetch",
                Ask,
            ),
            ("env-ld-preload", "env LD_PRELOAD=/x.so ls", Ask),
            ("npm-config", "npm_config_script_shell=/tmp/x npm test", Ask),
            ("lowercase-ld", "ld_preload=/x.so ls", Ask),
            ("harmless", "RUST_LOG=debug cargo test", Allow),
            ("harmless-env", "env CI=1 npm test", Allow),
        ],
    );
    // `sudo` passes its assignments on too (at level 4: level 3 refuses `sudo` outright).
    check_table(
        ALLOW_ALL,
        SandboxLevel::HostRoot,
        &[("sudo-ld-library", "sudo LD_LIBRARY_PATH=/x ls", Ask)],
    );
}
