//! Routines, the scheduler's state of schedule triggers, and the scheduler's small facts
//! (`scheduler_meta`: the login session last seen, whether the original `routines.json` was
//! imported).
//!
//! A routine's definition and its timing are written by different statements: a save writes
//! everything, the scheduler only the timing columns (`armed_at`, `last_slot`, `last_run`,
//! `next_run`) and a finished run only the outcome columns, so neither overwrites the other.
//! Times are Unix seconds. A run's summary (model output) passes the store's redactor; the
//! definition (the prompt the user wrote) is stored as given.

use crate::Store;
use chrono::{DateTime, TimeDelta, Utc};
use rusqlite::{OptionalExtension, Row, params};
use sayri_core::domain::routines::timing::{from_epoch, to_epoch};
use sayri_core::domain::routines::zone::parse_zone;
use sayri_core::domain::routines::{
    CatchUp, Policy, Routine, RunOutcome, RunStatus, Schedule, Timing,
};
use sayri_core::ports::StoreError;

/// A stored routine row that no longer parses (for example a zone this build does not know):
/// listed with its error so it can be fixed or deleted, never run.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenRoutine {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Why it cannot be used.
    pub error: String,
}

/// The scheduler's state of one schedule trigger (the definition is its file).
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerState {
    /// Trigger id.
    pub id: String,
    /// Timing.
    pub timing: Timing,
    /// Planned next fire.
    pub next_run: Option<DateTime<Utc>>,
    /// How its last run ended.
    pub last_outcome: Option<RunOutcome>,
}

const COLUMNS: &str = "id, name, description, trigger, time_spec, zone, prompt, agent_id, \
     speak_tts, notify_desktop, enabled, catch_up, grace_minutes, created_at, updated_at, \
     armed_at, last_slot, last_run, next_run, last_status, last_summary, last_finished_at, \
     last_session";

fn time(v: Option<f64>) -> Option<DateTime<Utc>> {
    v.and_then(from_epoch)
}

fn outcome_from(
    status: Option<String>,
    summary: Option<String>,
    finished: Option<f64>,
    session: Option<String>,
) -> Option<RunOutcome> {
    Some(RunOutcome {
        finished_at: time(finished)?,
        status: RunStatus::parse(&status?),
        summary: summary.unwrap_or_default(),
        session_id: session.unwrap_or_default(),
    })
}

/// A row → a routine, or why it no longer parses.
fn routine_from(row: &Row<'_>) -> rusqlite::Result<Result<Routine, BrokenRoutine>> {
    let id: String = row.get(0)?;
    let name: String = row.get(1)?;
    let trigger: String = row.get(3)?;
    let spec: String = row.get(4)?;
    let zone: Option<String> = row.get(5)?;
    let catch_up: String = row.get(11)?;
    let broken = |error: String| {
        Ok(Err(BrokenRoutine {
            id: id.clone(),
            name: name.clone(),
            error,
        }))
    };
    let schedule = match Schedule::parse(&trigger, &spec) {
        Ok(s) => s,
        Err(e) => return broken(e.to_string()),
    };
    let zone = match zone.as_deref().map(parse_zone).transpose() {
        Ok(z) => z,
        Err(e) => return broken(e.to_string()),
    };
    let catch_up = match CatchUp::parse(&catch_up) {
        Ok(c) => c,
        Err(e) => return broken(e.to_string()),
    };
    let grace: i64 = row.get(12)?;
    let created: f64 = row.get(13)?;
    let updated: f64 = row.get(14)?;
    let armed: f64 = row.get(15)?;
    Ok(Ok(Routine {
        id: id.clone(),
        name: name.clone(),
        description: row.get(2)?,
        schedule,
        zone,
        prompt: row.get(6)?,
        agent_id: row.get(7)?,
        speak_tts: row.get(8)?,
        notify_desktop: row.get(9)?,
        enabled: row.get(10)?,
        policy: Policy {
            catch_up,
            grace: TimeDelta::minutes(grace),
        },
        created_at: time(Some(created)).unwrap_or_default(),
        updated_at: time(Some(updated)).unwrap_or_default(),
        timing: Timing {
            armed_at: time(Some(armed)).unwrap_or_default(),
            last_slot: time(row.get(16)?),
            last_run: time(row.get(17)?),
        },
        next_run: time(row.get(18)?),
        last_outcome: outcome_from(row.get(19)?, row.get(20)?, row.get(21)?, row.get(22)?),
    }))
}

impl Store {
    /// Every routine, oldest first; rows that no longer parse come as [`BrokenRoutine`].
    pub fn routines(&self) -> Result<Vec<Result<Routine, BrokenRoutine>>, StoreError> {
        let conn = self.lock()?;
        let mut st = conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM routines ORDER BY created_at, id"
            ))
            .map_err(|e| self.fail(e))?;
        let rows = st.query_map([], routine_from).map_err(|e| self.fail(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }

    /// One routine (`None`: no such id).
    pub fn routine(&self, id: &str) -> Result<Option<Result<Routine, BrokenRoutine>>, StoreError> {
        let conn = self.lock()?;
        conn.query_row(
            &format!("SELECT {COLUMNS} FROM routines WHERE id = ?1"),
            [id],
            routine_from,
        )
        .optional()
        .map_err(|e| self.fail(e))
    }

    /// Inserts or replaces a routine whole (definition, timing and outcome).
    pub fn save_routine(&self, r: &Routine) -> Result<(), StoreError> {
        let o = r.last_outcome.as_ref();
        let conn = self.lock()?;
        conn.execute(
            &format!(
                "INSERT OR REPLACE INTO routines ({COLUMNS}) VALUES \
                 (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
                  ?18, ?19, ?20, ?21, ?22, ?23)"
            ),
            params![
                r.id,
                r.name,
                r.description,
                r.schedule.trigger_name(),
                r.schedule.time_spec(),
                r.zone.map(|z| z.name().to_string()),
                r.prompt,
                r.agent_id,
                r.speak_tts,
                r.notify_desktop,
                r.enabled,
                r.policy.catch_up.as_str(),
                r.policy.grace.num_minutes(),
                to_epoch(r.created_at),
                to_epoch(r.updated_at),
                to_epoch(r.timing.armed_at),
                r.timing.last_slot.map(to_epoch),
                r.timing.last_run.map(to_epoch),
                r.next_run.map(to_epoch),
                o.map(|o| o.status.as_str()),
                o.map(|o| self.clean(&o.summary)),
                o.map(|o| to_epoch(o.finished_at)),
                o.map(|o| o.session_id.clone()),
            ],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// Deletes a routine. Returns whether it existed.
    pub fn delete_routine(&self, id: &str) -> Result<bool, StoreError> {
        let conn = self.lock()?;
        let n = conn
            .execute("DELETE FROM routines WHERE id = ?1", [id])
            .map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    /// Turns a routine on or off, re-armed at `armed_at` (no catch-up of what it missed while
    /// off). Returns whether it exists.
    pub fn set_routine_enabled(
        &self,
        id: &str,
        enabled: bool,
        armed_at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let conn = self.lock()?;
        let n = conn
            .execute(
                "UPDATE routines SET enabled = ?2, armed_at = ?3, next_run = NULL WHERE id = ?1",
                params![id, enabled, to_epoch(armed_at)],
            )
            .map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    /// Writes the scheduler's timing of a routine (only those columns).
    pub fn set_routine_timing(
        &self,
        id: &str,
        timing: &Timing,
        next_run: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        let conn = self.lock()?;
        conn.execute(
            "UPDATE routines SET armed_at = ?2, last_slot = ?3, last_run = ?4, next_run = ?5
             WHERE id = ?1",
            params![
                id,
                to_epoch(timing.armed_at),
                timing.last_slot.map(to_epoch),
                timing.last_run.map(to_epoch),
                next_run.map(to_epoch),
            ],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// Records how a routine's run ended (only those columns; the summary is redacted).
    pub fn set_routine_outcome(&self, id: &str, o: &RunOutcome) -> Result<(), StoreError> {
        let conn = self.lock()?;
        conn.execute(
            "UPDATE routines SET last_status = ?2, last_summary = ?3, last_finished_at = ?4,
             last_session = ?5 WHERE id = ?1",
            params![
                id,
                o.status.as_str(),
                self.clean(&o.summary),
                to_epoch(o.finished_at),
                o.session_id
            ],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// The scheduler's state of every trigger that has one.
    pub fn trigger_states(&self) -> Result<Vec<TriggerState>, StoreError> {
        let conn = self.lock()?;
        let mut st = conn
            .prepare(
                "SELECT id, armed_at, last_slot, last_run, next_run, last_status, last_summary,
                 last_finished_at, last_session FROM trigger_state ORDER BY id",
            )
            .map_err(|e| self.fail(e))?;
        let rows = st
            .query_map([], |row| {
                let armed: f64 = row.get(1)?;
                Ok(TriggerState {
                    id: row.get(0)?,
                    timing: Timing {
                        armed_at: time(Some(armed)).unwrap_or_default(),
                        last_slot: time(row.get(2)?),
                        last_run: time(row.get(3)?),
                    },
                    next_run: time(row.get(4)?),
                    last_outcome: outcome_from(row.get(5)?, row.get(6)?, row.get(7)?, row.get(8)?),
                })
            })
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }

    /// Writes a trigger's timing (creating its row).
    pub fn set_trigger_timing(
        &self,
        id: &str,
        timing: &Timing,
        next_run: Option<DateTime<Utc>>,
    ) -> Result<(), StoreError> {
        let conn = self.lock()?;
        conn.execute(
            "INSERT INTO trigger_state (id, armed_at, last_slot, last_run, next_run)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(id) DO UPDATE SET armed_at = excluded.armed_at,
               last_slot = excluded.last_slot, last_run = excluded.last_run,
               next_run = excluded.next_run",
            params![
                id,
                to_epoch(timing.armed_at),
                timing.last_slot.map(to_epoch),
                timing.last_run.map(to_epoch),
                next_run.map(to_epoch),
            ],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// Records how a trigger's run ended (creating its row, armed at the end time).
    pub fn set_trigger_outcome(&self, id: &str, o: &RunOutcome) -> Result<(), StoreError> {
        let conn = self.lock()?;
        conn.execute(
            "INSERT INTO trigger_state (id, armed_at, last_run, last_status, last_summary,
               last_finished_at, last_session)
             VALUES (?1, ?4, ?4, ?2, ?3, ?4, ?5)
             ON CONFLICT(id) DO UPDATE SET last_status = excluded.last_status,
               last_summary = excluded.last_summary,
               last_finished_at = excluded.last_finished_at,
               last_session = excluded.last_session",
            params![
                id,
                o.status.as_str(),
                self.clean(&o.summary),
                to_epoch(o.finished_at),
                o.session_id
            ],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// Forgets a trigger's state (its file was deleted).
    pub fn delete_trigger_state(&self, id: &str) -> Result<(), StoreError> {
        let conn = self.lock()?;
        conn.execute("DELETE FROM trigger_state WHERE id = ?1", [id])
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// A scheduler fact (`None`: never set).
    pub fn scheduler_meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let conn = self.lock()?;
        conn.query_row(
            "SELECT value FROM scheduler_meta WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| self.fail(e))
    }

    /// Sets a scheduler fact.
    pub fn set_scheduler_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let conn = self.lock()?;
        conn.execute(
            "INSERT INTO scheduler_meta (key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }
}
