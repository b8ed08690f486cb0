//! A simulated daemon for the scheduler: a fake wall clock that ticks in fixed steps, a
//! system zone the test can change, and runs that take a set time. "Fires at T" means "starts
//! at the first tick ≥ T", as a daemon polling every 30 s would see it — the real daemon
//! sleeps until the instant itself.

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use sayri_core::domain::routines::{Policy, Schedule, Timing};
use sayri_core::engine::scheduler::{Job, Scheduler, Tick};

/// An RFC 3339 instant.
pub fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .with_timezone(&Utc)
}

/// An IANA zone.
pub fn zone(name: &str) -> Tz {
    name.parse().unwrap()
}

/// A job with `trigger time_spec`, the default policy, armed at `armed` and last run at
/// `last_run` (its slot), following the system zone.
pub fn job(
    trigger: &str,
    spec: &str,
    armed: DateTime<Utc>,
    last_run: Option<DateTime<Utc>>,
) -> Job {
    Job {
        schedule: Schedule::parse(trigger, spec).unwrap(),
        zone: None,
        policy: Policy::default(),
        timing: Timing {
            armed_at: armed,
            last_slot: last_run,
            last_run,
        },
        enabled: true,
    }
}

/// The simulated daemon.
pub struct Sim {
    pub sched: Scheduler<&'static str>,
    pub now: DateTime<Utc>,
    pub system: Tz,
    pub step: TimeDelta,
    /// How long each run takes.
    pub run_for: TimeDelta,
    /// Runs in progress: (job, end).
    pub running: Vec<(&'static str, DateTime<Utc>)>,
    /// Every start: (job, instant).
    pub starts: Vec<(&'static str, DateTime<Utc>)>,
    /// Every overlapped slot reported: (job, slot, when).
    pub overlapped: Vec<(&'static str, DateTime<Utc>, DateTime<Utc>)>,
    /// Every skipped slot: (job, slot).
    pub skipped: Vec<(&'static str, DateTime<Utc>)>,
    /// The largest number of runs in progress at one instant, per job.
    pub max_parallel_same_job: usize,
}

impl Sim {
    /// A simulation at `now` in `system` zone with 30 s ticks and instant runs.
    pub fn new(now: DateTime<Utc>, system: &str) -> Sim {
        Sim {
            sched: Scheduler::new(),
            now,
            system: zone(system),
            step: TimeDelta::seconds(30),
            run_for: TimeDelta::zero(),
            running: Vec::new(),
            starts: Vec::new(),
            overlapped: Vec::new(),
            skipped: Vec::new(),
            max_parallel_same_job: 0,
        }
    }

    /// Adds a job.
    pub fn with(mut self, key: &'static str, job: Job) -> Sim {
        self.sched.upsert(key, job);
        self
    }

    /// One tick at `self.now`: ends due runs, then lets the scheduler decide.
    pub fn tick(&mut self) -> Tick<&'static str> {
        let now = self.now;
        let (ended, still): (Vec<_>, Vec<_>) =
            self.running.drain(..).partition(|(_, end)| *end <= now);
        self.running = still;
        for (k, _) in ended {
            self.sched.finished(&k);
        }
        let tick = self.sched.tick(now, self.system);
        for s in &tick.started {
            self.starts.push((s.key, now));
            if self.run_for.is_zero() {
                self.sched.finished(&s.key);
            } else {
                self.running.push((s.key, now + self.run_for));
            }
        }
        for key in self.sched.keys().copied().collect::<Vec<_>>() {
            let n = self.running.iter().filter(|(k, _)| *k == key).count();
            self.max_parallel_same_job = self.max_parallel_same_job.max(n);
        }
        for (k, slot) in &tick.overlapped {
            self.overlapped.push((*k, *slot, now));
        }
        self.skipped.extend(tick.skipped.iter().cloned());
        tick
    }

    /// Ticks until `to` (inclusive) and returns the starts in that span.
    pub fn run_until(&mut self, to: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        let before = self.starts.len();
        while self.now <= to {
            self.tick();
            self.now += self.step;
        }
        self.starts[before..].iter().map(|(_, t)| *t).collect()
    }

    /// Moves the clock without ticking (suspend, a stopped daemon, a clock step).
    pub fn jump(&mut self, to: DateTime<Utc>) {
        self.now = to;
    }

    /// The job's persisted timing now (what a restarted daemon reads back).
    pub fn timing(&self, key: &'static str) -> Timing {
        self.sched.job(&key).unwrap().timing
    }

    /// A restart: a fresh scheduler over the persisted jobs (nothing running).
    pub fn restart(&mut self) {
        let mut fresh = Scheduler::new();
        for key in self.sched.keys().copied().collect::<Vec<_>>() {
            fresh.upsert(key, self.sched.job(&key).unwrap().clone());
        }
        self.sched = fresh;
        self.running.clear();
    }
}
