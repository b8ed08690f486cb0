//! On the host (levels 3–4) the baseline asks before anything that keeps running after the turn
//! or runs at the next login — whatever the agent's rules say — and a command too long to
//! review is refused without a card.

use super::common::{ALLOW_ALL, L3, check_table, decide_at};
use sayri_permissions::Effect::{Allow, Ask, Deny};
use sayri_permissions::evaluate::MAX_COMMAND_BYTES;
use sayri_permissions::plan_approvals;
use sayri_protocol::SandboxLevel;

const STARTS_OUTSIDE: &[(&str, &str)] = &[
    ("systemd-run", "systemd-run --user sleep 1000"),
    ("systemd-run-scope", "systemd-run --user --scope make"),
    ("at", "echo 'touch x' | at now + 1 minute"),
    ("batch", "batch < jobs.txt"),
    ("crontab-file", "crontab mycron"),
    ("crontab-stdin", "echo '* * * * * id' | crontab -"),
    ("nohup-background", "nohup ./server > log 2>&1 &"),
    ("setsid", "setsid -f sleep 1000"),
    ("disown", "sleep 1000 & disown"),
    ("screen", "screen -dmS s sleep 1000"),
    ("tmux", "tmux new-session -d 'sleep 1000'"),
    ("systemctl-start", "systemctl --user start x.service"),
    (
        "systemctl-enable-now",
        "systemctl --user enable --now x.service",
    ),
    ("linger", "loginctl enable-linger"),
    (
        "dbus-send",
        "dbus-send --session --dest=org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager.StartUnit string:x.service string:replace",
    ),
    (
        "gdbus",
        "gdbus call --session --dest org.freedesktop.systemd1 --object-path /org/freedesktop/systemd1 --method org.freedesktop.systemd1.Manager.StartTransientUnit x",
    ),
    (
        "busctl",
        "busctl --user call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager StartUnit ss x.service replace",
    ),
    ("autostart", "cp app.desktop ~/.config/autostart/"),
    ("autostart-file", "tee ~/.config/autostart/x.desktop < x"),
    (
        "systemd-user-unit",
        "cat > ~/.config/systemd/user/x.service",
    ),
    ("bashrc", "echo 'alias ls=rm' >> ~/.bashrc"),
    ("bashrc-relative", "cd ~ && echo 'id' >> .bashrc"),
    ("profile", "sed -i '$a id' /home/u/.profile"),
    ("zshrc", "printf 'id\\n' >> $HOME/.zshrc"),
];

#[test]
fn starting_what_outlives_the_turn_asks_on_the_host_whatever_the_rules() {
    for level in [SandboxLevel::HostUser, SandboxLevel::HostRoot] {
        let rows: Vec<(&str, &str, _)> = STARTS_OUTSIDE
            .iter()
            .map(|(id, c)| (*id, *c, Ask))
            .collect();
        check_table(ALLOW_ALL, level, &rows);
    }
    // Not "Allow always": the baseline asks every time.
    let d = decide_at(L3, ALLOW_ALL, "systemd-run --user sleep 1000");
    assert_eq!(d.source, "baseline");
    assert!(d.policy);
    assert!(plan_approvals(&d, "a", 0.0).approvals.is_empty());
    // What does not detach.
    check_table(
        ALLOW_ALL,
        L3,
        &[
            ("nohup-foreground", "nohup make", Allow),
            ("crontab-list", "crontab -l", Allow),
            ("at-queue", "at -l", Allow),
            (
                "systemctl-status",
                "systemctl --user status x.service",
                Allow,
            ),
            ("tmux-list", "tmux ls", Allow),
            ("dbus-query", "busctl --user list", Allow),
            ("background-job", "sleep 1 &", Allow),
            ("bashrc-read", "cat ~/.bashrc", Allow),
        ],
    );
}

#[test]
fn inside_a_sandbox_the_sandbox_contains_them() {
    // Levels 1–2 cannot reach the user's systemd or session, and their files are read-only or
    // private: nothing to ask.
    for level in [SandboxLevel::ReadOnly, SandboxLevel::IsolatedDev] {
        for (id, command) in STARTS_OUTSIDE {
            let d = decide_at(level, ALLOW_ALL, command);
            assert_eq!(d.effect, Allow, "{id} at {level}: {}", d.reason);
        }
    }
}

#[test]
fn a_command_too_long_to_review_is_refused_without_a_card() {
    let long = format!("echo {}", "a".repeat(MAX_COMMAND_BYTES));
    let d = decide_at(L3, ALLOW_ALL, &long);
    assert_eq!(d.effect, Deny);
    assert!(!d.no_approver, "a refusal, not an unanswerable card");
    assert!(
        d.reason.contains("16 KiB") && d.reason.contains("shorter commands"),
        "{}",
        d.reason
    );
    let just_fits = format!("echo {}", "a".repeat(MAX_COMMAND_BYTES - 5));
    assert_eq!(just_fits.len(), MAX_COMMAND_BYTES);
    assert_eq!(decide_at(L3, ALLOW_ALL, &just_fits).effect, Allow);
}
