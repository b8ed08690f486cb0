//! The original Sayri's `$CONFIG/routines.json` (`{"version": 1, "routines": [...]}`), read
//! once into the database. Each entry is converted on its own: a bad one is reported and the
//! others are still imported (the file itself is left as it is).

use super::routine::{Routine, RoutineDraft};
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

/// Reads the original file's text at `now`.
///
/// # Errors
/// The text is not JSON, or has no `routines` list.
pub fn parse_legacy(text: &str, now: DateTime<Utc>) -> Result<LegacyImport, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let list = v
        .get("routines")
        .and_then(Value::as_array)
        .ok_or("it has no \"routines\" list")?;
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

fn convert(entry: &Value, now: DateTime<Utc>) -> Result<Routine, String> {
    let l: LegacyRoutine = serde_json::from_value(entry.clone()).map_err(|e| e.to_string())?;
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
    let mut r = draft.apply(None, now).map_err(|e| e.to_string())?;
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
