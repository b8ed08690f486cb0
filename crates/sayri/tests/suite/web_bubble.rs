//! The web bubble end to end: a person's browser (headless Chromium) on `sayri web`, a real
//! daemon, the scripted model, the real level-3 sandbox. A typed question streams its answer, a
//! command step shows up, a permission card is answered by clicking (and the command really
//! runs) or from the keyboard (and it does not), and the page reconnects when the daemon
//! restarts. Screenshots are kept under `target/web-screenshots/`.

use super::permission_rig::{self, is_title_request, last_message};
use super::scripted_turns::Model;
use super::support::Env;
use super::web_rig::*;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::Value;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

/// Runs what the user wrote between `<cmd>` and `</cmd>`; after the observation, answers in
/// three deltas 300 ms apart (so the page is seen mid-stream).
fn reply(req: &RecordedRequest) -> Reply {
    let body = req.json().unwrap_or(Value::Null);
    if is_title_request(&body) {
        return Reply::sse(sse::content_stream(&["Web bubble test"]));
    }
    let last = last_message(&body);
    if last.contains("[Command") {
        return Reply::sse(sse::content_stream(&[
            "The command ",
            "ran and ",
            "**wrote** the file.",
        ]))
        .with_event_writes()
        .with_write_delay(Duration::from_millis(300));
    }
    permission_rig::reply_for(req)
}

/// Records the answer text after every change of the transcript, so a test can tell that the
/// answer was drawn while it streamed.
const STREAM_RECORDER: &str = r#"
window.__sy_answers = [];
new MutationObserver(() => {
  const all = document.querySelectorAll('#transcript .msg-assistant');
  if (all.length) window.__sy_answers.push(all[all.length - 1].textContent);
}).observe(document, { childList: true, subtree: true, characterData: true });
"#;

fn start(env: &Env) -> (Model, super::support::Daemon, WebProc) {
    let model = Model::scripted(Script::from_fn(reply));
    permission_rig::setup(env, &model, 60);
    let daemon = env.start_daemon();
    let web = env.start_web();
    (model, daemon, web)
}

#[test]
fn a_typed_question_streams_its_answer_shows_the_command_step_and_an_allowed_card_runs_it() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let marker = env.dir.path().join("approved.txt");
    let command = format!("echo web-approved >> {}", marker.display());
    runtime().run(async {
        let chrome = Chrome::launch(&env, "question_card_allow").await;
        let (page, requests) = chrome.tab(Some(STREAM_RECORDER)).await;
        log_in(&page, &web).await;
        chrome.screenshot(&page, "01-connected").await;

        type_message(&page, &format!("Please run <cmd>{command}</cmd>")).await;
        wait_for(&page, "document.querySelector('#cards .card') !== null", LONG, "the permission card").await;
        chrome.screenshot(&page, "02-permission-card").await;
        let shown = js(&page, "document.querySelector('#cards .card .resource').textContent").await;
        assert_eq!(shown, Value::from(command.clone()), "the card shows the whole command");
        let countdown = js(&page, "document.querySelector('#cards .countdown').textContent").await;
        assert!(
            countdown.as_str().is_some_and(|c| c.starts_with("Denied automatically in")),
            "{countdown}"
        );
        let user_line = js(&page, "document.querySelector('#transcript .msg-user').textContent").await;
        assert!(user_line.as_str().is_some_and(|t| t.contains(&command)), "{user_line}");
        assert!(!marker.exists(), "nothing runs before the answer");

        page.find_element("#cards .card button.allow").await.unwrap().click().await.unwrap();
        wait_for(&page, "document.querySelector('#cards .card') === null", LONG, "the card to close").await;
        wait_for(
            &page,
            "Array.from(document.querySelectorAll('#transcript .msg-assistant')).some(a => a.textContent.includes('wrote the file.'))",
            LONG,
            "the final answer",
        )
        .await;
        chrome.screenshot(&page, "03-answered").await;

        let step = js(&page, "(() => { const s = document.querySelector('#transcript .msg-tool'); return [s.querySelector('summary code').textContent, s.querySelector('.exit').textContent]; })()").await;
        assert_eq!(step, serde_json::json!([command, "exit 0"]), "the command step");
        let strong = js(&page, "Array.from(document.querySelectorAll('#transcript .msg-assistant strong')).map(s => s.textContent)").await;
        assert_eq!(strong, serde_json::json!(["wrote"]), "markdown emphasis is drawn");
        let seen: Vec<String> = serde_json::from_value(js(&page, "window.__sy_answers").await).unwrap();
        assert!(
            seen.iter().any(|t| t.contains("The command") && !t.contains("the file.")),
            "the answer was drawn while it streamed: {seen:?}"
        );
        assert_eq!(
            requests.foreign(&format!("http://127.0.0.1:{}", web.port)),
            Vec::<String>::new()
        );
        chrome.close().await;
    });
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "web-approved\n",
        "the allowed command ran once"
    );
}

#[test]
fn a_card_answered_from_the_keyboard_denies_first_and_the_command_does_not_run() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let marker = env.dir.path().join("denied.txt");
    let command = format!("echo web-denied >> {}", marker.display());
    runtime().run(async {
        let chrome = Chrome::launch(&env, "card_keyboard_deny").await;
        let (page, _) = chrome.tab(None).await;
        log_in(&page, &web).await;
        type_message(&page, &format!("Please run <cmd>{command}</cmd>")).await;
        wait_for(&page, "document.querySelector('#cards .card') !== null", LONG, "the permission card").await;
        let focused = js(&page, "document.activeElement.className + ':' + document.activeElement.textContent").await;
        assert_eq!(focused, Value::from("deny:Deny"), "the card focuses Deny");
        let labelled = js(&page, "(() => { const c = document.querySelector('#cards .card'); return c.getAttribute('role') + ' ' + document.getElementById(c.getAttribute('aria-labelledby')).textContent; })()").await;
        assert!(
            labelled.as_str().is_some_and(|l| l.starts_with("alertdialog ") && l.contains("asks to run a command")),
            "{labelled}"
        );
        page.find_element("#cards .card button.deny").await.unwrap().press_key("Enter").await.unwrap();
        wait_for(&page, "document.querySelector('#cards .card') === null", LONG, "the card to close").await;
        wait_for(
            &page,
            "document.querySelectorAll('#transcript .msg-assistant').length > 0 && document.getElementById('stop').hidden",
            LONG,
            "the turn to end",
        )
        .await;
        chrome.screenshot(&page, "denied").await;
        chrome.close().await;
    });
    assert!(!marker.exists(), "a denied command never runs");
}

#[test]
fn the_bubble_reconnects_when_the_daemon_restarts() {
    let env = Env::new();
    let (_model, mut daemon, web) = start(&env);
    let rt = runtime();
    let chrome = rt.run(Chrome::launch(&env, "reconnect"));
    let (page, _) = rt.run(chrome.tab(None));
    rt.run(log_in(&page, &web));
    daemon.terminate(Duration::from_secs(10));
    rt.run(wait_for(
        &page,
        "document.getElementById('conn').textContent.startsWith('Not connected') && document.getElementById('input').disabled",
        LONG,
        "the page to notice the daemon is gone",
    ));
    rt.run(chrome.screenshot(&page, "01-daemon-gone"));
    let _daemon = env.start_daemon();
    rt.run(async {
        wait_for(
            &page,
            "document.getElementById('conn').textContent.startsWith('Connected') && !document.getElementById('input').disabled && document.querySelectorAll('#agent-select option').length > 0",
            LONG,
            "the page to reconnect",
        )
        .await;
        chrome.screenshot(&page, "02-reconnected").await;
        chrome.close().await;
    });
}
