//! Helpers shared by the permission tests.

use sayri_permissions::{Action, AgentRules, Decision, Effect, EvalContext, PolicySet, evaluate};
use sayri_permissions::{DefaultEffect, ProfileRules, RawRule};
use sayri_protocol::SandboxLevel;

/// Level 3 (host user): the level that asks.
pub const L3: SandboxLevel = SandboxLevel::HostUser;
/// Everything allowed except `rm` with arguments.
pub const DENY_RM: &str = r#"[{"action":"shell","resource":"*","effect":"allow"},
                          {"action":"shell","resource":"rm *","effect":"deny"}]"#;
/// Everything allowed by the agent (the baseline still applies).
pub const ALLOW_ALL: &str = r#"[{"action":"shell","resource":"*","effect":"allow"}]"#;
/// Everything asks except `ls`, `git`, `echo`, `cat` and programs starting with `r`.
pub const ASK_BUT: &str = r#"[{"action":"shell","resource":"*","effect":"ask"},
    {"action":"shell","resource":"ls *","effect":"allow"},
    {"action":"shell","resource":"git *","effect":"allow"},
    {"action":"shell","resource":"echo *","effect":"allow"},
    {"action":"shell","resource":"cat *","effect":"allow"},
    {"action":"shell","resource":"r*","effect":"allow"}]"#;

/// The sandbox part of a test profile: what the engine reads of an agent profile.
pub struct TestSandbox {
    pub level: SandboxLevel,
    pub ask_before_run: bool,
    pub default_effect: DefaultEffect,
    pub blocked_binaries: Vec<String>,
    pub permission_rules: Vec<RawRule>,
}

/// An agent profile as the permission engine sees it (`sayri-core`'s `AgentProfile` has the
/// same `sandbox` fields).
pub struct TestProfile {
    pub sandbox: TestSandbox,
}

impl<'a> From<&'a TestProfile> for ProfileRules<'a> {
    fn from(p: &'a TestProfile) -> Self {
        ProfileRules {
            agent_id: "default",
            agent_name: "Main Sayri",
            level: p.sandbox.level,
            ask_before_run: p.sandbox.ask_before_run,
            default_effect: p.sandbox.default_effect,
            blocked_binaries: &p.sandbox.blocked_binaries,
            permission_rules: &p.sandbox.permission_rules,
            creator_rules: &[],
        }
    }
}

/// A profile at `level` with `ask_before_run: true`, no blocked binaries, and `rules` (JSON list).
/// What no rule matches is allowed (`default_effect: allow`, the default of profile files): the
/// rules under test decide. The built-in default agent's `read_only` default has its own tests
/// (`permissions_default_agent.rs` in `sayri-core`).
pub fn profile(level: SandboxLevel, rules: &str) -> TestProfile {
    TestProfile {
        sandbox: TestSandbox {
            level,
            ask_before_run: true,
            default_effect: DefaultEffect::Allow,
            blocked_binaries: Vec::new(),
            permission_rules: serde_json::from_str::<Vec<RawRule>>(rules).unwrap(),
        },
    }
}

/// Full decision for a shell command where a person can answer.
pub fn decide_at(level: SandboxLevel, rules: &str, command: &str) -> Decision {
    let agent = AgentRules::from_profile(&profile(level, rules)).unwrap();
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

/// Asserts every row of a table `(id, command, expected)` under `rules`.
pub fn check_table(rules: &str, level: SandboxLevel, rows: &[(&str, &str, Effect)]) {
    let mut failures = Vec::new();
    for (id, command, expected) in rows {
        let d = decide_at(level, rules, command);
        if d.effect != *expected {
            failures.push(format!(
                "{id}: `{command}` → {} (expected {expected}); reason: {}",
                d.effect, d.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
