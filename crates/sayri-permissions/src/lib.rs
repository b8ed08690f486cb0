//! The permission engine: rules, shell analysis, policies, decisions and approvals.
//!
//! Pure: no file, socket or clock access. Callers pass file contents and saved approvals in.
//! The evaluation order is documented in [`mod@evaluate`]. What the engine reads of an agent
//! profile is [`ProfileRules`]; `sayri-core` builds it from its `AgentProfile`.

pub mod approval;
pub mod arg_programs;
pub mod assignments;
pub mod awk;
pub mod detach;
pub mod evaluate;
pub mod expansion;
pub mod git;
pub mod options;
pub mod pattern;
pub mod policy;
pub mod profile;
pub mod read_only;
pub mod recursive_delete;
pub mod remote_exec;
pub mod rule;
pub mod sed;
pub mod shell;
pub mod targets;
pub mod wrappers;

pub use approval::{Approval, ApprovalPlan, approval_rules, narrowest_pattern, plan_approvals};
pub use evaluate::{
    AgentRules, CannotAsk, Decision, EvalContext, Origin, SubjectDecision, evaluate,
    evaluate_with_approvals, rule_label,
};
pub use policy::{PolicyError, PolicySet, parse_policy_file};
pub use profile::{CreatorRules, DefaultEffect, ProfileRules, RawRule};
pub use rule::{Action, Effect, Rule, RuleError, Source};
