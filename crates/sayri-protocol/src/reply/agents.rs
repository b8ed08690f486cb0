//! Replies of the agent-profile commands: `agents_list`, `agent_switch`, `agent_save`,
//! `agent_delete`, `agent_detach`.
//!
//! What an agent may do is its **effective** profile (its file bound by its creators' current
//! profiles); that is what [`Agent`] shows. Permission rules are left out: they stay readable
//! in the profile file and `sayri agents show`.

use crate::level::SandboxLevel;
use serde::{Deserialize, Serialize};

/// An agent's effective profile as clients see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// Its id.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Its system prompt.
    pub system_prompt: String,
    /// It is the built-in `default`.
    pub is_builtin: bool,
    /// Its model.
    pub model: AgentModel,
    /// Its sandbox.
    pub sandbox: AgentSandbox,
    /// Skills it may read.
    pub allowed_skills: Vec<String>,
    /// Plugins it may use.
    pub allowed_plugins: Vec<String>,
    /// Tools it may use.
    pub allowed_tools: Vec<String>,
    /// Vault keys its commands receive.
    pub allowed_secrets: Vec<String>,
    /// Instructions added to the prompt.
    pub custom_instructions: String,
    /// It investigates before it answers.
    pub investigation_loop: bool,
    /// It learns preferences from what worked.
    pub reinforcement_learning: bool,
    /// Its creator, if any.
    pub parent: Option<String>,
}

/// [`Agent::model`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentModel {
    /// The provider kind.
    pub provider: String,
    /// The model (`default` = the provider's).
    pub model_name: String,
    /// Its temperature, rounded to three decimals.
    pub temperature: f64,
    /// An endpoint of its own, if any.
    pub base_url: Option<String>,
}

/// [`Agent::sandbox`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSandbox {
    /// The level its commands run at.
    pub level: SandboxLevel,
    /// Seconds a command may run.
    pub timeout_seconds: u64,
    /// Its commands may use the network.
    pub allow_network: bool,
    /// Every command asks first.
    pub ask_before_run: bool,
    /// What a command no rule names gets: `allow`, `read_only`, `ask` or `deny`.
    pub default_effect: String,
}

/// One way an agent's effective profile differs from what its file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Narrowing {
    /// The field, e.g. `sandbox.level`.
    pub field: String,
    /// As written.
    pub written: String,
    /// As in effect.
    pub effective: String,
}

/// `agents_list` → every agent, `default` first.
pub type AgentsListReply = Vec<ListedAgent>;

/// One entry of `agents_list`: a usable agent, or one whose file (or a creator's) cannot be
/// used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ListedAgent {
    /// Its effective profile.
    Usable(Box<UsableAgent>),
    /// Only what could be read, and why it cannot be used.
    Broken(BrokenAgent),
}

impl ListedAgent {
    /// Its id.
    pub fn id(&self) -> &str {
        match self {
            ListedAgent::Usable(a) => &a.agent.id,
            ListedAgent::Broken(b) => &b.id,
        }
    }

    /// Its display name.
    pub fn name(&self) -> &str {
        match self {
            ListedAgent::Usable(a) => &a.agent.name,
            ListedAgent::Broken(b) => &b.name,
        }
    }
}

/// [`ListedAgent::Usable`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsableAgent {
    /// Its effective profile.
    #[serde(flatten)]
    pub agent: Agent,
    /// What its creators take away.
    pub narrowed: Vec<Narrowing>,
    /// Always `null`.
    pub error: Option<String>,
}

/// [`ListedAgent::Broken`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokenAgent {
    /// Its id.
    pub id: String,
    /// Its name as written (its id when unreadable).
    pub name: String,
    /// Always false.
    pub is_builtin: bool,
    /// Its creator as written, if any.
    pub parent: Option<String>,
    /// Why it cannot be used, naming the file and field.
    pub error: String,
}

/// `agent_switch` → `{agent_id, name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSwitchReply {
    /// The agent now active.
    pub agent_id: String,
    /// Its display name.
    pub name: String,
}

/// `agent_save` → `{id, name, created, parent, effective, narrowed}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSaveReply {
    /// Its id.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// It is new.
    pub created: bool,
    /// Its creator, if any.
    pub parent: Option<String>,
    /// What it may do under its creators.
    pub effective: Agent,
    /// Every difference between the file and `effective`.
    pub narrowed: Vec<Narrowing>,
}

/// `agent_delete` → `{agent_id, deleted}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentDeleteReply {
    /// The agent.
    pub agent_id: String,
    /// Its file existed and was removed.
    pub deleted: bool,
}

/// `agent_detach` → `{agent_id, detached, parent, widened}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentDetachReply {
    /// The agent.
    pub agent_id: String,
    /// Always true.
    pub detached: bool,
    /// The creator it was detached from.
    pub parent: String,
    /// What its creators took away until now (`effective` = before, `written` = from now on).
    pub widened: Vec<Narrowing>,
}
