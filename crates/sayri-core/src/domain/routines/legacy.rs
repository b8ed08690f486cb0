//! The original Sayri's `$CONFIG/routines.json` (`{"version": 1, "routines": [...]}`), read
//! once into the database. Each entry is converted on its own: a bad one is reported and the
//! others are still imported (the file itself is left as it is).

use super::routine::{Routine, RoutineDraft, RoutineError};
use super::timing::{Timing, from_epoch};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

/// One entry as the original wrote it (every field optional, with its defaults).
#[derive(Debug, Deserialize)]
struct LegacyRoutine {
    id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    trigger: Option<String>,
    time_spec: Option<Value>,
    prompt: Option<String>,
    agent_id: Option<String>,
    speak_tts: Option<bool>,
    notify_desktop: Option<bool>,
    enabled: Option<bool>,
    last_run: Option<f64>,
    created_at: Option<f64>,
}

/// What the file held: the routines that convert, and one message per entry that does not.
#[derive(Debug, Default)]
pub struct LegacyImport {
    /// Converted routines (`enabled` and `last_run` as they were).
    pub routines: Vec<Routine>,
    /// `"entry N (id X): why"` per refused entry.
    pub refused: Vec<String>,
}

/// Why the original file cannot be imported at all (nothing is imported; the file is left as
/// it is).
#[derive(Debug, thiserror::Error)]
pub enum LegacyError {
    /// The text is not JSON.
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    /// The JSON has no `routines` list.
    #[error("it has no \"routines\" list")]
    NoList,
}

/// Why one entry of the file does not convert (the others still do).
#[derive(Debug, thiserror::Error)]
enum EntryError {
    /// A field of the wrong type.
    #[error(transparent)]
    Fields(#[from] serde_json::Error),
    /// The routine it describes is refused.
    #[error(transparent)]
    Routine(#[from] RoutineError),
}

/// Reads the original file's text at `now`.
///
/// # Errors
/// [`LegacyError`]: the text is not JSON, or has no `routines` list.
pub fn parse_legacy(text: &str, now: DateTime<Utc>) -> Result<LegacyImport, LegacyError> {
    let v: Value = serde_json::from_str(text).map_err(LegacyError::NotJson)?;
    let list = v
        .get("routines")
        .and_then(Value::as_array)
        .ok_or(LegacyError::NoList)?;
    let mut out = LegacyImport::default();
    for (i, entry) in list.iter().enumerate() {
        let label = entry.get("id").and_then(Value::as_str).map_or_else(
            || format!("entry {}", i + 1),
            |id| format!("entry {} ({id})", i + 1),
        );
        match convert(entry, now) {
            Ok(r) => out.routines.push(r),
            Err(e) => out.refused.push(format!("{label}: {e}")),
        }
    }
    Ok(out)
}

fn convert(entry: &Value, now: DateTime<Utc>) -> Result<Routine, EntryError> {
    let l: LegacyRoutine = serde_json::from_value(entry.clone())?;
    let time_spec = match l.time_spec {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    };
    let created = l.created_at.and_then(from_epoch).unwrap_or(now);
    let draft = RoutineDraft {
        id: l.id,
        name: l.name.or_else(|| Some("Custom Routine".into())),
        description: l.description,
        trigger: l.trigger,
        time_spec,
        zone: None,
        prompt: l.prompt,
        agent_id: l.agent_id,
        speak_tts: l.speak_tts,
        notify_desktop: l.notify_desktop,
        enabled: l.enabled,
        catch_up: None,
        grace_minutes: None,
    };
    let mut r = draft.apply(None, now)?;
    r.created_at = created;
    let last_run = l.last_run.filter(|t| *t > 0.0).and_then(from_epoch);
    // The original recorded no slot; its last run stands for the slot it served, so a routine
    // that ran today does not run again today.
    r.timing = Timing {
        armed_at: now,
        last_slot: last_run,
        last_run,
    };
    Ok(r)
}
