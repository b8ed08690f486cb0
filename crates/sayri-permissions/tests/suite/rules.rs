//! Rules themselves: blocked binaries, the baseline, malformed rules, and the decision's JSON
//! shape.

use super::common::{L3, check_table, decide_at, profile};
use sayri_permissions::Effect::{Allow, Deny};
use sayri_permissions::RawRule;
use sayri_permissions::{
    Action, AgentRules, Effect, EvalContext, PolicySet, evaluate, parse_policy_file,
};

#[test]
fn blocked_binaries_are_program_denies() {
    let mut p = profile(L3, "[]");
    p.sandbox.blocked_binaries = vec!["nc".into()];
    let agent = AgentRules::from_profile(&p).unwrap();
    let ctx = EvalContext {
        level: L3,
        approver_available: true,
    };
    let run = |cmd: &str| {
        evaluate(
            Action::Shell,
            cmd,
            &agent,
            &[],
            &PolicySet::baseline(),
            &ctx,
        )
    };
    let d = run("echo x | /usr/bin/nc host 1");
    assert_eq!(d.effect, Deny);
    assert_eq!(d.source, "blocked_binaries");
    assert_eq!(run("nc").effect, Deny);
    assert_eq!(run("ncat host 1").effect, Allow);
    // Blocked binaries come first in the agent layer, so a later explicit agent rule for the
    // same command wins over them (the agent layer's last matching rule wins).
    let mut p = profile(
        L3,
        r#"[{"action":"shell","resource":"nc -z *","effect":"allow"}]"#,
    );
    p.sandbox.blocked_binaries = vec!["nc".into()];
    let agent = AgentRules::from_profile(&p).unwrap();
    let run = |cmd: &str| {
        evaluate(
            Action::Shell,
            cmd,
            &agent,
            &[],
            &PolicySet::baseline(),
            &ctx,
        )
        .effect
    };
    assert_eq!(run("nc -z host 22"), Allow);
    assert_eq!(run("nc host 22"), Deny);
}

#[test]
fn a_command_cannot_manage_sayri_itself_even_when_everything_is_allowed() {
    let all = r#"[{"action":"shell","resource":"*","effect":"allow"}]"#;
    check_table(
        all,
        L3,
        &[
            (
                "answer own card",
                "sayri permissions answer 0123456789ab --allow --always",
                Deny,
            ),
            (
                "via path",
                "/usr/bin/sayri permissions answer 0123456789ab --allow",
                Deny,
            ),
            (
                "in background",
                "(sleep 5; sayri permissions answer x --allow) &",
                Deny,
            ),
            (
                "loosen policy",
                "sayri config set permissions.policy_files '[]'",
                Deny,
            ),
            ("secrets", "sayri vault get GITHUB_TOKEN --reveal", Deny),
            ("stop daemon", "true && sayri quit", Deny),
            ("config file", "echo x >> ~/.config/sayri/sayri.toml", Deny),
            (
                "config file abs",
                "printf x > /home/u/.config/sayri/agents/default.json",
                Deny,
            ),
            ("read-only use", "sayri pref query open music", Allow),
            ("status", "sayri status --json", Allow),
        ],
    );
}

#[test]
fn malformed_rules_are_rejected_with_their_name() {
    let bad = |rules: &str| {
        let mut p = profile(L3, "[]");
        p.sandbox.permission_rules = serde_json::from_str::<Vec<RawRule>>(rules).unwrap();
        AgentRules::from_profile(&p).unwrap_err().to_string()
    };
    let e = bad(
        r#"[{"action":"shell","resource":"*","effect":"allow"},{"action":"exec","resource":"x","effect":"allow"}]"#,
    );
    assert!(
        e.contains("#1") && e.contains("exec") && e.contains("agent"),
        "{e}"
    );
    let e = bad(r#"[{"action":"shell","resource":"x","effect":"maybe"}]"#);
    assert!(e.contains("#0") && e.contains("maybe"), "{e}");
    let e = bad(r#"[{"action":"shell","resource":"  ","effect":"deny"}]"#);
    assert!(e.contains("empty resource"), "{e}");

    let e = parse_policy_file("/etc/sayri/policies.json", "{not json")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/etc/sayri/policies.json") && e.contains("not JSON"),
        "{e}"
    );
    let e = parse_policy_file("/p.json", r#"{"rules":[]}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown key"), "{e}");
    let e = parse_policy_file("/p.json", r#"[{"action":"read","resource":"/x"}]"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/p.json") && e.contains("#0") && e.contains("effect"),
        "{e}"
    );
    let e = parse_policy_file("/p.json", r#"["deny everything"]"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a JSON object"), "{e}");
    let ok = parse_policy_file(
        "/p.json",
        r#"[{"//":"comment entry"},{"//":"why","action":"READ","resource":"/x","effect":"Deny"}]"#,
    )
    .unwrap();
    assert_eq!(ok.len(), 1);
    assert_eq!(
        (ok[0].action, ok[0].effect, ok[0].index),
        (Action::Read, Effect::Deny, 1)
    );
}

#[test]
fn decision_json_shape() {
    let d = decide_at(
        L3,
        r#"[{"action":"shell","resource":"*","effect":"ask"},{"action":"shell","resource":"git *","effect":"allow"},{"action":"shell","resource":"git clean*","effect":"deny"}]"#,
        "git fetch && git clean -fd",
    );
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["effect"], "deny");
    assert_eq!(v["source"], "agent");
    assert_eq!(v["rule"]["resource"], "git clean*");
    assert_eq!(v["rule"]["action"], "shell");
    let subjects = v["segments"].as_array().unwrap();
    assert_eq!(subjects.len(), 2);
    assert_eq!(subjects[0]["command"], "git fetch");
    assert_eq!(subjects[0]["effect"], "allow");
    assert_eq!(subjects[1]["command"], "git clean -fd");
    assert!(
        subjects[1]["reason"]
            .as_str()
            .unwrap()
            .contains("git clean*")
    );
}
