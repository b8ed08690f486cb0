//! Agent profiles on disk: `$CONFIG/agents/<id>.json`, validated and completed with defaults by
//! [`AgentProfile::from_json`] (a missing `id` is the file's stem, a missing `name` the id, absent
//! `blocked_binaries` the default list, level names in any accepted spelling). The built-in
//! `default` agent is used when no `default.json` exists. This is the one place that reads
//! profile files: the daemon, `sayri prompt show` and `sayri permissions check` all load here.
//!
//! [`valid_agent_id`] (from `sayri_core::domain::profile`) is the one agent-id check (file stems:
//! letters, digits, `-`, `_`, no leading dot).

use sayri_core::assistant::AgentDirectory;
use sayri_core::domain::profile::AgentProfile;
pub use sayri_core::domain::profile::valid_agent_id;
use std::path::{Path, PathBuf};

/// The agents directory.
#[derive(Debug, Clone)]
pub struct FileAgents {
    dir: PathBuf,
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

    /// Loads one profile: `Ok(None)` when there is no such agent, `Err` with a message naming
    /// the file and the field when the file is invalid.
    pub fn load(&self, id: &str) -> Result<Option<AgentProfile>, String> {
        if !valid_agent_id(id) {
            return Err(format!(
                "invalid agent id {id:?}: use letters, digits, '-' and '_'"
            ));
        }
        let path = self.dir.join(format!("{id}.json"));
        match read_profile(&path)? {
            Some(profile) => Ok(Some(profile)),
            None => Ok((id == "default").then(AgentProfile::builtin_default)),
        }
    }

    /// Every agent: `default` first (file or built-in), then the others in file-name order.
    /// Invalid files are reported in the second list (`"file: problem"`), not skipped silently.
    pub fn list(&self) -> (Vec<AgentProfile>, Vec<String>) {
        let mut agents = Vec::new();
        let mut problems = Vec::new();
        match self.load("default") {
            Ok(Some(a)) => agents.push(a),
            Ok(None) => agents.push(AgentProfile::builtin_default()),
            Err(e) => {
                problems.push(e);
                agents.push(AgentProfile::builtin_default());
            }
        }
        let mut stems: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let p = e.path();
                        (p.extension().and_then(|x| x.to_str()) == Some("json"))
                            .then(|| p.file_stem()?.to_str().map(String::from))
                            .flatten()
                    })
                    .collect()
            })
            .unwrap_or_default();
        stems.sort();
        for stem in stems.into_iter().filter(|s| s != "default") {
            match self.load(&stem) {
                Ok(Some(a)) => agents.push(a),
                Ok(None) => {}
                Err(e) => problems.push(e),
            }
        }
        (agents, problems)
    }
}

impl AgentDirectory for FileAgents {
    fn agent(&self, id: &str) -> Result<Option<AgentProfile>, String> {
        self.load(id)
    }
}
