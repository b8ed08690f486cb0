//! The model's proposal for a new agent, asked for when a person says "create an agent …".
//!
//! One extra model request ([`request_prompt`]) asks for one JSON object; [`parse`] accepts it
//! only if it is exactly that shape: known keys only, the right types, a valid level name and
//! valid rules. A proposal never sets an endpoint, a key or a creator: those are for a person
//! (`sayri agents edit`) and for the engine. The result is then bound by its creator
//! ([`super::effective_profile`]) and shown on a card ([`card`]) before anything is written.

use super::effective::Narrowing;
use crate::domain::profile::{AgentProfile, valid_agent_id, valid_secret_name};
use sayri_permissions::RawRule;
use sayri_permissions::{Source, rule::rules_from_raw};
use sayri_protocol::SandboxLevel;
use serde::Deserialize;

/// The system message of the proposal request.
pub fn request_prompt() -> String {
    let levels = SandboxLevel::ALL.map(|l| l.name()).join(", ");
    format!(
        "You design agent profiles for Sayri, a local Linux assistant. From the user's request, reply with ONLY one JSON object (no prose, no code fence) with exactly these keys:\n\
\"id\": short lowercase id (letters, digits, '-'),\n\
\"name\": display name,\n\
\"description\": one line,\n\
\"system_prompt\": 1-3 sentences saying what the agent does,\n\
\"level\": one of {levels} (the lowest that does the job),\n\
\"ask_before_run\": true or false,\n\
\"allow_network\": true or false,\n\
\"permission_rules\": list of {{\"action\": \"shell\", \"resource\": \"<pattern>\", \"effect\": \"allow|ask|deny\"}},\n\
\"allowed_secrets\": list of secret names (usually []),\n\
\"model_name\": \"default\" unless the user names a model."
    )
}

/// The JSON object the model must produce.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Proposal {
    id: String,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    system_prompt: String,
    level: String,
    #[serde(default)]
    ask_before_run: bool,
    #[serde(default = "yes")]
    allow_network: bool,
    #[serde(default)]
    permission_rules: Vec<RawRule>,
    #[serde(default)]
    allowed_secrets: Vec<String>,
    #[serde(default)]
    model_name: Option<String>,
}

fn yes() -> bool {
    true
}

/// Why a proposal was refused; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the model did not propose a valid agent profile ({0}). Nothing was created. Try again with a clearer request, use a stronger model, or create it yourself with `sayri agents create`."
)]
pub struct ProposalError(pub String);

/// Parses the model's answer into a new profile with `parent` = `creator_id`, created at
/// `now`. Accepts the object alone, inside a ```` ```json ```` fence, or surrounded by prose.
/// The id is normalised (lower case, spaces as `-`); uniqueness is the caller's job.
///
/// # Errors
/// [`ProposalError`] for anything but exactly the requested object.
pub fn parse(answer: &str, creator_id: &str, now: f64) -> Result<AgentProfile, ProposalError> {
    let err = |m: String| ProposalError(m);
    let text = json_text(answer).ok_or_else(|| err("its answer holds no JSON object".into()))?;
    let p: Proposal = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
    let level: SandboxLevel = p.level.parse().map_err(|e| err(format!("{e}")))?;
    rules_from_raw(&p.permission_rules, &Source::Agent).map_err(|e| err(e.to_string()))?;
    if let Some(bad) = p.allowed_secrets.iter().find(|s| !valid_secret_name(s)) {
        return Err(err(format!("{bad:?} is not a secret name")));
    }
    let id = normalise_id(&p.id)
        .or_else(|| normalise_id(&p.name))
        .ok_or_else(|| err(format!("{:?} cannot be an agent id", p.id)))?;
    let name = p.name.trim();
    if name.is_empty() {
        return Err(err("the name is empty".into()));
    }
    let mut profile = AgentProfile {
        id,
        name: name.chars().take(60).collect(),
        description: p.description.trim().chars().take(200).collect(),
        system_prompt: p.system_prompt.trim().chars().take(2000).collect(),
        allowed_secrets: p.allowed_secrets,
        created_at: now,
        parent: Some(creator_id.to_string()),
        ..AgentProfile::default()
    };
    if let Some(m) = p.model_name.filter(|m| !m.trim().is_empty()) {
        profile.model.model_name = m.trim().to_string();
    }
    profile.sandbox.level = level;
    profile.sandbox.ask_before_run = p.ask_before_run;
    profile.sandbox.allow_network = p.allow_network;
    profile.sandbox.permission_rules = p.permission_rules;
    Ok(profile)
}

/// The JSON object in `answer`: a fenced block's body, or from the first `{` to the last `}`.
fn json_text(answer: &str) -> Option<&str> {
    let t = answer.trim();
    let body = match t.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.split_once('\n').map_or(rest, |(_, r)| r);
            rest.rsplit_once("```").map_or(rest, |(b, _)| b)
        }
        None => t,
    };
    let start = body.find('{')?;
    let end = body.rfind('}')?;
    (start < end).then(|| &body[start..=end])
}

/// `"Release Chores"` → `release-chores`; `None` when nothing usable remains.
fn normalise_id(raw: &str) -> Option<String> {
    let mut id = String::new();
    for c in raw.trim().to_lowercase().chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            id.push(c);
        } else if (c.is_whitespace() || c == '.') && !id.ends_with('-') {
            id.push('-');
        }
    }
    let id: String = id.trim_matches(['-', '_']).chars().take(32).collect();
    let id = id.trim_end_matches(['-', '_']).to_string();
    valid_agent_id(&id).then_some(id)
}

/// `base`, or `base-2`, `base-3`, … — the first id `exists` says is free, so a new agent never
/// replaces an existing one (`default` included).
pub fn unique_id(base: &str, exists: impl Fn(&str) -> bool) -> String {
    if !exists(base) && base != "default" {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|id| !exists(id))
        .unwrap_or_else(|| base.to_string())
}

/// What the permission card of a proposed agent shows: a one-line `resource` and one line per
/// dimension `(what, why)` — level, ask switch, network, rules (inherited and own), secrets —
/// each saying what was asked and what the creator allows.
pub fn card(
    proposed: &AgentProfile,
    effective: &AgentProfile,
    narrowed: &[Narrowing],
) -> (String, Vec<(String, String)>) {
    let why = |field: &str, default: &str| -> String {
        narrowed
            .iter()
            .find(|n| n.field == field)
            .map(|n| {
                format!(
                    "asked {}; a sub-agent never exceeds its creator {}",
                    n.written,
                    proposed.parent.as_deref().unwrap_or("")
                )
            })
            .unwrap_or_else(|| default.to_string())
    };
    let s = &effective.sandbox;
    let secrets = if effective.allowed_secrets.is_empty() {
        "none".to_string()
    } else {
        effective.allowed_secrets.join(", ")
    };
    let inherited: usize = effective
        .creator_rules
        .iter()
        .map(|c| c.permission_rules.len() + c.blocked_binaries.len())
        .sum();
    let mut lines = vec![
        (
            format!("level {}", s.level),
            why("sandbox.level", "as asked"),
        ),
        (
            format!("ask_before_run {}", s.ask_before_run),
            why("sandbox.ask_before_run", "as asked"),
        ),
        (
            format!("network {}", if s.allow_network { "on" } else { "off" }),
            why("sandbox.allow_network", "as asked"),
        ),
        (
            format!("secrets: {secrets}"),
            why("allowed_secrets", "as asked"),
        ),
        (
            format!("{inherited} rule(s) inherited from its creators"),
            "they apply first; its own rules can only tighten them".into(),
        ),
    ];
    for r in &s.permission_rules {
        lines.push((
            format!("rule: {} {} → {}", r.action, r.resource, r.effect),
            "its own rule".into(),
        ));
    }
    let resource = format!(
        "create agent {} ({}) under {}: {}, ask_before_run {}, network {}, secrets: {secrets}",
        effective.id,
        effective.name,
        proposed.parent.as_deref().unwrap_or("-"),
        s.level,
        s.ask_before_run,
        if s.allow_network { "on" } else { "off" },
    );
    (resource, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_or_wrapped_object_is_parsed_and_bound_to_its_creator() {
        let answer = "Here it is:\n```json\n{\"id\": \"Release Chores\", \"name\": \"Release chores\", \"level\": \"LEVEL_4_HOST_ROOT\", \"permission_rules\": [{\"action\": \"shell\", \"resource\": \"git push*\", \"effect\": \"ask\"}]}\n```";
        let p = parse(answer, "builder", 5.0).unwrap();
        assert_eq!(p.id, "release-chores");
        assert_eq!(p.parent.as_deref(), Some("builder"));
        assert_eq!(p.sandbox.level, SandboxLevel::HostRoot);
        assert_eq!(p.sandbox.permission_rules.len(), 1);
        assert_eq!(p.created_at, 5.0);
    }

    #[test]
    fn anything_but_the_requested_object_is_refused() {
        for bad in [
            "I would create an agent for you.",
            "{\"id\": \"x\"}",
            "{\"id\": \"x\", \"name\": \"X\", \"level\": \"LEVEL_9\"}",
            "{\"id\": \"x\", \"name\": \"X\", \"level\": \"3\", \"base_url\": \"http://evil\"}",
            "{\"id\": \"x\", \"name\": \"X\", \"level\": \"3\", \"parent\": \"nobody\"}",
            "{\"id\": \"x\", \"name\": \"X\", \"level\": \"3\", \"permission_rules\": [{\"action\": \"shell\", \"effect\": \"maybe\"}]}",
            "{\"id\": \"x\", \"name\": \"X\", \"level\": 3}",
            "{\"id\": \"!!!\", \"name\": \"???\", \"level\": \"3\"}",
        ] {
            let e = parse(bad, "builder", 0.0).unwrap_err();
            assert!(e.to_string().contains("Nothing was created"), "{bad}: {e}");
        }
    }

    #[test]
    fn unique_id_never_reuses_an_existing_id_or_default() {
        let taken = ["scout", "scout-2"];
        assert_eq!(unique_id("scout", |i| taken.contains(&i)), "scout-3");
        assert_eq!(unique_id("fresh", |i| taken.contains(&i)), "fresh");
        assert_eq!(unique_id("default", |_| false), "default-2");
    }
}
