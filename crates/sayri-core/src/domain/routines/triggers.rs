//! System-event triggers: `$CONFIG/triggers/<id>.json` files, each running a prompt through an
//! agent when its event happens, and the edge rules of the events.
//!
//! A file holds one object; unknown fields are refused (a misspelt `cron_exp` would otherwise
//! silently never fire), and so are fields of another event type:
//!
//! ```json
//! {"event_type": "on_file_changed", "prompt": "Summarise what changed in my notes",
//!  "path": "~/Notes", "glob": "*.md", "target_agent_id": "default", "enabled": true}
//! ```
//!
//! | `event_type` | fires | its fields |
//! |---|---|---|
//! | `on_login` | at the first daemon start of a login session | – |
//! | `on_schedule` | on a cron pattern, like a `cron` routine | `cron_expr`, `zone`, `catch_up`, `grace_minutes` |
//! | `on_file_changed` | when files under `path` matching `glob` change (debounced) | `path`, `glob`, `debounce_ms` |
//! | `on_battery_low` | once per discharge, when the charge falls to `threshold_percent` | `threshold_percent` (15) |
//! | `on_network_change` | when the set of connected interfaces or their addresses changes | – |
//!
//! Common fields: `id` (must match the file name), `name`, `prompt` (required),
//! `target_agent_id` (`default`), `enabled` (true), `created_at`, `notify_desktop` (true),
//! `speak_tts` (false).

use super::schedule::{CronSchedule, Schedule, ScheduleError};
use super::timing::{CatchUp, CatchUpError, MAX_GRACE_MINUTES, Policy};
use super::zone::{ZoneError, parse_zone};
use crate::domain::profile::valid_agent_id;
use chrono::TimeDelta;
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// The event type names, in the order of the table above.
pub const EVENT_TYPES: [&str; 5] = [
    "on_login",
    "on_schedule",
    "on_file_changed",
    "on_battery_low",
    "on_network_change",
];

/// Default `threshold_percent` of `on_battery_low`.
pub const DEFAULT_BATTERY_THRESHOLD: u8 = 15;

/// Default `debounce_ms` of `on_file_changed`: changes are gathered until the files have been
/// quiet this long.
pub const DEFAULT_DEBOUNCE_MS: u64 = 2000;

/// A trigger file's fields as written (also `trigger_save`'s params).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerFile {
    /// Id; must equal the file name without `.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Display name (default: the id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One of [`EVENT_TYPES`].
    #[serde(default)]
    pub event_type: String,
    /// The text the agent runs.
    #[serde(default)]
    pub prompt: String,
    /// The agent (`default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_agent_id: Option<String>,
    /// `on_schedule`: the cron pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron_expr: Option<String>,
    /// `on_schedule`: its IANA zone (default: the system zone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// `on_schedule`: `run_once` or `skip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<String>,
    /// `on_schedule`: minutes a missed slot may be late and still run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_minutes: Option<u32>,
    /// `on_file_changed`: an absolute path or `~/…`, a directory (watched recursively) or a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `on_file_changed`: a glob on the path below `path` (`*.md`, `**/*.rs`); default all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// `on_file_changed`: quiet time before the changes count, in milliseconds (100–600000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce_ms: Option<u64>,
    /// `on_battery_low`: the charge (1–99 %) at or below which it fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_percent: Option<u8>,
    /// Epoch seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<f64>,
    /// Whether it fires (true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Show the result as a desktop notification (true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify_desktop: Option<bool>,
    /// Speak the result when voice is available (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speak_tts: Option<bool>,
}

/// What a trigger waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum TriggerEvent {
    /// The first daemon start of a login session.
    OnLogin,
    /// A cron schedule (the routines' engine).
    OnSchedule {
        /// The pattern.
        schedule: Schedule,
        /// Its zone; `None` = the system zone.
        zone: Option<Tz>,
        /// Missed slots.
        policy: Policy,
    },
    /// Changes under a path.
    OnFileChanged {
        /// As written (`~/` is the home directory).
        path: String,
        /// Glob on the path below `path`; `None` = everything.
        glob: Option<String>,
        /// Quiet time in milliseconds.
        debounce_ms: u64,
    },
    /// Low battery.
    OnBatteryLow {
        /// Percent.
        threshold_percent: u8,
    },
    /// Connectivity changed.
    OnNetworkChange,
}

/// A valid trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    /// Id (the file name without `.json`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Its event.
    pub event: TriggerEvent,
    /// The text the agent runs.
    pub prompt: String,
    /// The agent.
    pub agent_id: String,
    /// Whether it fires.
    pub enabled: bool,
    /// Notify the result.
    pub notify_desktop: bool,
    /// Speak the result.
    pub speak_tts: bool,
}

impl Trigger {
    /// The session its runs are stored in: `trigger-<id>`.
    pub fn session_id(&self) -> String {
        format!("trigger-{}", self.id)
    }
}

/// Whether `id` can name a trigger file: 1–64 ASCII letters, digits, `-`, `_`.
pub fn valid_trigger_id(id: &str) -> bool {
    super::routine::valid_routine_id(id)
}

/// Why a trigger file cannot be used; nothing runs from it. Each message says what to write
/// instead.
#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    /// The text is not JSON of a trigger object (or has an unknown field).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The file name is no trigger id.
    #[error("invalid trigger id {0:?}: use 1 to 64 letters, digits, '-' and '_'")]
    BadId(String),
    /// Its `id` field differs from its file name.
    #[error("its id {own:?} differs from its file name {file}.json; make them equal")]
    IdDiffers {
        /// The `id` field.
        own: String,
        /// The file name without `.json`.
        file: String,
    },
    /// No `prompt`.
    #[error("\"prompt\" is missing: the text its agent runs")]
    NoPrompt,
    /// A `target_agent_id` that is no agent id.
    #[error("invalid target_agent_id {0:?}")]
    BadAgent(String),
    /// No `event_type`.
    #[error("\"event_type\" is missing: use one of {}", EVENT_TYPES.join(", "))]
    NoEventType,
    /// An `event_type` that is none of [`EVENT_TYPES`].
    #[error("unknown event_type {:?}: use one of {}", .0, EVENT_TYPES.join(", "))]
    UnknownEventType(String),
    /// A `threshold_percent` outside 1–99.
    #[error("threshold_percent {0} is out of range: use 1 to 99")]
    Threshold(u8),
    /// `on_schedule` without `cron_expr`.
    #[error("on_schedule needs \"cron_expr\", e.g. \"0 9 * * MON-FRI\"")]
    NoCronExpr,
    /// A `cron_expr` that does not parse.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A `zone` that is no IANA zone.
    #[error(transparent)]
    Zone(#[from] ZoneError),
    /// A `catch_up` that is neither `run_once` nor `skip`.
    #[error(transparent)]
    CatchUp(#[from] CatchUpError),
    /// A `grace_minutes` over [`MAX_GRACE_MINUTES`].
    #[error("grace_minutes {0} is too long: use at most {MAX_GRACE_MINUTES}")]
    GraceTooLong(u32),
    /// `on_file_changed` without `path`.
    #[error("on_file_changed needs \"path\": an absolute path or ~/…")]
    NoPath,
    /// A `path` that is neither absolute nor in the home.
    #[error("path {0:?} must be absolute (/…) or in your home (~/…)")]
    RelativePath(String),
    /// A `glob` that does not compile.
    #[error("invalid glob {glob:?}: {source}")]
    BadGlob {
        /// The glob as written.
        glob: String,
        /// The glob compiler's reason.
        source: globset::Error,
    },
    /// A `debounce_ms` outside 100–600000.
    #[error("debounce_ms {0} is out of range: use 100 to 600000")]
    Debounce(u64),
    /// A field of another event type (a sign of a mistake).
    #[error("\"{field}\" is only for {owner} triggers, not {event_type}")]
    ForeignField {
        /// The field.
        field: &'static str,
        /// The event type it belongs to.
        owner: &'static str,
        /// The file's event type.
        event_type: String,
    },
}

impl TriggerFile {
    /// Parses a file's text; `id` is its name without `.json`.
    ///
    /// # Errors
    /// [`TriggerError`]: why the file cannot be used (JSON, unknown field, missing or
    /// contradicting field).
    pub fn parse(id: &str, text: &str) -> Result<Trigger, TriggerError> {
        let f: TriggerFile = serde_json::from_str(text)?;
        f.validate(id)
    }

    /// Checks the fields for the trigger `id`.
    ///
    /// # Errors
    /// [`TriggerError`]: the first problem found, with what to write instead.
    pub fn validate(&self, id: &str) -> Result<Trigger, TriggerError> {
        if !valid_trigger_id(id) {
            return Err(TriggerError::BadId(id.to_string()));
        }
        if let Some(own) = self.id.as_deref().filter(|own| *own != id) {
            return Err(TriggerError::IdDiffers {
                own: own.to_string(),
                file: id.to_string(),
            });
        }
        if self.prompt.trim().is_empty() {
            return Err(TriggerError::NoPrompt);
        }
        let agent_id = self
            .target_agent_id
            .clone()
            .unwrap_or_else(|| "default".into());
        if !valid_agent_id(&agent_id) {
            return Err(TriggerError::BadAgent(agent_id));
        }
        self.check_fields_belong()?;
        Ok(Trigger {
            id: id.to_string(),
            name: self
                .name
                .clone()
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| id.to_string()),
            event: self.event()?,
            prompt: self.prompt.trim().to_string(),
            agent_id,
            enabled: self.enabled.unwrap_or(true),
            notify_desktop: self.notify_desktop.unwrap_or(true),
            speak_tts: self.speak_tts.unwrap_or(false),
        })
    }

    fn event(&self) -> Result<TriggerEvent, TriggerError> {
        Ok(match self.event_type.trim() {
            "on_login" => TriggerEvent::OnLogin,
            "on_network_change" => TriggerEvent::OnNetworkChange,
            "on_schedule" => self.schedule_event()?,
            "on_file_changed" => self.file_event()?,
            "on_battery_low" => {
                let t = self.threshold_percent.unwrap_or(DEFAULT_BATTERY_THRESHOLD);
                if !(1..=99).contains(&t) {
                    return Err(TriggerError::Threshold(t));
                }
                TriggerEvent::OnBatteryLow {
                    threshold_percent: t,
                }
            }
            "" => return Err(TriggerError::NoEventType),
            other => return Err(TriggerError::UnknownEventType(other.to_string())),
        })
    }

    fn schedule_event(&self) -> Result<TriggerEvent, TriggerError> {
        let expr = self
            .cron_expr
            .as_deref()
            .filter(|e| !e.trim().is_empty())
            .ok_or(TriggerError::NoCronExpr)?;
        let schedule = Schedule::Cron(Box::new(CronSchedule::parse(expr)?));
        let zone = match self.zone.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(z) => Some(parse_zone(z)?),
        };
        let mut policy = Policy::default();
        if let Some(c) = &self.catch_up {
            policy.catch_up = CatchUp::parse(c)?;
        }
        if let Some(g) = self.grace_minutes {
            if g > MAX_GRACE_MINUTES {
                return Err(TriggerError::GraceTooLong(g));
            }
            policy.grace = TimeDelta::minutes(i64::from(g));
        }
        Ok(TriggerEvent::OnSchedule {
            schedule,
            zone,
            policy,
        })
    }

    fn file_event(&self) -> Result<TriggerEvent, TriggerError> {
        let path = self
            .path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .ok_or(TriggerError::NoPath)?;
        if !(path.starts_with('/') || path == "~" || path.starts_with("~/")) {
            return Err(TriggerError::RelativePath(path.to_string()));
        }
        let glob = self.glob.clone().filter(|g| !g.trim().is_empty());
        if let Some(g) = &glob {
            globset::Glob::new(g).map_err(|source| TriggerError::BadGlob {
                glob: g.clone(),
                source,
            })?;
        }
        let debounce_ms = self.debounce_ms.unwrap_or(DEFAULT_DEBOUNCE_MS);
        if !(100..=600_000).contains(&debounce_ms) {
            return Err(TriggerError::Debounce(debounce_ms));
        }
        Ok(TriggerEvent::OnFileChanged {
            path: path.to_string(),
            glob,
            debounce_ms,
        })
    }

    /// Refuses a field that belongs to another event type (a sign of a mistake).
    fn check_fields_belong(&self) -> Result<(), TriggerError> {
        let ty = self.event_type.trim();
        let owned: [(&str, bool, &str); 8] = [
            ("cron_expr", self.cron_expr.is_some(), "on_schedule"),
            ("zone", self.zone.is_some(), "on_schedule"),
            ("catch_up", self.catch_up.is_some(), "on_schedule"),
            ("grace_minutes", self.grace_minutes.is_some(), "on_schedule"),
            ("path", self.path.is_some(), "on_file_changed"),
            ("glob", self.glob.is_some(), "on_file_changed"),
            ("debounce_ms", self.debounce_ms.is_some(), "on_file_changed"),
            (
                "threshold_percent",
                self.threshold_percent.is_some(),
                "on_battery_low",
            ),
        ];
        for (name, set, owner) in owned {
            if set && ty != owner && EVENT_TYPES.contains(&ty) {
                return Err(TriggerError::ForeignField {
                    field: name,
                    owner,
                    event_type: ty.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// Fires once per discharge when the charge falls to the threshold, and re-arms when the
/// battery charges or rises two points above the threshold (a reading that wobbles around
/// the threshold fires once).
#[derive(Debug, Clone, PartialEq)]
pub struct LowBattery {
    /// Percent at or below which it fires.
    pub threshold_percent: u8,
    fired: bool,
}

impl LowBattery {
    /// Armed, with `threshold_percent`.
    pub fn new(threshold_percent: u8) -> LowBattery {
        LowBattery {
            threshold_percent,
            fired: false,
        }
    }

    /// Takes a reading: `percent` charge and whether the battery is discharging. Returns
    /// whether the trigger fires now.
    pub fn observe(&mut self, percent: f64, discharging: bool) -> bool {
        let threshold = f64::from(self.threshold_percent);
        if discharging && percent <= threshold {
            if !self.fired {
                self.fired = true;
                return true;
            }
        } else if !discharging || percent >= threshold + 2.0 {
            self.fired = false;
        }
        false
    }
}
