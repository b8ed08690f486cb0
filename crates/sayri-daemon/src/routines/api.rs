//! What the IPC commands ask of the routines: list, save, delete, enable, run now, preview,
//! and the status part — with the routine objects of `PROTOCOL.md`.

use super::{JobKey, Routines, opt_time};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sayri_core::assistant::CoreError;
use sayri_core::domain::routines::timing::to_epoch;
use sayri_core::domain::routines::{Decision, Routine, RoutineDraft, RunOutcome};
use sayri_core::engine::scheduler::{Job, StartError};
use sayri_core::sync::lock;
use sayri_protocol::reply::routines::{self as reply, ListedRoutine};
use sayri_protocol::reply::runtime::{NextRoutine, RoutinesStatus};
use sayri_protocol::{ErrorCode, ProtocolError};

fn store_err(e: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::new(ErrorCode::Internal, e.to_string())
}

fn not_found(id: &str) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::NotFound,
        format!("routine not found: {id} (`sayri routines list` shows them)"),
    )
}

/// `{status, summary, finished_at, session_id}`.
pub(super) fn outcome(o: &RunOutcome) -> reply::RunOutcome {
    reply::RunOutcome {
        status: o.status.as_str().into(),
        summary: o.summary.clone(),
        finished_at: to_epoch(o.finished_at),
        session_id: o.session_id.clone(),
    }
}

/// The planned next fire of `job` at `now`: the slot it waits for, `now` when due.
pub(super) fn next_of(job: &Job, system: Tz, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    match job.decide(system, now) {
        Decision::Wait(at) => Some(at),
        Decision::Run { .. } | Decision::Skip { .. } => Some(now),
        Decision::Never => None,
    }
}

impl Routines {
    /// A routine as clients see it.
    fn routine_view(&self, r: &Routine, system: Tz, now: DateTime<Utc>) -> reply::Routine {
        let key = JobKey::Routine(r.id.clone());
        let (job, running) = {
            let inner = lock(&self.inner);
            (inner.sched.job(&key).cloned(), inner.sched.is_running(&key))
        };
        let job = job.unwrap_or_else(|| r.job());
        let zone = job.zone_in(system);
        let next = next_of(&job, system, now);
        reply::Routine {
            id: r.id.clone(),
            name: r.name.clone(),
            description: r.description.clone(),
            trigger: r.schedule.trigger_name().into(),
            time_spec: r.schedule.time_spec(),
            zone: r.zone.map(|z| z.name().to_string()),
            prompt: r.prompt.clone(),
            agent_id: r.agent_id.clone(),
            speak_tts: r.speak_tts,
            notify_desktop: r.notify_desktop,
            enabled: r.enabled,
            catch_up: r.policy.catch_up.as_str().into(),
            grace_minutes: r.grace_minutes(),
            last_run: job.timing.last_run.map_or(0.0, to_epoch),
            created_at: to_epoch(r.created_at),
            updated_at: to_epoch(r.updated_at),
            next_run: next.map(to_epoch),
            next_run_at: opt_time(next, zone),
            running,
            last_outcome: r.last_outcome.as_ref().map(outcome),
            session_id: r.session_id(),
            error: None,
        }
    }

    /// `routines_list`: every routine, oldest first (broken rows with their `error`).
    ///
    /// # Errors
    /// The database failing.
    pub fn list(&self) -> Result<reply::RoutinesListReply, ProtocolError> {
        let (system, now) = (self.clock.system_zone(), self.clock.now());
        let rows = self.db(|s| s.routines()).map_err(store_err)?;
        Ok(rows
            .iter()
            .map(|row| match row {
                Ok(r) => ListedRoutine::Routine(Box::new(self.routine_view(r, system, now))),
                Err(b) => ListedRoutine::Broken(reply::BrokenRoutine {
                    id: b.id.clone(),
                    name: b.name.clone(),
                    error: b.error.clone(),
                }),
            })
            .collect())
    }

    /// `routine_save`: creates or updates a routine (see [`RoutineDraft::apply`]); its agent
    /// must exist and be valid.
    ///
    /// # Errors
    /// `invalid_params` for anything the draft or the agent check refuses (nothing stored).
    pub fn save(&self, draft: &RoutineDraft) -> Result<reply::Routine, ProtocolError> {
        let now = self.clock.now();
        let r = {
            let mut inner = lock(&self.inner);
            let draft = &self.with_free_id(draft, now)?;
            let existing = match &draft.id {
                Some(id) => match self.db(|s| s.routine(id.trim())).map_err(store_err)? {
                    Some(Ok(r)) => Some(r),
                    _ => None,
                },
                None => None,
            };
            let r = draft
                .apply(existing.as_ref(), now)
                .map_err(|e| ProtocolError::invalid_params(e.to_string()))?;
            if let Err(e) = self.brain.core.resolve(&r.agent_id) {
                return Err(ProtocolError::invalid_params(match e {
                    CoreError::UnknownAgent(id) => format!(
                        "agent not found: {id} (create it with `sayri agents create`, or use `default`)"
                    ),
                    other => other.to_string(),
                }));
            }
            self.db(|s| s.save_routine(&r)).map_err(store_err)?;
            inner.sched.upsert(JobKey::Routine(r.id.clone()), r.job());
            r
        };
        tracing::info!("routine {} saved: {}", r.id, r.schedule);
        self.wake.notify_one();
        Ok(self.routine_view(&r, self.clock.system_zone(), now))
    }

    /// `draft`, given an unused id (`r<epoch-ms>`, then `r<epoch-ms>-2`, …) when it has none:
    /// two routines created within one millisecond (or on a stopped clock) never share one.
    fn with_free_id(
        &self,
        draft: &RoutineDraft,
        now: DateTime<Utc>,
    ) -> Result<RoutineDraft, ProtocolError> {
        let mut draft = draft.clone();
        if draft.id.as_deref().is_some_and(|id| !id.trim().is_empty()) {
            return Ok(draft);
        }
        let base = format!("r{}", now.timestamp_millis());
        let mut id = base.clone();
        for n in 2.. {
            if self.db(|s| s.routine(&id)).map_err(store_err)?.is_none() {
                break;
            }
            id = format!("{base}-{n}");
        }
        draft.id = Some(id);
        Ok(draft)
    }

    /// `routine_delete`: removes a routine; a run in progress stops.
    ///
    /// # Errors
    /// `not_found`, or the database failing.
    pub fn delete(&self, id: &str) -> Result<reply::RoutineDeleteReply, ProtocolError> {
        let key = JobKey::Routine(id.to_string());
        let existed = {
            let mut inner = lock(&self.inner);
            if let Some(c) = inner.runs.get(&key) {
                c.cancel();
            }
            inner.sched.remove(&key);
            inner.persisted.remove(&key);
            self.db(|s| s.delete_routine(id)).map_err(store_err)?
        };
        if !existed {
            return Err(not_found(id));
        }
        self.wake.notify_one();
        Ok(reply::RoutineDeleteReply {
            routine_id: id.into(),
            deleted: true,
        })
    }

    /// `routine_set_enabled`: turns a routine on or off, re-armed now (enabling never
    /// catches up a slot missed while off).
    ///
    /// # Errors
    /// `not_found`, a routine whose stored row no longer parses, or the database failing.
    pub fn set_enabled(
        &self,
        id: &str,
        enabled: bool,
    ) -> Result<reply::RoutineSetEnabledReply, ProtocolError> {
        let key = JobKey::Routine(id.to_string());
        let now = self.clock.now();
        let job = {
            let mut inner = lock(&self.inner);
            let Some(mut job) = inner.sched.job(&key).cloned() else {
                return Err(match self.db(|s| s.routine(id)).map_err(store_err)? {
                    Some(Err(b)) => ProtocolError::invalid_params(format!(
                        "routine {id} cannot be used: {} — save it again with valid fields, or delete it",
                        b.error
                    )),
                    _ => not_found(id),
                });
            };
            if !self
                .db(|s| s.set_routine_enabled(id, enabled, now))
                .map_err(store_err)?
            {
                return Err(not_found(id));
            }
            job.enabled = enabled;
            job.timing.armed_at = now;
            inner.sched.upsert(key, job.clone());
            job
        };
        self.wake.notify_one();
        let system = self.clock.system_zone();
        Ok(reply::RoutineSetEnabledReply {
            routine_id: id.into(),
            enabled,
            next_run_at: opt_time(next_of(&job, system, now), job.zone_in(system)),
        })
    }

    /// `routines_run`: starts a run now, enabled or not.
    ///
    /// # Errors
    /// `busy` while a run of it is in progress, `not_found`.
    pub fn run_now(
        self: &std::sync::Arc<Self>,
        id: &str,
    ) -> Result<reply::RoutinesRunReply, ProtocolError> {
        let key = JobKey::Routine(id.to_string());
        let r = match self.db(|s| s.routine(id)).map_err(store_err)? {
            Some(Ok(r)) => r,
            Some(Err(b)) => {
                return Err(ProtocolError::invalid_params(format!(
                    "routine {id} cannot run: {}",
                    b.error
                )));
            }
            None => return Err(not_found(id)),
        };
        let mut inner = lock(&self.inner);
        match inner.sched.start_by_hand(&key, self.clock.now()) {
            Ok(()) => {}
            Err(StartError::Running) => {
                return Err(ProtocolError::new(
                    ErrorCode::Busy,
                    format!(
                        "routine {id} is already running; wait for it to finish (a routine never runs twice at once)"
                    ),
                ));
            }
            Err(StartError::Unknown) => return Err(not_found(id)),
        }
        let next = inner.persisted.get(&key).and_then(|p| p.1);
        self.persist_timing(&mut inner, &key, next);
        self.spawn_run(&mut inner, key, "manual");
        Ok(reply::RoutinesRunReply {
            scheduled: true,
            routine_id: id.into(),
            name: r.name,
        })
    }

    /// `routine_next`: the next `count` fires from `now` (else the clock), as the scheduler
    /// computes them, in the routine's zone.
    ///
    /// # Errors
    /// `not_found`.
    pub fn next(
        &self,
        id: &str,
        count: usize,
        now: Option<DateTime<Utc>>,
    ) -> Result<reply::RoutineNextReply, ProtocolError> {
        let job = self
            .job(&JobKey::Routine(id.to_string()))
            .ok_or_else(|| not_found(id))?;
        let system = self.clock.system_zone();
        let zone = job.zone_in(system);
        let now = now.unwrap_or_else(|| self.clock.now());
        let next: Vec<String> = job
            .next_fires(system, now, count)
            .iter()
            .map(|t| t.with_timezone(&zone).to_rfc3339())
            .collect();
        Ok(reply::RoutineNextReply {
            routine_id: id.into(),
            zone: zone.name().into(),
            enabled: job.enabled,
            trigger: job.schedule.trigger_name().into(),
            next,
        })
    }

    /// The `routines` part of `status`.
    pub fn status(&self) -> RoutinesStatus {
        let system = self.clock.system_zone();
        let now = self.clock.now();
        let (count, enabled, running, next, triggers) = {
            let inner = lock(&self.inner);
            let routines: Vec<_> = inner
                .sched
                .keys()
                .filter(|k| matches!(k, JobKey::Routine(_)))
                .cloned()
                .collect();
            let jobs: Vec<_> = routines
                .iter()
                .filter_map(|k| inner.sched.job(k).map(|j| (k, j)))
                .collect();
            let next = jobs
                .iter()
                .filter_map(|(k, j)| {
                    next_of(j, system, now).map(|t| (t, k.id().to_string(), j.zone_in(system)))
                })
                .min_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            (
                jobs.len(),
                jobs.iter().filter(|(_, j)| j.enabled).count(),
                inner
                    .runs
                    .keys()
                    .map(|k| format!("{}:{}", k.kind(), k.id()))
                    .collect::<Vec<_>>(),
                next,
                super::triggers::status(&inner),
            )
        };
        RoutinesStatus {
            count: count as u64,
            enabled: enabled as u64,
            running,
            next: next.map(|(t, routine_id, z)| NextRoutine {
                routine_id,
                at: t.with_timezone(&z).to_rfc3339(),
            }),
            system_zone: system.name().into(),
            zone_problem: self.clock.zone_problem(),
            legacy_import: lock(&self.legacy_report).clone(),
            test_clock: self.test_clock,
            triggers,
            monitors: lock(&self.monitors).status(),
        }
    }
}
