//! Daylight-saving changes: a daily time a change skips runs once after the change, a time a
//! change repeats runs once (its first occurrence), elapsed-time routines ignore the wall
//! clock — in Europe/Berlin, and in zones with half-hour offsets and half-hour changes and in
//! the southern hemisphere. Bad time specs are refused with a message saying what to write.

use super::routines_rig::{Sim, at, job, zone};
use chrono::{NaiveTime, TimeDelta, Timelike, Utc};
use proptest::prelude::*;
use sayri_core::domain::routines::schedule::local_date;
use sayri_core::domain::routines::timing::{decide, next_fires};
use sayri_core::domain::routines::{Decision, Policy, Schedule, ScheduleError, Timing};

#[test]
fn a_daily_time_skipped_by_spring_forward_runs_once_at_the_same_distance_after_the_change() {
    // 02:30 does not exist in Berlin on 2026-03-29 (02:00 CET → 03:00 CEST).
    let mut sim = Sim::new(at("2026-03-28T11:00:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "daily_at",
            "02:30",
            at("2026-03-28T01:30:00Z"),
            Some(at("2026-03-28T01:30:00Z")),
        ),
    );
    let fires = sim.run_until(at("2026-03-30T12:00:00Z"));
    assert_eq!(
        fires,
        [at("2026-03-29T01:30:00Z"), at("2026-03-30T00:30:00Z")],
        "03:30 CEST on the change day, 02:30 CEST the day after"
    );
    assert_eq!(sim.timing("r").last_run, Some(at("2026-03-30T00:30:00Z")));
}

#[test]
fn a_daily_time_repeated_by_fall_back_runs_at_its_first_occurrence_only() {
    // 02:00–03:00 happens twice in Berlin on 2026-10-25 (CEST, then CET).
    let mut sim = Sim::new(at("2026-10-24T10:00:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "daily_at",
            "02:30",
            at("2026-10-24T00:30:00Z"),
            Some(at("2026-10-24T00:30:00Z")),
        ),
    );
    let fires = sim.run_until(at("2026-10-26T12:00:00Z"));
    assert_eq!(
        fires,
        [at("2026-10-25T00:30:00Z"), at("2026-10-26T01:30:00Z")],
        "never at 2026-10-25T01:30Z, the second 02:30"
    );
}

#[test]
fn hourly_counts_elapsed_time_across_fall_back() {
    let mut sim = Sim::new(at("2026-10-24T23:00:30Z"), "Europe/Berlin").with(
        "r",
        job(
            "hourly",
            "1",
            at("2026-10-24T23:00:00Z"),
            Some(at("2026-10-24T23:00:00Z")),
        ),
    );
    let fires = sim.run_until(at("2026-10-25T04:10:00Z"));
    let want: Vec<_> = (0..5)
        .map(|h| at("2026-10-25T00:00:00Z") + TimeDelta::hours(h))
        .collect();
    assert_eq!(
        fires, want,
        "five fires, local 02:00 CEST and 02:00 CET among them"
    );
}

#[test]
fn hourly_counts_elapsed_time_across_spring_forward() {
    let mut sim = Sim::new(at("2026-03-28T23:00:30Z"), "Europe/Berlin").with(
        "r",
        job(
            "hourly",
            "1",
            at("2026-03-28T23:00:00Z"),
            Some(at("2026-03-28T23:00:00Z")),
        ),
    );
    let fires = sim.run_until(at("2026-03-29T03:10:00Z"));
    let want: Vec<_> = (0..4)
        .map(|h| at("2026-03-29T00:00:00Z") + TimeDelta::hours(h))
        .collect();
    assert_eq!(fires, want);
}

#[test]
fn the_next_daily_run_after_a_change_uses_the_new_offset() {
    let j = job(
        "daily_at",
        "09:00",
        at("2026-03-28T08:00:00Z"),
        Some(at("2026-03-28T08:00:00Z")),
    );
    assert_eq!(
        j.decide(zone("Europe/Berlin"), at("2026-03-28T09:00:00Z")),
        Decision::Wait(at("2026-03-29T07:00:00Z")),
        "09:00 CEST"
    );
}

#[test]
fn bad_time_specs_are_refused_with_what_to_write() {
    for spec in [
        "24:00",
        "12:60",
        "7:5",
        "-1:00",
        "noon",
        "",
        "9",
        "09:00:00",
        "٠٩:٠٠",
    ] {
        let e = Schedule::parse("daily_at", spec).unwrap_err();
        assert_eq!(e, ScheduleError::BadTime(spec.to_string()), "{spec}");
        assert!(e.to_string().contains("HH:MM"), "{e}");
    }
    for spec in ["0", "-2", "abc", "NaN", "inf", "", "0.001"] {
        let e = Schedule::parse("hourly", spec).unwrap_err();
        assert!(
            matches!(
                e,
                ScheduleError::BadHours(_) | ScheduleError::HoursOutOfRange(_)
            ),
            "{spec}: {e}"
        );
        assert!(e.to_string().contains("hours"), "{e}");
    }
    assert_eq!(Schedule::parse("hourly", "0.5"), Ok(Schedule::Every(1800)));
    assert_eq!(
        Schedule::parse("daily_at", "7:05"),
        Ok(Schedule::DailyAt(NaiveTime::from_hms_opt(7, 5, 0).unwrap()))
    );
    let e = Schedule::parse("weekly", "09:00").unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown trigger: weekly (use on_login, daily_at, hourly or cron)"
    );
    for (pattern, what) in [
        ("61 * * * *", "invalid cron pattern"),
        ("0 9 * *", "5 fields"),
        ("0 0 9 * * * 2030", "5 fields"),
        ("0 0 30 2 *", "never fires"),
        ("*/10 * * * * *", "more often than once a minute"),
        ("every day", "invalid cron pattern"),
    ] {
        let e = Schedule::parse("cron", pattern).unwrap_err().to_string();
        assert!(e.contains(what), "{pattern}: {e}");
    }
    assert!(Schedule::parse("cron", "0 9 * * MON-FRI").is_ok());
    assert!(
        Schedule::parse("cron", "30 0 9 * * *").is_ok(),
        "6 fields, seconds first"
    );
}

#[test]
fn a_cron_fixed_time_in_a_gap_runs_once_after_the_gap_and_a_repeated_one_once() {
    let spring = Sim::new(at("2026-03-28T12:00:00Z"), "Europe/Berlin")
        .with(
            "c",
            job("cron", "30 2 * * *", at("2026-03-28T12:00:00Z"), None),
        )
        .run_until_owned(at("2026-03-30T12:00:00Z"));
    assert_eq!(
        spring,
        [at("2026-03-29T01:00:00Z"), at("2026-03-30T00:30:00Z")],
        "03:00 CEST, the first instant after the gap; then 02:30 CEST"
    );
    let fall = Sim::new(at("2026-10-24T12:00:00Z"), "Europe/Berlin")
        .with(
            "c",
            job("cron", "30 2 * * *", at("2026-10-24T12:00:00Z"), None),
        )
        .run_until_owned(at("2026-10-26T12:00:00Z"));
    assert_eq!(
        fall,
        [at("2026-10-25T00:30:00Z"), at("2026-10-26T01:30:00Z")]
    );
}

#[test]
fn a_cron_interval_pattern_runs_through_both_halves_of_a_repeated_hour() {
    let fires = Sim::new(at("2026-10-25T00:00:00Z"), "Europe/Berlin")
        .with(
            "c",
            job("cron", "0 * * * *", at("2026-10-24T23:59:00Z"), None),
        )
        .run_until_owned(at("2026-10-25T02:30:00Z"));
    assert_eq!(
        fires,
        [
            at("2026-10-25T00:00:00Z"),
            at("2026-10-25T01:00:00Z"),
            at("2026-10-25T02:00:00Z")
        ],
        "02:00 CEST, 02:00 CET, 03:00 CET: hourly work keeps its rhythm"
    );
}

#[test]
fn half_hour_changes_and_offsets_in_the_southern_hemisphere() {
    // Lord Howe Island moves its clock by 30 minutes: 2026-10-04 02:00 → 02:30 (+10:30 → +11).
    let fires = Sim::new(at("2026-10-03T00:00:00Z"), "Australia/Lord_Howe")
        .with(
            "r",
            job(
                "daily_at",
                "02:15",
                at("2026-10-02T15:45:00Z"),
                Some(at("2026-10-02T15:45:00Z")),
            ),
        )
        .run_until_owned(at("2026-10-05T00:00:00Z"));
    assert_eq!(
        fires,
        [at("2026-10-03T15:45:00Z"), at("2026-10-04T15:15:00Z")],
        "02:15 does not exist on 10-04 and runs at 02:45 (+11); on 10-05 at 02:15 (+11)"
    );
    // Adelaide (+9:30 → +10:30 on 2026-10-04 at 02:00; back on 2026-04-05 at 03:00).
    let fires = Sim::new(at("2026-04-04T00:00:00Z"), "Australia/Adelaide")
        .with(
            "r",
            job(
                "daily_at",
                "02:30",
                at("2026-04-03T16:00:00Z"),
                Some(at("2026-04-03T16:00:00Z")),
            ),
        )
        .run_until_owned(at("2026-04-06T00:00:00Z"));
    assert_eq!(
        fires,
        [at("2026-04-04T16:00:00Z"), at("2026-04-05T17:00:00Z")],
        "on 04-05 the first 02:30 (+10:30) only, not its repeat at 04-04T17:00Z (+9:30)"
    );
}

/// Zones with every kind of offset and change: half-hour offsets (Kolkata, St Johns,
/// Adelaide), a half-hour change (Lord Howe), the southern hemisphere (Auckland, Santiago),
/// none (UTC, Tokyo), and the usual northern ones.
const ZONES: [&str; 10] = [
    "Europe/Berlin",
    "America/New_York",
    "America/St_Johns",
    "Asia/Kolkata",
    "Australia/Adelaide",
    "Australia/Lord_Howe",
    "Pacific/Auckland",
    "America/Santiago",
    "Asia/Tokyo",
    "UTC",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// For any zone, daily time and start within 2026: the next 40 fires are one per local
    /// date, in order, 20–28 h apart, each at the daily time or — on a day a change skips it —
    /// within the change's length after it.
    #[test]
    fn daily_fires_once_per_local_day_at_its_time(
        z in 0..ZONES.len(),
        hour in 0u32..24,
        minute in 0u32..60,
        start in 0i64..365 * 24 * 60,
    ) {
        let tz = zone(ZONES[z]);
        let now = at("2026-01-01T00:00:00Z") + TimeDelta::minutes(start);
        let spec = format!("{hour:02}:{minute:02}");
        let s = Schedule::parse("daily_at", &spec).unwrap();
        let fires = next_fires(&s, &Policy::default(), &Timing::armed(now), tz, now, 40);
        prop_assert_eq!(fires.len(), 40);
        prop_assert!(fires[0] > now);
        prop_assert!(fires[0] - now <= TimeDelta::hours(26), "the first within a day: {}", fires[0]);
        for w in fires.windows(2) {
            prop_assert!(local_date(tz, w[0]) < local_date(tz, w[1]), "{} then {}", w[0], w[1]);
            let gap = w[1] - w[0];
            prop_assert!(gap >= TimeDelta::hours(20) && gap <= TimeDelta::hours(28), "{gap}");
        }
        for f in &fires {
            let local = f.with_timezone(&tz).time();
            let want = NaiveTime::from_hms_opt(hour, minute, 0).unwrap();
            let shift = (local - want).num_minutes();
            prop_assert!((0..=60).contains(&shift), "{f} is {local} local, not {spec}");
            if shift != 0 {
                // Shifted only when the time does not exist that day.
                use chrono::TimeZone;
                let naive = local_date(tz, *f).and_time(want);
                prop_assert!(tz.from_local_datetime(&naive).single().is_none()
                    && tz.from_local_datetime(&naive).earliest().is_none(), "{f}");
            }
            prop_assert_eq!(f.second(), 0);
        }
    }

    /// Whatever the zone and time of creation — the evening included — a new daily routine's
    /// first run is the next occurrence of its time, never a day later.
    #[test]
    fn a_new_daily_routine_runs_at_the_next_occurrence_of_its_time(
        z in 0..ZONES.len(),
        hour in 0u32..24,
        start in 0i64..365 * 24 * 60,
    ) {
        let tz = zone(ZONES[z]);
        let now = at("2026-01-01T00:00:00Z") + TimeDelta::minutes(start);
        let s = Schedule::parse("daily_at", &format!("{hour:02}:00")).unwrap();
        let Decision::Wait(first) = decide(&s, &Policy::default(), &Timing::armed(now), tz, now) else {
            panic!("a daily routine always waits for its first slot");
        };
        let local_now = now.with_timezone(&tz);
        let want_date = if local_now.time() < NaiveTime::from_hms_opt(hour, 0, 0).unwrap() {
            local_now.date_naive()
        } else {
            local_now.date_naive().succ_opt().unwrap()
        };
        prop_assert_eq!(local_date(tz, first), want_date, "created {} local", local_now);
        prop_assert!(first - now <= TimeDelta::hours(25));
        prop_assert!(first > now);
    }
}

impl Sim {
    /// [`Sim::run_until`] for a simulation built in one expression.
    fn run_until_owned(mut self, to: chrono::DateTime<Utc>) -> Vec<chrono::DateTime<Utc>> {
        self.run_until(to)
    }
}
