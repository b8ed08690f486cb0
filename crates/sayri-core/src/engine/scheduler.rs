//! The scheduler's state machine: which jobs start now, which missed slots are skipped, and
//! when to look again. No clock, timer, store or task here — the daemon calls [`Scheduler::tick`]
//! at the instant it returns, persists the changed timings **before** it starts the runs, and
//! reports each run's end with [`Scheduler::finished`].
//!
//! * One run of a job at a time: a job is running from its start until `finished`, however the
//!   run was started (a slot or by hand). A slot that comes due meanwhile starts nothing; it is
//!   reported once in [`Tick::overlapped`] and treated as missed when the run ends (caught up
//!   once or skipped, by the job's policy).
//! * Slot decisions are [`timing::decide`]'s, with the job's own zone or else the system zone
//!   passed to each tick (read at that moment).
//! * A disabled job is never due.

use crate::domain::routines::schedule::Schedule;
use crate::domain::routines::timing::{self, Decision, Policy, Timing};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::collections::BTreeMap;

/// One scheduled job as the scheduler needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// When it fires.
    pub schedule: Schedule,
    /// Its own zone; `None` = the system zone at each computation.
    pub zone: Option<Tz>,
    /// Catch-up policy.
    pub policy: Policy,
    /// Persisted timing.
    pub timing: Timing,
    /// Whether slots start runs.
    pub enabled: bool,
}

impl Job {
    /// The zone its slots are read in, given the current system zone.
    pub fn zone_in(&self, system: Tz) -> Tz {
        self.zone.unwrap_or(system)
    }

    /// What it does at `now` (disabled: [`Decision::Never`]).
    pub fn decide(&self, system: Tz, now: DateTime<Utc>) -> Decision {
        if !self.enabled {
            return Decision::Never;
        }
        timing::decide(
            &self.schedule,
            &self.policy,
            &self.timing,
            self.zone_in(system),
            now,
        )
    }

    /// Its next `count` fire instants from `now` (see [`timing::next_fires`]); empty when
    /// disabled.
    pub fn next_fires(&self, system: Tz, now: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        if !self.enabled {
            return Vec::new();
        }
        timing::next_fires(
            &self.schedule,
            &self.policy,
            &self.timing,
            self.zone_in(system),
            now,
            count,
        )
    }
}

/// A run the daemon must start now (the job's timing is already updated).
#[derive(Debug, Clone, PartialEq)]
pub struct Started<K> {
    /// The job.
    pub key: K,
    /// The slot it serves.
    pub slot: DateTime<Utc>,
    /// Whether it catches up a missed slot.
    pub late: bool,
}

/// What one tick decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick<K> {
    /// Runs to start now.
    pub started: Vec<Started<K>>,
    /// Missed slots not run (policy `skip`, or older than the grace period); timing re-armed.
    pub skipped: Vec<(K, DateTime<Utc>)>,
    /// Slots that came due while their job was still running (each reported once).
    pub overlapped: Vec<(K, DateTime<Utc>)>,
    /// Each job's next planned fire (`None`: none planned, or running past its slot).
    pub next_run: Vec<(K, Option<DateTime<Utc>>)>,
    /// When to tick again at the latest (`None`: only when something changes).
    pub wake_at: Option<DateTime<Utc>>,
}

/// Why a run cannot start by hand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// The job is running.
    #[error("it is already running")]
    Running,
    /// No such job.
    #[error("no such job")]
    Unknown,
}

#[derive(Debug, Clone)]
struct Entry {
    job: Job,
    running: bool,
    /// The due slot already reported as overlapped.
    overlap_noted: Option<DateTime<Utc>>,
}

/// The jobs and whether each is running.
#[derive(Debug, Clone)]
pub struct Scheduler<K: Ord + Clone> {
    entries: BTreeMap<K, Entry>,
}

impl<K: Ord + Clone> Default for Scheduler<K> {
    fn default() -> Self {
        Scheduler {
            entries: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Clone> Scheduler<K> {
    /// An empty scheduler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a job; a running job stays running.
    pub fn upsert(&mut self, key: K, job: Job) {
        let running = self.entries.get(&key).is_some_and(|e| e.running);
        self.entries.insert(
            key,
            Entry {
                job,
                running,
                overlap_noted: None,
            },
        );
    }

    /// Removes a job (a running one's end is then ignored).
    pub fn remove(&mut self, key: &K) -> Option<Job> {
        self.entries.remove(key).map(|e| e.job)
    }

    /// The job under `key`.
    pub fn job(&self, key: &K) -> Option<&Job> {
        self.entries.get(key).map(|e| &e.job)
    }

    /// Whether `key` is running.
    pub fn is_running(&self, key: &K) -> bool {
        self.entries.get(key).is_some_and(|e| e.running)
    }

    /// Every key.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.keys()
    }

    /// Marks a run started by hand at `now` (`last_run` moves, the slots do not).
    ///
    /// # Errors
    /// [`StartError::Running`] while a run of the job is in progress, [`StartError::Unknown`].
    pub fn start_by_hand(&mut self, key: &K, now: DateTime<Utc>) -> Result<(), StartError> {
        let e = self.entries.get_mut(key).ok_or(StartError::Unknown)?;
        if e.running {
            return Err(StartError::Running);
        }
        e.running = true;
        e.job.timing.last_run = Some(now);
        Ok(())
    }

    /// A run of `key` ended.
    pub fn finished(&mut self, key: &K) {
        if let Some(e) = self.entries.get_mut(key) {
            e.running = false;
        }
    }

    /// Everything due at `now`, with `system` the system zone at this moment.
    pub fn tick(&mut self, now: DateTime<Utc>, system: Tz) -> Tick<K> {
        let mut tick = Tick {
            started: Vec::new(),
            skipped: Vec::new(),
            overlapped: Vec::new(),
            next_run: Vec::new(),
            wake_at: None,
        };
        for (key, e) in &mut self.entries {
            let next = tick_one(key, e, now, system, &mut tick);
            if let Some(at) = next {
                tick.wake_at = Some(tick.wake_at.map_or(at, |w: DateTime<Utc>| w.min(at)));
            }
            tick.next_run.push((key.clone(), next));
        }
        tick
    }
}

/// One job's part of a tick; returns its next planned fire.
fn tick_one<K: Clone>(
    key: &K,
    e: &mut Entry,
    now: DateTime<Utc>,
    system: Tz,
    tick: &mut Tick<K>,
) -> Option<DateTime<Utc>> {
    // A skip moves the anchor, after which the next decision is a wait (or a never-run
    // interval job's immediate first run): two passes at most.
    for _ in 0..2 {
        match e.job.decide(system, now) {
            Decision::Never => return None,
            Decision::Wait(at) => return Some(at),
            Decision::Run { slot, .. } | Decision::Skip { slot } if e.running => {
                if e.overlap_noted != Some(slot) {
                    e.overlap_noted = Some(slot);
                    tick.overlapped.push((key.clone(), slot));
                }
                return None;
            }
            Decision::Run { slot, late } => {
                timing::record_start(&e.job.schedule, &mut e.job.timing, slot, late, now);
                e.running = true;
                e.overlap_noted = None;
                tick.started.push(Started {
                    key: key.clone(),
                    slot,
                    late,
                });
                // The next slot, for display; the job ticks again when the run ends.
                return match e.job.decide(system, now) {
                    Decision::Wait(at) => Some(at),
                    _ => None,
                };
            }
            Decision::Skip { slot } => {
                timing::record_skip(&mut e.job.timing, now);
                tick.skipped.push((key.clone(), slot));
            }
        }
    }
    None
}
