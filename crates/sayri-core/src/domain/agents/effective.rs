//! Non-escalation: what an agent with a creator may actually do.
//!
//! [`effective_profile`] is the one function that decides it. It is computed from the creators'
//! profiles *as they are now*, every time an agent is loaded, so tightening a creator reaches
//! its existing children and grandchildren at once. For a child `c` of a creator whose effective
//! profile is `p`:
//!
//! | dimension | effective value |
//! |---|---|
//! | `sandbox.level` | `min(c, p)` |
//! | permission rules | `p`'s rule layers, then `c`'s own; a later layer only tightens |
//! | `sandbox.ask_before_run` | `c || p` |
//! | `sandbox.default_effect` | the stricter (`allow < read_only < ask < deny`) |
//! | `sandbox.allow_network` | `c && p` |
//! | `sandbox.blocked_binaries` | `c ∪ p` |
//! | `sandbox.timeout_seconds` | `min(c, p)` |
//! | `sandbox.isolated_dir` | `c`'s, if `p` runs on the host (level ≥ 3) or `c`'s lies inside `p`'s own; else its own default workspace |
//! | `allowed_secrets` | `c ∩ p` (`[]` = none) |
//! | `allowed_skills`, `allowed_plugins`, `allowed_tools` | see [`super::allow::narrow`] (`[]` = all) |
//! | `model` | `c`'s; without its own `base_url`, `p`'s endpoint and key; `"default"` model name → `p`'s |
//!
//! Everything else (name, prompts, loop switches) is the child's own. The property tests in
//! `tests/suite/agents_non_escalation.rs` pin "never more than the creator on any dimension" and
//! "tightening the creator tightens the child".

use super::allow;
use crate::domain::profile::{AgentProfile, secret_key};
use sayri_permissions::CreatorRules;
use sayri_protocol::SandboxLevel;

/// The most creators above one agent. A longer chain is refused (it is almost certainly a
/// mistake, and every turn walks it).
pub const MAX_CHAIN: usize = 8;

/// The effective profile of `child` given its creators **as written**, nearest first
/// (`creators[0]` is its parent, `creators[1]` the parent's parent, …, the last one has no
/// creator). With no creators the child is returned as written.
///
/// The result carries the creators' rule layers in [`AgentProfile::creator_rules`], which the
/// permission engine evaluates before the child's own rules. See the module table for every
/// dimension.
///
/// ```
/// use sayri_core::SandboxLevel;
/// use sayri_core::domain::agents::effective_profile;
/// use sayri_core::domain::profile::AgentProfile;
///
/// let mut builder = AgentProfile::builtin_default();
/// builder.id = "builder".into();
/// builder.sandbox.ask_before_run = true;
/// let mut child = AgentProfile::builtin_default();
/// child.id = "rootie".into();
/// child.parent = Some("builder".into());
/// child.sandbox.level = SandboxLevel::HostRoot;
/// let e = effective_profile(&child, &[builder]);
/// assert_eq!(e.sandbox.level, SandboxLevel::HostUser);
/// assert!(e.sandbox.ask_before_run);
/// assert_eq!(e.creator_rules[0].agent_id, "builder");
/// ```
pub fn effective_profile(child: &AgentProfile, creators: &[AgentProfile]) -> AgentProfile {
    let mut creator: Option<AgentProfile> = None;
    for written in creators.iter().rev() {
        creator = Some(match &creator {
            None => as_root(written),
            Some(above) => narrowed_by(written, above),
        });
    }
    match &creator {
        None => as_root(child),
        Some(p) => narrowed_by(child, p),
    }
}

/// An agent without a creator: as written, with no inherited layers.
fn as_root(p: &AgentProfile) -> AgentProfile {
    AgentProfile {
        creator_rules: Vec::new(),
        ..p.clone()
    }
}

/// `child` (as written) bound by its creator's effective profile `p`.
fn narrowed_by(child: &AgentProfile, p: &AgentProfile) -> AgentProfile {
    let mut e = as_root(child);
    e.creator_rules = p.creator_rules.clone();
    e.creator_rules.push(CreatorRules {
        agent_id: p.id.clone(),
        blocked_binaries: p.sandbox.blocked_binaries.clone(),
        permission_rules: p.sandbox.permission_rules.clone(),
        default_effect: p.sandbox.default_effect,
    });
    let (s, ps) = (&mut e.sandbox, &p.sandbox);
    s.level = s.level.min(ps.level);
    s.ask_before_run |= ps.ask_before_run;
    s.default_effect = s.default_effect.max(ps.default_effect);
    s.allow_network &= ps.allow_network;
    s.timeout_seconds = s.timeout_seconds.min(ps.timeout_seconds);
    for b in &ps.blocked_binaries {
        if !s.blocked_binaries.iter().any(|x| x.trim() == b.trim()) {
            s.blocked_binaries.push(b.clone());
        }
    }
    s.isolated_dir = workspace(s.isolated_dir.take(), p);
    e.allowed_secrets.retain(|k| {
        p.allowed_secrets
            .iter()
            .any(|c| secret_key(c) == secret_key(k))
    });
    e.allowed_skills = allow::narrow(&e.allowed_skills, &p.allowed_skills);
    e.allowed_plugins = allow::narrow(&e.allowed_plugins, &p.allowed_plugins);
    e.allowed_tools = allow::narrow(&e.allowed_tools, &p.allowed_tools);
    if e.model.base_url.is_none() {
        e.model.base_url = p.model.base_url.clone();
        e.model.api_key_secret = p.model.api_key_secret.clone();
    }
    if is_default(&e.model.model_name) {
        e.model.model_name = p.model.model_name.clone();
        e.model.provider = p.model.provider.clone();
    }
    e
}

fn is_default(model_name: &str) -> bool {
    let m = model_name.trim();
    m.is_empty() || m == "default"
}

/// The child's level-2 workspace: its own choice when the creator runs on the host (it could
/// write there anyway) or when it lies inside the creator's own workspace; otherwise `None`
/// (its own fresh workspace), so a child cannot make a directory writable that its sandboxed
/// creator cannot write.
fn workspace(child: Option<String>, p: &AgentProfile) -> Option<String> {
    let dir = child?;
    if p.sandbox.level >= SandboxLevel::HostUser {
        return Some(dir);
    }
    let inside = p.sandbox.isolated_dir.as_deref().is_some_and(|own| {
        let (own, dir) = (own.trim_end_matches('/'), dir.trim_end_matches('/'));
        !dir.split('/').any(|part| part == "..")
            && (dir == own || dir.starts_with(&format!("{own}/")))
    });
    inside.then_some(dir)
}

/// `child` as it is stored after a creation by an agent (natural-language creation): its
/// privileges are those of its effective profile (so what a person approved on the card is
/// what is written, and widening the creator later does not widen it), everything else as
/// written. The creator link stays.
pub fn clamped_for_storage(child: &AgentProfile, creators: &[AgentProfile]) -> AgentProfile {
    let e = effective_profile(child, creators);
    let mut out = as_root(child);
    out.sandbox = e.sandbox;
    out.allowed_secrets = e.allowed_secrets;
    out.allowed_skills = e.allowed_skills;
    out.allowed_plugins = e.allowed_plugins;
    out.allowed_tools = e.allowed_tools;
    out.sandbox.permission_rules = child.sandbox.permission_rules.clone();
    out
}

/// Why an agent's creator chain cannot be resolved. The agent is then unusable (fail closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The `parent` names an agent that does not exist.
    #[error(
        "agent {agent} cannot be used: its creator {creator} does not exist — restore {creator}, or detach {agent} with `sayri agents detach {agent}`"
    )]
    MissingCreator {
        /// The agent whose creator is missing.
        agent: String,
        /// The missing creator.
        creator: String,
    },
    /// The `parent` links form a loop.
    #[error(
        "agent {agent} cannot be used: its creators form a loop ({chain}) — fix their `parent` fields"
    )]
    Loop {
        /// The agent being resolved.
        agent: String,
        /// The ids along the loop, `a → b → a`.
        chain: String,
    },
    /// More than [`MAX_CHAIN`] creators.
    #[error(
        "agent {agent} cannot be used: it has more than {MAX_CHAIN} creators above it — detach it from one of them"
    )]
    TooDeep {
        /// The agent being resolved.
        agent: String,
    },
    /// A creator's file is invalid.
    #[error("agent {agent} cannot be used: its creator {creator} is invalid: {message}")]
    BadCreator {
        /// The agent being resolved.
        agent: String,
        /// The invalid creator.
        creator: String,
        /// The loader's message (file and field).
        message: String,
    },
    /// The agent's own file is invalid.
    #[error("{0}")]
    Bad(String),
}

/// Loads agent `id` and its creators with `stored` (profiles as written: `Ok(None)` when there
/// is no such agent, `Err` naming the file and field when its file is invalid — any error whose
/// text says so) and returns its effective profile. `Ok(None)` when `id` itself does not exist.
///
/// # Errors
/// [`ChainError`]: the agent's file or a creator's is invalid, a creator is missing, the
/// creators loop, or there are more than [`MAX_CHAIN`].
pub fn resolve<E: std::fmt::Display>(
    id: &str,
    mut stored: impl FnMut(&str) -> Result<Option<AgentProfile>, E>,
) -> Result<Option<AgentProfile>, ChainError> {
    let Some(child) = stored(id).map_err(|e| ChainError::Bad(e.to_string()))? else {
        return Ok(None);
    };
    let creators = creators_of(&child, &mut stored)?;
    Ok(Some(effective_profile(&child, &creators)))
}

/// The creators of `child` as written, nearest first.
///
/// # Errors
/// As [`resolve`].
pub fn creators_of<E: std::fmt::Display>(
    child: &AgentProfile,
    mut stored: impl FnMut(&str) -> Result<Option<AgentProfile>, E>,
) -> Result<Vec<AgentProfile>, ChainError> {
    let mut chain: Vec<AgentProfile> = Vec::new();
    let mut seen = vec![child.id.clone()];
    let mut next = child.parent.clone();
    while let Some(creator) = next {
        if seen.contains(&creator) {
            seen.push(creator);
            return Err(ChainError::Loop {
                agent: child.id.clone(),
                chain: seen.join(" → "),
            });
        }
        if chain.len() == MAX_CHAIN {
            return Err(ChainError::TooDeep {
                agent: child.id.clone(),
            });
        }
        let p = match stored(&creator) {
            Ok(Some(p)) => p,
            Ok(None) => {
                return Err(ChainError::MissingCreator {
                    agent: child.id.clone(),
                    creator,
                });
            }
            Err(e) => {
                return Err(ChainError::BadCreator {
                    agent: child.id.clone(),
                    creator,
                    message: e.to_string(),
                });
            }
        };
        next = p.parent.clone();
        seen.push(creator);
        chain.push(p);
    }
    Ok(chain)
}

/// One way an agent's effective profile differs from what its file says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Narrowing {
    /// The field, e.g. `sandbox.level`.
    pub field: &'static str,
    /// As written.
    pub written: String,
    /// As in effect.
    pub effective: String,
}

impl std::fmt::Display for Narrowing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} → {}", self.field, self.written, self.effective)
    }
}

/// Every privilege dimension where `effective` differs from `written` (the same agent), so a
/// person sees what the creator chain takes away: level, ask switch, network, timeout,
/// workspace, blocked programs, inherited rules, secrets, skills, plugins, tools, model endpoint.
pub fn narrowings(written: &AgentProfile, effective: &AgentProfile) -> Vec<Narrowing> {
    let mut out = Vec::new();
    let mut add = |field: &'static str, w: String, e: String| {
        if w != e {
            out.push(Narrowing {
                field,
                written: w,
                effective: e,
            });
        }
    };
    for (field, w, e) in sandbox_pairs(written, effective) {
        add(field, w, e);
    }
    add(
        "allowed_secrets",
        list(&written.allowed_secrets, "none"),
        list(&effective.allowed_secrets, "none"),
    );
    for (field, w, e) in [
        (
            "allowed_skills",
            &written.allowed_skills,
            &effective.allowed_skills,
        ),
        (
            "allowed_plugins",
            &written.allowed_plugins,
            &effective.allowed_plugins,
        ),
        (
            "allowed_tools",
            &written.allowed_tools,
            &effective.allowed_tools,
        ),
    ] {
        add(field, list(w, "all"), list(e, "all"));
    }
    let url = |u: &Option<String>| u.clone().unwrap_or_else(|| "(the provider's)".into());
    add(
        "model.base_url",
        url(&written.model.base_url),
        url(&effective.model.base_url),
    );
    add(
        "model.model_name",
        written.model.model_name.clone(),
        effective.model.model_name.clone(),
    );
    out
}

/// The sandbox dimensions of [`narrowings`], each as (field, written, effective), equal or not.
fn sandbox_pairs(
    written: &AgentProfile,
    effective: &AgentProfile,
) -> Vec<(&'static str, String, String)> {
    let mut pairs = Vec::new();
    let mut add = |field: &'static str, w: String, e: String| pairs.push((field, w, e));
    let (ws, es) = (&written.sandbox, &effective.sandbox);
    add("sandbox.level", ws.level.to_string(), es.level.to_string());
    add(
        "sandbox.ask_before_run",
        ws.ask_before_run.to_string(),
        es.ask_before_run.to_string(),
    );
    add(
        "sandbox.default_effect",
        effect_name(ws.default_effect),
        effect_name(es.default_effect),
    );
    add(
        "sandbox.allow_network",
        ws.allow_network.to_string(),
        es.allow_network.to_string(),
    );
    add(
        "sandbox.timeout_seconds",
        ws.timeout_seconds.to_string(),
        es.timeout_seconds.to_string(),
    );
    let dir = |d: &Option<String>| d.clone().unwrap_or_else(|| "(its own workspace)".into());
    add(
        "sandbox.isolated_dir",
        dir(&ws.isolated_dir),
        dir(&es.isolated_dir),
    );
    add(
        "sandbox.blocked_binaries",
        list(&ws.blocked_binaries, "none"),
        list(&es.blocked_binaries, "none"),
    );
    let inherited: usize = effective
        .creator_rules
        .iter()
        .map(|c| c.permission_rules.len() + c.blocked_binaries.len())
        .sum();
    if !effective.creator_rules.is_empty() {
        let ids: Vec<&str> = effective
            .creator_rules
            .iter()
            .map(|c| c.agent_id.as_str())
            .collect();
        add(
            "sandbox.permission_rules",
            format!("{} own rule(s)", ws.permission_rules.len()),
            format!(
                "{inherited} rule(s) of its creators ({}) first, then its own {}",
                ids.join(", "),
                ws.permission_rules.len()
            ),
        );
    }
    pairs
}

/// `read_only`, `ask`, … as profile files spell it.
fn effect_name(d: sayri_permissions::DefaultEffect) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn list(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join(", ")
    }
}
