//! A permission card that is open when the turn ends another way: `new_conversation` or a daemon
//! restart settles it, nothing runs, and a late answer is not delivered.

use super::scripted_turns::*;
use super::support::*;
use sayri_testkit::{Reply, sse};
use serde_json::json;
use std::time::Duration;

/// `new_conversation` while a permission card is open ends the turn like `interrupt`: the card
/// is settled for every client, a late `allow` is not delivered, and nothing runs.
#[test]
fn new_conversation_while_a_card_is_open_settles_it_and_runs_nothing() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&format!(
        "```bash\ntouch {}\n```\n",
        marker.display()
    )]))]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let _d = env.start_daemon();
    let (mut c, id) = ask_until_card(&env, "go", 15, "the command raises a card");
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("new_conversation", json!({}), 2);
    assert_eq!(r["ok"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 1);
    assert_eq!(resp["ok"], true, "{resp}");
    let r = o.call("permission_list", json!({}), 3);
    assert_eq!(
        r["result"]["pending"],
        json!([]),
        "the card is still open: {r}"
    );
    let r = o.call(
        "permission_answer",
        json!({"request_id": id, "allow": true}),
        4,
    );
    assert_eq!(r["result"]["delivered"], false, "{r}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran(&marker), "a command ran after its turn ended");
}

/// The daemon stops while a card is open and starts again: the command never runs, the new
/// daemon has no pending card, and the old card's id is not delivered.
#[test]
fn a_restart_while_a_card_is_open_runs_nothing_and_forgets_the_card() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&format!(
        "```bash\ntouch {}\n```\n",
        marker.display()
    )]))]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let mut d = env.start_daemon();
    let (c, id) = ask_until_card(&env, "go", 15, "the command raises a card");
    assert!(
        d.terminate(Duration::from_secs(10)).is_some(),
        "the daemon did not stop"
    );
    drop(c);
    let _d2 = env.start_daemon();
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("permission_list", json!({}), 1);
    assert_eq!(r["result"]["pending"], json!([]), "{r}");
    let r = o.call(
        "permission_answer",
        json!({"request_id": id, "allow": true, "remember": true}),
        2,
    );
    assert_eq!(r["result"]["delivered"], false, "{r}");
    let r = o.call("permission_list", json!({}), 3);
    assert_eq!(
        r["result"]["approvals"],
        json!({}),
        "a stale answer was remembered: {r}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran(&marker), "the command ran across a restart");
}
