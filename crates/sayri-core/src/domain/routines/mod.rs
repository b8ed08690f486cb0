//! Routines and system-event triggers: what fires when. Pure — the clock and the system zone
//! come in as values (the daemon reads them through ports), and nothing here sleeps.
//!
//! * [`schedule`] — the triggers (`on_login`, `daily_at HH:MM`, `hourly N`, `cron`) and their
//!   slots in a zone (DST gaps and repeated hours).
//! * [`timing`] — from the persisted timing and the current time to "wait until", "run now" or
//!   "skip the missed slot" (anchor, one run per local day, catch-up policy, grace period), and
//!   the preview of the next fires.
//! * [`routine`] — a routine's definition, saves and their validation.
//! * [`legacy`] — the original `routines.json`, imported once.
//! * [`zone`] — IANA zone names, and the system zone from `TZ`, `/etc/localtime`, `/etc/timezone`.
//! * [`triggers`] — trigger files (`$CONFIG/triggers/<id>.json`) and the edge rules of the
//!   system events (battery low, network change).
//!
//! The scheduler's state machine over many jobs is [`crate::engine::scheduler`].

pub mod legacy;
pub mod routine;
pub mod schedule;
pub mod timing;
pub mod triggers;
pub mod zone;

pub use routine::{Routine, RoutineDraft, RoutineError, RunOutcome, RunStatus};
pub use schedule::{Schedule, ScheduleError};
pub use timing::{CatchUp, Decision, Policy, Timing};
