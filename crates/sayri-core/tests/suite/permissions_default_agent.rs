//! Safe by default: the built-in default agent runs read-only commands without a card, asks
//! before anything else (writes, deletes, network, package managers, service managers, what
//! cannot be classified), and refuses `sudo`/`pkexec` at level 3 with a pointer to level 4.
//! Agents with their own rules are judged by them, as before.

use sayri_core::SandboxLevel;
use sayri_core::domain::profile::AgentProfile;
use sayri_permissions::Effect::{self, Allow, Ask, Deny};
use sayri_permissions::{Action, AgentRules, Decision, EvalContext, PolicySet, evaluate};
use sayri_permissions::{DefaultEffect, RawRule};

/// Level 3 (host user): the level that asks.
const L3: SandboxLevel = SandboxLevel::HostUser;

/// The decision for `command` of an agent at `level` whose own `rules` (JSON list) decide:
/// `ask_before_run` on, no blocked binaries, what no rule matches allowed.
fn decide_at(level: SandboxLevel, rules: &str, command: &str) -> Decision {
    let mut p = AgentProfile::builtin_default();
    p.sandbox.default_effect = DefaultEffect::Allow;
    p.sandbox.level = level;
    p.sandbox.ask_before_run = true;
    p.sandbox.blocked_binaries.clear();
    p.sandbox.permission_rules = serde_json::from_str::<Vec<RawRule>>(rules).unwrap();
    let agent = AgentRules::from_profile(&p).unwrap();
    evaluate(
        Action::Shell,
        command,
        &agent,
        &[],
        &PolicySet::baseline(),
        &EvalContext {
            level,
            approver_available: true,
        },
    )
}

fn default_agent_decides(level: SandboxLevel, command: &str) -> Decision {
    let agent = AgentRules::from_profile(&AgentProfile::builtin_default()).unwrap();
    evaluate(
        Action::Shell,
        command,
        &agent,
        &[],
        &PolicySet::baseline(),
        &EvalContext {
            level,
            approver_available: true,
        },
    )
}

fn table(level: SandboxLevel, rows: &[(&str, Effect)]) -> usize {
    let mut failures = Vec::new();
    for (command, expected) in rows {
        let d = default_agent_decides(level, command);
        if d.effect != *expected {
            failures.push(format!(
                "`{command}` → {} (expected {expected}): {}",
                d.effect, d.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows wrong:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    rows.len()
}

#[test]
fn the_default_agent_runs_read_only_commands_and_asks_before_anything_else() {
    let n = table(
        L3,
        &[
            // Read-only: no card.
            ("ls -la ~/Documents", Allow),
            ("cat /etc/os-release", Allow),
            ("df -h", Allow),
            ("du -sh ~/Downloads", Allow),
            ("ps aux | grep firefox", Allow),
            ("grep -rn TODO src", Allow),
            ("free -m", Allow),
            ("uptime", Allow),
            ("uname -a", Allow),
            ("whoami", Allow),
            ("head -n 20 notes.txt | wc -l", Allow),
            ("find . -name '*.md' -mtime -2", Allow),
            ("sed -n '1,20p' notes.txt", Allow),
            ("awk -F: '{print $1}' /etc/passwd", Allow),
            ("sort notes.txt | uniq -c", Allow),
            ("git status", Allow),
            ("git log --oneline -10", Allow),
            ("git diff HEAD~1", Allow),
            ("git show HEAD:README.md", Allow),
            ("git branch -a", Allow),
            ("systemctl status ssh", Allow),
            ("journalctl -u ssh -n 50", Allow),
            ("ip addr show", Allow),
            ("lsblk", Allow),
            ("date +%F", Allow),
            ("ls 2>/dev/null || echo none", Allow),
            ("which python3", Allow),
            ("python3 --version", Allow),
            ("cd /tmp && ls", Allow),
            ("gsettings get org.gnome.desktop.interface gtk-theme", Allow),
            // Anything else: a card.
            ("git clean -fd", Ask),
            ("rm -rf build", Ask),
            ("touch notes.txt", Ask),
            ("echo hello > notes.txt", Ask),
            ("mkdir new", Ask),
            ("mv a.txt b.txt", Ask),
            ("cp a.txt /tmp/", Ask),
            ("curl -s https://example.org", Ask),
            ("wget https://example.org/x", Ask),
            ("ping -c 1 example.org", Ask),
            ("apt-get install foo", Ask),
            ("pip install requests", Ask),
            ("npm install", Ask),
            ("systemctl restart ssh", Ask),
            ("systemctl --user enable --now x.service", Ask),
            ("git push", Ask),
            ("git commit -m wip", Ask),
            ("git -c core.pager=less log", Ask),
            ("git -p log", Ask),
            ("sed -i 's/a/b/' notes.txt", Ask),
            ("sed -n '1e id' notes.txt", Ask),
            (r#"awk 'BEGIN{system("id")}'"#, Ask),
            ("find . -name '*.tmp' -delete", Ask),
            ("find . -exec touch {} +", Ask),
            ("sort -o out.txt notes.txt", Ask),
            ("python3 script.py", Ask),
            ("./configure", Ask),
            ("$EDITOR notes.txt", Ask),
            ("firefox &", Ask),
            ("kill 1234", Ask),
            ("chmod +x run.sh", Ask),
            ("crontab -l", Ask),
            (
                "gsettings set org.gnome.desktop.interface gtk-theme Adwaita",
                Ask,
            ),
            // Root is level 4's business.
            ("sudo apt-get install foo", Deny),
            ("pkexec apt-get install foo", Deny),
            ("sudo ls /root", Deny),
            ("doas reboot", Deny),
        ],
    );
    assert!(n >= 40, "{n} rows");
}

#[test]
fn sudo_and_pkexec_at_level_3_are_refused_with_a_pointer_to_level_4() {
    for command in ["sudo apt-get install foo", "pkexec apt-get install foo"] {
        let d = default_agent_decides(L3, command);
        assert_eq!(d.effect, Deny, "{command}: {}", d.reason);
        assert!(
            d.reason.contains("level 4") && d.reason.contains("LEVEL_4_HOST_ROOT"),
            "{command}: {}",
            d.reason
        );
        assert_eq!(d.source, "baseline", "{command}");
        // Refused outright: no card, so "Allow always" can never lift it.
        assert!(d.policy, "{command}");
    }
    // At level 4 `sudo` is judged like any other command (a card for the default agent).
    let d = default_agent_decides(SandboxLevel::HostRoot, "sudo apt-get install foo");
    assert_eq!(d.effect, Ask, "{}", d.reason);
    // Whatever the agent's rules say.
    let d = decide_at(
        L3,
        r#"[{"action":"shell","resource":"*","effect":"allow"}]"#,
        "sudo -n true",
    );
    assert_eq!(d.effect, Deny, "{}", d.reason);
}

#[test]
fn the_cards_say_why_and_what_stays_allowed() {
    let d = default_agent_decides(L3, "git clean -fd");
    assert!(
        d.reason.contains("not a read-only command") && d.reason.contains("read_only"),
        "{}",
        d.reason
    );
    let d = default_agent_decides(L3, "echo hi > notes.txt");
    let write = d
        .subjects
        .iter()
        .find(|s| s.command == "write notes.txt")
        .expect("the write is a segment of its own");
    assert_eq!(write.effect, Ask);
    assert!(
        write.reason.contains("asks before writing files"),
        "{}",
        write.reason
    );
    // The `echo` itself only reads.
    assert!(
        d.subjects
            .iter()
            .any(|s| s.command == "echo hi" && s.effect == Allow)
    );
}

#[test]
fn sandboxed_levels_confine_instead_of_asking() {
    // At levels 1–2 the sandbox keeps every command from changing the host: nothing asks.
    for level in [SandboxLevel::ReadOnly, SandboxLevel::IsolatedDev] {
        for command in ["git clean -fd", "echo x > notes.txt", "make"] {
            let d = default_agent_decides(level, command);
            assert_eq!(d.effect, Allow, "{level} {command}: {}", d.reason);
        }
    }
}

#[test]
fn agents_with_their_own_rules_and_profile_files_keep_their_behaviour() {
    // A profile file that does not name `default_effect` allows what no rule matches.
    let p = AgentProfile::from_json(r#"{"id": "mine", "sandbox": {}}"#, "mine.json").unwrap();
    assert_eq!(p.sandbox.default_effect, DefaultEffect::Allow);
    // The built-in default agent with an explicit rule: the rule decides its commands.
    let mut p = AgentProfile::builtin_default();
    p.sandbox.permission_rules = serde_json::from_str(
        r#"[{"action":"shell","resource":"make *","effect":"allow"},
            {"action":"shell","resource":"git push*","effect":"deny"}]"#,
    )
    .unwrap();
    let agent = AgentRules::from_profile(&p).unwrap();
    let ctx = EvalContext {
        level: L3,
        approver_available: true,
    };
    let run = |c: &str| evaluate(Action::Shell, c, &agent, &[], &PolicySet::baseline(), &ctx);
    assert_eq!(run("make test").effect, Allow);
    assert_eq!(run("git push origin main").effect, Deny);
    assert_eq!(run("make install DESTDIR=x").effect, Allow);
    assert_eq!(run("cargo build").effect, Ask);
}

#[test]
fn desktop_tools_are_judged_like_any_other_command() {
    // `sayri lookup` sends its query to the web (like `curl`), `sayri screenshot` writes a file
    // and `sayri notify` reaches the desktop: none is in the read-only table, so on the host
    // the default agent shows a card, saying why.
    for command in [
        "sayri lookup wayland screen sharing",
        "sayri screenshot",
        "sayri notify Done 'backup finished'",
    ] {
        let d = default_agent_decides(L3, command);
        assert_eq!(d.effect, Ask, "{command}: {}", d.reason);
        assert!(d.reason.contains("not a read-only command"), "{}", d.reason);
    }
    // With nobody to answer the card, the lookup is refused.
    let agent = AgentRules::from_profile(&AgentProfile::builtin_default()).unwrap();
    let unattended = evaluate(
        Action::Shell,
        "sayri lookup wayland",
        &agent,
        &[],
        &PolicySet::baseline(),
        &EvalContext {
            level: L3,
            approver_available: false,
        },
    );
    assert_eq!(unattended.effect, Deny, "{}", unattended.reason);
    assert!(
        unattended.reason.contains("needs approval"),
        "{}",
        unattended.reason
    );
    // At levels 1–2 the sandbox confines it (the network only when the agent allows it).
    for level in [SandboxLevel::ReadOnly, SandboxLevel::IsolatedDev] {
        let d = default_agent_decides(level, "sayri lookup wayland");
        assert_eq!(d.effect, Allow, "{level}: {}", d.reason);
    }
    // Conversation only: nothing runs.
    let d = default_agent_decides(SandboxLevel::NoExec, "sayri lookup wayland");
    assert_eq!(d.effect, Deny, "{}", d.reason);
    // An agent's own rule decides it, as for any command …
    let lookup_allowed = r#"[{"action":"shell","resource":"sayri lookup *","effect":"allow"}]"#;
    let d = decide_at(L3, lookup_allowed, "sayri lookup wayland");
    assert_eq!(d.effect, Allow, "{}", d.reason);
    let lookup_denied = r#"[{"action":"shell","resource":"sayri lookup *","effect":"deny"}]"#;
    let d = decide_at(
        SandboxLevel::ReadOnly,
        lookup_denied,
        "sayri lookup wayland",
    );
    assert_eq!(d.effect, Deny, "{}", d.reason);
    // … and allowing a desktop tool never reaches Sayri's own management.
    let d = decide_at(
        L3,
        r#"[{"action":"shell","resource":"sayri *","effect":"allow"}]"#,
        "sayri lookup x && sayri config set lookup.duckduckgo_url http://evil.example/",
    );
    assert_eq!(d.effect, Deny, "{}", d.reason);
    assert_eq!(d.source, "baseline", "{}", d.reason);
}
