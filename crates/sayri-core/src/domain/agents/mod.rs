//! Multi-agent rules: what an agent with a creator may do, and the requests about agents that
//! are handled around the model.
//!
//! * [`effective`] — non-escalation: [`effective_profile`], the one function every path that
//!   produces or runs an agent goes through (the daemon's loader, `agent_save`, `sayri agents
//!   create|edit`, natural-language creation, delegation, remote turns), and [`resolve`], which
//!   walks an agent's creators and calls it.
//! * [`allow`] — allow-lists of skills, plugins and tools (`[]` = all, `["none"]` = none).
//! * [`intent`] — recognising "create an agent" / "install a skill" in English and Spanish.
//! * [`proposal`] — the model's proposed profile for a new agent: the request, the strict
//!   parsing, the card shown to the person.
//! * [`delegation`] — the ```` ```delegate ```` block and its prompt line.

pub mod allow;
pub mod delegation;
pub mod effective;
pub mod intent;
pub mod proposal;

pub use effective::{
    ChainError, MAX_CHAIN, Narrowing, clamped_for_storage, creators_of, effective_profile,
    narrowings, resolve,
};

use sayri_protocol::SandboxLevel;

/// Why an agent may not create agents or install skills: only agents at levels 3 and 4 may.
/// The text is the refusal shown to the person, with what to do instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LevelRefusal {
    /// Creating a sub-agent at levels 0–2.
    #[error(
        "This agent runs at {level}, and agents at levels 0–2 cannot create sub-agents. Nothing was created. Create it yourself with `sayri agents create`, or ask an agent at level 3 or 4."
    )]
    CreateAgents {
        /// The agent's level.
        level: SandboxLevel,
    },
    /// Installing or creating a skill or plugin at levels 0–2.
    #[error(
        "This agent runs at {level}, and agents at levels 0–2 cannot install or create skills or plugins. Nothing was installed. Install it yourself from a terminal, or ask an agent at level 3 or 4."
    )]
    InstallSkills {
        /// The agent's level.
        level: SandboxLevel,
    },
}

/// Whether an agent at `level` may create agents: only levels 3 and 4. `Err` is the refusal
/// shown to the user (no model is asked, nothing is written).
///
/// ```
/// use sayri_core::SandboxLevel;
/// use sayri_core::domain::agents::may_create_agents;
/// assert!(may_create_agents(SandboxLevel::IsolatedDev).is_err());
/// assert!(may_create_agents(SandboxLevel::HostUser).is_ok());
/// ```
pub fn may_create_agents(level: SandboxLevel) -> Result<(), LevelRefusal> {
    if level >= SandboxLevel::HostUser {
        return Ok(());
    }
    Err(LevelRefusal::CreateAgents { level })
}

/// Whether an agent at `level` may install skills or plugins: only levels 3 and 4. `Err` is the
/// refusal shown to the user (no model is asked).
pub fn may_install_skills(level: SandboxLevel) -> Result<(), LevelRefusal> {
    if level >= SandboxLevel::HostUser {
        return Ok(());
    }
    Err(LevelRefusal::InstallSkills { level })
}
