//! Routines and system-event triggers in the daemon: the one scheduler, its runs, and the
//! trigger engine. Only the daemon schedules, and only one daemon runs per runtime directory
//! (its lock), so two schedulers never race for a slot.
//!
//! * **The loop** ([`Routines::run_loop`]) makes a pass — the core's
//!   [`Scheduler::tick`](sayri_core::engine::scheduler::Scheduler::tick) at the clock's time and
//!   zone — then sleeps until the next due instant, a change (a save, a run's end, a trigger
//!   event) or a clock step or zone change ([`clock`]). Nothing polls; a daemon with nothing
//!   due makes no pass and no model call.
//! * **Persist first.** A pass writes each changed timing (`last_run`, `last_slot`,
//!   `armed_at`, `next_run`) to the database **before** it starts the runs, so a crash mid-run
//!   never repeats that slot at the next start.
//! * **Runs** ([`Routines::execute`]) are remote turns of the routine's agent in a fresh
//!   context and its own session (`sayri_core::engine::routine_run`), at most
//!   [`MAX_PARALLEL_RUNS`] at once (the others wait their turn; IPC stays responsive), each
//!   routine at most once at a time. The result is stored in the session and on the routine,
//!   broadcast (`routine_started`, `routine_finished`), shown as a desktop notification and
//!   spoken when the daemon has a [`Speaker`] ([`Routines::set_speaker`], the voice hook).
//! * **Triggers** (`triggers.rs`): `$CONFIG/triggers/*.json`, reloaded when the directory
//!   changes; `on_schedule` ones are scheduler jobs like routines, the others fire on their
//!   event (login, file changes, low battery, network changes) and are refused while a run of
//!   them is in progress.
//! * **On login**: at start, if this is a new login session ([`login`]), every enabled
//!   `on_login` routine and trigger runs once.
//! * **Legacy**: the original `$CONFIG/routines.json` is imported once (entries that do not
//!   convert are reported in `status`; the file is left as it is).

mod api;
mod battery;
pub mod clock;
mod file_watch;
pub mod login;
mod network;
#[cfg(feature = "test-clock")]
pub mod test_clock;
pub mod trigger_files;
mod triggers;

use crate::brain::Brain;
use crate::bus::Broadcaster;
use chrono::{DateTime, Utc};
use clock::{ClockPort, SchedulerClock};
use sayri_core::domain::routines::legacy::parse_legacy;
use sayri_core::domain::routines::{RunOutcome, RunStatus, Timing};
use sayri_core::engine::NullSink;
use sayri_core::engine::routine_run::{self, RunPorts, RunReport, RunSpec};
use sayri_core::engine::scheduler::{Job, Scheduler};
use sayri_core::ports::{Notifier, Redactor, Speaker};
use sayri_core::sync::{lock, read, write};
use sayri_protocol::event::routines::{RoutineFinished, RoutineStarted};
use sayri_store::Store;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Runs of routines and triggers at once; more wait for a free slot.
pub const MAX_PARALLEL_RUNS: usize = 2;

/// Scheduler fact: the original `routines.json` was imported (its report).
const LEGACY_META: &str = "legacy_routines_import";

/// A scheduler job: a routine or a trigger.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobKey {
    /// A routine (its id).
    Routine(String),
    /// A trigger (its id).
    Trigger(String),
}

impl JobKey {
    fn kind(&self) -> &'static str {
        match self {
            JobKey::Routine(_) => "routine",
            JobKey::Trigger(_) => "trigger",
        }
    }

    fn id(&self) -> &str {
        match self {
            JobKey::Routine(id) | JobKey::Trigger(id) => id,
        }
    }
}

/// What the scheduler shares between the loop, the runs and the IPC handlers.
struct Inner {
    sched: Scheduler<JobKey>,
    /// Runs in progress (or waiting for a slot): their cancel tokens.
    runs: HashMap<JobKey, CancellationToken>,
    /// What was last written per job: timing and planned next fire.
    persisted: HashMap<JobKey, (Timing, Option<DateTime<Utc>>)>,
    /// The trigger files as last loaded.
    triggers: Vec<trigger_files::TriggerEntry>,
    /// When each trigger's last run ended (file changes from before then are its own).
    trigger_ends: HashMap<String, std::time::Instant>,
}

/// The daemon's routines and triggers.
pub struct Routines {
    store: Arc<Store>,
    brain: Arc<Brain>,
    clock: Arc<dyn SchedulerClock>,
    notifier: Arc<dyn Notifier>,
    speaker: RwLock<Option<Arc<dyn Speaker>>>,
    broadcaster: Broadcaster,
    config_dir: PathBuf,
    inner: Mutex<Inner>,
    wake: Notify,
    permits: Arc<Semaphore>,
    stop: CancellationToken,
    tasks: TaskTracker,
    legacy_report: Mutex<Option<String>>,
    monitors: Mutex<triggers::Monitors>,
    test_clock: bool,
}

/// The clock the daemon schedules with: the wall clock, or — in a build with the `test-clock`
/// feature, when `SAYRI_TEST_CLOCK` asks for it — the test's. Returns whether it is the test's.
///
/// # Errors
/// `SAYRI_TEST_CLOCK` is set but this build cannot honour it, or its settings are invalid.
pub fn clock_from_env() -> Result<(Arc<dyn SchedulerClock>, bool), String> {
    #[cfg(feature = "test-clock")]
    if let Some(c) = test_clock::DrivenClock::from_env()? {
        return Ok((c, true));
    }
    #[cfg(not(feature = "test-clock"))]
    if std::env::var_os("SAYRI_TEST_CLOCK").is_some() {
        return Err(
            "SAYRI_TEST_CLOCK is set, but this sayri has no test clock (it is built only into test builds); unset it".into(),
        );
    }
    Ok((Arc::new(clock::WallClock::new()), false))
}

impl Routines {
    /// Starts the scheduler: imports the original `routines.json` once, loads routines and
    /// triggers, runs `on_login` work in a new login session, and spawns the loop. Call inside
    /// the daemon's runtime.
    pub fn start(
        brain: Arc<Brain>,
        clock: (Arc<dyn SchedulerClock>, bool),
        notifier: Arc<dyn Notifier>,
        broadcaster: Broadcaster,
        config_dir: PathBuf,
    ) -> Arc<Routines> {
        let me = Arc::new(Routines {
            store: brain.store.clone(),
            brain,
            clock: clock.0,
            notifier,
            speaker: RwLock::new(None),
            broadcaster,
            config_dir,
            inner: Mutex::new(Inner {
                sched: Scheduler::new(),
                runs: HashMap::new(),
                persisted: HashMap::new(),
                triggers: Vec::new(),
                trigger_ends: HashMap::new(),
            }),
            wake: Notify::new(),
            permits: Arc::new(Semaphore::new(MAX_PARALLEL_RUNS)),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
            legacy_report: Mutex::new(None),
            monitors: Mutex::new(triggers::Monitors::default()),
            test_clock: clock.1,
        });
        me.import_legacy();
        me.load_routines();
        me.reload_triggers();
        let session = login::current_session();
        if me.db(|s| login::is_new_session(s, &session)) {
            me.run_login_work();
        }
        let looped = me.clone();
        me.tasks.spawn(async move { looped.run_loop().await });
        me
    }

    /// Sets (or removes) the voice output routine results are spoken through.
    pub fn set_speaker(&self, speaker: Option<Arc<dyn Speaker>>) {
        *write(&self.speaker) = speaker;
    }

    /// Stops the loop, the monitors and every run (a stopped run is recorded as such; its slot
    /// stays served, so it is not repeated at the next start). Waits up to 2 s for the runs.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        lock(&self.monitors).stop_all();
        self.tasks.close();
        if tokio::time::timeout(std::time::Duration::from_secs(2), self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("routine runs did not stop within 2 s");
        }
    }

    /// Runs `f` with the store, off the async worker threads (see [`crate::offload`]).
    fn db<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        crate::offload::store(&self.store, f)
    }

    /// The original `$CONFIG/routines.json`, once: routines not in the database yet are
    /// added, the file stays as it is.
    fn import_legacy(&self) {
        match self.db(|s| s.scheduler_meta(LEGACY_META)) {
            Ok(Some(done)) => {
                *lock(&self.legacy_report) = Some(done);
                return;
            }
            Ok(None) => {}
            Err(e) => {
                return crate::store_health::log_store_error(
                    &self.store,
                    "routines.json import skipped",
                    &e,
                );
            }
        }
        let file = self.config_dir.join("routines.json");
        let Ok(text) = crate::offload::blocking(|| std::fs::read_to_string(&file)) else {
            return;
        };
        let report = match parse_legacy(&text, self.clock.now()) {
            Err(e) => format!("{} was not imported: {e}", file.display()),
            Ok(got) => {
                let mut added = 0;
                for r in &got.routines {
                    if matches!(self.db(|s| s.routine(&r.id)), Ok(None))
                        && self.db(|s| s.save_routine(r)).is_ok()
                    {
                        added += 1;
                    }
                }
                let mut s = format!("{added} routine(s) imported from {}", file.display());
                if !got.refused.is_empty() {
                    s.push_str(&format!("; not imported: {}", got.refused.join("; ")));
                }
                s
            }
        };
        tracing::info!("{report}");
        if let Err(e) = self.db(|s| s.set_scheduler_meta(LEGACY_META, &report)) {
            tracing::error!("could not record the routines.json import ({e}); it may run again");
        }
        *lock(&self.legacy_report) = Some(report);
    }

    /// Puts every stored routine into the scheduler (rows that no longer parse are logged and
    /// never run).
    fn load_routines(&self) {
        let rows = match self.db(|s| s.routines()) {
            Ok(r) => r,
            Err(e) => {
                return crate::store_health::log_store_error(
                    &self.store,
                    "routines not loaded",
                    &e,
                );
            }
        };
        let mut inner = lock(&self.inner);
        for row in rows {
            match row {
                Ok(r) => {
                    let key = JobKey::Routine(r.id.clone());
                    inner.persisted.insert(key.clone(), (r.timing, r.next_run));
                    inner.sched.upsert(key, r.job());
                }
                Err(b) => tracing::error!("routine {} cannot run: {}", b.id, b.error),
            }
        }
    }

    /// Runs every enabled `on_login` routine and trigger once.
    fn run_login_work(self: &Arc<Self>) {
        let routines: Vec<String> = match self.db(|s| s.routines()) {
            Ok(rows) => rows
                .into_iter()
                .filter_map(Result::ok)
                .filter(|r| {
                    r.enabled && r.schedule == sayri_core::domain::routines::Schedule::OnLogin
                })
                .map(|r| r.id)
                .collect(),
            Err(e) => return tracing::error!("on_login routines skipped: {e}"),
        };
        let mut inner = lock(&self.inner);
        for id in routines {
            self.fire(&mut inner, JobKey::Routine(id), "login");
        }
        for id in triggers::login_triggers(&inner) {
            self.fire(&mut inner, JobKey::Trigger(id), "login");
        }
    }

    /// The loop: a pass, then sleep until the next due instant or a change.
    async fn run_loop(self: Arc<Self>) {
        loop {
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let wake_at = self.pass();
            self.clock.handled();
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = self.clock.wait(wake_at) => {}
                () = woken => {}
            }
        }
    }

    /// One scheduler pass: decide, persist, then start. Returns when to pass again.
    fn pass(self: &Arc<Self>) -> Option<DateTime<Utc>> {
        let now = self.clock.now_for_pass();
        let zone = self.clock.system_zone();
        let mut inner = lock(&self.inner);
        let tick = inner.sched.tick(now, zone);
        for (key, next) in &tick.next_run {
            self.persist_timing(&mut inner, key, *next);
        }
        for (key, slot) in &tick.skipped {
            tracing::info!(
                "{} {}: missed slot {} not run (catch-up policy or older than its grace period)",
                key.kind(),
                key.id(),
                slot.to_rfc3339()
            );
        }
        for (key, slot) in &tick.overlapped {
            tracing::info!(
                "{} {}: slot {} came while its previous run is still going; it does not start a second run",
                key.kind(),
                key.id(),
                slot.to_rfc3339()
            );
        }
        for s in tick.started {
            let reason = if s.late { "catch_up" } else { "schedule" };
            self.spawn_run(&mut inner, s.key, reason);
        }
        tick.wake_at
    }

    /// Writes a job's timing and planned next fire when they changed since the last write.
    fn persist_timing(&self, inner: &mut Inner, key: &JobKey, next: Option<DateTime<Utc>>) {
        let Some(timing) = inner.sched.job(key).map(|j| j.timing) else {
            return;
        };
        if inner.persisted.get(key) == Some(&(timing, next)) {
            return;
        }
        let written = match key {
            JobKey::Routine(id) => self.db(|s| s.set_routine_timing(id, &timing, next)),
            JobKey::Trigger(id) => self.db(|s| s.set_trigger_timing(id, &timing, next)),
        };
        match written {
            Ok(()) => {
                inner.persisted.insert(key.clone(), (timing, next));
            }
            Err(e) => tracing::error!("{} {}: timing not saved: {e}", key.kind(), key.id()),
        }
    }

    /// Starts `key` by hand (login, an event): refused while it runs. Persists, then spawns.
    fn fire(self: &Arc<Self>, inner: &mut Inner, key: JobKey, reason: &'static str) -> bool {
        let now = self.clock.now();
        if let Err(e) = inner.sched.start_by_hand(&key, now) {
            tracing::info!("{} {} not started ({reason}): {e}", key.kind(), key.id());
            return false;
        }
        let next = inner.persisted.get(&key).and_then(|p| p.1);
        self.persist_timing(inner, &key, next);
        self.spawn_run(inner, key, reason);
        true
    }

    /// Spawns the run of `key` (already marked running in the scheduler).
    fn spawn_run(self: &Arc<Self>, inner: &mut Inner, key: JobKey, reason: &'static str) {
        let Some(spec) = self.spec_for(inner, &key) else {
            inner.sched.finished(&key);
            return;
        };
        let cancel = self.stop.child_token();
        inner.runs.insert(key.clone(), cancel.clone());
        let me = self.clone();
        self.tasks
            .spawn(async move { me.execute(key, spec, reason, cancel).await });
    }

    /// What `key` runs, from its current definition.
    fn spec_for(&self, inner: &Inner, key: &JobKey) -> Option<RunSpec> {
        match key {
            JobKey::Routine(id) => match self.db(|s| s.routine(id)) {
                Ok(Some(Ok(r))) => Some(RunSpec {
                    kind: "routine",
                    id: r.id.clone(),
                    name: r.name.clone(),
                    prompt: r.prompt.clone(),
                    agent_id: r.agent_id.clone(),
                    session_id: r.session_id(),
                    notify_desktop: r.notify_desktop,
                    speak_tts: r.speak_tts,
                }),
                other => {
                    tracing::error!("routine {id} cannot run: {other:?}");
                    None
                }
            },
            JobKey::Trigger(id) => triggers::spec(inner, id),
        }
    }

    /// One run, from waiting for a slot to recording its outcome.
    async fn execute(
        self: Arc<Self>,
        key: JobKey,
        spec: RunSpec,
        reason: &'static str,
        cancel: CancellationToken,
    ) {
        let permit = tokio::select! {
            p = self.permits.clone().acquire_owned() => p.ok(),
            () = cancel.cancelled() => None,
        };
        let report = match permit {
            Some(_permit) => {
                self.announce_start(&key, &spec, reason);
                let speaker = read(&self.speaker).clone();
                let clock = ClockPort(self.clock.clone());
                let ports = RunPorts {
                    core: &self.brain.core,
                    notifier: &*self.notifier,
                    speaker: speaker.as_deref(),
                    clock: &clock,
                };
                routine_run::run(&ports, &spec, cancel, &NullSink).await
            }
            None => stopped_report(&spec, self.clock.now()),
        };
        self.record(&key, &spec, &report);
        {
            let mut inner = lock(&self.inner);
            inner.sched.finished(&key);
            inner.runs.remove(&key);
            if let JobKey::Trigger(id) = &key {
                inner
                    .trigger_ends
                    .insert(id.clone(), std::time::Instant::now());
            }
        }
        self.wake.notify_one();
    }

    fn announce_start(&self, key: &JobKey, spec: &RunSpec, reason: &str) {
        tracing::info!(
            "{} {} ({}) starts: {reason}",
            key.kind(),
            spec.id,
            spec.name
        );
        self.broadcaster.emit(&RoutineStarted {
            kind: key.kind().into(),
            id: spec.id.clone(),
            name: spec.name.clone(),
            session_id: spec.session_id.clone(),
            reason: reason.into(),
        });
    }

    /// Stores, logs and broadcasts a run's outcome.
    fn record(&self, key: &JobKey, spec: &RunSpec, report: &RunReport) {
        let o = &report.outcome;
        let saved = match key {
            JobKey::Routine(id) => self.db(|s| s.set_routine_outcome(id, o)),
            JobKey::Trigger(id) => self.db(|s| s.set_trigger_outcome(id, o)),
        };
        if let Err(e) = saved {
            tracing::error!("{} {}: outcome not saved: {e}", key.kind(), spec.id);
        }
        tracing::info!(
            "{} {} finished: {} ({} model call(s), {} prompt + {} completion tokens)",
            key.kind(),
            spec.id,
            o.status.as_str(),
            report.model_calls,
            report.usage.prompt_tokens,
            report.usage.completion_tokens
        );
        if let Some(e) = &report.notify_error {
            tracing::info!("{} {}: notification not shown: {e}", key.kind(), spec.id);
        }
        if let Some(e) = report.speak_error.as_ref().filter(|_| spec.speak_tts) {
            tracing::debug!("{} {}: not spoken: {e}", key.kind(), spec.id);
        }
        self.broadcaster.emit(&RoutineFinished {
            kind: key.kind().into(),
            id: spec.id.clone(),
            name: spec.name.clone(),
            session_id: o.session_id.clone(),
            status: o.status.as_str().into(),
            summary: self.brain.redactor.redact(&o.summary),
        });
    }

    /// The scheduler's job for `key`, if it has one.
    fn job(&self, key: &JobKey) -> Option<Job> {
        lock(&self.inner).sched.job(key).cloned()
    }
}

/// The report of a run stopped before it got a slot (the daemon is stopping).
fn stopped_report(spec: &RunSpec, now: DateTime<Utc>) -> RunReport {
    RunReport {
        outcome: RunOutcome {
            finished_at: now,
            status: RunStatus::Error,
            summary: "not run: the daemon stopped before the run could start".into(),
            session_id: spec.session_id.clone(),
        },
        model_calls: 0,
        usage: Default::default(),
        notify_error: None,
        speak_error: None,
    }
}

/// A status-friendly view of a value that may be missing.
fn opt_time(t: Option<DateTime<Utc>>, zone: chrono_tz::Tz) -> Option<String> {
    t.map(|t| t.with_timezone(&zone).to_rfc3339())
}
