//! Plugins on disk: the one loader every kind of plugin goes through (gateways, UIs,
//! background services, tools).
//!
//! A plugin is a folder with a `manifest.json` ([`manifest::Manifest`]) in one of two places,
//! searched in this order ([`PluginDirs`]):
//! 1. the user's plugins, `$CONFIG/plugins/<folder>/`;
//! 2. the system's plugins, `$SAYRI_SHARED_DIR/plugins/<folder>/` (default
//!    `/usr/share/sayri/plugins`).
//!
//! Within one place folders are read in name order; folders whose name starts with `.` and
//! folders without a `manifest.json` are not plugins. When two folders declare the same id the
//! first one found is used and the other is listed as shadowed (a user's copy overrides the
//! system's).
//!
//! A manifest is someone else's text: data only. [`discover`] never fails and never runs
//! anything: a folder whose manifest cannot be used is listed in [`Discovery::broken`] with the
//! reason, and the others load. A manifest is refused when
//! * it is larger than [`MAX_MANIFEST_BYTES`], not UTF-8 JSON, or a field has the wrong type;
//! * its id (default: the folder's name) is not 1–48 of `A–Z a–z 0–9 . _ -` starting with a
//!   letter or digit;
//! * its type is unknown (the kind is otherwise inferred, see [`Manifest::kind`]);
//! * its entrypoint (gateways: default `gateway.py`), the first word of a service command, or
//!   the manifest itself leaves the plugin's folder once links are followed, is missing, or can
//!   be changed by another user (see [`confine`]);
//! * its settings file is not a plain `*.json` file name, or one Sayri keeps itself;
//! * a required secret's name is not an environment variable name.
//!
//! ```no_run
//! # fn demo(paths: &sayri_client::paths::Paths) {
//! use sayri_daemon::plugins::{PluginDirs, PluginKind, discover};
//! let found = discover(&PluginDirs::from_env(paths));
//! for p in found.of_kind(PluginKind::Gateway) {
//!     println!("{} ({}) in {}", p.id, p.name, p.dir.display());
//! }
//! for b in &found.broken {
//!     println!("{} is broken: {}", b.dir.display(), b.reason);
//! }
//! # }
//! ```

pub mod confine;
pub mod manifest;
pub mod run;
pub mod services;
pub mod settings_file;

pub use confine::{Program, Runner};
pub use manifest::{Manifest, PluginKind, ServiceBlock, UiBlock};

use sayri_client::paths::Paths;
use std::io::Read;
use std::path::{Path, PathBuf};

/// File name of a plugin's manifest.
pub const MANIFEST: &str = "manifest.json";
/// Largest manifest read (256 KiB); a larger one makes the plugin broken.
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024;
/// Longest plugin id.
pub const MAX_ID_LEN: usize = 48;
/// The system plugins when `SAYRI_SHARED_DIR` is not set: `/usr/share/sayri/plugins`.
pub const DEFAULT_SHARED_DIR: &str = "/usr/share/sayri";
/// Settings files Sayri keeps in the config folder itself, which no plugin may use.
const RESERVED_SETTINGS: [&str; 2] = ["routines.json", "gateway_instances.json"];

/// Where plugins are looked for, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDirs {
    /// The user's plugins (`$CONFIG/plugins`).
    pub user: PathBuf,
    /// The system's plugins (`$SAYRI_SHARED_DIR/plugins`, else `/usr/share/sayri/plugins`).
    pub system: PathBuf,
}

impl PluginDirs {
    /// The user's folder under `paths`' config dir; the system's from `SAYRI_SHARED_DIR` when it
    /// is set to an absolute path, else [`DEFAULT_SHARED_DIR`].
    pub fn from_env(paths: &Paths) -> PluginDirs {
        let shared = std::env::var_os("SAYRI_SHARED_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SHARED_DIR));
        PluginDirs {
            user: paths.config_dir.join("plugins"),
            system: shared.join("plugins"),
        }
    }
}

/// Which place a plugin was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// `$CONFIG/plugins`.
    User,
    /// The system's plugins folder.
    System,
}

impl Scope {
    /// `user` or `system`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::System => "system",
        }
    }
}

/// One command of a service block: its program (checked like an entrypoint) and the rest of its
/// words as arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The first word, resolved inside the plugin's folder.
    pub program: Program,
    /// The other words.
    pub args: Vec<String>,
}

/// A plugin's background service, with the manifest's defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// Key of the enable flag in the plugin's settings file.
    pub enabled_key: String,
    /// Label of the settings form's check box.
    pub enabled_label: String,
    /// Whether it is enabled while its settings file does not say.
    pub enabled_by_default: bool,
    /// Whether it starts with the daemon when enabled.
    pub auto_start: bool,
    /// The supervised program (`None`: the manifest gives only a status probe; nothing can be
    /// started).
    pub start: Option<Command>,
    /// Run after the supervised program was stopped.
    pub stop: Option<Command>,
    /// The original's status probe (kept for display; the supervisor knows the state).
    pub status: Option<Command>,
}

/// A plugin that loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    /// Its id.
    pub id: String,
    /// Display name (the id when absent).
    pub name: String,
    /// Version (`1.0.0` when absent).
    pub version: String,
    /// Description (empty when absent).
    pub description: String,
    /// Author (`Sayri Community` when absent).
    pub author: String,
    /// Its kind.
    pub kind: PluginKind,
    /// Where it was found.
    pub scope: Scope,
    /// Its folder, resolved.
    pub dir: PathBuf,
    /// Its program (gateways: `gateway.py` when the manifest names none; `None` for a plugin
    /// of another kind that names none).
    pub entrypoint: Option<Program>,
    /// Its background service.
    pub service: Option<Service>,
    /// The manifest as written.
    pub manifest: Manifest,
}

impl Plugin {
    /// `authorization.mode`, `none` when absent.
    pub fn auth_mode(&self) -> &str {
        self.manifest.auth_mode()
    }

    /// The secrets it needs, by name.
    pub fn required_secrets(&self) -> &[String] {
        &self.manifest.required_secrets
    }

    /// File name of its settings in the config folder: `ui.settings_file`, else `<id>.json`
    /// (checked by the loader: a plain `*.json` file name).
    pub fn settings_file_name(&self) -> String {
        self.manifest
            .ui
            .as_ref()
            .and_then(|u| u.settings_file.clone())
            .unwrap_or_else(|| format!("{}.json", self.id))
    }

    /// Where its settings file is under `config_dir` (to show and to hand to its programs;
    /// read and write it through [`Plugin::settings`]).
    pub fn settings_file(&self, config_dir: &Path) -> PathBuf {
        config_dir.join(self.settings_file_name())
    }

    /// Its settings file under `config_dir`, checked ([`settings_file::SettingsFile`]).
    ///
    /// # Errors
    /// Its manifest names a place Sayri does not write.
    pub fn settings(
        &self,
        config_dir: &Path,
    ) -> Result<settings_file::SettingsFile, settings_file::SettingsFileError> {
        let declared = self
            .manifest
            .ui
            .as_ref()
            .and_then(|u| u.settings_file.as_deref());
        settings_file::SettingsFile::resolve(config_dir, &self.id, declared)
    }
}

/// A folder with a manifest that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// The plugin's folder.
    pub dir: PathBuf,
    /// Where it was found.
    pub scope: Scope,
    /// Its id when the manifest named a valid one, else the folder's name.
    pub id: String,
    /// Why it cannot be used, and what to do.
    pub reason: String,
}

/// A plugin not used because one with the same id was found first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// Its folder.
    pub dir: PathBuf,
    /// Where it was found.
    pub scope: Scope,
    /// The id.
    pub id: String,
    /// The folder of the plugin used instead.
    pub used: PathBuf,
}

/// Everything [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovery {
    /// The plugins that loaded, in discovery order (user's first), one per id.
    pub plugins: Vec<Plugin>,
    /// Folders whose manifest cannot be used, with the reason.
    pub broken: Vec<Broken>,
    /// Plugins hidden by an earlier one of the same id.
    pub shadowed: Vec<Shadowed>,
}

impl Discovery {
    /// The plugin of id `id`.
    pub fn find(&self, id: &str) -> Option<&Plugin> {
        self.plugins.iter().find(|p| p.id == id)
    }

    /// The plugins of kind `kind`, in discovery order.
    pub fn of_kind(&self, kind: PluginKind) -> impl Iterator<Item = &Plugin> {
        self.plugins.iter().filter(move |p| p.kind == kind)
    }

    /// The plugins with a background service, in discovery order.
    pub fn services(&self) -> impl Iterator<Item = (&Plugin, &Service)> {
        self.plugins
            .iter()
            .filter_map(|p| p.service.as_ref().map(|s| (p, s)))
    }

    /// The broken folder whose id is `id`.
    pub fn broken(&self, id: &str) -> Option<&Broken> {
        self.broken.iter().find(|b| b.id == id)
    }
}

/// Every plugin in `dirs` (see the module rules). Reads files only; blocking, so async callers
/// run it through `crate::offload`.
pub fn discover(dirs: &PluginDirs) -> Discovery {
    let mut found = Discovery::default();
    for (root, scope) in [(&dirs.user, Scope::User), (&dirs.system, Scope::System)] {
        for dir in plugin_folders(root) {
            match load(&dir, scope) {
                Ok(p) => match found.find(&p.id) {
                    Some(first) => found.shadowed.push(Shadowed {
                        used: first.dir.clone(),
                        dir: p.dir,
                        scope,
                        id: p.id,
                    }),
                    None => found.plugins.push(p),
                },
                Err(reason) => found.broken.push(Broken {
                    id: folder_name(&dir),
                    dir,
                    scope,
                    reason,
                }),
            }
        }
    }
    found
}

fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The sub-folders of `root` holding a `manifest.json` (links followed), in name order.
fn plugin_folders(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir() && std::fs::symlink_metadata(p.join(MANIFEST)).is_ok())
        .collect();
    dirs.sort();
    dirs
}

/// Whether `id` is a usable plugin id.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Whether `name` is an environment variable name (`[A-Za-z_][A-Za-z0-9_]*`).
fn env_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads and parses the manifest of `dir` (resolved), checked as the module says.
fn read_manifest(dir: &Path) -> Result<Manifest, String> {
    let path = confine::file_in(dir, MANIFEST, "the manifest")?;
    let file = std::fs::File::open(&path).map_err(|e| format!("cannot read {MANIFEST}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {MANIFEST}: {e}"))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(format!(
            "{MANIFEST} is larger than {} KiB; a manifest describes a plugin, it holds no data",
            MAX_MANIFEST_BYTES / 1024
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{MANIFEST} is not a valid manifest: {e}"))
}

/// Loads the plugin in folder `dir`.
///
/// # Errors
/// Why it cannot be used (see the module rules), as a sentence for the person.
pub fn load(dir: &Path, scope: Scope) -> Result<Plugin, String> {
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("cannot open the plugin's folder: {e}"))?;
    let meta = std::fs::metadata(&dir).map_err(|e| format!("cannot open the folder: {e}"))?;
    confine::owner_only(&dir, &meta)?;
    let manifest = read_manifest(&dir)?;
    let id = match &manifest.id {
        Some(id) => id.clone(),
        None => folder_name(&dir),
    };
    if !valid_id(&id) {
        return Err(format!(
            "its id {:?} is not 1-{MAX_ID_LEN} letters, digits, '.', '_' or '-' starting with a letter or digit",
            id.chars().take(60).collect::<String>()
        ));
    }
    let kind = manifest.kind(&id)?;
    if let Some(bad) = manifest.required_secrets.iter().find(|s| !env_name(s)) {
        return Err(format!(
            "required secret {:?} is not an environment variable name (letters, digits, '_')",
            bad.chars().take(60).collect::<String>()
        ));
    }
    let entry = match (&manifest.entrypoint, kind) {
        (Some(e), _) => Some(e.as_str()),
        (None, PluginKind::Gateway) => Some("gateway.py"),
        (None, _) => None,
    };
    let entrypoint = entry
        .map(|e| confine::program_in(&dir, e, "entrypoint"))
        .transpose()?;
    let service = service_of(&dir, &manifest)?;
    let plugin = Plugin {
        name: manifest.name.clone().unwrap_or_else(|| id.clone()),
        version: manifest.version.clone().unwrap_or_else(|| "1.0.0".into()),
        description: manifest.description.clone().unwrap_or_default(),
        author: manifest
            .author
            .clone()
            .unwrap_or_else(|| "Sayri Community".into()),
        id,
        kind,
        scope,
        dir,
        entrypoint,
        service,
        manifest,
    };
    check_settings_file(&plugin.settings_file_name())?;
    Ok(plugin)
}

fn check_settings_file(name: &str) -> Result<(), String> {
    let plain = name.len() <= 80
        && name.len() > ".json".len()
        && name.ends_with(".json")
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !RESERVED_SETTINGS.contains(&name);
    if plain {
        Ok(())
    } else {
        Err(format!(
            "its settings file {:?} must be a plain file name ending in .json (letters, digits, '.', '_', '-'), not a path nor one of Sayri's own files ({})",
            name.chars().take(60).collect::<String>(),
            RESERVED_SETTINGS.join(", ")
        ))
    }
}

/// One service command: its first word is a program inside `dir`.
fn command(dir: &Path, words: &Option<Vec<String>>, what: &str) -> Result<Option<Command>, String> {
    let Some(words) = words.as_ref().filter(|w| !w.is_empty()) else {
        return Ok(None);
    };
    let program = confine::program_in(dir, &words[0], what)?;
    Ok(Some(Command {
        program,
        args: words[1..].to_vec(),
    }))
}

/// The service of `manifest`, when it declares one.
fn service_of(dir: &Path, manifest: &Manifest) -> Result<Option<Service>, String> {
    let Some(block) = manifest.service.as_ref().filter(|_| manifest.has_service()) else {
        return Ok(None);
    };
    let key = block
        .enabled_key
        .clone()
        .unwrap_or_else(|| "enabled".into());
    if key.is_empty() || key.len() > 64 {
        return Err("service.enabled_key must be 1-64 characters".into());
    }
    let auto_start = block.auto_start.unwrap_or(true);
    Ok(Some(Service {
        enabled_key: key,
        enabled_label: block
            .enabled_label
            .clone()
            .unwrap_or_else(|| "Run this service when Sayri starts".into()),
        enabled_by_default: block.enabled.or(block.auto_start).unwrap_or(true),
        auto_start,
        start: command(dir, &block.start, "service.start")?,
        stop: command(dir, &block.stop, "service.stop")?,
        status: command(dir, &block.status, "service.status")?,
    }))
}

#[cfg(test)]
mod tests;
