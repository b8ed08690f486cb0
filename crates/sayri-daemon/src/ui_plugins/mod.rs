//! UI plugins: front-ends a plugin folder brings (a manifest of type `ui` with a Python entry
//! point, like the original's classic companions), run by the daemon like its own front-ends,
//! and the settings their manifests declare.
//!
//! * **Found** by the plugin loader (`crate::plugins`: `$CONFIG/plugins/*/manifest.json`, then
//!   the system's plugins folder, ids and entry points checked there); a UI plugin is one of
//!   kind `ui` with an entry point. A folder the loader refuses, or a UI plugin without an
//!   entry point, is not listed; `ui_start` and `plugin_settings_set` naming it say why.
//! * **Run** as the supervised program `ui-<id>`: `python3 <entrypoint>` in the plugin's
//!   folder, the way every plugin program runs (`crate::plugins::run`): restarted after a
//!   crash, stopped with the daemon, output in `$STATE/logs/ui-<id>.log`. Its environment is
//!   built, never inherited whole (no `LD_PRELOAD`): the supervisor's basic variables, the
//!   graphical session's (`DISPLAY`, `WAYLAND_DISPLAY`, …), `SAYRI_CONFIG_DIR`,
//!   `SAYRI_STATE_DIR` and a `PYTHONPATH` holding the shared `lib` folder the original
//!   companions import from; its secret settings reach it on its secrets descriptor. While it
//!   runs, `$STATE/<id>.pid` holds its pid, as the original wrote it, for the original tray and
//!   companions.
//! * **Settings**: the nodes of its manifest's `ui.settings`
//!   (`sayri_core::domain::plugin_form`), stored in its settings file (the plugin loader's
//!   [`crate::plugins::settings_file`]), which is created with the defaults before the plugin
//!   first starts.

pub mod launch;

use crate::plugins::settings_file;
use crate::plugins::{Discovery, Plugin, PluginDirs, PluginKind, Program, Scope};
use sayri_client::paths::Paths;
use sayri_core::domain::plugin_form;
use sayri_core::domain::skills::settings::SettingSpec;
use std::path::{Path, PathBuf};

/// A UI plugin found on disk.
#[derive(Debug, Clone)]
pub struct UiPlugin {
    /// Its id (`sayri-ui-clippy`).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Its version.
    pub version: String,
    /// Who made it.
    pub author: String,
    /// Its `ui.kind` (`desktop` when not declared).
    pub kind: String,
    /// Its `ui.xui_renderer`.
    pub xui_renderer: Option<String>,
    /// Where it was found.
    pub scope: Scope,
    /// Its folder (resolved).
    pub dir: PathBuf,
    /// Its entry point, checked by the loader to be a file inside its folder.
    pub entrypoint: Program,
    /// The settings its manifest declares, or why the declaration cannot be used.
    pub settings: Result<Vec<SettingSpec>, String>,
    /// Its `ui.settings_file`, as declared.
    pub settings_file: Option<String>,
    /// The plugin as loaded.
    pub plugin: Plugin,
}

/// The UI plugins found, and why the plugin folders that are not usable are not.
#[derive(Debug, Clone, Default)]
pub struct UiPlugins {
    /// The usable UI plugins, in discovery order (the user's first).
    pub plugins: Vec<UiPlugin>,
    /// `(id, why)` of each plugin folder that cannot be used (of any kind: the manifest of a
    /// broken one cannot say), and of each UI plugin without an entry point.
    pub unusable: Vec<(String, String)>,
}

impl UiPlugin {
    /// The UI plugin `plugin` is, if it is one: of kind `ui`.
    ///
    /// # Errors
    /// It is of kind `ui` but names no entry point.
    pub fn from_plugin(plugin: &Plugin) -> Option<Result<UiPlugin, String>> {
        if plugin.kind != PluginKind::Ui {
            return None;
        }
        let Some(entrypoint) = plugin.entrypoint.clone() else {
            return Some(Err(format!(
                "UI plugin {} names no `entrypoint` in its manifest.json (the script Sayri runs, e.g. \"main.py\")",
                plugin.id
            )));
        };
        let ui = plugin.manifest.ui.clone().unwrap_or_default();
        Some(Ok(UiPlugin {
            id: plugin.id.clone(),
            name: plugin.name.clone(),
            description: plugin.description.clone(),
            version: plugin.version.clone(),
            author: plugin.author.clone(),
            kind: ui
                .kind
                .clone()
                .filter(|k| !k.trim().is_empty())
                .unwrap_or_else(|| "desktop".into()),
            xui_renderer: ui.xui_renderer.clone(),
            scope: plugin.scope,
            dir: plugin.dir.clone(),
            entrypoint,
            settings: plugin_form::declared(&ui.settings),
            settings_file: ui.settings_file.clone(),
            plugin: plugin.clone(),
        }))
    }
}

/// The UI plugins of a discovery.
pub fn of(found: &Discovery) -> UiPlugins {
    let mut out = UiPlugins::default();
    for p in &found.plugins {
        match UiPlugin::from_plugin(p) {
            None => {}
            Some(Ok(ui)) => out.plugins.push(ui),
            Some(Err(why)) => out.unusable.push((p.id.clone(), why)),
        }
    }
    for b in &found.broken {
        out.unusable.push((
            b.id.clone(),
            format!(
                "the plugin in {} cannot be used: {}",
                b.dir.display(),
                b.reason
            ),
        ));
    }
    out
}

/// Every UI plugin in the plugin folders of `paths` (reads files: blocking).
pub fn discover(paths: &Paths) -> UiPlugins {
    of(&crate::plugins::discover(&PluginDirs::from_env(paths)))
}

/// The shared `lib` folder beside the system's plugins (`/usr/share/sayri/lib`), where the
/// original companions import Sayri's Python library from.
pub fn shared_lib(paths: &Paths) -> Option<PathBuf> {
    let system = PluginDirs::from_env(paths).system;
    system
        .parent()
        .map(|p| p.join("lib"))
        .filter(|l| l.is_dir())
}

/// `id` without the `sayri-ui-` or `sayri-` the original ids start with.
pub fn bare(id: &str) -> &str {
    id.strip_prefix("sayri-ui-")
        .or_else(|| id.strip_prefix("sayri-"))
        .unwrap_or(id)
}

/// The plugin `wanted` names: its id, `sayri-ui-<x>` or `sayri-<x>` for its id `<x>` (and the
/// other way round), or its display name (any case). The first match in `plugins` wins.
pub fn find<'a>(plugins: &'a [UiPlugin], wanted: &str) -> Option<&'a UiPlugin> {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return None;
    }
    plugins
        .iter()
        .find(|p| p.id == wanted)
        .or_else(|| plugins.iter().find(|p| bare(&p.id) == bare(wanted)))
        .or_else(|| plugins.iter().find(|p| p.name.eq_ignore_ascii_case(wanted)))
}

impl UiPlugins {
    /// Why the plugin `wanted` names (its id, or `sayri-ui-<id>`/`sayri-<id>`) cannot be used,
    /// when it is one of the unusable ones.
    pub fn why_unusable(&self, wanted: &str) -> Option<&str> {
        let wanted = wanted.trim();
        self.unusable
            .iter()
            .find(|(id, _)| id == wanted || bare(id) == bare(wanted))
            .map(|(_, why)| why.as_str())
    }
}

impl UiPlugin {
    /// The supervised program's name, `ui-<id>`.
    pub fn child_name(&self) -> String {
        format!("ui-{}", self.id)
    }

    /// `$STATE/<id>.pid`.
    pub fn pid_file(&self, state_dir: &Path) -> PathBuf {
        state_dir.join(format!("{}.pid", self.id))
    }

    /// Where its settings file is, checked.
    ///
    /// # Errors
    /// Its manifest names a place Sayri does not write ([`settings_file::SettingsFileError`]).
    pub fn settings_file(
        &self,
        config_dir: &Path,
    ) -> Result<settings_file::SettingsFile, settings_file::SettingsFileError> {
        self.plugin.settings(config_dir)
    }

    /// The settings it declares (none when its declaration cannot be used).
    pub fn declared(&self) -> &[SettingSpec] {
        self.settings.as_deref().unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    /// Plugin folders under a fresh user plugins folder, each `(folder, manifest)`, with a
    /// `main.py`; what the loader makes of them.
    fn found(plugins: &[(&str, serde_json::Value)]) -> (tempfile::TempDir, UiPlugins) {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("plugins");
        for (folder, manifest) in plugins {
            let dir = user.join(folder);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
            std::fs::write(dir.join("main.py"), "print('hi')\n").unwrap();
            for p in [dir.clone(), dir.join("manifest.json"), dir.join("main.py")] {
                let mode = if p.is_dir() { 0o755 } else { 0o644 };
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            }
        }
        let dirs = PluginDirs {
            user,
            system: tmp.path().join("no-system-plugins"),
        };
        let out = of(&crate::plugins::discover(&dirs));
        (tmp, out)
    }

    #[test]
    fn a_plugin_is_found_by_id_short_id_original_prefixes_or_display_name() {
        let (_t, all) = found(&[
            (
                "sayri-ui-clippy",
                json!({"type": "ui", "name": "Classic Companions", "entrypoint": "main.py",
                       "ui": {"kind": "character", "settings": [{"t": "check", "key": "sound_effects"}]}}),
            ),
            (
                "bonzi",
                json!({"type": "ui", "name": "Bonzi", "entrypoint": "main.py"}),
            ),
        ]);
        let all = &all.plugins;
        for wanted in [
            "sayri-ui-clippy",
            "clippy",
            "sayri-clippy",
            "classic companions",
        ] {
            assert_eq!(
                find(all, wanted).map(|p| p.id.as_str()),
                Some("sayri-ui-clippy"),
                "{wanted}"
            );
        }
        assert_eq!(
            find(all, "sayri-ui-bonzi").map(|p| p.id.as_str()),
            Some("bonzi")
        );
        for wanted in ["", "../sayri-ui-clippy", "clip", "sayri-ui-"] {
            assert!(find(all, wanted).is_none(), "{wanted}");
        }
        let clippy = find(all, "clippy").unwrap();
        assert_eq!(clippy.kind, "character");
        assert_eq!(clippy.declared().len(), 1);
        assert_eq!(
            find(all, "bonzi").unwrap().kind,
            "desktop",
            "the default kind"
        );
    }

    #[test]
    fn a_ui_plugin_without_an_entry_point_or_a_refused_folder_says_why() {
        let (_t, all) = found(&[
            ("sayri-ui-empty", json!({"type": "ui"})),
            (
                "sayri-ui-climber",
                json!({"type": "ui", "entrypoint": "main.py", "ui": {"settings_file": "../x.json"}}),
            ),
            ("sayri-gateway-x", json!({"type": "gateway"})),
        ]);
        assert!(all.plugins.is_empty(), "{:?}", all.plugins);
        let why = all.why_unusable("empty").unwrap();
        assert!(why.contains("names no `entrypoint`"), "{why}");
        let why = all.why_unusable("sayri-ui-climber").unwrap();
        assert!(why.contains("settings file"), "{why}");
        assert!(all.why_unusable("../sayri-ui-climber").is_none());
    }
}
