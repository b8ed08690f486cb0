//! A plugin's settings file: one flat JSON object in Sayri's configuration folder, read by the
//! plugin itself and written by Sayri (a UI plugin's settings form, a background service's
//! enable flag). Every read and write of such a file goes through [`SettingsFile`].
//!
//! Where it may be — the manifest is outside text, so its name is checked before anything is
//! read or written (the plugin loader refuses such a manifest already; this is checked again
//! where the file is used):
//! * the manifest's `ui.settings_file`, else `<plugin id>.json`: a plain `*.json` file name
//!   directly in `$CONFIG` — no folder, no absolute path, no `.`, `..` or `~`;
//! * never one of Sayri's own files (`routines.json`, the original's `vault.json`,
//!   `gateway_instances.json`, `policies.json`, `authorizations_*`, `pairing_pin_*`,
//!   `gateway_*`, a hidden file), and never reached through a symbolic link.
//!
//! How it is written: a change rewrites it with one key merged and every other key kept (the
//! plugin's own keys too), atomically (temp file, fsync, rename: a reader or a crash sees the
//! old file or the new one), indented with a newline at the end, and with the file's own
//! permission bits (0600 when new). A UI plugin's file is created holding the declared defaults
//! the first time it is needed ([`SettingsFile::ensure`]). A file that is not a JSON object is
//! never overwritten: the error names it, and what the person wrote stays. Writes are
//! serialised in the daemon.

use sayri_core::domain::plugin_form;
use sayri_core::domain::skills::settings::SettingSpec;
use sayri_core::sync::lock;
use serde_json::{Map, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// Largest settings file read (1 MiB).
pub const MAX_BYTES: u64 = 1 << 20;

/// File names in `$CONFIG` that are Sayri's own (exact, lower case).
const RESERVED_NAMES: &[&str] = &[
    "routines.json",
    "vault.json",
    "gateway_instances.json",
    "policies.json",
];
/// File-name beginnings in `$CONFIG` that are Sayri's own (per gateway instance).
const RESERVED_PREFIXES: &[&str] = &["authorizations_", "pairing_pin_", "gateway_", "."];

/// Serialises every read-modify-write of a settings file in this daemon.
static WRITES: Mutex<()> = Mutex::new(());

/// Why a settings file cannot be used, with what to do.
#[derive(Debug, thiserror::Error)]
pub enum SettingsFileError {
    /// The manifest's `ui.settings_file` names a place Sayri does not write.
    #[error(
        "plugin {plugin} declares the settings file {declared:?}, which Sayri refuses: {why}. A plugin's settings file is a .json file directly in {config}; fix `ui.settings_file` in its manifest.json"
    )]
    Refused {
        /// The plugin.
        plugin: String,
        /// What its manifest says.
        declared: String,
        /// Why it is refused.
        why: String,
        /// The configuration folder.
        config: String,
    },
    /// The file exists but holds something other than a JSON object.
    #[error(
        "the settings file {path} is not a JSON object ({why}); nothing was written — fix it or move it away, and the plugin's defaults are written the next time"
    )]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A read or a write failed.
    #[error("cannot {action} the settings file {path}: {why}")]
    Io {
        /// `read`, `write`, …
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error or the check that failed.
        why: String,
    },
}

/// The checked location of one plugin's settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    path: PathBuf,
    config_dir: PathBuf,
}

/// `declared` as one plain file name.
fn plain_name(declared: &str) -> Result<&str, String> {
    if declared.trim().is_empty() || declared.contains('\0') {
        return Err("it is empty".into());
    }
    let p = Path::new(declared);
    if p.is_absolute() {
        return Err(
            "it is an absolute path, which may lead outside the configuration folder".into(),
        );
    }
    let mut parts = p.components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(n)), None) if n != "~" => Ok(declared),
        _ if p.components().any(|c| c == Component::ParentDir) => {
            Err("it climbs out with `..`".into())
        }
        _ => Err("only a plain file name is allowed (no folder, no `.` or `~`)".into()),
    }
}

/// Whether `name` (a file directly in `$CONFIG`) is one of Sayri's own.
fn reserved(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    RESERVED_NAMES.contains(&lower.as_str())
        || RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p))
}

impl SettingsFile {
    /// Checks where plugin `plugin_id` keeps its settings: `declared` (its `ui.settings_file`)
    /// or `<plugin_id>.json`.
    ///
    /// # Errors
    /// [`SettingsFileError::Refused`] naming the rule it breaks.
    pub fn resolve(
        config_dir: &Path,
        plugin_id: &str,
        declared: Option<&str>,
    ) -> Result<SettingsFile, SettingsFileError> {
        let name = declared.map_or_else(|| format!("{plugin_id}.json"), str::to_string);
        let refused = |why: String| SettingsFileError::Refused {
            plugin: plugin_id.to_string(),
            declared: name.clone(),
            why,
            config: config_dir.display().to_string(),
        };
        let file = plain_name(&name).map_err(refused)?;
        if Path::new(file).extension().is_none_or(|e| e != "json") {
            return Err(refused("it is not a .json file".into()));
        }
        if reserved(file) {
            return Err(refused(format!("{file} is one of Sayri's own files")));
        }
        Ok(SettingsFile {
            path: config_dir.join(file),
            config_dir: config_dir.to_path_buf(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, action: &'static str, why: impl ToString) -> SettingsFileError {
        SettingsFileError::Io {
            action,
            path: self.path.clone(),
            why: why.to_string(),
        }
    }

    /// Checks that the folder holding the file really is inside the configuration folder
    /// (no symbolic link on the way out) and that the file, if there, is a plain file.
    fn check_on_disk(&self) -> Result<bool, SettingsFileError> {
        let parent = self.path.parent().unwrap_or(&self.config_dir);
        let real_parent = match parent.canonicalize() {
            Ok(p) => p,
            // No configuration folder yet: no file either (a write then fails, naming it).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(self.io("find the folder of", e)),
        };
        let real_config = self
            .config_dir
            .canonicalize()
            .map_err(|e| self.io("find the configuration folder of", e))?;
        if !real_parent.starts_with(&real_config) {
            return Err(self.io(
                "use",
                "its folder leads outside the configuration folder through a symbolic link",
            ));
        }
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.file_type().is_file() => Ok(true),
            Ok(_) => Err(self.io(
                "use",
                "it is not a plain file (a symbolic link or a folder)",
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.io("read", e)),
        }
    }

    /// What the file holds now; `None` when there is no file yet.
    ///
    /// # Errors
    /// The file is not where it may be, cannot be read, is larger than [`MAX_BYTES`] or
    /// is not a JSON object.
    pub fn read(&self) -> Result<Option<Map<String, Value>>, SettingsFileError> {
        if !self.check_on_disk()? {
            return Ok(None);
        }
        let size = std::fs::metadata(&self.path)
            .map_err(|e| self.io("read", e))?
            .len();
        if size > MAX_BYTES {
            return Err(self.io(
                "read",
                format!("it is {size} bytes; at most {MAX_BYTES} are read"),
            ));
        }
        let bytes = std::fs::read(&self.path).map_err(|e| self.io("read", e))?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(other) => Err(SettingsFileError::NotAnObject {
                path: self.path.clone(),
                why: format!("it holds {}", kind_of(&other)),
            }),
            Err(e) => Err(SettingsFileError::NotAnObject {
                path: self.path.clone(),
                why: e.to_string(),
            }),
        }
    }

    fn write(&self, values: &Map<String, Value>) -> Result<(), SettingsFileError> {
        let mode = std::fs::metadata(&self.path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o600);
        let mut text = serde_json::to_vec_pretty(values).map_err(|e| self.io("write", e))?;
        text.push(b'\n');
        sayri_vault::atomic_write::write_atomic_with_mode(&self.path, &text, mode)
            .map_err(|e| self.io("write", e))
    }

    /// The values, creating the file with the declared defaults when there is none yet (an
    /// existing file is left as it is).
    ///
    /// # Errors
    /// As [`SettingsFile::read`], or the new file cannot be written.
    pub fn ensure(&self, specs: &[SettingSpec]) -> Result<Map<String, Value>, SettingsFileError> {
        let _guard = lock(&WRITES);
        if let Some(m) = self.read()? {
            return Ok(m);
        }
        let values = plugin_form::with_defaults(specs, &Map::new());
        self.write(&values)?;
        Ok(values)
    }

    /// Sets `key` to the checked `value` (`None`: back to its default) with every other key
    /// kept (and the defaults added when the file is new); returns the file's new content.
    ///
    /// # Errors
    /// As [`SettingsFile::read`] (nothing is written then), or the file cannot be written
    /// (the old one is untouched).
    pub fn set(
        &self,
        specs: &[SettingSpec],
        key: &str,
        value: Option<Value>,
    ) -> Result<Map<String, Value>, SettingsFileError> {
        let _guard = lock(&WRITES);
        let existing = self.read()?.unwrap_or_default();
        let values = plugin_form::merged(specs, &existing, key, value);
        self.write(&values)?;
        Ok(values)
    }

    /// Sets `key` to `value` as it is (`None` removes it), with every other key kept and no
    /// declared settings involved (a service's enable flag); returns the file's new content.
    ///
    /// # Errors
    /// As [`SettingsFile::set`].
    pub fn write_key(
        &self,
        key: &str,
        value: Option<Value>,
    ) -> Result<Map<String, Value>, SettingsFileError> {
        let _guard = lock(&WRITES);
        let mut values = self.read()?.unwrap_or_default();
        match value {
            Some(v) => {
                values.insert(key.to_string(), v);
            }
            None => {
                values.remove(key);
            }
        }
        self.write(&values)?;
        Ok(values)
    }
}

/// The original's reading of a flag: a bool, a number other than 0, or the text `1`, `true`,
/// `yes`, `on` or `si` (any case).
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on" | "si"
        ),
        _ => false,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn specs() -> Vec<SettingSpec> {
        plugin_form::declared(
            json!([
                {"t": "select", "key": "character", "default": "Clippy", "options": ["Clippy", "Merlin"]},
                {"t": "check", "key": "sound_effects", "default": true},
            ])
            .as_array()
            .unwrap(),
        )
        .unwrap()
    }

    struct Tree {
        _tmp: tempfile::TempDir,
        config: PathBuf,
    }

    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        Tree { config, _tmp: tmp }
    }

    fn resolve(t: &Tree, declared: Option<&str>) -> Result<SettingsFile, SettingsFileError> {
        SettingsFile::resolve(&t.config, "sayri-ui-clippy", declared)
    }

    #[test]
    fn the_default_file_is_the_plugin_id_in_the_config_folder() {
        let t = tree();
        let f = resolve(&t, None).unwrap();
        assert_eq!(f.path(), t.config.join("sayri-ui-clippy.json"));
        let f = resolve(&t, Some("clippy-settings.json")).unwrap();
        assert_eq!(f.path(), t.config.join("clippy-settings.json"));
    }

    #[test]
    fn a_settings_file_outside_the_config_folder_or_on_sayris_own_files_is_refused() {
        let t = tree();
        let inside = t.config.join("x.json");
        for (declared, says) in [
            ("../outside.json", "`..`"),
            ("/tmp/settings.json", "absolute path"),
            (inside.to_str().unwrap(), "absolute path"),
            ("~/.bashrc.json", "plain file name"),
            ("./x.json", "plain file name"),
            ("plugins/sayri-ui-clippy/config.json", "plain file name"),
            ("agents/default.json", "plain file name"),
            ("a/../../x.json", "`..`"),
            ("sayri.toml", "not a .json file"),
            ("routines.json", "Sayri's own"),
            ("Vault.json", "Sayri's own"),
            ("authorizations_home.json", "Sayri's own"),
            (".hidden.json", "Sayri's own"),
            ("", "empty"),
        ] {
            let e = resolve(&t, Some(declared)).unwrap_err().to_string();
            assert!(e.contains(says), "{declared:?}: {e}");
            assert!(e.contains("ui.settings_file"), "says what to do: {e}");
        }
    }

    #[test]
    fn the_file_is_created_with_defaults_once_and_a_change_merges_one_key() {
        let t = tree();
        let f = resolve(&t, None).unwrap();
        assert_eq!(f.read().unwrap(), None);
        let first = f.ensure(&specs()).unwrap();
        assert_eq!(
            Value::Object(first),
            json!({"character": "Clippy", "sound_effects": true})
        );
        let mode = std::fs::metadata(f.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // The plugin writes a key of its own; a change keeps it, and keeps its mode.
        std::fs::write(
            f.path(),
            r#"{"character": "Clippy", "sound_effects": false, "window": [3, 4]}"#,
        )
        .unwrap();
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            f.ensure(&specs()).unwrap()["sound_effects"],
            json!(false),
            "an existing file is not rewritten with defaults"
        );
        let after = f.set(&specs(), "character", Some(json!("Merlin"))).unwrap();
        let on_disk: Value = serde_json::from_slice(&std::fs::read(f.path()).unwrap()).unwrap();
        assert_eq!(
            on_disk,
            json!({"character": "Merlin", "sound_effects": false, "window": [3, 4]})
        );
        assert_eq!(Value::Object(after), on_disk);
        assert!(std::fs::read_to_string(f.path()).unwrap().ends_with("}\n"));
        let mode = std::fs::metadata(f.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn a_file_that_is_not_an_object_or_is_a_link_is_never_overwritten() {
        let t = tree();
        let f = resolve(&t, None).unwrap();
        for bad in ["[1, 2]", "{not json", "\"text\""] {
            std::fs::write(f.path(), bad).unwrap();
            let e = f
                .set(&specs(), "character", Some(json!("Merlin")))
                .unwrap_err();
            assert!(
                matches!(e, SettingsFileError::NotAnObject { .. }),
                "{bad}: {e}"
            );
            assert!(e.to_string().contains("nothing was written"), "{e}");
            assert_eq!(std::fs::read_to_string(f.path()).unwrap(), bad);
        }
        std::fs::remove_file(f.path()).unwrap();
        let elsewhere = t.config.parent().unwrap().join("elsewhere.json");
        std::fs::write(&elsewhere, "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, f.path()).unwrap();
        let e = f
            .set(&specs(), "character", Some(json!("Merlin")))
            .unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "{}");
    }

    #[test]
    fn a_raw_key_write_merges_one_key_and_keeps_the_others() {
        let t = tree();
        let f = resolve(&t, None).unwrap();
        assert_eq!(f.read().unwrap(), None);
        std::fs::write(f.path(), r#"{"character": "Merlin"}"#).unwrap();
        f.write_key("enabled", Some(json!(false))).unwrap();
        let v = f.read().unwrap().unwrap();
        assert_eq!(v["character"], "Merlin");
        assert_eq!(v["enabled"], false);
        let text = std::fs::read_to_string(f.path()).unwrap();
        assert!(text.ends_with("}\n"), "{text}");
        f.write_key("enabled", None).unwrap();
        assert!(!f.read().unwrap().unwrap().contains_key("enabled"));
        // A new file is the owner's only.
        std::fs::remove_file(f.path()).unwrap();
        f.write_key("enabled", Some(json!(true))).unwrap();
        let mode = std::fs::metadata(f.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_raw_key_write_refuses_a_file_that_is_not_an_object_and_leaves_it() {
        let t = tree();
        let f = resolve(&t, None).unwrap();
        std::fs::write(f.path(), "[1, 2").unwrap();
        let e = f.write_key("enabled", Some(json!(true))).unwrap_err();
        assert!(e.to_string().contains("not a JSON object"), "{e}");
        assert_eq!(std::fs::read_to_string(f.path()).unwrap(), "[1, 2");
    }

    #[test]
    fn without_a_configuration_folder_there_is_no_file_and_a_write_says_so() {
        let t = tree();
        let f = SettingsFile::resolve(&t.config.join("absent"), "p", None).unwrap();
        assert_eq!(f.read().unwrap(), None);
        let e = f.write_key("enabled", Some(json!(true))).unwrap_err();
        assert!(matches!(e, SettingsFileError::Io { .. }), "{e}");
    }

    #[test]
    fn flags_are_read_as_the_original_read_them() {
        for v in [
            json!(true),
            json!(1),
            json!("yes"),
            json!(" On "),
            json!("si"),
        ] {
            assert!(truthy(&v), "{v}");
        }
        for v in [json!(false), json!(0), json!("no"), json!(null), json!([])] {
            assert!(!truthy(&v), "{v}");
        }
    }
}
