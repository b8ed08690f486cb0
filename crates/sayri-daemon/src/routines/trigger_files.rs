//! Trigger files: `$CONFIG/triggers/<id>.json`, one trigger each (format and rules in
//! `sayri_core::domain::routines::triggers`). The one loader of the directory: the daemon's
//! trigger engine and `triggers_list` read it here; `trigger_save` writes through
//! [`write_trigger`] (0600, atomically), so a file the daemon wrote always loads.
//!
//! Every `*.json` file is listed, in name order. A file that cannot be read or is not a
//! valid trigger is listed with its error (and never fires) — never skipped in silence.

use sayri_core::domain::routines::triggers::{Trigger, TriggerFile, valid_trigger_id};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One file of the directory.
#[derive(Debug, Clone)]
pub struct TriggerEntry {
    /// The file name without `.json`.
    pub id: String,
    /// Its path.
    pub file: PathBuf,
    /// Its fields as written (`{}` when unreadable or not a JSON object).
    pub fields: Map<String, Value>,
    /// The trigger, or why the file cannot be used.
    pub trigger: Result<Trigger, String>,
}

/// Every `*.json` file of `dir`, in name order (an absent directory has none).
pub fn load_dir(dir: &Path) -> Vec<TriggerEntry> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    files.sort();
    files.iter().map(|f| load_file(f)).collect()
}

/// One trigger file.
pub fn load_file(file: &Path) -> TriggerEntry {
    let id = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(file);
    let fields = text
        .as_ref()
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let trigger = match &text {
        Ok(t) => TriggerFile::parse(&id, t).map_err(|e| e.to_string()),
        Err(e) => Err(format!("cannot read it: {e}")),
    };
    TriggerEntry {
        id,
        file: file.to_path_buf(),
        fields,
        trigger,
    }
}

/// Checks `fields` as a trigger file and writes it to `dir/<id>.json` (the directory is
/// created 0700). Returns the entry as loaded back.
///
/// # Errors
/// What is wrong with the fields (nothing is written), or the write failing.
pub fn write_trigger(dir: &Path, fields: &Map<String, Value>) -> Result<TriggerEntry, String> {
    let id = fields
        .get("id")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .ok_or("a trigger needs an \"id\" (letters, digits, '-', '_'): its file name")?
        .to_string();
    if !valid_trigger_id(&id) {
        return Err(format!(
            "invalid trigger id {id:?}: use 1 to 64 letters, digits, '-' and '_'"
        ));
    }
    let mut fields = fields.clone();
    fields.insert("id".into(), Value::String(id.clone()));
    let text = serde_json::to_string_pretty(&Value::Object(fields)).map_err(|e| e.to_string())?;
    TriggerFile::parse(&id, &text).map_err(|e| e.to_string())?;
    sayri_client::paths::ensure_private_dir(dir).map_err(|e| e.to_string())?;
    let file = dir.join(format!("{id}.json"));
    sayri_vault::atomic_write::write_atomic(&file, format!("{text}\n").as_bytes())
        .map_err(|e| format!("could not save trigger {id}: {e}"))?;
    Ok(load_file(&file))
}

/// Removes `dir/<id>.json`. Returns whether it existed.
///
/// # Errors
/// An invalid id, or the removal failing.
pub fn delete_trigger(dir: &Path, id: &str) -> Result<bool, String> {
    if !valid_trigger_id(id) {
        return Err(format!(
            "no trigger {id:?}: trigger ids are letters, digits, '-' and '_'"
        ));
    }
    match std::fs::remove_file(dir.join(format!("{id}.json"))) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("could not delete trigger {id}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_json_file_is_listed_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("a-ok.json"),
            r#"{"event_type": "on_login", "prompt": "hello"}"#,
        )
        .unwrap();
        std::fs::write(
            d.join("b-typo.json"),
            r#"{"event_type": "on_schedule", "cron_exp": "0 9 * * *", "prompt": "x"}"#,
        )
        .unwrap();
        std::fs::write(d.join("c-broken.json"), "{not json").unwrap();
        std::fs::write(
            d.join("d-wrong.json"),
            r#"{"event_type": "on_login", "prompt": "x", "path": "/tmp"}"#,
        )
        .unwrap();
        std::fs::write(d.join("notes.txt"), "ignored").unwrap();
        std::fs::write(d.join(".e.json"), "ignored (hidden)").unwrap();
        let listed = load_dir(d);
        let ids: Vec<_> = listed.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a-ok", "b-typo", "c-broken", "d-wrong"]);
        assert!(listed[0].trigger.is_ok());
        let err = |i: usize| listed[i].trigger.clone().unwrap_err();
        assert!(err(1).contains("unknown field `cron_exp`"), "{}", err(1));
        assert!(err(2).contains("key must be a string"), "{}", err(2));
        assert!(err(3).contains("only for on_file_changed"), "{}", err(3));
        assert!(load_dir(&d.join("missing")).is_empty());
    }

    #[test]
    fn a_save_writes_only_a_valid_trigger() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("triggers");
        let bad = json!({"id": "t1", "event_type": "on_schedule", "prompt": "x", "cron_expr": "0 25 * * *"});
        let e = write_trigger(&d, bad.as_object().unwrap()).unwrap_err();
        assert!(e.contains("invalid cron pattern"), "{e}");
        assert!(!d.join("t1.json").exists());
        let good = json!({"id": "t1", "event_type": "on_schedule", "prompt": "x", "cron_expr": "0 9 * * *", "zone": "Asia/Kolkata"});
        let entry = write_trigger(&d, good.as_object().unwrap()).unwrap();
        assert!(entry.trigger.is_ok(), "{:?}", entry.trigger);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("t1.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(delete_trigger(&d, "t1").unwrap());
        assert!(!delete_trigger(&d, "t1").unwrap());
        assert!(delete_trigger(&d, "../x").is_err());
        let e =
            write_trigger(&d, json!({"event_type": "on_login"}).as_object().unwrap()).unwrap_err();
        assert!(e.contains("needs an \"id\""), "{e}");
    }
}
