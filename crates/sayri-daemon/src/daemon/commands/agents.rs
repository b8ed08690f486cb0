//! The agent-profile commands: `agents_list`, `agent_switch`, `agent_save`, `agent_delete`,
//! `agent_detach`. Profiles are read and written by [`crate::agents::FileAgents`]; what an
//! agent may do is always its effective profile (its file bound by its creators' current
//! profiles), which is what these commands report next to the file's own values.

use crate::agents::{FileAgents, agent_view, listed_view};
use crate::daemon::commands::agent::core_err;
use crate::daemon::dispatch::Ctx;
use crate::offload;
use crate::wire;
use sayri_core::domain::agents::{self, Narrowing};
use sayri_core::domain::profile::{AgentProfile, valid_agent_id};
use sayri_permissions::AgentRules;
use sayri_permissions::RawRule;
use sayri_protocol::params::{
    AgentDeleteParams, AgentDetachParams, AgentSaveParams, AgentSwitchParams, AgentsListParams,
    SaveMode,
};
use sayri_protocol::reply::agents::{
    AgentDeleteReply, AgentDetachReply, AgentSaveReply, AgentSwitchReply, AgentsListReply,
};
use sayri_protocol::{ErrorCode, ProtocolError, SandboxLevel};

/// `agents_list` → every agent, `default` first: its effective profile, or its `error` when its
/// file (or a creator's) is invalid.
pub async fn agents_list(_: AgentsListParams, ctx: Ctx) -> Result<AgentsListReply, ProtocolError> {
    let agents = &ctx.daemon.brain()?.agents;
    let list = offload::blocking(|| agents.list());
    Ok(list.iter().map(listed_view).collect())
}

/// `agent_switch {agent_id}` → `{"agent_id","name"}`.
pub async fn agent_switch(
    p: AgentSwitchParams,
    ctx: Ctx,
) -> Result<AgentSwitchReply, ProtocolError> {
    let a = ctx
        .daemon
        .brain()?
        .core
        .agent_switch(&p.agent_id)
        .map_err(core_err)?;
    Ok(AgentSwitchReply {
        agent_id: a.id.clone(),
        name: a.name.clone(),
    })
}

fn invalid(message: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid_params(message)
}

/// The id `agent_save` writes: `id`, else made from `name` (`"Release Chores"` →
/// `release-chores`).
fn save_id(p: &AgentSaveParams) -> Result<String, ProtocolError> {
    let id = match (&p.id, &p.name) {
        (Some(id), _) if !id.trim().is_empty() => id.trim().to_string(),
        (_, Some(name)) => name
            .trim()
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join("-"),
        _ => return Err(invalid("agent_save needs `id` or `name`")),
    };
    if !valid_agent_id(&id) {
        return Err(invalid(format!(
            "invalid agent id {id:?}: use letters, digits, '-' and '_'"
        )));
    }
    Ok(id)
}

/// Copies every given field of `p` onto `a`; omitted fields keep their value.
fn apply(a: &mut AgentProfile, p: &AgentSaveParams) -> Result<(), ProtocolError> {
    let text = |v: &Option<String>, into: &mut String| {
        if let Some(v) = v {
            *into = v.trim().to_string();
        }
    };
    if let Some(name) = &p.name {
        if name.trim().is_empty() {
            return Err(invalid("`name` cannot be blank"));
        }
        a.name = name.trim().to_string();
    }
    text(&p.description, &mut a.description);
    text(&p.system_prompt, &mut a.system_prompt);
    text(&p.custom_instructions, &mut a.custom_instructions);
    for (given, into) in [
        (&p.allowed_skills, &mut a.allowed_skills),
        (&p.allowed_plugins, &mut a.allowed_plugins),
        (&p.allowed_tools, &mut a.allowed_tools),
        (&p.allowed_secrets, &mut a.allowed_secrets),
        (&p.blocked_binaries, &mut a.sandbox.blocked_binaries),
    ] {
        if let Some(v) = given {
            *into = v.clone();
        }
    }
    let flags = [
        (p.investigation_loop, &mut a.investigation_loop),
        (p.reinforcement_learning, &mut a.reinforcement_learning),
        (p.ask_before_run, &mut a.sandbox.ask_before_run),
        (p.allow_network, &mut a.sandbox.allow_network),
    ];
    for (given, into) in flags {
        if let Some(v) = given {
            *into = v;
        }
    }
    if let Some(level) = &p.sandbox_level {
        a.sandbox.level = level
            .parse::<SandboxLevel>()
            .map_err(|e| invalid(e.to_string()))?;
    }
    if let Some(d) = &p.default_effect {
        a.sandbox.default_effect = serde_json::from_value(d.trim().into()).map_err(|_| {
            invalid(format!(
                "unknown default_effect {d:?}: use allow, read_only, ask or deny"
            ))
        })?;
    }
    if let Some(t) = p.timeout_seconds {
        a.sandbox.timeout_seconds = if t == 0 { 10 } else { t };
    }
    if let Some(rules) = &p.permission_rules {
        a.sandbox.permission_rules = rules
            .iter()
            .map(|r| RawRule {
                action: r.action.clone(),
                resource: r.resource.clone(),
                effect: r.effect.clone(),
            })
            .collect();
    }
    apply_model(a, p);
    apply_parent(a, p)
}

fn apply_model(a: &mut AgentProfile, p: &AgentSaveParams) {
    let m = &mut a.model;
    if let Some(name) = &p.model_name {
        m.model_name = Some(name.trim())
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
            .to_string();
    }
    if let Some(t) = p.temperature {
        m.temperature = t;
    }
    if let Some(n) = p.max_tokens {
        m.max_tokens = (n > 0).then_some(n);
    }
    let optional = |v: &str| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    if let Some(url) = &p.base_url {
        m.base_url = optional(url);
    }
    if let Some(key) = &p.api_key_secret {
        m.api_key_secret = optional(key);
    }
}

/// A creator can be given to an agent without one (that only tightens it); the creator of an
/// agent that has one is never changed here (another creator could be wider).
fn apply_parent(a: &mut AgentProfile, p: &AgentSaveParams) -> Result<(), ProtocolError> {
    let Some(parent) = p.parent.as_deref().map(str::trim) else {
        return Ok(());
    };
    match a.parent.as_deref() {
        Some(old) if old == parent => Ok(()),
        Some(old) => Err(ProtocolError::new(
            ErrorCode::Denied,
            format!(
                "agent {} was created by {old}; its creator cannot be changed (that could widen it) — detach it first with `sayri agents detach {}`",
                a.id, a.id
            ),
        )),
        None if parent.is_empty() => Ok(()),
        None => {
            a.parent = Some(parent.to_string());
            Ok(())
        }
    }
}

/// `agent_save {…}` → `{"id", "name", "created", "parent", "effective", "narrowed"}`. Omitted
/// fields keep their stored value. The file keeps what was asked; `effective` is what the agent
/// may do under its creators, and `narrowed` lists every difference.
pub async fn agent_save(p: AgentSaveParams, ctx: Ctx) -> Result<AgentSaveReply, ProtocolError> {
    let files = &ctx.daemon.brain()?.agents;
    offload::blocking(|| save_agent(files, &p))
}

/// [`agent_save`]'s work on the files (blocking).
fn save_agent(files: &FileAgents, p: &AgentSaveParams) -> Result<AgentSaveReply, ProtocolError> {
    let id = save_id(p)?;
    if id == "default" {
        return Err(ProtocolError::new(
            ErrorCode::Denied,
            "the built-in agent default cannot be changed; create an agent of your own and make it the default with `sayri config set agent.default_agent ID`",
        ));
    }
    let existing = files.stored(&id).map_err(|e| {
        invalid(format!(
            "{e} (fix or delete that file before saving the agent)"
        ))
    })?;
    match (p.mode, &existing) {
        (Some(SaveMode::Create), Some(_)) => {
            return Err(invalid(format!(
                "an agent named {id} exists already; choose another id or edit it"
            )));
        }
        (Some(SaveMode::Update), None) => {
            return Err(ProtocolError::new(
                ErrorCode::NotFound,
                format!("agent not found: {id} (create it first)"),
            ));
        }
        _ => {}
    }
    let created = existing.is_none();
    let mut profile = existing.unwrap_or_else(|| AgentProfile {
        id: id.clone(),
        name: id.clone(),
        created_at: now(),
        ..AgentProfile::default()
    });
    apply(&mut profile, p)?;
    let creators =
        agents::creators_of(&profile, |i| files.stored(i)).map_err(|e| invalid(e.to_string()))?;
    let effective = agents::effective_profile(&profile, &creators);
    AgentRules::from_profile(&effective).map_err(|e| invalid(e.to_string()))?;
    let written = if created {
        files.create(&profile)
    } else {
        files.save(&profile)
    };
    written.map_err(invalid)?;
    Ok(AgentSaveReply {
        narrowed: agents::narrowings(&profile, &effective)
            .iter()
            .map(wire::narrowing)
            .collect(),
        effective: agent_view(&effective),
        id: profile.id,
        name: profile.name,
        created,
        parent: profile.parent,
    })
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `agent_delete {agent_id}` → `{"agent_id", "deleted"}`. `default` and agents with sub-agents
/// are refused. Deleting the active agent makes `default` active.
pub async fn agent_delete(
    p: AgentDeleteParams,
    ctx: Ctx,
) -> Result<AgentDeleteReply, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let deleted = offload::blocking(|| brain.agents.delete(&p.agent_id))
        .map_err(|e| ProtocolError::new(ErrorCode::Denied, e))?;
    if deleted && brain.core.active_agent().id == p.agent_id {
        brain.core.agent_switch("default").map_err(core_err)?;
    }
    Ok(AgentDeleteReply {
        agent_id: p.agent_id,
        deleted,
    })
}

/// `agent_detach {agent_id}` → `{"agent_id", "detached", "parent", "widened"}`: removes the
/// creator link, so the agent's own file applies unbound. `widened` lists what its creators
/// took away until now (`effective` = before, `written` = from now on).
pub async fn agent_detach(
    p: AgentDetachParams,
    ctx: Ctx,
) -> Result<AgentDetachReply, ProtocolError> {
    let files = &ctx.daemon.brain()?.agents;
    offload::blocking(|| detach_agent(files, p))
}

/// [`agent_detach`]'s work on the files (blocking).
fn detach_agent(
    files: &FileAgents,
    p: AgentDetachParams,
) -> Result<AgentDetachReply, ProtocolError> {
    let mut written = files.stored(&p.agent_id).map_err(invalid)?.ok_or_else(|| {
        ProtocolError::new(
            ErrorCode::NotFound,
            format!("agent not found: {}", p.agent_id),
        )
    })?;
    let Some(parent) = written.parent.take() else {
        return Err(invalid(format!(
            "agent {} has no creator; there is nothing to detach",
            p.agent_id
        )));
    };
    let before = files.load(&p.agent_id).ok().flatten();
    let widened: Vec<Narrowing> = before
        .map(|e| {
            let mut w = written.clone();
            w.parent = Some(parent.clone());
            agents::narrowings(&w, &e)
        })
        .unwrap_or_default();
    files.save(&written).map_err(invalid)?;
    tracing::info!("agent {} detached from its creator {parent}", p.agent_id);
    Ok(AgentDetachReply {
        agent_id: p.agent_id,
        detached: true,
        parent,
        widened: widened.iter().map(wire::narrowing).collect(),
    })
}
