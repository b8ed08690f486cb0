//! What the permission engine reads of an agent profile: its rules as written
//! ([`RawRule`]), what no rule matches ([`DefaultEffect`]), the rule layers inherited from its
//! creators ([`CreatorRules`]), and the view [`ProfileRules`] that `AgentRules` is built from.
//! The profile itself (model, skills, secrets, …) is `sayri-core`'s.

use sayri_protocol::SandboxLevel;
use serde::{Deserialize, Serialize};

/// One permission rule as written in a profile or policy file:
/// `{"action": "shell", "resource": "git push*", "effect": "ask"}`.
/// Validation (known action/effect) is the permission engine's job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawRule {
    /// `shell | read | write | web | skill | subagent | *`.
    pub action: String,
    /// Whole-value wildcard pattern; defaults to `*`.
    #[serde(default = "star")]
    pub resource: String,
    /// `allow | ask | deny`.
    pub effect: String,
}

fn star() -> String {
    "*".into()
}

/// What happens to a command, or a file write, that none of the agent's rules match. Ordered
/// from the most to the least permissive (`Allow < ReadOnly < Ask < Deny`).
///
/// ```
/// use sayri_permissions::DefaultEffect;
/// assert_eq!(DefaultEffect::default(), DefaultEffect::Allow);
/// let e: DefaultEffect = serde_json::from_str(r#""read_only""#).unwrap();
/// assert_eq!(e, DefaultEffect::ReadOnly);
/// assert!(DefaultEffect::Allow < DefaultEffect::ReadOnly && DefaultEffect::Ask < DefaultEffect::Deny);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefaultEffect {
    /// Run it (the behaviour of profiles that do not say).
    #[default]
    Allow,
    /// At levels 3–4, run read-only commands (`ls`, `cat`, `git status`, … — the table in the
    /// permission engine) and ask before anything else, writing files included (the asks are
    /// the agent's own: `ask_before_run` must be on for them to raise a card). At levels 1–2
    /// the sandbox confines every command, so they run.
    ReadOnly,
    /// Ask a person (levels 3–4; refused where nobody can be asked).
    Ask,
    /// Refuse.
    Deny,
}

impl DefaultEffect {
    /// The name profiles and the protocol use (`allow`, `read_only`, `ask`, `deny`).
    pub fn name(self) -> &'static str {
        match self {
            DefaultEffect::Allow => "allow",
            DefaultEffect::ReadOnly => "read_only",
            DefaultEffect::Ask => "ask",
            DefaultEffect::Deny => "deny",
        }
    }
}

/// The rule layer an agent inherits from one of its creators: that creator's blocked programs
/// and permission rules. Filled only by `sayri-core`'s `domain::agents::effective_profile`, never read from or
/// written to a profile file. The permission engine evaluates each layer on its own and a later
/// layer can only tighten an earlier one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatorRules {
    /// The creator's id (named in refusals: `creator builder rule #0`).
    pub agent_id: String,
    /// The creator's effective `blocked_binaries`.
    pub blocked_binaries: Vec<String>,
    /// The creator's own `permission_rules`.
    pub permission_rules: Vec<RawRule>,
    /// The creator's effective `sandbox.default_effect` (for what none of its rules match).
    pub default_effect: DefaultEffect,
}

/// The parts of an agent profile the engine judges with, borrowed from the profile
/// (`sayri-core` converts its `AgentProfile` into one; `AgentRules::from_profile` takes it).
#[derive(Debug, Clone, Copy)]
pub struct ProfileRules<'a> {
    /// The agent's id (approvals are scoped to it).
    pub agent_id: &'a str,
    /// The agent's display name (shown on cards).
    pub agent_name: &'a str,
    /// The agent's own level.
    pub level: SandboxLevel,
    /// `sandbox.ask_before_run`: whether the agent's own `ask` rules raise a card.
    pub ask_before_run: bool,
    /// `sandbox.default_effect`.
    pub default_effect: DefaultEffect,
    /// Programs denied outright (they become deny rules).
    pub blocked_binaries: &'a [String],
    /// The agent's own rules, last match wins.
    pub permission_rules: &'a [RawRule],
    /// The creators' rule layers, outermost creator first.
    pub creator_rules: &'a [CreatorRules],
}
