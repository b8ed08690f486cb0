//! Restarts, suspend/resume, clock steps and long runs: never a double fire for one slot,
//! never a stampede of missed slots, never two runs of one routine at once; a missed slot runs
//! once (or not at all) by the routine's catch-up policy.

use super::routines_rig::{Sim, at, job};
use chrono::TimeDelta;
use sayri_core::domain::routines::{CatchUp, Decision, Policy};
use sayri_core::engine::scheduler::StartError;

fn skip_policy() -> Policy {
    Policy {
        catch_up: CatchUp::Skip,
        ..Policy::default()
    }
}

#[test]
fn a_restart_right_after_a_run_fires_nothing() {
    // daily_at 04:00 Berlin (03:00Z in February) fired at 03:00Z; killed and restarted at 03:30Z.
    let mut sim = Sim::new(at("2026-02-06T02:59:00Z"), "Europe/Berlin").with(
        "r",
        job("daily_at", "04:00", at("2026-02-01T00:00:00Z"), None),
    );
    assert_eq!(
        sim.run_until(at("2026-02-06T03:00:00Z")),
        [at("2026-02-06T03:00:00Z")]
    );
    sim.restart();
    sim.jump(at("2026-02-06T03:30:00Z"));
    let tick = sim.tick();
    assert!(tick.started.is_empty(), "{tick:?}");
    assert_eq!(tick.wake_at, Some(at("2026-02-07T03:00:00Z")));
    assert_eq!(
        sim.run_until(at("2026-02-07T03:10:00Z")),
        [at("2026-02-07T03:00:00Z")]
    );
}

#[test]
fn days_of_suspend_run_a_missed_daily_slot_at_most_once() {
    for (policy, want_at_resume) in [(Policy::default(), 1), (skip_policy(), 0)] {
        let mut j = job(
            "daily_at",
            "04:00",
            at("2026-02-06T03:00:00Z"),
            Some(at("2026-02-06T03:00:00Z")),
        );
        j.policy = policy;
        let mut sim = Sim::new(at("2026-02-06T18:00:00Z"), "Europe/Berlin").with("r", j);
        assert!(sim.run_until(at("2026-02-06T19:00:00Z")).is_empty());
        // Asleep from 19:00Z on the 6th to 06:00Z on the 9th: three slots missed.
        sim.jump(at("2026-02-09T06:00:00Z"));
        let at_resume = sim.run_until(at("2026-02-09T06:05:00Z"));
        assert_eq!(at_resume.len(), want_at_resume, "{policy:?}: {at_resume:?}");
        if want_at_resume == 0 {
            assert_eq!(sim.skipped, [("r", at("2026-02-09T03:00:00Z"))]);
        }
        assert_eq!(
            sim.sched.job(&"r").unwrap().decide(sim.system, sim.now),
            Decision::Wait(at("2026-02-10T03:00:00Z"))
        );
    }
}

#[test]
fn a_missed_slot_older_than_the_grace_period_is_skipped() {
    let mut j = job(
        "daily_at",
        "04:00",
        at("2026-02-06T03:00:00Z"),
        Some(at("2026-02-06T03:00:00Z")),
    );
    j.policy.grace = TimeDelta::hours(2);
    let mut sim = Sim::new(at("2026-02-09T06:00:00Z"), "Europe/Berlin").with("r", j);
    assert!(
        sim.run_until(at("2026-02-09T06:10:00Z")).is_empty(),
        "3 h late > 2 h grace"
    );
    assert_eq!(sim.skipped.len(), 1);
}

#[test]
fn an_hourly_routine_missed_during_suspend_runs_once_at_resume_then_hourly_from_there() {
    let mut sim = Sim::new(at("2026-02-06T18:45:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "hourly",
            "1",
            at("2026-02-06T18:30:00Z"),
            Some(at("2026-02-06T18:30:00Z")),
        ),
    );
    assert!(sim.run_until(at("2026-02-06T19:00:00Z")).is_empty());
    sim.jump(at("2026-02-07T05:00:00Z"));
    let fires = sim.run_until(at("2026-02-07T07:10:00Z"));
    assert_eq!(
        fires,
        [
            at("2026-02-07T05:00:00Z"),
            at("2026-02-07T06:00:00Z"),
            at("2026-02-07T07:00:00Z")
        ],
        "one run at resume, the next an hour after it"
    );
}

#[test]
fn forty_overdue_routines_each_run_once() {
    let mut sim = Sim::new(at("2026-02-07T08:00:00Z"), "Europe/Berlin");
    const KEYS: [&str; 40] = [
        "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "b0", "b1", "b2", "b3", "b4",
        "b5", "b6", "b7", "b8", "b9", "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9",
        "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9",
    ];
    for k in KEYS {
        sim.sched.upsert(
            k,
            job(
                "hourly",
                "1",
                at("2026-02-06T00:00:00Z"),
                Some(at("2026-02-07T02:00:00Z")),
            ),
        );
    }
    sim.run_for = TimeDelta::minutes(3);
    let fires = sim.run_until(at("2026-02-07T08:30:00Z"));
    assert_eq!(fires.len(), 40, "one catch-up run each, no more");
    assert_eq!(sim.max_parallel_same_job, 1);
}

#[test]
fn a_clock_stepped_back_does_not_fire_a_slot_again() {
    let mut sim = Sim::new(at("2026-02-07T02:59:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "daily_at",
            "04:00",
            at("2026-02-06T03:00:00Z"),
            Some(at("2026-02-06T03:00:00Z")),
        ),
    );
    assert_eq!(
        sim.run_until(at("2026-02-07T03:00:30Z")),
        [at("2026-02-07T03:00:00Z")]
    );
    // NTP steps the clock back to 02:58Z; the wall clock passes 03:00Z again.
    sim.jump(at("2026-02-07T02:58:00Z"));
    assert!(sim.run_until(at("2026-02-07T04:00:00Z")).is_empty());
    // A restart in that window does not either.
    sim.restart();
    sim.jump(at("2026-02-07T02:59:00Z"));
    assert!(sim.run_until(at("2026-02-07T03:30:00Z")).is_empty());
}

#[test]
fn a_clock_stepped_forward_runs_the_slots_it_skipped_once() {
    let mut sim = Sim::new(at("2026-02-07T01:00:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "hourly",
            "1",
            at("2026-02-07T00:30:00Z"),
            Some(at("2026-02-07T00:30:00Z")),
        ),
    );
    sim.jump(at("2026-02-07T09:10:00Z"));
    assert_eq!(
        sim.run_until(at("2026-02-07T09:20:00Z")),
        [at("2026-02-07T09:10:00Z")]
    );
}

#[test]
fn re_enabling_does_not_catch_up_a_slot_missed_while_disabled() {
    let mut j = job(
        "daily_at",
        "09:00",
        at("2026-02-01T00:00:00Z"),
        Some(at("2026-02-06T08:00:00Z")),
    );
    j.enabled = false;
    let mut sim = Sim::new(at("2026-02-07T07:00:00Z"), "Europe/Berlin").with("r", j.clone());
    assert!(
        sim.run_until(at("2026-02-07T12:00:00Z")).is_empty(),
        "disabled"
    );
    // Enabled at 12:00Z: re-armed then (what `routine_set_enabled` stores).
    j.enabled = true;
    j.timing.armed_at = sim.now;
    sim.sched.upsert("r", j);
    let fires = sim.run_until(at("2026-02-08T12:00:00Z"));
    assert_eq!(
        fires,
        [at("2026-02-08T08:00:00Z")],
        "not the 02-07 slot at 08:00Z"
    );
}

#[test]
fn a_long_run_never_overlaps_its_next_slot() {
    // hourly 0.25 (every 15 minutes), never run, armed at 10:00Z; each run takes 20 minutes.
    let mut sim = Sim::new(at("2026-09-10T10:00:00Z"), "Europe/Berlin")
        .with("r", job("hourly", "0.25", at("2026-09-10T10:00:00Z"), None));
    sim.run_for = TimeDelta::minutes(20);
    let fires = sim.run_until(at("2026-09-10T10:21:00Z"));
    assert_eq!(
        fires,
        [at("2026-09-10T10:00:00Z"), at("2026-09-10T10:20:00Z")],
        "run 2 at the first tick after run 1 ended"
    );
    assert_eq!(sim.max_parallel_same_job, 1);
    assert_eq!(
        sim.overlapped,
        [("r", at("2026-09-10T10:15:00Z"), at("2026-09-10T10:15:00Z"))],
        "the 10:15 slot is reported once, when it came due"
    );
    // By hand during run 2: refused.
    assert_eq!(
        sim.sched.start_by_hand(&"r", at("2026-09-10T10:25:00Z")),
        Err(StartError::Running)
    );
    let more = sim.run_until(at("2026-09-10T12:00:00Z"));
    assert!(
        more.windows(2)
            .all(|w| w[1] - w[0] >= TimeDelta::minutes(20)),
        "{more:?}"
    );
    assert_eq!(sim.max_parallel_same_job, 1);
}

#[test]
fn with_skip_a_slot_overlapped_by_a_run_is_not_run_later() {
    let mut j = job("hourly", "0.25", at("2026-09-10T10:00:00Z"), None);
    j.policy = skip_policy();
    let mut sim = Sim::new(at("2026-09-10T10:00:00Z"), "Europe/Berlin").with("r", j);
    sim.run_for = TimeDelta::minutes(20);
    let fires = sim.run_until(at("2026-09-10T10:31:00Z"));
    assert_eq!(
        fires,
        [at("2026-09-10T10:00:00Z"), at("2026-09-10T10:30:00Z")]
    );
    assert_eq!(sim.skipped, [("r", at("2026-09-10T10:15:00Z"))]);
}

#[test]
fn a_run_by_hand_does_not_move_the_schedule() {
    let mut sim = Sim::new(at("2026-02-07T07:00:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "daily_at",
            "09:00",
            at("2026-02-06T08:00:00Z"),
            Some(at("2026-02-06T08:00:00Z")),
        ),
    );
    sim.sched.start_by_hand(&"r", sim.now).unwrap();
    assert_eq!(sim.timing("r").last_run, Some(at("2026-02-07T07:00:00Z")));
    sim.sched.finished(&"r");
    assert_eq!(
        sim.run_until(at("2026-02-07T08:30:00Z")),
        [at("2026-02-07T08:00:00Z")]
    );
}
