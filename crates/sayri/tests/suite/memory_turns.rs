//! Long-term memory inside turns, against the real daemon, its real session database and a
//! scripted model on loopback: a fact the person asks to keep is proposed by the model's
//! `remember` block, shown as a card and stored only after Allow; a new conversation's `recall`
//! block brings it back within `memory.recall_tokens`; a sub-agent reads its creator's facts
//! only when the creator is listed in `memory.shared_with_sub_agents` and writes only its own;
//! `memory.auto_accept` and `memory.auto_recall` skip the card and the recall step; a fact that
//! holds a vault secret is refused without a card.

use super::permission_rig::{AGENT, Model, Peer, is_title_request, last_message, setup};
use super::secret_rig::canary;
use super::support::Env;
use base64::Engine as _;
use sayri_core::domain::tokens::exact::ExactTokenizer;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};

/// The scripted model: `remember that X` → a `remember` block for X; `where is my backup
/// disk` → a `recall` block; a memory observation → an answer naming the first `/mnt/` path
/// in it; a save report → `Noted.` or `I did not save it.`; `leak N` → a `remember` block
/// holding `leaks[N]` as it is (a model that knows a secret: the request it gets is redacted).
fn memory_reply(req: &RecordedRequest, leaks: &[String]) -> Reply {
    let body = req.json().unwrap_or(Value::Null);
    let say = |t: &str| Reply::sse(sse::content_stream(&[t]));
    if is_title_request(&body) {
        return say("Memory test");
    }
    let last = last_message(&body);
    if last.contains("Saved to long-term memory") {
        return say("Noted.");
    }
    if last.contains("Not saved") {
        return say("I did not save it.");
    }
    if last.contains("[Memory") {
        let path = last
            .split(|c: char| c.is_whitespace() || c == '<')
            .find(|w| w.starts_with("/mnt/"));
        return match path {
            Some(p) => say(&format!("Your backup disk is {p}.")),
            None => say("I do not know."),
        };
    }
    let leaked = last
        .split_once("leak ")
        .and_then(|(_, n)| n.trim().parse::<usize>().ok())
        .and_then(|n| leaks.get(n))
        .map(|v| format!("my token is {v}"));
    let fact = last
        .split_once("remember that ")
        .map(|(_, f)| f.trim().to_string())
        .or(leaked);
    if let Some(f) = fact {
        return Reply::sse(sse::content_stream(&[
            "I will keep that.\n```remember\n",
            &f,
            "\n```\n",
        ]));
    }
    if last.to_lowercase().contains("where is my backup disk") {
        return say("Let me look.\n```recall\nbackup disk\n```\n");
    }
    say("Nothing to do.")
}

fn start() -> (Env, Model) {
    start_with(Vec::new())
}

fn start_with(leaks: Vec<String>) -> (Env, Model) {
    let env = Env::new();
    let model = Model::scripted(Script::from_fn(move |r| memory_reply(r, &leaks)));
    setup(&env, &model, 30);
    (env, model)
}

/// Starts an `ask` turn of `agent` in a new session.
fn ask(peer: &mut Peer, agent: &str, text: &str) -> u64 {
    peer.send(
        "ask",
        json!({"text": text, "agent_id": agent, "new": true, "timeout": 25}),
    )
}

/// Answers the permission card `card` from `peer`.
fn answer(peer: &mut Peer, card: &Value, allow: bool) {
    peer.call(
        "permission_answer",
        json!({"request_id": card["id"], "allow": allow}),
    );
}

/// Every stored fact.
fn facts(peer: &mut Peer) -> Vec<Value> {
    peer.call("memory_list", json!({}))
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The last message of the first turn request that carried a memory observation or note.
fn memory_message(model: &Model) -> String {
    model
        .turn_bodies()
        .iter()
        .map(last_message)
        .find(|m| m.contains("[Memory"))
        .expect("a request carried a memory observation")
}

/// The `- fact` lines of a memory observation.
fn fact_lines(message: &str) -> Vec<String> {
    message
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_fact_the_person_asks_to_keep_is_carded_stored_and_recalled_in_a_new_conversation_within_the_cap()
 {
    let (env, model) = start();
    let _d = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");
    // Sixty other facts about backups: together far more than the 300-token recall budget.
    for i in 0..60 {
        a.call(
            "memory_add",
            json!({"text": format!("Backup tape number {i} of the archive lives in drawer {i} of the grey cabinet in the basement")}),
        );
    }

    let id = ask(
        &mut a,
        AGENT,
        "Please remember that my backup disk is /mnt/tank",
    );
    let card = a.event("permission_request")["request"].clone();
    assert_eq!(card["action"], "memory", "{card}");
    assert_eq!(card["resource"], "my backup disk is /mnt/tank", "{card}");
    assert!(
        facts(&mut b).len() == 60,
        "nothing is stored before the answer"
    );
    answer(&mut b, &card, true);
    assert_eq!(a.response(id)["text"], "Noted.");
    let stored: Vec<Value> = facts(&mut a)
        .into_iter()
        .filter(|f| f["text"] == "my backup disk is /mnt/tank")
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0]["source"], "model");
    assert_eq!(
        stored[0]["agent"], AGENT,
        "a model's fact is its agent's own"
    );
    assert_eq!(stored[0]["recalled_count"], 0);

    let id = ask(&mut a, AGENT, "Where is my backup disk?");
    let answer = a.response(id);
    assert_eq!(answer["text"], "Your backup disk is /mnt/tank.", "{answer}");
    let finish = a.wait_for("the recall's tool_finish", |v| {
        v["event"] == "tool_finish" && v["command"] == "recall: backup disk"
    });
    let message = memory_message(&model);
    let lines = fact_lines(&message);
    assert!(
        lines[0].contains("/mnt/tank"),
        "the best match comes first: {lines:?}"
    );
    assert!(
        lines.len() < 61,
        "the cap left facts out: {} lines",
        lines.len()
    );
    let tokens = ExactTokenizer::load().unwrap().count(&lines.concat());
    println!("recall: {} of 61 facts, {tokens} tokens", lines.len());
    assert!(
        tokens <= 300,
        "{tokens} tokens of facts in the request, over memory.recall_tokens (300)"
    );
    let n = lines.len().to_string();
    assert!(
        finish["output"]
            .as_str()
            .unwrap()
            .contains(&format!("[Memory: {n} saved fact(s)")),
        "the receipt counts the facts: {finish}"
    );
    let tank = a.call("memory_get", json!({"id": stored[0]["id"]}));
    assert_eq!(tank["recalled_count"], 1, "{tank}");
}

#[test]
fn a_denied_card_stores_nothing_and_a_fact_holding_a_vault_secret_is_refused_without_a_card() {
    let secret = canary();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&secret);
    let (env, model) = start_with(vec![secret.clone(), b64]);
    let _d = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");

    let id = ask(
        &mut a,
        AGENT,
        "Please remember that my backup disk is /mnt/tank",
    );
    let card = a.event("permission_request")["request"].clone();
    answer(&mut b, &card, false);
    assert_eq!(a.response(id)["text"], "I did not save it.");
    assert!(facts(&mut a).is_empty());

    a.call(
        "vault_set",
        json!({"key": "MEMORY_TOKEN", "value": secret, "description": ""}),
    );
    for n in 0..2 {
        a.inbox.clear();
        let id = ask(&mut a, AGENT, &format!("leak {n}"));
        assert_eq!(a.response(id)["text"], "I did not save it.");
        a.sync();
        assert!(
            a.kept_events("permission_request").is_empty(),
            "a secret is never shown on a card"
        );
        let said = model
            .turn_bodies()
            .iter()
            .map(last_message)
            .rfind(|m| m.contains("Not saved"))
            .unwrap();
        assert!(said.contains("secret"), "{said}");
        assert!(facts(&mut a).is_empty(), "nothing is stored");
    }
}

/// Writes the sub-agent `helper`, created by the test agent.
fn write_helper(env: &Env) {
    let profile = json!({
        "id": "helper",
        "name": "Helper",
        "parent": AGENT,
        "sandbox": {"level": "LEVEL_3_HOST_USER", "timeout_seconds": 10}
    });
    std::fs::write(
        env.config_dir().join("agents").join("helper.json"),
        profile.to_string(),
    )
    .unwrap();
}

#[test]
fn a_sub_agent_reads_its_creators_memory_only_when_the_creator_shares_it_and_writes_its_own() {
    let (env, model) = start();
    write_helper(&env);
    let _d = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");
    a.call(
        "memory_add",
        json!({"text": "The creator's backup disk is /mnt/creator", "agent": AGENT}),
    );
    a.call(
        "memory_add",
        json!({"text": "Everyone's backup disk is /mnt/everyone"}),
    );

    let id = ask(&mut a, "helper", "Where is my backup disk?");
    assert_eq!(a.response(id)["text"], "I do not know.");
    let seen = memory_message(&model);
    assert!(
        !seen.contains("/mnt/creator") && !seen.contains("/mnt/everyone"),
        "{seen}"
    );

    let id = ask(
        &mut a,
        "helper",
        "Please remember that my backup disk is /mnt/helper",
    );
    let card = a.event("permission_request")["request"].clone();
    answer(&mut b, &card, true);
    assert_eq!(a.response(id)["text"], "Noted.");
    let mine: Vec<Value> = facts(&mut a)
        .into_iter()
        .filter(|f| f["text"] == "my backup disk is /mnt/helper")
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(
        mine[0]["agent"], "helper",
        "a sub-agent writes its own memory"
    );

    a.call(
        "config_set",
        json!({"key": "memory.shared_with_sub_agents", "value": [AGENT]}),
    );
    let before = model.turn_bodies().len();
    let id = ask(&mut a, "helper", "Where is my backup disk?");
    a.response(id);
    let seen: String = model.turn_bodies()[before..]
        .iter()
        .map(last_message)
        .find(|m| m.contains("[Memory"))
        .unwrap();
    for path in ["/mnt/helper", "/mnt/creator", "/mnt/everyone"] {
        assert!(
            seen.contains(path),
            "{path} is readable once shared: {seen}"
        );
    }
}

#[test]
fn auto_accept_stores_without_a_card_and_auto_recall_adds_matching_facts_to_the_first_request() {
    let (env, model) = start();
    let _d = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    for (key, value) in [("memory.auto_accept", true), ("memory.auto_recall", true)] {
        a.call("config_set", json!({"key": key, "value": value}));
    }
    a.call(
        "memory_add",
        json!({"text": "The printer is called Brother in the study"}),
    );

    let id = ask(
        &mut a,
        AGENT,
        "Please remember that my backup disk is /mnt/tank",
    );
    assert_eq!(a.response(id)["text"], "Noted.");
    a.sync();
    assert!(a.kept_events("permission_request").is_empty(), "no card");
    assert!(
        facts(&mut a)
            .iter()
            .any(|f| f["text"] == "my backup disk is /mnt/tank")
    );

    let before = model.turn_bodies().len();
    let id = ask(&mut a, AGENT, "Where is my backup disk?");
    assert_eq!(a.response(id)["text"], "Your backup disk is /mnt/tank.");
    let turn = &model.turn_bodies()[before..];
    assert_eq!(turn.len(), 1, "the fact came with the first request");
    let first = last_message(&turn[0]);
    assert!(first.starts_with("Where is my backup disk?"), "{first}");
    assert!(first.contains("/mnt/tank"), "{first}");
    assert!(
        !first.contains("printer"),
        "a fact sharing no words is not added: {first}"
    );
}

#[test]
fn a_card_for_a_fact_that_contradicts_an_older_one_shows_the_older_fact() {
    let (env, _model) = start();
    let _d = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");
    let older = a.call(
        "memory_add",
        json!({"text": "My backup disk is /mnt/old", "agent": AGENT}),
    );
    let id = ask(
        &mut a,
        AGENT,
        "Please remember that my backup disk is /mnt/tank",
    );
    let card = a.event("permission_request")["request"].clone();
    let shown = card["segments"].to_string();
    assert!(
        shown.contains(&format!(
            "older fact {}: My backup disk is /mnt/old",
            older["id"]
        )),
        "{card}"
    );
    answer(&mut b, &card, true);
    assert_eq!(a.response(id)["text"], "Noted.");
    assert_eq!(
        facts(&mut a).len(),
        2,
        "both are kept for the person to choose"
    );
}

/// Saves a yearly routine of `AGENT` with `prompt`, runs it now and waits for its end.
fn run_routine(env: &Env, peer: &mut Peer, name: &str, prompt: &str) {
    let routine = peer.call(
        "routine_save",
        json!({"name": name, "prompt": prompt, "trigger": "cron", "time_spec": "0 9 1 1 *",
               "agent_id": AGENT}),
    );
    let id = routine["id"].as_str().unwrap().to_string();
    let out = env.run(&["routines", "run", &id]);
    assert!(out.status.success(), "{}", super::support::stderr(&out));
    peer.wait_for("routine_finished", |v| v["event"] == "routine_finished");
    peer.sync();
}

/// The proposals `memory_review` lists.
fn proposals(peer: &mut Peer) -> Vec<Value> {
    peer.call("memory_review", json!({}))["proposed"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_routines_fact_waits_as_a_proposal_outside_memory_until_the_person_accepts_or_rejects_it() {
    let (env, model) = start();
    let _d = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    a.call(
        "config_set",
        json!({"key": "memory.auto_accept", "value": true}),
    );
    run_routine(
        &env,
        &mut a,
        "Keeper",
        "Please remember that my backup disk is /mnt/routine",
    );
    assert!(a.kept_events("permission_request").is_empty(), "no card");
    let said = model
        .turn_bodies()
        .iter()
        .map(last_message)
        .rfind(|m| m.contains("Not saved"))
        .expect("the model was told");
    assert!(said.contains("waits as proposal"), "{said}");
    assert!(facts(&mut a).is_empty(), "a routine writes no fact");
    let found = a.call("memory_search", json!({"query": "backup disk"}));
    assert_eq!(found, json!([]), "a proposal is never searched or recalled");
    let waiting = proposals(&mut a);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["text"], "my backup disk is /mnt/routine");
    assert_eq!(waiting[0]["agent"], AGENT);
    assert!(
        waiting[0]["session_id"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );

    // The same fact proposed again waits once.
    run_routine(
        &env,
        &mut a,
        "Again",
        "Now remember that My backup disk is /mnt/routine.",
    );
    assert_eq!(
        proposals(&mut a).len(),
        1,
        "the same fact is not kept twice"
    );

    let id = waiting[0]["id"].as_i64().unwrap().to_string();
    let out = env.run(&["memory", "accept", &id]);
    assert!(out.status.success(), "{}", super::support::stderr(&out));
    let kept = facts(&mut a);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        (&kept[0]["text"], &kept[0]["source"], &kept[0]["agent"]),
        (
            &json!("my backup disk is /mnt/routine"),
            &json!("model"),
            &json!(AGENT)
        )
    );
    assert!(proposals(&mut a).is_empty(), "accepted: no longer waiting");
    let found = a.call("memory_search", json!({"query": "backup disk"}));
    assert_eq!(
        found.as_array().map(Vec::len),
        Some(1),
        "now recalled: {found}"
    );

    run_routine(
        &env,
        &mut a,
        "Cat",
        "Please remember that my cat is called Mishi",
    );
    let waiting = proposals(&mut a);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let id = waiting[0]["id"].as_i64().unwrap().to_string();
    let out = env.run(&["memory", "reject", &id]);
    assert!(out.status.success(), "{}", super::support::stderr(&out));
    assert!(proposals(&mut a).is_empty(), "rejected: gone");
    assert_eq!(facts(&mut a).len(), 1, "memory unchanged by a rejection");
    for verb in ["accept", "reject"] {
        let out = env.run(&["memory", verb, &id]);
        assert!(!out.status.success(), "{verb} of a gone proposal fails");
        let err = super::support::stderr(&out);
        assert!(err.contains("no proposed fact has id"), "{verb}: {err}");
    }
}
