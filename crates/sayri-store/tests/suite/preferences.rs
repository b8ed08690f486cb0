use super::fresh;
use sayri_core::ports::{PreferenceUpdate, SessionStore};

fn obs(intent: &str, command: &str, success: bool, now: f64) -> PreferenceUpdate {
    PreferenceUpdate {
        agent_id: "default".into(),
        intent: intent.into(),
        command: command.into(),
        success,
        now,
        ..PreferenceUpdate::default()
    }
}

#[test]
fn scoring_follows_success_minus_one_and_a_half_failures() {
    let (_d, store) = fresh();
    let p = store
        .record_preference(&obs("open music player", "rhythmbox &", true, 1.0))
        .unwrap();
    assert_eq!((p.success_count, p.failure_count, p.score), (1, 0, 1.0));
    let p = store
        .record_preference(&obs("open music player", "rhythmbox &", false, 2.0))
        .unwrap();
    assert_eq!((p.success_count, p.failure_count, p.score), (1, 1, -0.5));
    let p = store
        .record_preference(&obs("open music player", "rhythmbox &", true, 3.0))
        .unwrap();
    assert_eq!((p.success_count, p.failure_count, p.score), (2, 1, 0.5));
    let f = store
        .record_preference(&obs("open browser", "firefoxx", false, 4.0))
        .unwrap();
    assert_eq!(f.score, -1.5);
    assert_eq!(store.list_preferences(None, 50).unwrap().len(), 2);
}

#[test]
fn query_matches_tokens_skips_negative_scores_and_orders_by_score() {
    let (_d, store) = fresh();
    store
        .record_preference(&obs("play music", "rhythmbox &", true, 1.0))
        .unwrap();
    store
        .record_preference(&obs("play music", "spotify &", true, 2.0))
        .unwrap();
    store
        .record_preference(&obs("play music", "spotify &", true, 3.0))
        .unwrap();
    store
        .record_preference(&obs("play music", "vlc-broken", false, 4.0))
        .unwrap();
    let hits = store.query_preferences("MUSIC please", None, 3).unwrap();
    let cmds: Vec<_> = hits.iter().map(|p| p.command.as_str()).collect();
    assert_eq!(cmds, ["spotify &", "rhythmbox &"]);
    assert!(
        store.query_preferences("a", None, 3).unwrap().is_empty(),
        "1-char tokens ignored"
    );
    assert!(
        store
            .query_preferences("music", Some("other"), 3)
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.clear_preferences(Some("other")).unwrap(), 0);
    assert_eq!(store.clear_preferences(None).unwrap(), 3);
}

#[test]
fn intent_is_cut_to_120_characters() {
    let (_d, store) = fresh();
    let long = "é".repeat(300);
    let p = store
        .record_preference(&obs(&long, "ls", true, 1.0))
        .unwrap();
    assert_eq!(p.intent.chars().count(), 120);
}
