//! `client_hello`: a connection that limits itself is refused, by the daemon, what it gave up —
//! the web bubble's bridge keeps the assistant class plus permission answers and agent
//! switches — and no later `client_hello` gives anything back.

use super::scripted_turns::start_model;
use super::support::{Env, RawClient};
use serde_json::{Value, json};

fn daemon(env: &Env) -> (super::scripted_turns::Model, super::support::Daemon) {
    let model = start_model(vec![]);
    std::fs::create_dir_all(env.config_dir().join("agents")).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    std::fs::write(
        env.config_dir().join("agents/other.json"),
        json!({"id": "other", "name": "Other"}).to_string(),
    )
    .unwrap();
    let d = env.start_daemon();
    (model, d)
}

fn code(r: &Value) -> &str {
    r["code"].as_str().unwrap_or("ok")
}

#[test]
fn a_bridge_limited_to_the_assistant_class_is_refused_management_but_keeps_what_it_named() {
    let env = Env::new();
    let (_model, _d) = daemon(&env);
    let mut c = RawClient::connect(&env.socket());
    let hello = c.call(
        "client_hello",
        json!({"access": "assistant", "allow": ["permission_answer", "agent_switch"]}),
        1,
    );
    assert_eq!(
        hello["result"],
        json!({"access": "assistant", "allow": ["agent_switch", "permission_answer"]}),
        "{hello}"
    );
    for (i, (cmd, params)) in [
        ("config_set", json!({"key": "ui.autostart", "value": true})),
        ("vault_set", json!({"key": "K", "value": "v"})),
        ("permission_forget", json!({})),
        ("session_delete", json!({"session_id": "x"})),
        ("agent_save", json!({"name": "wide"})),
        ("quit", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let r = c.call(cmd, params, 10 + i as u64);
        assert_eq!(code(&r), "denied", "{cmd}: {r}");
        assert!(r["error"].as_str().unwrap().contains("client_hello"), "{r}");
    }
    // Kept: reading, the assistant class, and the two named management commands.
    assert_eq!(c.call("status", json!({}), 20)["ok"], true);
    assert_eq!(c.call("new_conversation", json!({}), 21)["ok"], true);
    let answer = c.call(
        "permission_answer",
        json!({"request_id": "0123456789ab", "allow": false}),
        22,
    );
    assert_eq!(answer["result"]["delivered"], false, "{answer}");
    assert_eq!(
        c.call("agent_switch", json!({"agent_id": "other"}), 23)["ok"],
        true
    );
    // Another connection is not limited by it.
    let mut other = RawClient::connect(&env.socket());
    let set = other.call(
        "config_set",
        json!({"key": "ui.autostart", "value": true}),
        1,
    );
    assert_eq!(set["ok"], true, "{set}");
}

#[test]
fn a_second_hello_never_widens_a_connection() {
    let env = Env::new();
    let (_model, _d) = daemon(&env);
    let mut c = RawClient::connect(&env.socket());
    assert_eq!(
        c.call("client_hello", json!({"access": "read-only"}), 1)["ok"],
        true
    );
    let wider = c.call(
        "client_hello",
        json!({"access": "management", "allow": ["config_set", "talk"]}),
        2,
    );
    assert_eq!(wider["ok"], true, "narrowing is always allowed: {wider}");
    assert_eq!(code(&c.call("talk", json!({"text": "hi"}), 3)), "denied");
    assert_eq!(
        code(&c.call(
            "config_set",
            json!({"key": "ui.autostart", "value": true}),
            4
        )),
        "denied"
    );
    assert_eq!(c.call("ping", json!({}), 5)["result"], "pong");
}

#[test]
fn a_turn_on_another_agent_counts_as_an_agent_switch() {
    let env = Env::new();
    let (_model, _d) = daemon(&env);
    let mut c = RawClient::connect(&env.socket());
    c.call("client_hello", json!({"access": "assistant"}), 1);
    let r = c.call("talk", json!({"text": "hi", "agent_id": "other"}), 2);
    assert_eq!(code(&r), "denied", "{r}");
    assert!(r["error"].as_str().unwrap().contains("agent_switch"), "{r}");
    let status = c.call("status", json!({}), 3);
    assert_eq!(
        status["result"]["agent"], "default",
        "the agent did not change"
    );
}

#[test]
fn a_hello_naming_an_unknown_command_or_class_is_invalid() {
    let env = Env::new();
    let (_model, _d) = daemon(&env);
    let mut c = RawClient::connect(&env.socket());
    for (i, params) in [
        json!({"access": "assistant", "allow": ["permision_answer"]}),
        json!({"access": "admin"}),
        json!({}),
        json!({"access": "assistant", "alow": []}),
    ]
    .into_iter()
    .enumerate()
    {
        let r = c.call("client_hello", params.clone(), i as u64);
        assert_eq!(code(&r), "invalid_params", "{params}: {r}");
    }
    // Nothing was limited by the refused hellos.
    let set = c.call(
        "config_set",
        json!({"key": "ui.autostart", "value": true}),
        9,
    );
    assert_eq!(set["ok"], true, "{set}");
}
