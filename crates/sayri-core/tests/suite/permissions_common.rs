//! Helpers shared by the permission tests.

use sayri_core::SandboxLevel;
use sayri_core::domain::permissions::{
    Action, AgentRules, Decision, Effect, EvalContext, PolicySet, evaluate,
};
use sayri_core::domain::profile::{AgentProfile, RawRule};

/// A profile at `level` with `ask_before_run: true`, no blocked binaries, and `rules` (JSON list).
pub fn profile(level: SandboxLevel, rules: &str) -> AgentProfile {
    let mut p = AgentProfile::builtin_default();
    p.sandbox.level = level;
    p.sandbox.ask_before_run = true;
    p.sandbox.blocked_binaries.clear();
    p.sandbox.permission_rules = serde_json::from_str::<Vec<RawRule>>(rules).unwrap();
    p
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
