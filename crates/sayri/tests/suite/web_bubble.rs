//! The web bubble end to end: a person's browser (headless Chromium) on `sayri web`, a real
//! daemon, the scripted model, the real level-3 sandbox. A typed question streams its answer, a
//! command step shows up, a permission card is answered by clicking (and the command really
//! runs) or from the keyboard (and it does not), and the page reconnects when the daemon
//! restarts. Screenshots are kept under `target/web-screenshots/`.

use super::permission_rig::{self, is_title_request, last_message};
use super::scripted_turns::Model;
use super::support::{Env, RawClient};
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
fn remember_this_on_a_said_line_keeps_it_as_a_fact_of_the_person_without_changing_the_line() {
    let env = Env::new();
    let (_model, _daemon, web) = start(&env);
    let said = "My backup disk is /mnt/tank";
    runtime().run(async {
        let chrome = Chrome::launch(&env, "remember_this").await;
        let (page, _requests) = chrome.tab(None).await;
        log_in(&page, &web).await;
        type_message(&page, said).await;
        wait_for(
            &page,
            "Array.from(document.querySelectorAll('#transcript .msg-assistant')).some(a => a.textContent.includes('Nothing to run.'))",
            LONG,
            "the answer",
        )
        .await;
        let line = js(&page, "document.querySelector('#transcript .msg-user').textContent").await;
        assert_eq!(line, Value::from(said), "the button adds no text to the line");
        page.find_element("#transcript .msg-user button.remember")
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_for(
            &page,
            "document.getElementById('notice').textContent.startsWith('Remembered as fact 1')",
            LONG,
            "the notice that the fact was kept",
        )
        .await;
        chrome.screenshot(&page, "remembered").await;
        chrome.close().await;
    });
    let mut c = RawClient::connect(&env.socket());
    let facts = c.call("memory_list", serde_json::json!({}), 1);
    let facts = facts["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(facts[0]["text"], said);
    assert_eq!(facts[0]["source"], "person");
    assert_eq!(facts[0]["agent"], Value::Null);
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

/// Counts every permission card the page ever showed.
const CARD_COUNTER: &str = r#"
window.__sy_cards = 0;
new MutationObserver((records) => {
  for (const r of records)
    for (const n of r.addedNodes)
      if (n.nodeType === 1 && n.matches('article.card')) window.__sy_cards++;
}).observe(document, { childList: true, subtree: true });
"#;

/// True once the page shows `n` finished answers of the command turn and no turn runs.
fn answered(n: usize) -> String {
    format!(
        "Array.from(document.querySelectorAll('#transcript .msg-assistant')).filter(a => a.textContent.includes('wrote the file.')).length === {n} && document.getElementById('stop').hidden"
    )
}

#[test]
fn allow_always_is_remembered_and_the_sidebar_opens_older_conversations_and_switches_agents() {
    let env = Env::new();
    let model = Model::scripted(Script::from_fn(reply));
    permission_rig::setup(&env, &model, 60);
    std::fs::write(
        env.config_dir().join("agents/other.json"),
        serde_json::json!({"id": "other", "name": "Other Helper"}).to_string(),
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let web = env.start_web();
    let marker = env.dir.path().join("always.txt");
    let command = format!("echo web-always >> {}", marker.display());
    let ask = format!("Please run <cmd>{command}</cmd>");
    runtime().run(async {
        let chrome = Chrome::launch(&env, "allow_always_sidebar").await;
        let (page, _) = chrome.tab(Some(CARD_COUNTER)).await;
        log_in(&page, &web).await;

        // Allow always: the same command later runs without a card.
        type_message(&page, &ask).await;
        wait_for(&page, "document.querySelector('#cards .card') !== null", LONG, "the permission card").await;
        page.find_element("#cards .card button.always").await.unwrap().click().await.unwrap();
        wait_for(&page, &answered(1), LONG, "the first answer").await;
        type_message(&page, &ask).await;
        wait_for(&page, &answered(2), LONG, "the second answer").await;
        assert_eq!(js(&page, "window.__sy_cards").await, Value::from(1), "one card in all");
        chrome.screenshot(&page, "01-remembered").await;

        // A new conversation, then the first one again from the session list.
        let first = js(&page, "document.querySelector('#sessions button[aria-current=\"true\"]').parentNode.dataset.session").await;
        assert!(first.as_str().is_some_and(|s| !s.is_empty()), "{first}");
        page.find_element("#new-chat").await.unwrap().click().await.unwrap();
        wait_for(&page, "document.querySelectorAll('#transcript li').length === 0", LONG, "an empty conversation").await;
        type_message(&page, "hello there").await;
        wait_for(
            &page,
            "Array.from(document.querySelectorAll('#transcript .msg-assistant')).some(a => a.textContent.includes('Nothing to run.')) && document.querySelectorAll('#sessions li').length === 2",
            LONG,
            "the second conversation in the list",
        )
        .await;
        page.find_element(format!("#sessions li[data-session=\"{}\"] button", first.as_str().unwrap()))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_for(&page, &answered(2), LONG, "the first conversation again").await;
        let users = js(&page, "Array.from(document.querySelectorAll('#transcript .msg-user')).map(u => u.textContent)").await;
        assert_eq!(users, serde_json::json!([ask, ask]), "the first conversation's messages");
        chrome.screenshot(&page, "02-older-conversation").await;

        // The agent switcher, from the keyboard: the daemon's active agent changes.
        let options = js(&page, "Array.from(document.querySelectorAll('#agent-select option')).map(o => o.value + '=' + o.textContent)").await;
        assert_eq!(
            options,
            serde_json::json!(["default=Main Sayri", "other=Other Helper", "perm=Permission Tester"])
        );
        let chosen = js(&page, "document.getElementById('agent-select').value").await;
        assert_eq!(chosen, "perm", "the active agent is selected");
        let select = page.find_element("#agent-select").await.unwrap();
        select.focus().await.unwrap();
        select.press_key("ArrowUp").await.unwrap();
        let mut c = RawClient::connect(&env.socket());
        let mut agent = Value::Null;
        for _ in 0..100 {
            agent = c.call("status", serde_json::json!({}), 1)["result"]["agent"].clone();
            if agent == "other" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(agent, "other", "the daemon switched agents");
        chrome.close().await;
    });
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "web-always\nweb-always\n",
        "the remembered command ran both times"
    );
}
