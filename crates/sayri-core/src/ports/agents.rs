//! The `AgentDirectory` port: where agent profiles are stored (the daemon: `$CONFIG/agents/`).
//!
//! The port hands out profiles **as written**. Whatever runs an agent asks
//! [`effective_agent`] instead, which walks the agent's creators and applies
//! [`crate::domain::agents::effective_profile`] — there is no other way to get a runnable
//! profile from a directory, so no path can forget the creator's limits.

use crate::domain::agents::{self, ChainError};
use crate::domain::profile::AgentProfile;
use crate::sync::lock;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Why an [`AgentDirectory`] could not give or store a profile. Every variant is a sentence
/// for the person, naming what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentDirError {
    /// The profile's file is invalid or unreadable; the adapter's message names the file and
    /// the field.
    #[error("{0}")]
    Invalid(String),
    /// An agent with this id exists already (a new agent never replaces one); nothing was
    /// written.
    #[error("an agent named {0} exists already")]
    Exists(String),
    /// The profile could not be written; the adapter's message says why and what to do.
    #[error("{0}")]
    NotCreated(String),
}

/// Stored agent profiles.
pub trait AgentDirectory: Send + Sync {
    /// The profile `id` as written (its creator not applied): `Ok(None)` if there is none,
    /// `Err` ([`AgentDirError::Invalid`]) naming the file and field if it is invalid.
    /// `default` always exists (its file, or the built-in).
    fn stored(&self, id: &str) -> Result<Option<AgentProfile>, AgentDirError>;

    /// The id of every stored agent (`default` first), valid or not.
    fn ids(&self) -> Vec<String>;

    /// Stores a new agent. Fails, writing nothing, when an agent with its id exists already
    /// (a new agent never replaces one) or it cannot be written.
    fn create(&self, profile: &AgentProfile) -> Result<(), AgentDirError>;
}

/// The effective profile of agent `id` — the one way the core resolves an agent it will run:
/// the profile as written, bound by its creators' current profiles. `Ok(None)` when there is no
/// such agent.
///
/// # Errors
/// [`ChainError`]: the agent's file or a creator's is invalid (naming the file and field), a
/// creator is missing, or the creators loop.
pub fn effective_agent(
    dir: &dyn AgentDirectory,
    id: &str,
) -> Result<Option<AgentProfile>, ChainError> {
    agents::resolve(id, |i| dir.stored(i))
}

/// The effective profiles of the agents `id` created directly, in id order. Agents that cannot
/// be resolved are left out (they cannot run).
pub fn sub_agents(dir: &dyn AgentDirectory, id: &str) -> Vec<AgentProfile> {
    dir.ids()
        .iter()
        .filter(|other| {
            dir.stored(other)
                .ok()
                .flatten()
                .is_some_and(|p| p.parent.as_deref() == Some(id))
        })
        .filter_map(|other| effective_agent(dir, other).ok().flatten())
        .collect()
}

/// A set of agents in memory (tests, or a daemon without an agents directory). Always has
/// `default` (the built-in unless one is given).
#[derive(Debug, Default)]
pub struct StaticAgents(Mutex<BTreeMap<String, AgentProfile>>);

impl StaticAgents {
    /// The given agents plus the built-in `default` if none has that id.
    pub fn new(agents: impl IntoIterator<Item = AgentProfile>) -> Self {
        let mut map: BTreeMap<_, _> = agents.into_iter().map(|a| (a.id.clone(), a)).collect();
        map.entry("default".into())
            .or_insert_with(AgentProfile::builtin_default);
        StaticAgents(Mutex::new(map))
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, AgentProfile>> {
        lock(&self.0)
    }
}

impl AgentDirectory for StaticAgents {
    fn stored(&self, id: &str) -> Result<Option<AgentProfile>, AgentDirError> {
        Ok(self.map().get(id).cloned())
    }

    fn ids(&self) -> Vec<String> {
        let map = self.map();
        let mut ids: Vec<String> = vec!["default".into()];
        ids.extend(map.keys().filter(|k| *k != "default").cloned());
        ids
    }

    fn create(&self, profile: &AgentProfile) -> Result<(), AgentDirError> {
        let mut map = self.map();
        if map.contains_key(&profile.id) {
            return Err(AgentDirError::Exists(profile.id.clone()));
        }
        map.insert(profile.id.clone(), profile.clone());
        Ok(())
    }
}
