//! MCP tool calls (`mcp`, resource `server.tool`): asked by default at every level, decided by
//! rules, saved approvals and policies like any other action.

use super::common::{L3, profile};
use sayri_permissions::Effect::{Allow, Ask, Deny};
use sayri_permissions::{
    Action, AgentRules, Approval, DefaultEffect, Effect, EvalContext, PolicySet, approval_rules,
    evaluate,
};
use sayri_protocol::SandboxLevel;

fn call(
    level: SandboxLevel,
    default: DefaultEffect,
    rules: &str,
    approvals: &[Approval],
    policies: &PolicySet,
    tool: &str,
) -> Effect {
    let mut p = profile(level, rules);
    p.sandbox.default_effect = default;
    let agent = AgentRules::from_profile(&p).unwrap();
    let saved = approval_rules(approvals, "default");
    let ctx = EvalContext {
        level,
        approver_available: true,
    };
    evaluate(Action::Mcp, tool, &agent, &saved, policies, &ctx).effect
}

#[test]
fn an_mcp_call_no_rule_names_asks_even_where_the_agent_trusts_its_sandbox() {
    let base = PolicySet::baseline();
    for level in [
        SandboxLevel::ReadOnly,
        SandboxLevel::IsolatedDev,
        SandboxLevel::HostUser,
        SandboxLevel::HostRoot,
    ] {
        // `read_only` allows what runs inside a sandbox; an MCP tool runs in its own server.
        let e = call(
            level,
            DefaultEffect::ReadOnly,
            "[]",
            &[],
            &base,
            "git.git_commit",
        );
        assert_ne!(e, Allow, "level {level:?}");
        assert_eq!(
            call(
                level,
                DefaultEffect::Ask,
                "[]",
                &[],
                &base,
                "time.get_current_time"
            ),
            if level >= L3 { Ask } else { Deny },
            "an ask can only be put to a person at levels 3-4"
        );
    }
    assert_eq!(
        call(
            SandboxLevel::NoExec,
            DefaultEffect::Allow,
            "[]",
            &[],
            &base,
            "t.x"
        ),
        Deny,
        "a conversation-only agent calls nothing"
    );
    assert_eq!(call(L3, DefaultEffect::Deny, "[]", &[], &base, "t.x"), Deny);
}

#[test]
fn rules_approvals_and_policies_decide_mcp_calls_by_server_and_tool() {
    let base = PolicySet::baseline();
    let rules = r#"[{"action":"mcp","resource":"time.*","effect":"allow"},
                    {"action":"mcp","resource":"git.git_commit","effect":"deny"}]"#;
    let d = DefaultEffect::ReadOnly;
    assert_eq!(call(L3, d, rules, &[], &base, "time.convert_time"), Allow);
    assert_eq!(call(L3, d, rules, &[], &base, "git.git_commit"), Deny);
    assert_eq!(call(L3, d, rules, &[], &base, "git.git_status"), Ask);
    // A shell rule says nothing about MCP calls.
    let shell_only = r#"[{"action":"shell","resource":"*","effect":"allow"}]"#;
    assert_eq!(call(L3, d, shell_only, &[], &base, "git.git_status"), Ask);
    // "Allow always" on one tool.
    let saved = [Approval {
        agent_id: "default".into(),
        action: "mcp".into(),
        resource: "git.git_status".into(),
        created_at: 0.0,
    }];
    assert_eq!(call(L3, d, "[]", &saved, &base, "git.git_status"), Allow);
    assert_eq!(call(L3, d, "[]", &saved, &base, "git.git_log"), Ask);
    // A policy deny wins over the agent's allow and over a saved approval.
    let policy = PolicySet::load([(
        "/etc/sayri/policies.json",
        r#"[{"action":"mcp","resource":"time.*","effect":"deny"},
            {"action":"mcp","resource":"git.git_status","effect":"deny"}]"#,
    )])
    .unwrap();
    assert_eq!(call(L3, d, rules, &[], &policy, "time.convert_time"), Deny);
    assert_eq!(call(L3, d, "[]", &saved, &policy, "git.git_status"), Deny);
    // An allow default on the agent is its owner's choice.
    assert_eq!(
        call(L3, DefaultEffect::Allow, "[]", &[], &base, "notes.add"),
        Allow
    );
}

#[test]
fn an_mcp_rule_parses_by_name_and_unknown_actions_are_still_errors() {
    assert_eq!(Action::parse("MCP"), Some(Action::Mcp));
    assert_eq!(Action::Mcp.name(), "mcp");
    let bad = AgentRules::from_profile(&profile(
        L3,
        r#"[{"action":"mcpp","resource":"x","effect":"allow"}]"#,
    ));
    let e = bad.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("memory|mcp"), "{e}");
}
