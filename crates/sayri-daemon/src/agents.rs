//! Agent profiles on disk: `$CONFIG/agents/<id>.json`, validated and completed with defaults by
//! [`AgentProfile::from_json`] (a missing `id` is the file's stem, a missing `name` the id, absent
//! `blocked_binaries` the default list, level names in any accepted spelling). The built-in
//! `default` agent is used when no `default.json` exists. This is the one place that reads and
//! writes profile files: the daemon, `sayri agents`, `sayri prompt show` and `sayri permissions
//! check` all load here.
//!
//! * [`FileAgents::load`] gives the **effective** profile — the file bound by its creators'
//!   current profiles (`sayri_core::domain::agents::effective_profile`); it is what runs and what
//!   `sayri permissions check --agent` judges. [`FileAgents::stored`] gives the file as written.
//! * Files are written 0600 through a temp file: [`FileAgents::save`] replaces atomically,
//!   [`FileAgents::create`] never replaces an existing agent. `default` is never written or
//!   deleted, and an agent with sub-agents cannot be deleted.
//!
//! [`valid_agent_id`] (from `sayri_core::domain::profile`) is the one agent-id check (file stems:
//! letters, digits, `-`, `_`, no leading dot).

use sayri_core::domain::agents::{self, Narrowing};
use sayri_core::domain::profile::AgentProfile;
pub use sayri_core::domain::profile::valid_agent_id;
use sayri_core::ports::{AgentDirError, AgentDirectory, effective_agent};
use sayri_protocol::reply::agents::{
    Agent, AgentModel, AgentSandbox, BrokenAgent, ListedAgent, UsableAgent,
};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The agents directory.
#[derive(Debug, Clone)]
pub struct FileAgents {
    dir: PathBuf,
}

/// One entry of [`FileAgents::list`].
#[derive(Debug, Clone)]
pub struct Listed {
    /// The agent id (the file stem).
    pub id: String,
    /// As written, or why its file is invalid.
    pub written: Result<AgentProfile, String>,
    /// As in effect, or why it cannot be used (its own file, or a creator's).
    pub effective: Result<AgentProfile, String>,
}

impl Listed {
    /// How the effective profile differs from the file (empty when it cannot be used).
    pub fn narrowed(&self) -> Vec<Narrowing> {
        match (&self.written, &self.effective) {
            (Ok(w), Ok(e)) => agents::narrowings(w, e),
            _ => Vec::new(),
        }
    }
}

/// Reads and validates one profile file (any path, e.g. `sayri permissions check --profile`).
///
/// # Errors
/// A message naming the file, and the field when one is wrong.
pub fn load_profile_file(path: &Path) -> Result<AgentProfile, String> {
    read_profile(path)?
        .ok_or_else(|| format!("cannot read agent profile {}: no such file", path.display()))
}

/// [`load_profile_file`], with `Ok(None)` when the file does not exist.
fn read_profile(path: &Path) -> Result<Option<AgentProfile>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => AgentProfile::from_json(&text, &path.display().to_string())
            .map(Some)
            .map_err(|e| e.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read agent profile {}: {e}", path.display())),
    }
}

impl FileAgents {
    /// Profiles under `dir` (normally `$CONFIG/agents`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileAgents { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of agent `id`.
    pub fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn check_id(id: &str) -> Result<(), String> {
        if valid_agent_id(id) {
            Ok(())
        } else {
            Err(format!(
                "invalid agent id {id:?}: use letters, digits, '-' and '_'"
            ))
        }
    }

    /// One profile as written (its creators not applied): `Ok(None)` when there is no such
    /// agent, `Err` with a message naming the file and the field when the file is invalid. An
    /// `id` inside the file must be the file's own name.
    pub fn stored(&self, id: &str) -> Result<Option<AgentProfile>, String> {
        Self::check_id(id)?;
        let path = self.path(id);
        match read_profile(&path)? {
            Some(profile) if profile.id != id => Err(format!(
                "{}: field `id`: {:?} differs from the file name — rename the file to {}.json or set \"id\": {id:?}",
                path.display(),
                profile.id,
                profile.id
            )),
            Some(profile) => Ok(Some(profile)),
            None => Ok((id == "default").then(AgentProfile::builtin_default)),
        }
    }

    /// One profile as it runs: the file bound by its creators' current profiles. `Ok(None)` when
    /// there is no such agent; `Err` naming the file and field (its own or a creator's), or the
    /// missing creator.
    pub fn load(&self, id: &str) -> Result<Option<AgentProfile>, String> {
        effective_agent(self, id).map_err(|e| e.to_string())
    }

    /// The stems of the `*.json` files, sorted, without `default`.
    fn stems(&self) -> Vec<String> {
        let mut stems: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let p = e.path();
                        (p.extension().and_then(|x| x.to_str()) == Some("json"))
                            .then(|| p.file_stem()?.to_str().map(String::from))
                            .flatten()
                    })
                    .filter(|s| s != "default" && !s.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        stems.sort();
        stems
    }

    /// Every agent, `default` first (file or built-in), then the others in file-name order —
    /// invalid ones included, each with its error (never skipped silently).
    pub fn list(&self) -> Vec<Listed> {
        self.ids()
            .into_iter()
            .map(|id| Listed {
                written: self
                    .stored(&id)
                    .and_then(|p| p.ok_or_else(|| format!("agent {id} disappeared"))),
                effective: self
                    .load(&id)
                    .and_then(|p| p.ok_or_else(|| format!("agent {id} disappeared"))),
                id,
            })
            .collect()
    }

    /// The ids of the agents `id` created directly.
    pub fn children(&self, id: &str) -> Vec<String> {
        self.stems()
            .into_iter()
            .filter(|s| {
                self.stored(s)
                    .ok()
                    .flatten()
                    .is_some_and(|p| p.parent.as_deref() == Some(id))
            })
            .collect()
    }

    /// Writes `profile` (as written, never an effective profile) to its file, replacing it
    /// atomically. Returns the path.
    ///
    /// # Errors
    /// `default`, an invalid id, or the write failing (the old file is then untouched).
    pub fn save(&self, profile: &AgentProfile) -> Result<PathBuf, String> {
        let (path, text) = self.prepare(profile)?;
        sayri_vault::atomic_write::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("could not save agent {}: {e}", profile.id))?;
        Ok(path)
    }

    /// Writes a new agent's file; never replaces an existing one (the file is linked into
    /// place, which fails if the name is taken). Returns the path.
    ///
    /// # Errors
    /// The id exists already (or is `default`), is invalid, or the write fails.
    pub fn create(&self, profile: &AgentProfile) -> Result<PathBuf, String> {
        let (path, text) = self.prepare(profile)?;
        let tmp = self.dir.join(format!(".{}.json.new", profile.id));
        let _ = std::fs::remove_file(&tmp);
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::hard_link(&tmp, &path)
        };
        let result = write();
        let _ = std::fs::remove_file(&tmp);
        match result {
            Ok(()) => Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(format!(
                "an agent named {} exists already; choose another id",
                profile.id
            )),
            Err(e) => Err(format!("could not create agent {}: {e}", profile.id)),
        }
    }

    /// The file path and text of `profile`, after checking it may be written and reads back.
    fn prepare(&self, profile: &AgentProfile) -> Result<(PathBuf, String), String> {
        Self::check_id(&profile.id)?;
        if profile.id == "default" {
            return Err(
                "the built-in agent default cannot be replaced; create an agent of your own (`sayri agents create`) and make it the default with `sayri config set agent.default_agent ID`".into(),
            );
        }
        let path = self.path(&profile.id);
        let text = serde_json::to_string_pretty(profile).map_err(|e| e.to_string())? + "\n";
        AgentProfile::from_json(&text, &path.display().to_string()).map_err(|e| e.to_string())?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        Ok((path, text))
    }

    /// Deletes agent `id`'s file. Returns whether a file was removed.
    ///
    /// # Errors
    /// `default`, an agent with sub-agents (they would lose their creator), an invalid id, or
    /// the removal failing.
    pub fn delete(&self, id: &str) -> Result<bool, String> {
        Self::check_id(id)?;
        if id == "default" {
            return Err("built-in agents cannot be deleted".into());
        }
        let children = self.children(id);
        if !children.is_empty() {
            return Err(format!(
                "agent {id} created other agents ({}); delete or detach them first (`sayri agents detach ID`)",
                children.join(", ")
            ));
        }
        match std::fs::remove_file(self.path(id)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("could not delete agent {id}: {e}")),
        }
    }
}

/// The core's port: every call reads or writes files, so each runs off the async worker
/// threads ([`crate::offload::blocking`]; in the CLI it simply runs).
impl AgentDirectory for FileAgents {
    fn stored(&self, id: &str) -> Result<Option<AgentProfile>, AgentDirError> {
        crate::offload::blocking(|| FileAgents::stored(self, id)).map_err(AgentDirError::Invalid)
    }

    fn ids(&self) -> Vec<String> {
        let mut ids = vec!["default".to_string()];
        ids.extend(crate::offload::blocking(|| self.stems()));
        ids
    }

    fn create(&self, profile: &AgentProfile) -> Result<(), AgentDirError> {
        crate::offload::blocking(|| FileAgents::create(self, profile))
            .map(|_| ())
            .map_err(AgentDirError::NotCreated)
    }
}

/// The public view of an (effective) profile. Permission rules are left out: clients show
/// agents, and the rules stay readable in the profile file and `sayri agents show`.
pub fn agent_view(a: &AgentProfile) -> Agent {
    Agent {
        id: a.id.clone(),
        name: a.name.clone(),
        description: a.description.clone(),
        system_prompt: a.system_prompt.clone(),
        is_builtin: a.id == "default",
        model: AgentModel {
            provider: a.model.provider.clone(),
            model_name: a.model.model_name.clone(),
            temperature: (f64::from(a.model.temperature) * 1000.0).round() / 1000.0,
            base_url: a.model.base_url.clone(),
        },
        sandbox: AgentSandbox {
            level: a.sandbox.level,
            timeout_seconds: a.sandbox.timeout_seconds,
            allow_network: a.sandbox.allow_network,
            ask_before_run: a.sandbox.ask_before_run,
            default_effect: a.sandbox.default_effect.name().into(),
        },
        allowed_skills: a.allowed_skills.clone(),
        allowed_plugins: a.allowed_plugins.clone(),
        allowed_tools: a.allowed_tools.clone(),
        allowed_secrets: a.allowed_secrets.clone(),
        custom_instructions: a.custom_instructions.clone(),
        investigation_loop: a.investigation_loop,
        reinforcement_learning: a.reinforcement_learning,
        parent: a.parent.clone(),
    }
}

/// One `agents_list` entry: the effective profile with `narrowed` (what its creators take away)
/// and `error: null`, or — for an agent that cannot be used — its id, name and `error`.
pub fn listed_view(l: &Listed) -> ListedAgent {
    match &l.effective {
        Ok(e) => ListedAgent::Usable(Box::new(UsableAgent {
            agent: agent_view(e),
            narrowed: l.narrowed().iter().map(crate::wire::narrowing).collect(),
            error: None,
        })),
        Err(error) => {
            let written = l.written.as_ref().ok();
            ListedAgent::Broken(BrokenAgent {
                id: l.id.clone(),
                name: written.map_or(l.id.clone(), |w| w.name.clone()),
                is_builtin: false,
                parent: written.and_then(|w| w.parent.clone()),
                error: error.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(id: &str, parent: Option<&str>) -> AgentProfile {
        AgentProfile {
            id: id.into(),
            name: id.into(),
            parent: parent.map(String::from),
            ..AgentProfile::default()
        }
    }

    #[test]
    fn create_never_replaces_and_default_is_never_written_or_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let agents = FileAgents::new(dir.path().join("agents"));
        agents.create(&agent("scout", None)).unwrap();
        let e = agents.create(&agent("scout", None)).unwrap_err();
        assert!(e.contains("exists already"), "{e}");
        assert!(agents.create(&agent("default", None)).is_err());
        assert!(agents.save(&agent("default", None)).is_err());
        assert!(agents.delete("default").is_err());
        assert!(!agents.path("default").exists());
        let mode = std::fs::metadata(agents.path("scout")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn broken_files_are_listed_with_their_error_and_a_creator_with_children_stays() {
        let dir = tempfile::tempdir().unwrap();
        let agents = FileAgents::new(dir.path());
        agents.create(&agent("boss", None)).unwrap();
        agents.create(&agent("kid", Some("boss"))).unwrap();
        std::fs::write(
            dir.path().join("typo.json"),
            r#"{"sandbox":{"level":"LEVEL_9"}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("orphan.json"), r#"{"parent":"gone"}"#).unwrap();
        let list = agents.list();
        let ids: Vec<&str> = list.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids, ["default", "boss", "kid", "orphan", "typo"]);
        let typo = list.iter().find(|l| l.id == "typo").unwrap();
        let e = typo.effective.as_ref().unwrap_err();
        assert!(
            e.contains("typo.json") && e.contains("sandbox.level"),
            "{e}"
        );
        let orphan = list.iter().find(|l| l.id == "orphan").unwrap();
        let e = orphan.effective.as_ref().unwrap_err();
        assert!(e.contains("creator gone does not exist"), "{e}");
        let e = agents.delete("boss").unwrap_err();
        assert!(e.contains("kid"), "{e}");
        assert!(agents.delete("kid").unwrap());
        assert!(agents.delete("boss").unwrap());
    }

    #[test]
    fn a_file_whose_id_is_not_its_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rootie.json"), r#"{"id":"default"}"#).unwrap();
        let e = FileAgents::new(dir.path()).load("rootie").unwrap_err();
        assert!(e.contains("field `id`"), "{e}");
    }
}
