//! Routines without a zone follow the system zone as it is at each computation (a zone change
//! at run time moves the next fire); a routine with its own zone ignores the system's; a
//! restart after a change uses the same zone as normal firing; the preview agrees.

use super::routines_rig::{Sim, at, job, zone};
use chrono::TimeDelta;
use sayri_core::domain::routines::legacy::parse_legacy;
use sayri_core::domain::routines::zone::{parse_zone, system_zone_from};
use sayri_core::domain::routines::{Decision, RoutineDraft};

fn daily_nine_berlin_ran_on_the_9th() -> Sim {
    Sim::new(at("2026-09-10T04:00:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "daily_at",
            "09:00",
            at("2026-09-01T07:00:00Z"),
            Some(at("2026-09-09T07:00:00Z")),
        ),
    )
}

#[test]
fn a_zone_change_while_running_moves_the_next_fire_to_the_new_local_time() {
    let mut sim = daily_nine_berlin_ran_on_the_9th();
    assert!(sim.run_until(at("2026-09-10T04:59:30Z")).is_empty());
    sim.system = zone("America/New_York");
    let fires = sim.run_until(at("2026-09-11T00:00:00Z"));
    assert_eq!(
        fires,
        [at("2026-09-10T13:00:00Z")],
        "09:00 EDT, not 09:00 CEST (07:00Z)"
    );
}

#[test]
fn a_restart_after_a_zone_change_fires_nothing_at_start() {
    let mut sim = daily_nine_berlin_ran_on_the_9th();
    assert!(sim.run_until(at("2026-09-10T04:59:30Z")).is_empty());
    sim.system = zone("America/New_York");
    sim.restart();
    sim.jump(at("2026-09-10T05:01:00Z"));
    let tick = sim.tick();
    assert!(tick.started.is_empty(), "{tick:?}");
    assert_eq!(tick.wake_at, Some(at("2026-09-10T13:00:00Z")));
    assert_eq!(
        sim.run_until(at("2026-09-11T00:00:00Z")),
        [at("2026-09-10T13:00:00Z")]
    );
}

#[test]
fn the_preview_after_a_zone_change_is_at_the_new_local_time() {
    let mut sim = daily_nine_berlin_ran_on_the_9th();
    sim.system = zone("America/New_York");
    let fires = sim
        .sched
        .job(&"r")
        .unwrap()
        .next_fires(sim.system, at("2026-09-10T05:02:00Z"), 3);
    let shown: Vec<String> = fires
        .iter()
        .map(|f| f.with_timezone(&sim.system).to_rfc3339())
        .collect();
    assert_eq!(
        shown,
        [
            "2026-09-10T09:00:00-04:00",
            "2026-09-11T09:00:00-04:00",
            "2026-09-12T09:00:00-04:00"
        ]
    );
    // And it is what the scheduler then does.
    sim.jump(at("2026-09-10T05:02:00Z"));
    assert_eq!(sim.run_until(at("2026-09-12T14:00:00Z")), fires);
}

#[test]
fn a_zone_change_the_other_way_fires_at_the_new_local_time_the_same_day() {
    let mut sim = Sim::new(at("2026-09-10T06:00:00Z"), "America/New_York").with(
        "r",
        job(
            "daily_at",
            "09:00",
            at("2026-09-01T13:00:00Z"),
            Some(at("2026-09-09T13:00:00Z")),
        ),
    );
    assert!(sim.run_until(at("2026-09-10T06:29:30Z")).is_empty());
    sim.system = zone("Europe/Berlin");
    assert_eq!(
        sim.run_until(at("2026-09-10T23:00:00Z")),
        [at("2026-09-10T07:00:00Z")],
        "09:00 CEST; none at 13:00Z"
    );
}

#[test]
fn a_routine_with_its_own_zone_ignores_the_system_zone() {
    let mut j = job(
        "daily_at",
        "09:00",
        at("2026-09-01T07:00:00Z"),
        Some(at("2026-09-09T07:00:00Z")),
    );
    j.zone = Some(zone("Europe/Berlin"));
    let mut sim = Sim::new(at("2026-09-10T04:00:00Z"), "Europe/Berlin").with("r", j);
    assert!(sim.run_until(at("2026-09-10T04:59:30Z")).is_empty());
    sim.system = zone("America/New_York");
    assert_eq!(
        sim.run_until(at("2026-09-11T00:00:00Z")),
        [at("2026-09-10T07:00:00Z")]
    );
}

#[test]
fn a_zone_change_after_todays_run_does_not_run_it_again_the_same_local_day() {
    // Ran at 09:00 Berlin (07:00Z); at 08:00Z the laptop lands where it is 04:00 (New York).
    let mut sim = Sim::new(at("2026-09-10T06:59:00Z"), "Europe/Berlin").with(
        "r",
        job(
            "daily_at",
            "09:00",
            at("2026-09-01T07:00:00Z"),
            Some(at("2026-09-09T07:00:00Z")),
        ),
    );
    assert_eq!(
        sim.run_until(at("2026-09-10T07:59:30Z")),
        [at("2026-09-10T07:00:00Z")]
    );
    sim.system = zone("America/New_York");
    assert_eq!(
        sim.run_until(at("2026-09-12T00:00:00Z")),
        [at("2026-09-11T13:00:00Z")],
        "09-10 in New York already had its run (at 03:00 local)"
    );
}

#[test]
fn cron_routines_follow_the_zone_too() {
    let mut sim = Sim::new(at("2026-09-10T04:00:00Z"), "Asia/Kolkata").with(
        "c",
        job(
            "cron",
            "30 9 * * *",
            at("2026-09-01T00:00:00Z"),
            Some(at("2026-09-09T04:00:00Z")),
        ),
    );
    assert_eq!(
        sim.run_until(at("2026-09-10T04:00:30Z")),
        [at("2026-09-10T04:00:00Z")],
        "09:30 IST"
    );
    sim.system = zone("Australia/Adelaide");
    // 09:30 ACST (+9:30) = 00:00Z.
    assert_eq!(
        sim.run_until(at("2026-09-11T12:00:00Z")),
        [at("2026-09-11T00:00:00Z")]
    );
}

#[test]
fn zones_are_named_by_iana_names_with_a_hint_when_wrong() {
    assert_eq!(parse_zone("Asia/Kolkata").unwrap().name(), "Asia/Kolkata");
    let e = parse_zone("europe/berlin").unwrap_err().to_string();
    assert!(e.contains("did you mean Europe/Berlin?"), "{e}");
    let e = parse_zone("Mars/Olympus").unwrap_err().to_string();
    assert!(e.contains("timedatectl list-timezones"), "{e}");
}

#[test]
fn the_system_zone_comes_from_tz_then_localtime_then_etc_timezone() {
    let z = |tz, link, file| system_zone_from(tz, link, file).map(|z| z.name().to_string());
    assert_eq!(
        z(Some(":Asia/Tokyo"), Some("/usr/share/zoneinfo/UTC"), None),
        Ok("Asia/Tokyo".into())
    );
    assert_eq!(
        z(None, Some("../usr/share/zoneinfo/Europe/Berlin"), None),
        Ok("Europe/Berlin".into())
    );
    assert_eq!(
        z(None, Some("/usr/share/zoneinfo/posix/Asia/Kolkata"), None),
        Ok("Asia/Kolkata".into())
    );
    assert_eq!(
        z(None, None, Some("America/Santiago\n")),
        Ok("America/Santiago".into())
    );
    assert_eq!(
        z(None, Some("/etc/localtime.copy"), Some("Pacific/Auckland")),
        Ok("Pacific/Auckland".into())
    );
    assert!(
        z(Some("CET-1CEST,M3.5.0,M10.5.0/3"), None, None)
            .unwrap_err()
            .to_string()
            .contains("TZ=")
    );
    assert!(z(None, None, None).is_err());
}

#[test]
fn saving_keeps_last_run_and_created_at_and_re_arms() {
    let created = at("2026-02-01T08:00:00Z");
    let r = RoutineDraft {
        name: Some("Morning".into()),
        prompt: Some("Summarise my day".into()),
        ..Default::default()
    }
    .apply(None, created)
    .unwrap();
    assert_eq!((r.created_at, r.timing.armed_at), (created, created));
    assert_eq!(r.schedule.to_string(), "daily_at 09:00");
    assert_eq!(r.id, format!("r{}", created.timestamp_millis()));
    let mut ran = r.clone();
    ran.timing.last_run = Some(at("2026-02-05T08:00:00Z"));
    ran.timing.last_slot = Some(at("2026-02-05T08:00:00Z"));
    let edited = RoutineDraft {
        time_spec: Some("18:30".into()),
        zone: Some("Europe/Berlin".into()),
        ..Default::default()
    }
    .apply(Some(&ran), at("2026-02-06T20:00:00Z"))
    .unwrap();
    assert_eq!(edited.created_at, created);
    assert_eq!(edited.timing.last_run, ran.timing.last_run);
    assert_eq!(edited.timing.last_slot, ran.timing.last_slot);
    assert_eq!(edited.timing.armed_at, at("2026-02-06T20:00:00Z"));
    assert_eq!(
        (edited.name.as_str(), edited.prompt.as_str()),
        ("Morning", "Summarise my day")
    );
    // Edited in the evening (21:00 Berlin, after 18:30): the next run is tomorrow's 18:30.
    assert_eq!(
        edited.job().decide(zone("UTC"), at("2026-02-06T20:00:00Z")),
        Decision::Wait(at("2026-02-07T17:30:00Z"))
    );
    // A bad field leaves nothing changed: the caller stores only an `Ok`.
    for (draft, what) in [
        (
            RoutineDraft {
                prompt: Some("  ".into()),
                ..Default::default()
            },
            "needs a prompt",
        ),
        (
            RoutineDraft {
                zone: Some("Berlin".into()),
                ..Default::default()
            },
            "unknown time zone",
        ),
        (
            RoutineDraft {
                catch_up: Some("twice".into()),
                ..Default::default()
            },
            "run_once",
        ),
        (
            RoutineDraft {
                grace_minutes: Some(100_000),
                ..Default::default()
            },
            "at most",
        ),
        (
            RoutineDraft {
                trigger: Some("cron".into()),
                ..Default::default()
            },
            "needs its pattern",
        ),
        (
            RoutineDraft {
                agent_id: Some("../x".into()),
                ..Default::default()
            },
            "invalid agent id",
        ),
    ] {
        let e = draft
            .apply(Some(&ran), at("2026-02-06T20:00:00Z"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(what), "{e}");
    }
    let e = RoutineDraft {
        id: Some("a b".into()),
        prompt: Some("x".into()),
        ..Default::default()
    }
    .apply(None, created)
    .unwrap_err();
    assert!(e.to_string().contains("invalid routine id"), "{e}");
}

#[test]
fn the_original_routines_file_converts_entry_by_entry() {
    let text = r#"{"version": 1, "routines": [
      {"id": "morning_briefing", "name": "Morning News", "trigger": "on_login",
       "prompt": "Buenos días", "enabled": false, "last_run": 0.0, "created_at": 1700000000.0},
      {"id": "hourly_break", "trigger": "hourly", "time_spec": "2", "prompt": "Descansa",
       "last_run": 1770390000.5},
      {"id": "broken", "trigger": "daily_at", "time_spec": "noon", "prompt": "x"},
      {"id": "numeric", "trigger": "hourly", "time_spec": 0.5, "prompt": "y"}
    ]}"#;
    let now = at("2026-02-07T00:00:00Z");
    let got = parse_legacy(text, now).unwrap();
    let ids: Vec<_> = got.routines.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["morning_briefing", "hourly_break", "numeric"]);
    assert!(!got.routines[0].enabled);
    assert_eq!(got.routines[0].created_at, at("2023-11-14T22:13:20Z"));
    assert_eq!(got.routines[0].timing.last_run, None);
    assert_eq!(got.routines[1].name, "Custom Routine");
    assert_eq!(
        got.routines[1]
            .timing
            .last_slot
            .map(|t| t.timestamp_millis()),
        Some(1_770_390_000_500)
    );
    assert_eq!(got.routines[2].schedule.to_string(), "hourly 0.5");
    assert_eq!(got.refused.len(), 1);
    assert!(
        got.refused[0].starts_with("entry 3 (broken): invalid time \"noon\""),
        "{:?}",
        got.refused
    );
    assert!(
        parse_legacy("[]", now)
            .unwrap_err()
            .to_string()
            .contains("routines")
    );
    // The imported hourly routine continues from its last run.
    let next = got.routines[1].job().decide(zone("UTC"), now);
    assert_eq!(
        next,
        Decision::Wait(at("2026-02-06T15:00:00.5Z") + TimeDelta::hours(10))
    );
}
