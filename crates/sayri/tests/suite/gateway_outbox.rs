//! Replies that survive rate limits and crashes, with the real daemon, the real
//! `sayri-gateway-telegram` under the daemon's supervisor and the loopback Bot API: a reply
//! held by a `429` when the gateway is killed with `kill -9` is delivered exactly once after the
//! supervisor restarts it (no second turn); an update already acknowledged whose turn the kill
//! cut short is answered after the restart; the wait shows in `gateway list`; a reply that
//! cannot be delivered is an `error` event and `last_delivery_error`, never silence, and no
//! notice goes into the rate-limited chat.

use super::gateway_rig::*;
use super::gateway_telegram::{OWNER, Scene};
use super::permission_rig::is_title_request;
use super::support::*;
use sayri_testkit::telegram::Faults;
use sayri_testkit::telegram::updates;
use sayri_testkit::{Reply, sse};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn kill_9(pid: u32) {
    // SAFETY: kill(2) on a pid this test read from `gateway list` (the gateway it started).
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
}

fn model_turns(scene: &Scene, text: &str) -> usize {
    scene
        .model
        .llm
        .chat_bodies()
        .iter()
        .filter(|b| !is_title_request(b) && b.to_string().contains(text))
        .count()
}

fn sent_with(scene: &Scene, text: &str) -> usize {
    scene
        .bot
        .sent_to(OWNER)
        .iter()
        .filter(|m| m.text.contains(text))
        .count()
}

#[test]
fn a_reply_pending_when_the_gateway_is_killed_is_delivered_exactly_once_after_its_restart() {
    let scene = Scene::start();
    scene.pair_owner();
    let pid = listed(&scene.env, "tg")["pid"].as_u64().unwrap() as u32;
    scene.bot.api.set_faults(Faults {
        rate_limited: Some((1, 4)),
        ..Faults::default()
    });
    scene
        .queue
        .lock()
        .unwrap()
        .push_back(Reply::sse(sse::content_stream(&[
            "It is noon, says Sayri.",
        ])));
    scene
        .bot
        .api
        .push_update(updates::private_message(OWNER, "Ada", "what time is it?"));
    wait_for("the reply met the rate limit", WAIT, || {
        scene
            .bot
            .calls("sendMessage")
            .iter()
            .any(|c| c.status == 429)
    });
    wait_for("gateway list shows the reply waiting", WAIT, || {
        let g = listed(&scene.env, "tg");
        g["pending_replies"] == 1 && g["next_retry_at"].is_number()
    });
    let shown = stdout(&scene.env.run(&["gateway", "list"]));
    assert!(
        shown.contains("1 reply waiting to be delivered; next attempt in"),
        "{shown}"
    );

    kill_9(pid);
    wait_for("the supervisor restarted the gateway", WAIT, || {
        let g = listed(&scene.env, "tg");
        g["state"] == "running" && g["pid"].as_u64().is_some_and(|p| p as u32 != pid)
    });
    wait_for("the pending reply arrived", WAIT, || {
        sent_with(&scene, "It is noon, says Sayri.") == 1
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        sent_with(&scene, "It is noon, says Sayri."),
        1,
        "delivered twice"
    );
    assert_eq!(
        model_turns(&scene, "what time is it?"),
        1,
        "a second turn ran"
    );
    wait_for("the outbox is empty", WAIT, || {
        listed(&scene.env, "tg")["pending_replies"] == 0
    });
    assert!(listed(&scene.env, "tg")["last_delivery_error"].is_null());
}

#[test]
fn an_acknowledged_update_whose_turn_a_kill_interrupted_is_answered_once_after_the_restart() {
    let scene = Scene::start();
    scene.pair_owner();
    let before = scene.bot.sent_to(OWNER).len();
    let pid = listed(&scene.env, "tg")["pid"].as_u64().unwrap() as u32;
    // The first answer is slow (the gateway dies meanwhile). The daemon then either finishes
    // that turn and records its answer (the restarted gateway is given it), or notices that
    // nobody listens and stops it (the update is asked again: a second turn answers).
    {
        let mut q = scene.queue.lock().unwrap();
        q.push_back(
            Reply::sse(sse::content_stream(&["It rains, says Sayri."]))
                .with_head_delay(Duration::from_secs(6)),
        );
        q.push_back(Reply::sse(sse::content_stream(&[
            "It is sunny, says Sayri.",
        ])));
    }
    scene.bot.api.push_update(updates::private_message(
        OWNER,
        "Ada",
        "what is the weather?",
    ));
    wait_for("the turn reached the model", WAIT, || {
        model_turns(&scene, "what is the weather?") == 1
    });
    // Acknowledged: Telegram will never send this update again.
    wait_for("the update was acknowledged", WAIT, || {
        scene.bot.api.pending_updates() == 0
    });
    kill_9(pid);
    let answered = eventually(Duration::from_secs(60), || {
        scene.bot.sent_to(OWNER).len() > before
    });
    assert!(
        answered,
        "the acknowledged update was never answered:\n{}\n{}",
        gateway_log(&scene.env, "tg"),
        scene.daemon.log_text()
    );
    std::thread::sleep(Duration::from_secs(3));
    let sent: Vec<String> = scene.bot.sent_to(OWNER)[before..]
        .iter()
        .map(|m| m.text.clone())
        .collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let turns = model_turns(&scene, "what is the weather?");
    match sent[0].as_str() {
        "It rains, says Sayri." => assert_eq!(turns, 1, "the recorded answer ran a turn again"),
        "It is sunny, says Sayri." => assert_eq!(turns, 2),
        other => panic!("unexpected reply {other:?}"),
    }
}

#[test]
fn a_reply_that_cannot_be_delivered_is_an_error_event_and_last_delivery_error_without_a_notice() {
    let scene = Scene::start();
    scene.pair_owner();
    let before = scene.bot.sent_to(OWNER).len();
    let mut events = RawClient::connect(&scene.env.socket());
    events
        .writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    // A flood wait of a day is not honoured: the reply is lost, loudly.
    scene.bot.api.set_faults(Faults {
        rate_limited: Some((3, 86_400)),
        ..Faults::default()
    });
    scene
        .queue
        .lock()
        .unwrap()
        .push_back(Reply::sse(sse::content_stream(&["Never seen."])));
    scene
        .bot
        .api
        .push_update(updates::private_message(OWNER, "Ada", "hello?"));
    let mut got = None;
    for _ in 0..200 {
        let v = events.read_value();
        if v["event"] == "error" && v["source"] == "gateway" {
            got = Some(v);
            break;
        }
    }
    let ev = got.expect("no error event for the lost reply");
    assert!(ev["error"].as_str().unwrap().contains("429"), "{ev}");
    wait_for("last_delivery_error is set", WAIT, || {
        listed(&scene.env, "tg")["last_delivery_error"].is_string()
    });
    // One attempt, no notice into the limited chat.
    assert_eq!(
        scene
            .bot
            .calls("sendMessage")
            .iter()
            .filter(|c| c.status == 429)
            .count(),
        1
    );
    assert_eq!(scene.bot.sent_to(OWNER).len(), before);
}
