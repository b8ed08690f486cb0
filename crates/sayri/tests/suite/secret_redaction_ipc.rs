//! Secrets through the daemon: a value that becomes a secret mid-turn is redacted from then on,
//! and the provider key set over IPC never reaches the log, even at trace level.

use super::scripted_turns::*;
use super::support::*;
use sayri_testkit::{Reply, sse};
use serde_json::json;
use std::time::Duration;

/// A value printed by a command before it became a secret, then stored with `vault_set` while a
/// permission card of the same turn is open: the next command prints it again. From the moment
/// it is a secret it must not leave the daemon: not in `tool_finish`, not in any later request
/// body (the earlier observation included), not in SQLite rows written afterwards.
#[test]
fn a_secret_stored_mid_turn_is_redacted_from_then_on_in_events_and_request_bodies() {
    let dir = marker_dir();
    let file = dir.path().join("token.txt");
    let secret = format!("tok-{}-{}", std::process::id(), "Zq8vN3xLr5Pw");
    std::fs::write(&file, &secret).unwrap();
    let marker = dir.path().join("ran");
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&[&format!(
            "```bash\ncat {}\n```\n",
            file.display()
        )])),
        Reply::sse(sse::content_stream(&[&format!(
            "```bash\ntouch {} && cat {}\n```\n",
            marker.display(),
            file.display()
        )])),
        Reply::sse(sse::content_stream(&["Done."])),
    ]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let _d = env.start_daemon();
    let (mut c, id) = ask_until_card(
        &env,
        "show the token",
        15,
        "the second command raises a card",
    );
    let mut o = RawClient::connect(&env.socket());
    let r = o.call(
        "vault_set",
        json!({"key": "MID_TURN_TOKEN", "value": secret, "description": ""}),
        2,
    );
    assert_eq!(r["ok"], true, "{r}");
    let r = o.call(
        "permission_answer",
        json!({"request_id": id, "allow": true}),
        3,
    );
    assert_eq!(r["result"]["delivered"], true, "{r}");
    let finish = wait_event(&mut c, "tool_finish", Duration::from_secs(15)).unwrap();
    assert!(ran(&marker), "the allowed command ran");
    assert!(
        !finish.to_string().contains(&secret),
        "tool_finish leaks: {finish}"
    );
    let (resp, _) = wait_response(&mut c, 1);
    assert_eq!(resp["result"]["text"], "Done.", "{resp}");
    let bodies: Vec<String> = model
        .llm
        .chat_bodies()
        .iter()
        .filter(|b| b.get("max_tokens") != Some(&json!(15)))
        .map(|b| b.to_string())
        .collect();
    assert_eq!(bodies.len(), 3, "three model calls");
    assert!(
        bodies[1].contains(&secret),
        "before vault_set the value was not a secret yet"
    );
    assert!(
        !bodies[2].contains(&secret),
        "the request after vault_set still carries the secret: {}",
        bodies[2]
    );
}

/// The provider key, set over IPC while the daemon runs, appears in no log line even at
/// `RUST_LOG=trace` (HTTP client internals included), and goes out only as the bearer header.
#[test]
fn the_provider_key_is_not_in_a_trace_level_log() {
    let key = format!("sk-attack2-{}-Hq7Tz2Lm9Vc4", std::process::id());
    let model = start_model(vec![Reply::sse(sse::content_stream(&["Hello."]))]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let log = std::fs::File::create(env.daemon_log()).unwrap();
    let child = env
        .cmd()
        .env("RUST_LOG", "trace")
        .arg("daemon")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut d = Daemon {
        child: Some(child),
        log: env.daemon_log(),
    };
    assert!(eventually(Duration::from_secs(15), || {
        RawClient::try_connect(&env.socket()).is_ok()
    }));
    let mut c = RawClient::connect(&env.socket());
    let r = c.call(
        "config_set",
        json!({"key": "provider.api_key", "value": key}),
        1,
    );
    assert_eq!(r["ok"], true, "{r}");
    let r = c.call("ask", json!({"text": "hi", "timeout": 20}), 2);
    assert_eq!(r["result"]["text"], "Hello.", "{r}");
    let sent = model
        .llm
        .requests()
        .iter()
        .filter_map(|q| q.header("authorization").map(str::to_string))
        .collect::<Vec<_>>();
    assert!(
        sent.iter().any(|h| h.contains(&key)),
        "the key went out: {sent:?}"
    );
    d.terminate(Duration::from_secs(5));
    let text = std::fs::read_to_string(env.daemon_log()).unwrap();
    assert!(
        text.len() > 1000,
        "trace logging was on: {} bytes",
        text.len()
    );
    assert!(!text.contains(&key), "the key is in the trace log");
    assert!(
        !text.contains(&key[10..]),
        "part of the key is in the trace log"
    );
}
