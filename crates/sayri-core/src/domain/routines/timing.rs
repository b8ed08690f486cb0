//! When a scheduled job runs next, from its persisted timing, its zone and the current time.
//!
//! The rules, in the order [`decide`] applies them:
//!
//! 1. **Anchor.** Only slots strictly after `since = max(armed_at, last_slot)` count. `armed_at`
//!    moves to "now" when a routine is created, saved, enabled, or a missed slot is skipped, so
//!    re-enabling never catches up a slot missed while disabled, and a restart right after a run
//!    finds nothing due (its slot is `last_slot`).
//! 2. **First slot.** `daily_at`: the first local day's slot after `since` on a **different local
//!    date** than `last_slot` (one run per local calendar day, also across zone changes and
//!    repeated hours). `cron`: croner's next occurrence. `hourly N`: `last_slot + k·N`, the first
//!    after `since`; never run → due at `armed_at`. Slots are computed in the routine's own zone,
//!    or else the system zone **as it is now**, so a zone change moves the next fire.
//! 3. **In the future** → wait for it.
//! 4. **Due.** The latest slot at or before now is served once, however many were missed: on
//!    time (at most [`ON_TIME`] late) it runs; later, it runs once only with `catch_up =
//!    run_once` and at most `grace` late, else it is skipped (the anchor moves to now).
//! 5. **After a start** `last_run = now` and `last_slot` = the slot served — for `hourly` run late,
//!    the start itself, so the next run is N hours after the catch-up run.

use super::schedule::{Schedule, daily_latest_at_or_before, daily_slots_from, local_date};
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// How late a slot may be served and still count as on time (a busy machine, a coarse timer).
pub const ON_TIME: TimeDelta = TimeDelta::seconds(60);

/// Default of [`Policy::grace`]: a missed slot up to 12 hours old is caught up.
pub const DEFAULT_GRACE_MINUTES: u32 = 12 * 60;

/// The longest grace period: a week.
pub const MAX_GRACE_MINUTES: u32 = 7 * 24 * 60;

/// What happens to a slot missed while the daemon was stopped, the machine asleep, the clock
/// stepped, or the job still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Run once for all the missed slots, if the latest is within the grace period.
    #[default]
    RunOnce,
    /// Never run a missed slot; wait for the next one.
    Skip,
}

impl CatchUp {
    /// The protocol name (`run_once`, `skip`).
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::RunOnce => "run_once",
            CatchUp::Skip => "skip",
        }
    }

    /// Parses `run_once` / `skip` (also `run-once`).
    ///
    /// # Errors
    /// [`CatchUpError`], naming the accepted values.
    pub fn parse(s: &str) -> Result<CatchUp, CatchUpError> {
        match s.trim() {
            "run_once" | "run-once" => Ok(CatchUp::RunOnce),
            "skip" => Ok(CatchUp::Skip),
            other => Err(CatchUpError(other.to_string())),
        }
    }
}

/// A `catch_up` value that is neither `run_once` nor `skip`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown catch_up {0:?}: use run_once (run a missed slot once) or skip")]
pub struct CatchUpError(pub String);

/// A job's catch-up policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// What happens to missed slots.
    pub catch_up: CatchUp,
    /// How late a missed slot may be and still run (with [`CatchUp::RunOnce`]).
    pub grace: TimeDelta,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            catch_up: CatchUp::RunOnce,
            grace: TimeDelta::minutes(i64::from(DEFAULT_GRACE_MINUTES)),
        }
    }
}

/// What the scheduler persists per job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// When the schedule was last (re)armed: created, saved, enabled, or a missed slot skipped.
    pub armed_at: DateTime<Utc>,
    /// The slot the last scheduled run served (`None`: never run by the scheduler).
    pub last_slot: Option<DateTime<Utc>>,
    /// When the last run started, scheduled or by hand.
    pub last_run: Option<DateTime<Utc>>,
}

impl Timing {
    /// The timing of a job armed at `now` that never ran.
    pub fn armed(now: DateTime<Utc>) -> Timing {
        Timing {
            armed_at: now,
            last_slot: None,
            last_run: None,
        }
    }
}

/// What to do with a job now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing is due before this instant.
    Wait(DateTime<Utc>),
    /// It has no time slots (`on_login`), or none ever again.
    Never,
    /// Start it now for `slot`; `late` when the slot is more than [`ON_TIME`] old (a catch-up).
    Run {
        /// The slot served.
        slot: DateTime<Utc>,
        /// Whether this is a catch-up of a missed slot.
        late: bool,
    },
    /// The missed `slot` (and any before it) is not run: re-arm at now.
    Skip {
        /// The latest missed slot.
        slot: DateTime<Utc>,
    },
}

/// Decides what a job with `schedule`, `policy` and `timing` does at `now`, its slots read in
/// `tz`. Pure; see the module rules.
pub fn decide(
    schedule: &Schedule,
    policy: &Policy,
    timing: &Timing,
    tz: Tz,
    now: DateTime<Utc>,
) -> Decision {
    let Some(first) = first_slot(schedule, timing, tz) else {
        return Decision::Never;
    };
    if first > now {
        return Decision::Wait(first);
    }
    let slot = latest_slot(schedule, timing, tz, now).map_or(first, |l| l.max(first));
    let lateness = now - slot;
    if lateness <= ON_TIME {
        return Decision::Run { slot, late: false };
    }
    if policy.catch_up == CatchUp::RunOnce && lateness <= policy.grace {
        Decision::Run { slot, late: true }
    } else {
        Decision::Skip { slot }
    }
}

/// Records a scheduled start at `now` for `slot` (see rule 5).
pub fn record_start(
    schedule: &Schedule,
    timing: &mut Timing,
    slot: DateTime<Utc>,
    late: bool,
    now: DateTime<Utc>,
) {
    timing.last_run = Some(now);
    timing.last_slot = Some(match schedule {
        Schedule::Every(_) if late => now,
        _ => slot,
    });
}

/// Records that missed slots were skipped at `now`.
pub fn record_skip(timing: &mut Timing, now: DateTime<Utc>) {
    timing.armed_at = now;
}

/// The next `count` instants the job would start at from `now`, if the zone stays `tz` and each
/// run starts at its instant (what the scheduler does from the same state; a caught-up slot
/// starts at `now` itself).
pub fn next_fires(
    schedule: &Schedule,
    policy: &Policy,
    timing: &Timing,
    tz: Tz,
    now: DateTime<Utc>,
    count: usize,
) -> Vec<DateTime<Utc>> {
    let mut timing = *timing;
    let mut t = now;
    let mut out = Vec::with_capacity(count);
    // Each pass either adds a fire or moves the anchor forward; a skip needs one extra pass.
    for _ in 0..count.saturating_mul(2).saturating_add(2) {
        if out.len() >= count {
            break;
        }
        match decide(schedule, policy, &timing, tz, t) {
            Decision::Never => break,
            Decision::Wait(at) => {
                t = at;
                record_start(schedule, &mut timing, at, false, at);
                out.push(at);
            }
            Decision::Run { slot, late } => {
                record_start(schedule, &mut timing, slot, late, t);
                out.push(t);
            }
            Decision::Skip { .. } => record_skip(&mut timing, t),
        }
    }
    out
}

/// The first slot after the anchor (rule 2).
fn first_slot(schedule: &Schedule, timing: &Timing, tz: Tz) -> Option<DateTime<Utc>> {
    let since = timing
        .last_slot
        .map_or(timing.armed_at, |l| l.max(timing.armed_at));
    match schedule {
        Schedule::OnLogin => None,
        Schedule::DailyAt(time) => {
            let last_date = timing.last_slot.map(|l| local_date(tz, l));
            daily_slots_from(tz, *time, since)
                .find(|(d, s)| *s > since && Some(*d) != last_date)
                .map(|(_, s)| s)
        }
        Schedule::Cron(c) => c.next_after(tz, since),
        Schedule::Every(seconds) => {
            let Some(last) = timing.last_slot else {
                return Some(timing.armed_at);
            };
            let step = TimeDelta::seconds(i64::try_from(*seconds).ok()?);
            let passed = (since - last).num_seconds().max(0) / step.num_seconds().max(1);
            last.checked_add_signed(step * i32::try_from(passed + 1).ok()?)
        }
    }
}

/// The latest slot at or before `now` (rule 4), for a job whose first slot is due.
fn latest_slot(
    schedule: &Schedule,
    timing: &Timing,
    tz: Tz,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    match schedule {
        Schedule::OnLogin => None,
        Schedule::DailyAt(time) => daily_latest_at_or_before(tz, *time, now).map(|(_, s)| s),
        Schedule::Cron(c) => c.latest_at_or_before(tz, now),
        Schedule::Every(seconds) => {
            let last = timing.last_slot?;
            let step = TimeDelta::seconds(i64::try_from(*seconds).ok()?);
            let passed = (now - last).num_seconds().max(0) / step.num_seconds().max(1);
            last.checked_add_signed(step * i32::try_from(passed).ok()?)
        }
    }
}

/// Epoch seconds → an instant.
pub fn from_epoch(secs: f64) -> Option<DateTime<Utc>> {
    if !secs.is_finite() {
        return None;
    }
    let whole = secs.floor();
    let nanos = ((secs - whole) * 1e9).round().clamp(0.0, 999_999_999.0) as u32;
    DateTime::from_timestamp(whole as i64, nanos)
}

/// An instant → epoch seconds.
pub fn to_epoch(t: DateTime<Utc>) -> f64 {
    t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) / 1e9
}
