//! Levels and defaults: what each level does with an `ask`, the agent's default, and settling
//! the agent's own asks when `ask_before_run` is off.

use super::common::{L3, decide_at, profile};
use sayri_permissions::Effect::{Allow, Ask, Deny};
use sayri_permissions::{Action, AgentRules, EvalContext, PolicySet, evaluate};
use sayri_protocol::SandboxLevel;

#[test]
fn levels_defaults_and_settlement() {
    // Level 0: the default is deny.
    assert_eq!(decide_at(SandboxLevel::NoExec, "[]", "ls").effect, Deny);
    // A policy allow lifts only a rule-less default deny.
    let lift = PolicySet::load([(
        "/etc/sayri/policies.json",
        r#"[{"action":"shell","resource":"ls*","effect":"allow"}]"#,
    )])
    .unwrap();
    let ctx0 = EvalContext {
        level: SandboxLevel::NoExec,
        approver_available: true,
    };
    let a0 = AgentRules::from_profile(&profile(SandboxLevel::NoExec, "[]")).unwrap();
    assert_eq!(
        evaluate(Action::Shell, "ls", &a0, &[], &lift, &ctx0).effect,
        Allow
    );
    let denied = AgentRules::from_profile(&profile(
        L3,
        r#"[{"action":"shell","resource":"ls*","effect":"deny"}]"#,
    ))
    .unwrap();
    let ctx3 = EvalContext {
        level: L3,
        approver_available: true,
    };
    assert_eq!(
        evaluate(Action::Shell, "ls", &denied, &[], &lift, &ctx3).effect,
        Deny
    );

    // Levels 1–2 cannot ask: ask → refusal that says where to approve.
    let d = decide_at(
        SandboxLevel::ReadOnly,
        r#"[{"action":"shell","resource":"*","effect":"ask"}]"#,
        "ls",
    );
    assert_eq!(d.effect, Deny);
    assert!(d.no_approver);
    assert!(
        d.reason.contains("needs approval in the Sayri app"),
        "{}",
        d.reason
    );

    // No approver: refusal naming the rule and its source.
    let agent = AgentRules::from_profile(&profile(
        L3,
        r#"[{"action":"shell","resource":"make*","effect":"ask"}]"#,
    ))
    .unwrap();
    let nobody = EvalContext {
        level: L3,
        approver_available: false,
    };
    let d = evaluate(
        Action::Shell,
        "make all",
        &agent,
        &[],
        &PolicySet::baseline(),
        &nobody,
    );
    assert_eq!(d.effect, Deny);
    assert!(
        d.reason.contains("agent rule #0: make*")
            && d.reason.contains("needs approval in the Sayri app"),
        "{}",
        d.reason
    );

    // ask_before_run off: the agent's own asks are allowed without asking…
    let mut p = profile(
        L3,
        r#"[{"action":"shell","resource":"make*","effect":"ask"}]"#,
    );
    p.sandbox.ask_before_run = false;
    let quiet = AgentRules::from_profile(&p).unwrap();
    assert_eq!(
        evaluate(
            Action::Shell,
            "make all",
            &quiet,
            &[],
            &PolicySet::baseline(),
            &ctx3
        )
        .effect,
        Allow
    );
    // …but analysis and policy asks stay asks.
    assert_eq!(
        evaluate(
            Action::Shell,
            "$X all",
            &quiet,
            &[],
            &PolicySet::baseline(),
            &ctx3
        )
        .effect,
        Ask
    );
    let policy_ask = PolicySet::load([(
        "/usr/share/sayri/policies.json",
        r#"{"policies":[{"action":"shell","resource":"make*","effect":"ask"}]}"#,
    )])
    .unwrap();
    let d = evaluate(Action::Shell, "make all", &quiet, &[], &policy_ask, &ctx3);
    assert_eq!(d.effect, Ask, "a policy ask is a real card, not a deny");
    assert!(d.policy);

    // A configurable default.
    let asking = AgentRules::from_profile(&profile(L3, "[]"))
        .unwrap()
        .with_default(Ask);
    assert_eq!(
        evaluate(
            Action::Shell,
            "ls",
            &asking,
            &[],
            &PolicySet::baseline(),
            &ctx3
        )
        .effect,
        Ask
    );
    // Non-shell actions are evaluated too.
    assert_eq!(
        evaluate(
            Action::Read,
            "/etc/shadow",
            &asking,
            &[],
            &PolicySet::baseline(),
            &ctx3
        )
        .effect,
        Deny
    );
}
