//! The trigger engine: loads `$CONFIG/triggers/`, keeps it loaded (the directory is watched),
//! turns each valid trigger into a scheduler job, and drives the events.
//!
//! * `on_schedule` triggers are scheduler jobs like cron routines (same engine, same catch-up
//!   rules, timing persisted in `trigger_state`).
//! * The others are jobs without time slots, started by their event — refused while a run of
//!   the same trigger is in progress (never two at once).
//! * `on_file_changed`: file changes that happened before the trigger's last run ended are
//!   its own doing (a run writing into the watched folder) and start nothing.
//! * A monitor (file watch, battery, network) runs only while an enabled trigger needs it.
//! * Changing a trigger's event fields re-arms it (like saving a routine); other edits keep
//!   its timing.

use super::trigger_files;
use super::{Inner, JobKey, Routines, api, file_watch, opt_time};
use crate::routines::{battery, network};
use chrono::{DateTime, Utc};
use sayri_core::domain::routines::triggers::{LowBattery, Trigger, TriggerEvent};
use sayri_core::domain::routines::{Policy, Schedule, Timing};
use sayri_core::engine::routine_run::RunSpec;
use sayri_core::engine::scheduler::Job;
use sayri_core::sync::lock;
use sayri_protocol::reply::routines::{
    AppliedTrigger, ListedTrigger, TriggerDeleteReply, TriggerEntry, TriggersListReply,
};
use sayri_protocol::reply::runtime::{InvalidTrigger, MonitorsStatus, TriggersStatus};
use sayri_protocol::{ErrorCode, ProtocolError};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Quiet time before a change of the triggers directory is loaded.
const DIR_SETTLE: Duration = Duration::from_millis(300);

/// The live monitors.
#[derive(Default)]
pub(super) struct Monitors {
    dir: Option<file_watch::FileWatch>,
    /// Per `on_file_changed` trigger: what it watches, and the watch.
    files: BTreeMap<String, (String, file_watch::FileWatch)>,
    /// Per trigger that cannot watch: why.
    problems: BTreeMap<String, String>,
    /// The battery triggers watched (id, threshold), and the watch.
    battery: Option<(Vec<(String, u8)>, CancellationToken)>,
    network: Option<CancellationToken>,
}

impl Monitors {
    pub(super) fn stop_all(&mut self) {
        self.dir = None;
        self.files.clear();
        let battery = self.battery.take().map(|(_, t)| t);
        for t in [battery, self.network.take()].into_iter().flatten() {
            t.cancel();
        }
    }

    pub(super) fn status(&self) -> MonitorsStatus {
        MonitorsStatus {
            triggers_dir: self.dir.is_some(),
            files: self.files.keys().cloned().collect(),
            battery: self.battery.is_some(),
            network: self.network.is_some(),
            problems: self.problems.clone(),
        }
    }
}

/// A trigger's job: its cron schedule, or no time slots.
fn job_for(t: &Trigger, timing: Timing) -> Job {
    let (schedule, zone, policy) = match &t.event {
        TriggerEvent::OnSchedule {
            schedule,
            zone,
            policy,
        } => (schedule.clone(), *zone, *policy),
        _ => (Schedule::OnLogin, None, Policy::default()),
    };
    Job {
        schedule,
        zone,
        policy,
        timing,
        enabled: t.enabled,
    }
}

/// The ids of the enabled `on_login` triggers.
pub(super) fn login_triggers(inner: &Inner) -> Vec<String> {
    valid(inner)
        .filter(|t| t.enabled && t.event == TriggerEvent::OnLogin)
        .map(|t| t.id.clone())
        .collect()
}

fn valid(inner: &Inner) -> impl Iterator<Item = &Trigger> {
    inner
        .triggers
        .iter()
        .filter_map(|e| e.trigger.as_ref().ok())
}

/// What trigger `id` runs.
pub(super) fn spec(inner: &Inner, id: &str) -> Option<RunSpec> {
    let t = valid(inner).find(|t| t.id == id)?;
    Some(RunSpec {
        kind: "trigger",
        id: t.id.clone(),
        name: t.name.clone(),
        prompt: t.prompt.clone(),
        agent_id: t.agent_id.clone(),
        session_id: t.session_id(),
        notify_desktop: t.notify_desktop,
        speak_tts: t.speak_tts,
    })
}

/// The `triggers` part of the routines status.
pub(super) fn status(inner: &Inner) -> TriggersStatus {
    let invalid = inner
        .triggers
        .iter()
        .filter_map(|e| {
            e.trigger.as_ref().err().map(|err| InvalidTrigger {
                id: e.id.clone(),
                file: e.file.clone(),
                error: err.clone(),
            })
        })
        .collect();
    TriggersStatus {
        count: inner.triggers.len() as u64,
        invalid,
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// `~/x` → `$HOME/x`.
fn expand(path: &str) -> Result<PathBuf, String> {
    match path.strip_prefix('~') {
        Some(rest) => {
            let home = home().ok_or("HOME is unset, so ~ cannot be expanded")?;
            Ok(home.join(rest.trim_start_matches('/')))
        }
        None => Ok(PathBuf::from(path)),
    }
}

impl Routines {
    /// The triggers directory.
    pub(super) fn triggers_dir(&self) -> PathBuf {
        self.config_dir.join("triggers")
    }

    /// Loads the triggers directory again and brings the jobs and monitors in line with it.
    pub(super) fn reload_triggers(self: &Arc<Self>) {
        let dir = self.triggers_dir();
        let entries = crate::offload::blocking(|| trigger_files::load_dir(&dir));
        let states: HashMap<String, Timing> = self
            .db(|s| s.trigger_states())
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.id, s.timing))
            .collect();
        let now = self.clock.now();
        {
            let mut inner = lock(&self.inner);
            let keep: Vec<&Trigger> = entries
                .iter()
                .filter_map(|e| e.trigger.as_ref().ok())
                .collect();
            let gone: Vec<JobKey> = inner
                .sched
                .keys()
                .filter(|k| matches!(k, JobKey::Trigger(id) if !keep.iter().any(|t| &t.id == id)))
                .cloned()
                .collect();
            for k in gone {
                inner.sched.remove(&k);
                inner.persisted.remove(&k);
            }
            for t in keep {
                let key = JobKey::Trigger(t.id.clone());
                let old = inner.sched.job(&key).cloned();
                let timing = old
                    .as_ref()
                    .map(|j| j.timing)
                    .or_else(|| states.get(&t.id).copied())
                    .unwrap_or_else(|| Timing::armed(now));
                let mut job = job_for(t, timing);
                let same = old.as_ref().is_some_and(|o| {
                    o.schedule == job.schedule
                        && o.zone == job.zone
                        && o.policy == job.policy
                        && o.enabled == job.enabled
                });
                if old.is_some() && !same {
                    job.timing.armed_at = now;
                }
                inner.sched.upsert(key, job);
            }
            for e in entries.iter().filter(|e| e.trigger.is_err()) {
                if let Err(err) = &e.trigger {
                    tracing::warn!("trigger file {} is not used: {err}", e.file.display());
                }
            }
            inner.triggers = entries;
        }
        self.configure_monitors();
        self.wake.notify_one();
    }

    /// Starts and stops the monitors the enabled triggers need.
    fn configure_monitors(self: &Arc<Self>) {
        let wanted: Vec<Trigger> = valid(&lock(&self.inner))
            .filter(|t| t.enabled)
            .cloned()
            .collect();
        let mut m = lock(&self.monitors);
        if self.stop.is_cancelled() {
            return m.stop_all();
        }
        if m.dir.is_none() {
            m.dir = self.watch_dir();
        }
        self.configure_file_watches(&mut m, &wanted);
        let battery: Vec<(String, u8)> = wanted
            .iter()
            .filter_map(|t| match t.event {
                TriggerEvent::OnBatteryLow { threshold_percent } => {
                    Some((t.id.clone(), threshold_percent))
                }
                _ => None,
            })
            .collect();
        // A running watch keeps its edge state (a low battery fires once per discharge).
        if m.battery.as_ref().map(|(b, _)| b) != Some(&battery) {
            if let Some((_, old)) = m.battery.take() {
                old.cancel();
            }
            if !battery.is_empty() {
                m.battery = Some((battery.clone(), self.start_battery(battery)));
            }
        }
        let network = wanted
            .iter()
            .any(|t| t.event == TriggerEvent::OnNetworkChange);
        match (network, m.network.is_some()) {
            (true, false) => m.network = Some(self.start_network()),
            (false, true) => {
                if let Some(t) = m.network.take() {
                    t.cancel();
                }
            }
            _ => {}
        }
    }

    /// Watches the triggers directory (created 0700 if missing) to reload on changes.
    fn watch_dir(self: &Arc<Self>) -> Option<file_watch::FileWatch> {
        let dir = self.triggers_dir();
        if let Err(e) = sayri_client::paths::ensure_private_dir(&dir) {
            tracing::warn!("triggers: {e}");
            return None;
        }
        let filter = file_watch::PathFilter::new(&dir, Some("*.json")).ok()?;
        let weak: Weak<Routines> = Arc::downgrade(self);
        file_watch::watch(filter, DIR_SETTLE, move |_| {
            if let Some(me) = weak.upgrade() {
                me.reload_triggers();
            }
        })
        .map_err(|e| {
            tracing::warn!(
                "triggers directory not watched (reload with `sayri routines list`): {e}"
            )
        })
        .ok()
    }

    fn configure_file_watches(self: &Arc<Self>, m: &mut Monitors, wanted: &[Trigger]) {
        let mut next = BTreeMap::new();
        m.problems.clear();
        for t in wanted {
            let TriggerEvent::OnFileChanged {
                path,
                glob,
                debounce_ms,
            } = &t.event
            else {
                continue;
            };
            let sig = format!("{path}\u{0}{glob:?}\u{0}{debounce_ms}");
            if let Some((old_sig, w)) = m.files.remove(&t.id)
                && old_sig == sig
            {
                next.insert(t.id.clone(), (old_sig, w));
                continue;
            }
            let started = expand(path).and_then(|root| {
                let filter = file_watch::PathFilter::new(&root, glob.as_deref())?;
                let weak = Arc::downgrade(self);
                let id = t.id.clone();
                file_watch::watch(filter, Duration::from_millis(*debounce_ms), move |at| {
                    if let Some(me) = weak.upgrade() {
                        me.file_changed(&id, at);
                    }
                })
            });
            match started {
                Ok(w) => {
                    next.insert(t.id.clone(), (sig, w));
                }
                Err(e) => {
                    tracing::warn!("trigger {}: {e}", t.id);
                    m.problems.insert(t.id.clone(), e);
                }
            }
        }
        m.files = next;
    }

    fn start_battery(self: &Arc<Self>, triggers: Vec<(String, u8)>) -> CancellationToken {
        let stop = self.stop.child_token();
        let weak = Arc::downgrade(self);
        let edges = std::sync::Mutex::new(
            triggers
                .into_iter()
                .map(|(id, t)| (id, LowBattery::new(t)))
                .collect::<Vec<_>>(),
        );
        tokio::spawn(battery::watch(stop.clone(), move |r| {
            let fire: Vec<String> = lock(&edges)
                .iter_mut()
                .filter_map(|(id, e)| e.observe(r.percent, r.discharging).then(|| id.clone()))
                .collect();
            if let Some(me) = weak.upgrade() {
                for id in fire {
                    tracing::info!("battery at {:.0} %: trigger {id}", r.percent);
                    me.fire_event(&id);
                }
            }
        }));
        stop
    }

    fn start_network(self: &Arc<Self>) -> CancellationToken {
        let stop = self.stop.child_token();
        let weak = Arc::downgrade(self);
        tokio::spawn(network::watch(stop.clone(), move |_| {
            let Some(me) = weak.upgrade() else { return };
            let ids: Vec<String> = valid(&lock(&me.inner))
                .filter(|t| t.enabled && t.event == TriggerEvent::OnNetworkChange)
                .map(|t| t.id.clone())
                .collect();
            for id in ids {
                me.fire_event(&id);
            }
        }));
        stop
    }

    /// A watched file changed (the last change at `at`).
    fn file_changed(self: &Arc<Self>, id: &str, at: Instant) {
        let key = JobKey::Trigger(id.to_string());
        let mut inner = lock(&self.inner);
        if inner.sched.is_running(&key) {
            tracing::debug!("trigger {id}: files changed during its run; not started again");
            return;
        }
        if inner.trigger_ends.get(id).is_some_and(|end| at <= *end) {
            tracing::debug!("trigger {id}: changes from before its last run ended; ignored");
            return;
        }
        self.fire(&mut inner, key, "event");
    }

    /// A trigger's event happened.
    fn fire_event(self: &Arc<Self>, id: &str) {
        let mut inner = lock(&self.inner);
        self.fire(&mut inner, JobKey::Trigger(id.to_string()), "event");
    }

    /// `triggers_list`: every trigger file with its state.
    pub fn triggers_list(self: &Arc<Self>) -> TriggersListReply {
        let system = self.clock.system_zone();
        let now = self.clock.now();
        let outcomes: HashMap<String, _> = self
            .db(|s| s.trigger_states())
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.id, s.last_outcome))
            .collect();
        let inner = lock(&self.inner);
        let problems = lock(&self.monitors).problems.clone();
        inner
            .triggers
            .iter()
            .map(|e| {
                let key = JobKey::Trigger(e.id.clone());
                let job = inner.sched.job(&key);
                let next: Option<DateTime<Utc>> = job.and_then(|j| api::next_of(j, system, now));
                let zone = job.map_or(system, |j| j.zone_in(system));
                let mut entry = entry_view(e);
                if let (Ok(_), Some(p)) = (&e.trigger, problems.get(&e.id)) {
                    entry.error = Some(p.clone());
                }
                ListedTrigger::new(
                    entry,
                    opt_time(next, zone),
                    inner.sched.is_running(&key),
                    outcomes
                        .get(&e.id)
                        .and_then(|o| o.as_ref())
                        .map(api::outcome),
                )
            })
            .collect()
    }

    /// `trigger_save`: writes a trigger file and loads it.
    ///
    /// # Errors
    /// `invalid_params` for an invalid trigger or an unknown agent (nothing written).
    pub fn trigger_save(
        self: &Arc<Self>,
        fields: &Map<String, Value>,
    ) -> Result<TriggerEntry, ProtocolError> {
        let agent = fields
            .get("target_agent_id")
            .and_then(Value::as_str)
            .unwrap_or("default");
        if self.brain.core.resolve(agent).is_err() {
            return Err(ProtocolError::invalid_params(format!(
                "agent not found: {agent} (create it with `sayri agents create`, or use `default`)"
            )));
        }
        let dir = self.triggers_dir();
        let entry = crate::offload::blocking(|| trigger_files::write_trigger(&dir, fields))
            .map_err(ProtocolError::invalid_params)?;
        self.reload_triggers();
        Ok(entry_view(&entry))
    }

    /// `trigger_delete`: removes a trigger file.
    ///
    /// # Errors
    /// `not_found`, or the removal failing.
    pub fn trigger_delete(self: &Arc<Self>, id: &str) -> Result<TriggerDeleteReply, ProtocolError> {
        let dir = self.triggers_dir();
        let existed = crate::offload::blocking(|| trigger_files::delete_trigger(&dir, id))
            .map_err(|e| ProtocolError::new(ErrorCode::Internal, e))?;
        if !existed {
            return Err(ProtocolError::new(
                ErrorCode::NotFound,
                format!("trigger not found: {id} (`sayri routines list` shows them)"),
            ));
        }
        let _ = self.db(|s| s.delete_trigger_state(id));
        self.reload_triggers();
        Ok(TriggerDeleteReply {
            trigger_id: id.into(),
            deleted: true,
        })
    }
}

/// A trigger file as listed: its fields, `id`, `file`, `error`.
fn entry_view(e: &trigger_files::TriggerEntry) -> TriggerEntry {
    TriggerEntry::new(
        e.id.clone(),
        e.file.clone(),
        e.fields.clone(),
        match &e.trigger {
            Ok(t) => Ok(AppliedTrigger {
                name: t.name.clone(),
                enabled: t.enabled,
                target_agent_id: t.agent_id.clone(),
            }),
            Err(err) => Err(err.clone()),
        },
    )
}
