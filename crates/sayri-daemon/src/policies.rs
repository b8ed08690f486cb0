//! The policy layer: which policy files apply and how they are read. The daemon's permission
//! gate and `sayri permissions check` both load policies here, so they decide alike.
//!
//! Which files apply, in order:
//! 1. the system files [`SYSTEM_POLICY_FILES`] — always, whatever the settings say (a user
//!    setting, or a command running as the user, cannot switch the administrator's policy off);
//! 2. the files named by `permissions.policy_files`, in the order given.
//!
//! A missing file is skipped; an unreadable or malformed one is an error naming it (the daemon
//! then does not start, and the CLI exits 2). Policies only tighten what agents allow.

use sayri_core::domain::config::Config;
use sayri_permissions::{PolicyError, PolicySet};
use std::path::{Path, PathBuf};

/// Why the policy files could not be read; each names the file or directory.
#[derive(Debug, thiserror::Error)]
pub enum PolicyLoadError {
    /// A directory of policy files (`sayri permissions check --policies DIR`) cannot be read.
    #[error("cannot read policy directory {}: {source}", dir.display())]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A policy file exists but cannot be read.
    #[error("cannot read policy file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A policy file is malformed or holds a bad rule.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// System policy files, in load order.
pub const SYSTEM_POLICY_FILES: [&str; 2] =
    ["/usr/share/sayri/policies.json", "/etc/sayri/policies.json"];

/// The policy files that apply under `cfg`: the system files, then `permissions.policy_files`
/// (each file once).
pub fn files_for(cfg: &Config) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = SYSTEM_POLICY_FILES.iter().map(PathBuf::from).collect();
    for f in &cfg.permissions.policy_files {
        let f = PathBuf::from(f);
        if !files.contains(&f) {
            files.push(f);
        }
    }
    files
}

/// Every `*.json` file of `dir`, in name order (for `sayri permissions check --policies DIR`,
/// which tries a set of policy files in place of the configured ones).
///
/// # Errors
/// [`PolicyLoadError::Directory`] when the directory cannot be read.
pub fn files_in_dir(dir: &Path) -> Result<Vec<PathBuf>, PolicyLoadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| PolicyLoadError::Directory {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Reads `files` into a policy set over the built-in baseline. Missing files are skipped.
///
/// # Errors
/// [`PolicyLoadError`] naming the unreadable or malformed file (and the rule, for a bad rule).
pub fn load(files: &[PathBuf]) -> Result<PolicySet, PolicyLoadError> {
    let mut texts = Vec::new();
    for path in files {
        match std::fs::read_to_string(path) {
            Ok(text) => texts.push((path.display().to_string(), text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(PolicyLoadError::Read {
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    Ok(PolicySet::load(
        texts.iter().map(|(p, t)| (p.as_str(), t.as_str())),
    )?)
}

/// The policies that apply under `cfg` ([`files_for`], then [`load`]).
///
/// # Errors
/// As [`load`].
pub fn load_for(cfg: &Config) -> Result<PolicySet, PolicyLoadError> {
    load(&files_for(cfg))
}
