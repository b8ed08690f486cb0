//! Replies of the routine and trigger commands: `routines_list`, `routines_run`,
//! `routine_save`, `routine_delete`, `routine_set_enabled`, `routine_next`, `triggers_list`,
//! `trigger_save`, `trigger_delete`.
//!
//! Times are Unix seconds (`last_run` 0.0 = never) or RFC 3339 in the routine's zone.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// `routines_list` → every routine, oldest first.
pub type RoutinesListReply = Vec<ListedRoutine>;

/// One entry of `routines_list`: a routine, or a stored row that no longer parses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ListedRoutine {
    /// A routine.
    Routine(Box<Routine>),
    /// A row that no longer parses.
    Broken(BrokenRoutine),
}

impl ListedRoutine {
    /// Its id.
    pub fn id(&self) -> &str {
        match self {
            ListedRoutine::Routine(r) => &r.id,
            ListedRoutine::Broken(b) => &b.id,
        }
    }
}

/// A routine as clients see it (also the reply of `routine_save`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Routine {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// `daily_at`, `hourly`, `cron` or `on_login`.
    pub trigger: String,
    /// The time of its trigger (`09:00`, `2`, a cron pattern; `""` for `on_login`).
    pub time_spec: String,
    /// Its zone (`null` = the system zone at each computation).
    pub zone: Option<String>,
    /// What it asks.
    pub prompt: String,
    /// The agent it runs as.
    pub agent_id: String,
    /// Its result is spoken.
    pub speak_tts: bool,
    /// Its result is shown as a desktop notification.
    pub notify_desktop: bool,
    /// It runs at its slots.
    pub enabled: bool,
    /// A missed slot: `run_once` or `skip`.
    pub catch_up: String,
    /// How old a missed slot may be and still run.
    pub grace_minutes: i64,
    /// Its last run, Unix seconds (0.0 = never).
    pub last_run: f64,
    /// When it was created.
    pub created_at: f64,
    /// When it was last changed.
    pub updated_at: f64,
    /// Its next fire, Unix seconds.
    pub next_run: Option<f64>,
    /// Its next fire, RFC 3339 in its zone.
    pub next_run_at: Option<String>,
    /// A run is in progress.
    pub running: bool,
    /// How its last run ended.
    pub last_outcome: Option<RunOutcome>,
    /// The session its runs are stored in (`routine-<id>`).
    pub session_id: String,
    /// Always `null`.
    pub error: Option<String>,
}

/// A stored routine row that no longer parses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokenRoutine {
    /// Its id.
    pub id: String,
    /// Its name as stored.
    pub name: String,
    /// Why it cannot be used.
    pub error: String,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// `ok`, `error` or `refused`.
    pub status: String,
    /// What it said (or why it failed).
    pub summary: String,
    /// When it ended, Unix seconds.
    pub finished_at: f64,
    /// The session it ran in.
    pub session_id: String,
}

/// `routine_save` → the routine.
pub type RoutineSaveReply = Routine;

/// `routines_run` → `{scheduled, routine_id, name}`; the run starts in the background.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutinesRunReply {
    /// Always true.
    pub scheduled: bool,
    /// The routine.
    pub routine_id: String,
    /// Its name.
    pub name: String,
}

/// `routine_delete` → `{routine_id, deleted}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutineDeleteReply {
    /// The routine.
    pub routine_id: String,
    /// Always true.
    pub deleted: bool,
}

/// `routine_set_enabled` → `{routine_id, enabled, next_run_at}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutineSetEnabledReply {
    /// The routine.
    pub routine_id: String,
    /// Its switch now.
    pub enabled: bool,
    /// Its next fire, RFC 3339 in its zone.
    pub next_run_at: Option<String>,
}

/// `routine_next` → `{routine_id, zone, enabled, trigger, next}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutineNextReply {
    /// The routine.
    pub routine_id: String,
    /// The zone of the times.
    pub zone: String,
    /// It runs at its slots.
    pub enabled: bool,
    /// Its trigger.
    pub trigger: String,
    /// The next fire instants, RFC 3339 in `zone`.
    pub next: Vec<String>,
}

/// `triggers_list` → every trigger file, in name order.
pub type TriggersListReply = Vec<ListedTrigger>;

/// A trigger file as `trigger_save` answers it: the file's own fields, with `id`, `file`
/// and `error` (and, for a valid trigger, `name`, `enabled` and `target_agent_id` as
/// they apply).
///
/// A file's fields are whatever it holds (`event_type`, `prompt`, `path`, …), so they are
/// kept as an object; [`TriggerEntry::new`] is the one place that writes the applied ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerEntry {
    /// The file name without `.json`.
    pub id: String,
    /// The file.
    pub file: PathBuf,
    /// Why the file cannot be used, or `null`.
    pub error: Option<String>,
    /// Its other fields.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// What a valid trigger file applies: written over the file's own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedTrigger {
    /// Its name.
    pub name: String,
    /// It fires.
    pub enabled: bool,
    /// The agent it runs as.
    pub target_agent_id: String,
}

impl TriggerEntry {
    /// The entry of a file with `fields`: `applied` for a valid trigger, else `error`.
    pub fn new(
        id: String,
        file: PathBuf,
        mut fields: Map<String, Value>,
        applied: Result<AppliedTrigger, String>,
    ) -> TriggerEntry {
        for own in ["id", "file", "error"] {
            fields.remove(own);
        }
        let error = match applied {
            Ok(a) => {
                fields.insert("name".into(), Value::String(a.name));
                fields.insert("enabled".into(), Value::Bool(a.enabled));
                fields.insert("target_agent_id".into(), Value::String(a.target_agent_id));
                None
            }
            Err(e) => Some(e),
        };
        TriggerEntry {
            id,
            file,
            error,
            fields,
        }
    }

    /// Its `name`, if the file has one.
    pub fn name(&self) -> Option<&str> {
        self.fields.get("name").and_then(Value::as_str)
    }

    /// Its `event_type`, if the file has one.
    pub fn event_type(&self) -> Option<&str> {
        self.fields.get("event_type").and_then(Value::as_str)
    }

    /// Its `enabled` switch (true when the file does not say).
    pub fn enabled(&self) -> bool {
        self.fields
            .get("enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    /// Its `target_agent_id`, if the file has one.
    pub fn target_agent_id(&self) -> Option<&str> {
        self.fields.get("target_agent_id").and_then(Value::as_str)
    }
}

/// One entry of `triggers_list`: the file, its next fire and its last run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedTrigger {
    /// Its next fire, RFC 3339 in its zone.
    pub next_run_at: Option<String>,
    /// A run is in progress.
    pub running: bool,
    /// How its last run ended.
    pub last_outcome: Option<RunOutcome>,
    /// The file.
    #[serde(flatten)]
    pub entry: TriggerEntry,
}

impl ListedTrigger {
    /// The listing of `entry` (a file's own fields of these names are replaced).
    pub fn new(
        mut entry: TriggerEntry,
        next_run_at: Option<String>,
        running: bool,
        last_outcome: Option<RunOutcome>,
    ) -> ListedTrigger {
        for own in ["next_run_at", "running", "last_outcome"] {
            entry.fields.remove(own);
        }
        ListedTrigger {
            next_run_at,
            running,
            last_outcome,
            entry,
        }
    }
}

/// `trigger_save` → the trigger as listed (without its run state).
pub type TriggerSaveReply = TriggerEntry;

/// `trigger_delete` → `{trigger_id, deleted}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerDeleteReply {
    /// The trigger.
    pub trigger_id: String,
    /// Always true.
    pub deleted: bool,
}
