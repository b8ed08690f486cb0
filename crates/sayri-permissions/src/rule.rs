//! Permission rules: `{action, resource, effect}` with a remembered source.
//!
//! Rules are validated strictly: an unknown action or effect, a missing field or an empty
//! resource is an error naming the rule, its position and where it came from — a malformed rule
//! is never dropped silently and never guessed.

use super::pattern::{Pattern, normalize_path, normalize_shell};
use crate::profile::RawRule;
use serde::Serialize;
use std::fmt;

/// What a rule is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Running a shell command (the resource is the command text of one simple command).
    Shell,
    /// Reading a file (the resource is its path as written).
    Read,
    /// Writing, creating or deleting a file.
    Write,
    /// Contacting a URL or host.
    Web,
    /// Using a skill.
    Skill,
    /// Starting a sub-agent.
    Subagent,
    /// Storing a fact in long-term memory (the resource is the fact).
    Memory,
    /// Calling a tool of an MCP server (the resource is `server.tool`). With no rule for it, a
    /// call asks (see `evaluate`), whatever the agent's level.
    Mcp,
    /// Any action (`*`).
    #[serde(rename = "*")]
    Any,
}

impl Action {
    /// Parses an action name, case-insensitively. Returns `None` for unknown names.
    pub fn parse(text: &str) -> Option<Action> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "shell" => Action::Shell,
            "read" => Action::Read,
            "write" => Action::Write,
            "web" => Action::Web,
            "skill" => Action::Skill,
            "subagent" => Action::Subagent,
            "memory" => Action::Memory,
            "mcp" => Action::Mcp,
            "*" => Action::Any,
            _ => return None,
        })
    }

    /// The canonical name (`shell`, `read`, …, `*`).
    pub fn name(self) -> &'static str {
        match self {
            Action::Shell => "shell",
            Action::Read => "read",
            Action::Write => "write",
            Action::Web => "web",
            Action::Skill => "skill",
            Action::Subagent => "subagent",
            Action::Memory => "memory",
            Action::Mcp => "mcp",
            Action::Any => "*",
        }
    }

    /// Normalises a value of this action for matching: shell whitespace rules for
    /// `shell`, path rules for `read`/`write`, unchanged otherwise.
    pub fn normalize(self, value: &str) -> String {
        match self {
            Action::Shell | Action::Any => normalize_shell(value),
            Action::Read | Action::Write => normalize_path(value),
            _ => value.trim().to_string(),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a rule decides. Ordered by strictness: `Allow < Ask < Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Run without asking.
    Allow,
    /// Ask a person first.
    Ask,
    /// Refuse.
    Deny,
}

impl Effect {
    /// Parses `allow | ask | deny`, case-insensitively.
    pub fn parse(text: &str) -> Option<Effect> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "allow" => Effect::Allow,
            "ask" => Effect::Ask,
            "deny" => Effect::Deny,
            _ => return None,
        })
    }

    /// `allow`, `ask` or `deny`.
    pub fn name(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a rule came from. Shown in every refusal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// The agent's `sandbox.blocked_binaries` (each program becomes a deny rule).
    BlockedBinaries,
    /// The agent's `sandbox.permission_rules`.
    Agent,
    /// A saved "Allow always" approval.
    Approval,
    /// Sayri's compiled-in baseline policy.
    Baseline,
    /// A policy file, by path (e.g. `/etc/sayri/policies.json`).
    PolicyFile(String),
    /// Inherited from the creator `agent_id`: its `blocked_binaries` (when `blocked_binaries`)
    /// or its `permission_rules`.
    Creator {
        /// The creator's id.
        agent_id: String,
        /// Whether the rule comes from the creator's `blocked_binaries`.
        blocked_binaries: bool,
    },
}

impl Source {
    /// Whether the rule belongs to the policy layer (baseline or a policy file).
    pub fn is_policy(&self) -> bool {
        matches!(self, Source::Baseline | Source::PolicyFile(_))
    }

    /// Short label: `blocked_binaries`, `agent`, `approval`, `baseline`, the file path, or
    /// `creator ID` / `creator ID blocked_binaries`.
    pub fn label(&self) -> String {
        match self {
            Source::BlockedBinaries => "blocked_binaries".into(),
            Source::Agent => "agent".into(),
            Source::Approval => "approval".into(),
            Source::Baseline => "baseline".into(),
            Source::PolicyFile(path) => path.clone(),
            Source::Creator {
                agent_id,
                blocked_binaries: false,
            } => format!("creator {agent_id}"),
            Source::Creator {
                agent_id,
                blocked_binaries: true,
            } => format!("creator {agent_id} blocked_binaries"),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

/// One validated rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// What it is about.
    pub action: Action,
    /// The pattern as written.
    pub resource: String,
    /// What it decides.
    pub effect: Effect,
    /// Where it came from.
    pub source: Source,
    /// Zero-based position in its source list.
    pub index: usize,
    #[serde(skip)]
    pattern: Pattern,
}

/// A rule that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid permission rule #{index} in {source_label} ({rule}): {problem}. Fix or remove this rule; \
     actions are shell|read|write|web|skill|subagent|memory|mcp|*, effects allow|ask|deny"
)]
pub struct RuleError {
    /// Zero-based position of the rule in its list.
    pub index: usize,
    /// Where the list came from (`agent`, a policy file path, …).
    pub source_label: String,
    /// The rule as written (JSON text).
    pub rule: String,
    /// What is wrong with it.
    pub problem: String,
}

impl Rule {
    /// Builds a rule from validated parts.
    pub fn new(
        action: Action,
        resource: &str,
        effect: Effect,
        source: Source,
        index: usize,
    ) -> Self {
        let pattern = match action {
            Action::Shell | Action::Any => Pattern::shell(resource),
            Action::Read | Action::Write => Pattern::new(&normalize_path(resource)),
            _ => Pattern::new(resource.trim()),
        };
        Rule {
            action,
            resource: resource.to_string(),
            effect,
            source,
            index,
            pattern,
        }
    }

    /// Validates a rule as written in a profile.
    ///
    /// # Errors
    /// [`RuleError`] for an unknown action/effect or an empty resource.
    pub fn from_raw(raw: &RawRule, source: Source, index: usize) -> Result<Self, RuleError> {
        let fail = |problem: String| RuleError {
            index,
            source_label: source.label(),
            rule: serde_json::to_string(raw).unwrap_or_default(),
            problem,
        };
        let action = Action::parse(&raw.action)
            .ok_or_else(|| fail(format!("unknown action {:?}", raw.action)))?;
        let effect = Effect::parse(&raw.effect)
            .ok_or_else(|| fail(format!("unknown effect {:?}", raw.effect)))?;
        if raw.resource.trim().is_empty() {
            return Err(fail("empty resource (use \"*\" for everything)".into()));
        }
        Ok(Rule::new(action, &raw.resource, effect, source, index))
    }

    /// Validates a rule given as arbitrary JSON (policy files): it must be an object with string
    /// `action` and `effect` and an optional string `resource` (default `*`).
    ///
    /// # Errors
    /// [`RuleError`] naming the rule when it is not such an object or its fields are invalid.
    pub fn from_json(
        value: &serde_json::Value,
        source: Source,
        index: usize,
    ) -> Result<Self, RuleError> {
        let fail = |problem: &str| RuleError {
            index,
            source_label: source.label(),
            rule: value.to_string(),
            problem: problem.to_string(),
        };
        let object = value.as_object().ok_or_else(|| fail("not a JSON object"))?;
        for key in object.keys() {
            if !matches!(key.as_str(), "action" | "resource" | "effect" | "//") {
                return Err(fail(&format!("unknown field {key:?}")));
            }
        }
        let text = |key: &str| -> Result<Option<String>, RuleError> {
            match object.get(key) {
                None => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(fail(&format!("field {key:?} must be a string"))),
            }
        };
        let raw = RawRule {
            action: text("action")?.ok_or_else(|| fail("missing \"action\""))?,
            resource: text("resource")?.unwrap_or_else(|| "*".into()),
            effect: text("effect")?.ok_or_else(|| fail("missing \"effect\""))?,
        };
        Rule::from_raw(&raw, source, index)
    }

    /// Whether this rule is about `action` (`*` rules are about every action).
    pub fn applies_to(&self, action: Action) -> bool {
        self.action == Action::Any || self.action == action
    }

    /// Whether the pattern matches a value (already normalised for its action).
    pub fn matches_value(&self, value: &str) -> bool {
        self.pattern.matches(value)
    }

    /// Whether some value matched by this rule could also come out of the shell glob `glob`
    /// (see [`Pattern::intersects_glob`]).
    pub fn intersects_glob(&self, glob: &str) -> bool {
        self.pattern.intersects_glob(glob)
    }

    /// Whether some value matched by this rule could be a value of the run-time `shape` (see
    /// [`Pattern::intersects_shape`]).
    pub fn intersects_shape(&self, shape: &str) -> bool {
        self.pattern.intersects_shape(shape)
    }

    /// Whether the resource is the match-everything `*`.
    pub fn is_match_all(&self) -> bool {
        self.pattern.is_match_all()
    }

    /// `shell "git clean*" → deny (agent rule #2)`.
    pub fn describe(&self) -> String {
        let origin = match &self.source {
            Source::BlockedBinaries => format!("blocked_binaries entry #{}", self.index),
            Source::Agent => format!("agent rule #{}", self.index),
            Source::Approval => "saved approval".to_string(),
            Source::Baseline => "baseline".to_string(),
            Source::PolicyFile(path) => format!("policy {path} #{}", self.index),
            Source::Creator { .. } => format!("{} #{}", self.source.label(), self.index),
        };
        format!(
            "{} {:?} → {} ({origin})",
            self.action, self.resource, self.effect
        )
    }
}

/// Validates a list of raw rules.
///
/// # Errors
/// The first invalid rule, by index.
pub fn rules_from_raw(raw: &[RawRule], source: &Source) -> Result<Vec<Rule>, RuleError> {
    raw.iter()
        .enumerate()
        .map(|(i, r)| Rule::from_raw(r, source.clone(), i))
        .collect()
}
