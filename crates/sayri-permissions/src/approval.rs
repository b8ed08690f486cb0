//! "Allow always": turning an answered question into durable, narrow approvals.
//!
//! An approval is an agent-scoped `allow` rule. Its pattern is the **exact** normalised text of
//! each subject that asked — never widened: approving `rm -rf /tmp/x` approves exactly
//! `rm -rf /tmp/x`, not `rm *`. A subject whose text contains `*` or `?`
//! cannot be written as an exact pattern (they are wildcards), so it is not remembered.
//! Subjects whose `ask` came from the policy layer or from static analysis are not remembered
//! either: an approval can never lift those (they are re-asked every time).
//!
//! Approvals only turn an agent-layer `ask` into `allow`; they never lift a deny.

use super::evaluate::{Decision, Origin};
use super::rule::{Action, Effect, Rule, Source};
use serde::{Deserialize, Serialize};

/// One stored approval: an allow rule scoped to an agent, created by "Allow always".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    /// Agent the approval belongs to.
    pub agent_id: String,
    /// Rule action (`shell`, `read`, `write`, `web`, …).
    pub action: String,
    /// Whole-value wildcard pattern, never broader than what the person approved.
    pub resource: String,
    /// When it was stored, Unix seconds.
    pub created_at: f64,
}

/// The approvals of `agent_id` (and those with an empty agent id) as allow rules, oldest first.
/// Stored entries with an unknown action are ignored (they could only ever allow).
pub fn approval_rules(approvals: &[Approval], agent_id: &str) -> Vec<Rule> {
    approvals
        .iter()
        .filter(|a| a.agent_id == agent_id || a.agent_id.is_empty())
        .enumerate()
        .filter_map(|(i, a)| {
            let action = Action::parse(&a.action)?;
            (!a.resource.trim().is_empty())
                .then(|| Rule::new(action, &a.resource, Effect::Allow, Source::Approval, i))
        })
        .collect()
}

/// The narrowest pattern for a normalised value: the value itself, or `None` when it contains a
/// wildcard character and so cannot be matched exactly.
pub fn narrowest_pattern(value: &str) -> Option<String> {
    (!value.is_empty() && !value.contains(['*', '?'])).then(|| value.to_string())
}

/// What "Allow always" stores for a decision.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApprovalPlan {
    /// Approvals to store.
    pub approvals: Vec<Approval>,
    /// Subjects that asked but are not remembered, with the reason.
    pub not_remembered: Vec<String>,
}

/// Plans the approvals for "Allow always" on `decision` (which should be an `ask`).
pub fn plan_approvals(decision: &Decision, agent_id: &str, now_unix: f64) -> ApprovalPlan {
    let mut plan = ApprovalPlan::default();
    for subject in decision.subjects.iter().filter(|s| s.effect == Effect::Ask) {
        if !subject.origin.is_agent_layer() {
            plan.not_remembered.push(format!(
                "{}: asked by {} — asked again every time",
                subject.command,
                if matches!(subject.origin, Origin::Analysis) {
                    "analysis"
                } else {
                    "a policy"
                }
            ));
            continue;
        }
        match subject.value.as_deref().and_then(narrowest_pattern) {
            Some(pattern) => plan.approvals.push(Approval {
                agent_id: agent_id.to_string(),
                action: subject.action.name().to_string(),
                resource: pattern,
                created_at: now_unix,
            }),
            None => plan.not_remembered.push(format!(
                "{}: contains `*` or `?`, which cannot be approved exactly",
                subject.command
            )),
        }
    }
    plan
}
