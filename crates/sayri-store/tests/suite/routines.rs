//! Routines in the real database file: saved whole, timing and outcome written apart without
//! clobbering each other, rows that no longer parse listed with their error, run summaries
//! redacted (and rewritten when a value becomes a secret), scheduler facts and trigger state.

use super::fresh;
use chrono::{DateTime, Utc};
use sayri_core::domain::routines::{RoutineDraft, RunOutcome, RunStatus, Timing};
use sayri_store::Store;
use sayri_vault::{SecretRedactor, SharedRedactor};
use std::sync::Arc;
use zeroize::Zeroizing;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn draft(id: &str) -> RoutineDraft {
    RoutineDraft {
        id: Some(id.into()),
        name: Some("Morning".into()),
        trigger: Some("cron".into()),
        time_spec: Some("0 9 * * MON-FRI".into()),
        zone: Some("Asia/Kolkata".into()),
        prompt: Some("Summarise my calendar".into()),
        catch_up: Some("skip".into()),
        grace_minutes: Some(90),
        speak_tts: Some(false),
        ..Default::default()
    }
}

fn outcome(summary: &str) -> RunOutcome {
    RunOutcome {
        finished_at: at("2026-02-07T09:01:00Z"),
        status: RunStatus::Refused,
        summary: summary.into(),
        session_id: "routine-r1".into(),
    }
}

#[test]
fn a_saved_routine_reads_back_as_it_was_saved() {
    let (_d, store) = fresh();
    let r = draft("r1")
        .apply(None, at("2026-02-01T08:00:00.25Z"))
        .unwrap();
    store.save_routine(&r).unwrap();
    let back = store.routine("r1").unwrap().unwrap().unwrap();
    assert_eq!(back, r);
    assert!(store.routine("nope").unwrap().is_none());
    assert_eq!(store.routines().unwrap().len(), 1);
}

#[test]
fn timing_and_outcome_writes_touch_only_their_columns() {
    let (_d, store) = fresh();
    let r = draft("r1").apply(None, at("2026-02-01T08:00:00Z")).unwrap();
    store.save_routine(&r).unwrap();
    let timing = Timing {
        armed_at: at("2026-02-01T08:00:00Z"),
        last_slot: Some(at("2026-02-02T03:30:00Z")),
        last_run: Some(at("2026-02-02T03:30:01Z")),
    };
    store
        .set_routine_timing("r1", &timing, Some(at("2026-02-03T03:30:00Z")))
        .unwrap();
    store.set_routine_outcome("r1", &outcome("done")).unwrap();
    let back = store.routine("r1").unwrap().unwrap().unwrap();
    assert_eq!(back.timing, timing);
    assert_eq!(back.next_run, Some(at("2026-02-03T03:30:00Z")));
    assert_eq!(back.last_outcome, Some(outcome("done")));
    assert_eq!(
        (back.name.as_str(), back.prompt.as_str()),
        ("Morning", "Summarise my calendar")
    );
    assert!(
        store
            .set_routine_enabled("r1", false, at("2026-02-04T00:00:00Z"))
            .unwrap()
    );
    let off = store.routine("r1").unwrap().unwrap().unwrap();
    assert!(!off.enabled);
    assert_eq!(off.timing.armed_at, at("2026-02-04T00:00:00Z"));
    assert_eq!(
        off.timing.last_run, timing.last_run,
        "enabling keeps the last run"
    );
    assert!(
        !store
            .set_routine_enabled("nope", true, at("2026-02-04T00:00:00Z"))
            .unwrap()
    );
    assert!(store.delete_routine("r1").unwrap());
    assert!(!store.delete_routine("r1").unwrap());
}

#[test]
fn a_row_that_no_longer_parses_is_listed_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).unwrap();
    store
        .save_routine(
            &draft("good")
                .apply(None, at("2026-02-01T08:00:00Z"))
                .unwrap(),
        )
        .unwrap();
    store
        .save_routine(
            &draft("bad")
                .apply(None, at("2026-02-01T09:00:00Z"))
                .unwrap(),
        )
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE routines SET zone = 'Atlantis/Capital' WHERE id = 'bad'",
        [],
    )
    .unwrap();
    let list = store.routines().unwrap();
    assert!(list[0].is_ok());
    let broken = list[1].clone().unwrap_err();
    assert_eq!(broken.id, "bad");
    assert!(
        broken.error.contains("unknown time zone"),
        "{}",
        broken.error
    );
}

#[test]
fn run_summaries_never_hold_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let shared = SharedRedactor::default();
    let store = Store::open(&path)
        .unwrap()
        .with_redactor(Arc::new(shared.clone()));
    store
        .save_routine(&draft("r1").apply(None, at("2026-02-01T08:00:00Z")).unwrap())
        .unwrap();
    store
        .set_routine_outcome("r1", &outcome("token r0ut1ne-S3cret-xyz"))
        .unwrap();
    store
        .set_trigger_outcome("t1", &outcome("again r0ut1ne-S3cret-xyz"))
        .unwrap();
    shared.replace(SecretRedactor::new(vec![(
        "ROUTINE_TOKEN".into(),
        Zeroizing::new("r0ut1ne-S3cret-xyz".into()),
    )]));
    let report = store.rewrite_secrets(&shared).unwrap();
    assert_eq!(report.routine_results, 2, "{report:?}");
    let r = store.routine("r1").unwrap().unwrap().unwrap();
    assert_eq!(
        r.last_outcome.unwrap().summary,
        "token $SECRET:ROUTINE_TOKEN"
    );
    store
        .set_routine_outcome("r1", &outcome("new r0ut1ne-S3cret-xyz"))
        .unwrap();
    let r = store.routine("r1").unwrap().unwrap().unwrap();
    assert_eq!(r.last_outcome.unwrap().summary, "new $SECRET:ROUTINE_TOKEN");
    drop(store);
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.windows(18).any(|w| w == b"r0ut1ne-S3cret-xyz"));
}

#[test]
fn trigger_state_and_scheduler_facts_persist() {
    let (_d, store) = fresh();
    assert_eq!(store.scheduler_meta("login_session").unwrap(), None);
    store
        .set_scheduler_meta("login_session", "boot-1/7")
        .unwrap();
    store
        .set_scheduler_meta("login_session", "boot-1/8")
        .unwrap();
    assert_eq!(
        store.scheduler_meta("login_session").unwrap().as_deref(),
        Some("boot-1/8")
    );
    let t = Timing {
        armed_at: at("2026-02-01T00:00:00Z"),
        last_slot: Some(at("2026-02-02T00:00:00Z")),
        last_run: Some(at("2026-02-02T00:00:05Z")),
    };
    store.set_trigger_timing("t1", &t, None).unwrap();
    store.set_trigger_outcome("t1", &outcome("ok")).unwrap();
    store.set_trigger_outcome("t2", &outcome("first")).unwrap();
    let states = store.trigger_states().unwrap();
    assert_eq!(states.len(), 2);
    assert_eq!(states[0].timing, t);
    assert_eq!(states[0].last_outcome, Some(outcome("ok")));
    assert_eq!(states[1].timing.last_run, Some(at("2026-02-07T09:01:00Z")));
    store.delete_trigger_state("t1").unwrap();
    assert_eq!(store.trigger_states().unwrap().len(), 1);
}
