//! A routine: a prompt an agent runs on a schedule. Its definition, how a save (new or edit)
//! is applied and validated, and the legacy `routines.json` format.

use super::schedule::{Schedule, ScheduleError};
use super::timing::{CatchUp, CatchUpError, MAX_GRACE_MINUTES, Policy, Timing};
use super::zone::{ZoneError, parse_zone};
use crate::domain::profile::valid_agent_id;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;

/// Name of a routine saved without one.
pub const DEFAULT_NAME: &str = "Untitled routine";

/// A stored routine.
#[derive(Debug, Clone, PartialEq)]
pub struct Routine {
    /// Id (letters, digits, `-`, `_`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// When it runs.
    pub schedule: Schedule,
    /// Its own IANA zone; `None` = the system zone at each computation.
    pub zone: Option<Tz>,
    /// The text sent to the agent.
    pub prompt: String,
    /// The agent that runs it (its effective profile at run time).
    pub agent_id: String,
    /// Speak the result when voice is available.
    pub speak_tts: bool,
    /// Show the result as a desktop notification.
    pub notify_desktop: bool,
    /// Whether its slots start runs (`routines_run` works either way).
    pub enabled: bool,
    /// Missed slots.
    pub policy: Policy,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change of its definition.
    pub updated_at: DateTime<Utc>,
    /// The scheduler's persisted state.
    pub timing: Timing,
    /// The scheduler's planned next fire (for display).
    pub next_run: Option<DateTime<Utc>>,
    /// How the last run ended.
    pub last_outcome: Option<RunOutcome>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// When it ended.
    pub finished_at: DateTime<Utc>,
    /// `ok`, `error` (the turn failed), or `refused` (a command needed approval no one could
    /// give, or was denied).
    pub status: RunStatus,
    /// The final answer, or the error.
    pub summary: String,
    /// The session its messages are in.
    pub session_id: String,
}

/// [`RunOutcome::status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Answered.
    Ok,
    /// The turn failed (model, agent, store) or was cancelled.
    Error,
    /// It answered, but at least one command was refused.
    Refused,
}

impl RunStatus {
    /// `ok`, `error`, `refused`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Refused => "refused",
        }
    }

    /// Parses [`RunStatus::as_str`]'s names (anything else is `error`).
    pub fn parse(s: &str) -> RunStatus {
        match s {
            "ok" => RunStatus::Ok,
            "refused" => RunStatus::Refused,
            _ => RunStatus::Error,
        }
    }
}

/// The fields of a save; `None` keeps the stored value (or the default for a new routine).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoutineDraft {
    /// Id; a new routine without one gets `r<epoch-ms>`.
    pub id: Option<String>,
    /// Display name (`Untitled routine`).
    pub name: Option<String>,
    /// Free text (`""`).
    pub description: Option<String>,
    /// `on_login`, `daily_at`, `hourly` or `cron` (`daily_at`).
    pub trigger: Option<String>,
    /// `HH:MM`, hours, or a cron pattern (`09:00` for daily_at, `1` for hourly).
    pub time_spec: Option<String>,
    /// IANA zone; `""` = follow the system zone (the default).
    pub zone: Option<String>,
    /// The prompt (required for a new routine).
    pub prompt: Option<String>,
    /// Agent id (`default`).
    pub agent_id: Option<String>,
    /// (`true`).
    pub speak_tts: Option<bool>,
    /// (`true`).
    pub notify_desktop: Option<bool>,
    /// (`true`).
    pub enabled: Option<bool>,
    /// `run_once` or `skip` (`run_once`).
    pub catch_up: Option<String>,
    /// Minutes a missed slot may be late and still run (720).
    pub grace_minutes: Option<u32>,
}

/// Why a save was refused; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoutineError {
    /// The trigger or its time spec.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The `zone`.
    #[error(transparent)]
    Zone(#[from] ZoneError),
    /// The `catch_up`.
    #[error(transparent)]
    CatchUp(#[from] CatchUpError),
    /// Any other field, with what to write instead.
    #[error("{0}")]
    Field(String),
}

fn field(msg: impl Into<String>) -> RoutineError {
    RoutineError::Field(msg.into())
}

/// Whether `id` is a usable routine id: 1–64 letters, digits, `-`, `_`.
pub fn valid_routine_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl RoutineDraft {
    /// Applies the draft to `existing` (an edit) or to the defaults (a new routine) at `now`.
    /// An edit keeps `created_at`, `last_run` and the last slot; every save re-arms the
    /// schedule at `now`, so a slot missed before the save is not caught up.
    ///
    /// # Errors
    /// [`RoutineError`] for an invalid id, blank prompt, unknown trigger, bad time spec, zone,
    /// catch-up policy or grace period.
    pub fn apply(
        &self,
        existing: Option<&Routine>,
        now: DateTime<Utc>,
    ) -> Result<Routine, RoutineError> {
        let id = self.routine_id(existing, now)?;
        let schedule = self.schedule(existing)?;
        let zone = match (&self.zone, existing) {
            (Some(z), _) if z.trim().is_empty() => None,
            (Some(z), _) => Some(parse_zone(z)?),
            (None, Some(r)) => r.zone,
            (None, None) => None,
        };
        let text = |given: &Option<String>, old: Option<&String>, default: &str| {
            given
                .as_ref()
                .map(|s| s.trim().to_string())
                .or_else(|| old.cloned())
                .unwrap_or_else(|| default.to_string())
        };
        let mut name = text(&self.name, existing.map(|r| &r.name), DEFAULT_NAME);
        if name.is_empty() {
            name = DEFAULT_NAME.into();
        }
        let prompt = text(&self.prompt, existing.map(|r| &r.prompt), "");
        if prompt.is_empty() {
            return Err(field(
                "a routine needs a prompt: the text its agent runs, e.g. \"Summarise today's calendar\"",
            ));
        }
        let agent_id = text(&self.agent_id, existing.map(|r| &r.agent_id), "default");
        if !valid_agent_id(&agent_id) {
            return Err(field(format!(
                "invalid agent id {agent_id:?}: use letters, digits, '-' and '_'"
            )));
        }
        let flag = |given: Option<bool>, old: Option<bool>| given.or(old).unwrap_or(true);
        Ok(Routine {
            id,
            name,
            description: text(&self.description, existing.map(|r| &r.description), ""),
            schedule,
            zone,
            prompt,
            agent_id,
            speak_tts: flag(self.speak_tts, existing.map(|r| r.speak_tts)),
            notify_desktop: flag(self.notify_desktop, existing.map(|r| r.notify_desktop)),
            enabled: flag(self.enabled, existing.map(|r| r.enabled)),
            policy: self.policy(existing)?,
            created_at: existing.map_or(now, |r| r.created_at),
            updated_at: now,
            timing: Timing {
                armed_at: now,
                last_slot: existing.and_then(|r| r.timing.last_slot),
                last_run: existing.and_then(|r| r.timing.last_run),
            },
            next_run: None,
            last_outcome: existing.and_then(|r| r.last_outcome.clone()),
        })
    }

    fn routine_id(
        &self,
        existing: Option<&Routine>,
        now: DateTime<Utc>,
    ) -> Result<String, RoutineError> {
        if let Some(r) = existing {
            return Ok(r.id.clone());
        }
        let id = match &self.id {
            Some(id) if !id.trim().is_empty() => id.trim().to_string(),
            _ => format!("r{}", now.timestamp_millis()),
        };
        if !valid_routine_id(&id) {
            return Err(field(format!(
                "invalid routine id {id:?}: use 1 to 64 letters, digits, '-' and '_'"
            )));
        }
        Ok(id)
    }

    /// The trigger and spec: given ones, else the stored ones, else `daily_at 09:00`. A trigger
    /// changed without a spec gets that trigger's default (`09:00`, `1`); cron has none.
    fn schedule(&self, existing: Option<&Routine>) -> Result<Schedule, RoutineError> {
        let old = existing.map(|r| &r.schedule);
        let trigger = self
            .trigger
            .as_deref()
            .map(str::trim)
            .or(old.map(Schedule::trigger_name))
            .unwrap_or("daily_at");
        let same_trigger = old.is_some_and(|o| o.trigger_name() == trigger);
        let spec = match (&self.time_spec, old) {
            (Some(s), _) => s.clone(),
            (None, Some(o)) if same_trigger => o.time_spec(),
            (None, _) => match trigger {
                "daily_at" => "09:00".into(),
                "hourly" => "1".into(),
                "cron" => {
                    return Err(field(
                        "a cron routine needs its pattern in time_spec, e.g. \"0 9 * * MON-FRI\"",
                    ));
                }
                _ => String::new(),
            },
        };
        Ok(Schedule::parse(trigger, &spec)?)
    }

    fn policy(&self, existing: Option<&Routine>) -> Result<Policy, RoutineError> {
        let mut p = existing.map_or_else(Policy::default, |r| r.policy);
        if let Some(c) = &self.catch_up {
            p.catch_up = CatchUp::parse(c)?;
        }
        if let Some(g) = self.grace_minutes {
            if g > MAX_GRACE_MINUTES {
                return Err(field(format!(
                    "grace_minutes {g} is too long: use at most {MAX_GRACE_MINUTES} (a week)"
                )));
            }
            p.grace = TimeDelta::minutes(i64::from(g));
        }
        Ok(p)
    }
}

impl Routine {
    /// The scheduler's job for this routine.
    pub fn job(&self) -> crate::engine::scheduler::Job {
        crate::engine::scheduler::Job {
            schedule: self.schedule.clone(),
            zone: self.zone,
            policy: self.policy,
            timing: self.timing,
            enabled: self.enabled,
        }
    }

    /// The session its runs are stored in: `routine-<id>`.
    pub fn session_id(&self) -> String {
        format!("routine-{}", self.id)
    }

    /// [`Policy::grace`] in whole minutes.
    pub fn grace_minutes(&self) -> i64 {
        self.policy.grace.num_minutes()
    }
}
