//! A plugin's settings file: one flat JSON object in the config folder
//! ([`super::Plugin::settings_file`]), read by the plugin itself and written by Sayri (the
//! settings form, a service's enable flag).
//!
//! Writes merge one key and replace the file atomically (0600, indented, newline at the end), so
//! a crash never leaves half a file. A file that is not a JSON object is never overwritten: the
//! write is refused with the reason, and what the person wrote stays.

use serde_json::{Map, Value};
use std::path::Path;

/// Largest settings file read (1 MiB).
pub const MAX_BYTES: u64 = 1 << 20;

/// Errors reading or writing a settings file.
#[derive(Debug, thiserror::Error)]
pub enum SettingsFileError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {why}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// The file is not one JSON object.
    #[error("{path} is not a JSON object ({why}); fix or remove it, it is left as it is")]
    NotAnObject {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The file cannot be written.
    #[error("cannot write {path}: {why}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
}

/// The values in `path` (empty when the file does not exist).
///
/// # Errors
/// It exists but cannot be read, is larger than [`MAX_BYTES`], or is not a JSON object.
pub fn read(path: &Path) -> Result<Map<String, Value>, SettingsFileError> {
    let shown = path.display().to_string();
    let bytes = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => {
            return Err(SettingsFileError::Read {
                path: shown,
                why: e.to_string(),
            });
        }
        Ok(m) if !m.is_file() || m.len() > MAX_BYTES => {
            return Err(SettingsFileError::Read {
                path: shown,
                why: format!("not a regular file of at most {} KiB", MAX_BYTES / 1024),
            });
        }
        Ok(_) => std::fs::read(path).map_err(|e| SettingsFileError::Read {
            path: shown.clone(),
            why: e.to_string(),
        })?,
    };
    serde_json::from_slice(&bytes).map_err(|e| SettingsFileError::NotAnObject {
        path: shown,
        why: e.to_string(),
    })
}

/// Sets `key` to `value` in `path` (`None` removes it), keeping every other key.
///
/// # Errors
/// As [`read`], or the new file cannot be written (the old one is then unchanged).
pub fn write_key(path: &Path, key: &str, value: Option<Value>) -> Result<(), SettingsFileError> {
    let mut all = read(path)?;
    match value {
        Some(v) => {
            all.insert(key.to_string(), v);
        }
        None => {
            all.remove(key);
        }
    }
    let mut text = serde_json::to_vec_pretty(&all).map_err(|e| SettingsFileError::Write {
        path: path.display().to_string(),
        why: e.to_string(),
    })?;
    text.push(b'\n');
    sayri_vault::atomic_write::write_atomic(path, &text).map_err(|e| SettingsFileError::Write {
        path: path.display().to_string(),
        why: e.to_string(),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_write_merges_one_key_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        assert!(read(&path).unwrap().is_empty());
        std::fs::write(&path, r#"{"character": "Merlin"}"#).unwrap();
        write_key(&path, "enabled", Some(json!(false))).unwrap();
        let v = read(&path).unwrap();
        assert_eq!(v["character"], "Merlin");
        assert_eq!(v["enabled"], false);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"), "{text}");
        write_key(&path, "enabled", None).unwrap();
        assert!(!read(&path).unwrap().contains_key("enabled"));
    }

    #[test]
    fn a_file_that_is_not_an_object_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, "[1, 2").unwrap();
        let e = write_key(&path, "enabled", Some(json!(true))).unwrap_err();
        assert!(e.to_string().contains("not a JSON object"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[1, 2");
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
