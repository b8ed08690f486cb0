//! A scripted model and a daemon set up for one agent at level 3, shared by the tests that
//! drive the real `sayri daemon` with hostile or slow model answers: the model is scripted with
//! `sayri-testkit`, the daemon runs the real sandbox and the real SQLite store.

use super::support::*;
use sayri_testkit::{FakeLlm, RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The scripted model with the runtime that drives it (dropped after the server).
pub struct Model {
    pub llm: FakeLlm,
    _rt: tokio::runtime::Runtime,
}

impl Model {
    /// A model server on loopback answering by `script`, driven by a runtime of its own so the
    /// tests stay synchronous.
    pub fn scripted(script: Script) -> Model {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let llm = rt.block_on(FakeLlm::start(script)).unwrap();
        Model { llm, _rt: rt }
    }
}

/// The bytes of `tests/fixtures/<name>` (scripted SSE bodies and the like).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Title requests (`max_tokens: 15`) get a title; every other request takes the next reply.
pub fn start_model(replies: Vec<Reply>) -> Model {
    let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
    let script = Script::from_fn(move |req: &RecordedRequest| {
        if req
            .json()
            .is_some_and(|v| v.get("max_tokens") == Some(&json!(15)))
        {
            return Reply::sse(sse::content_stream(&["Hostile"]));
        }
        queue
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Reply::sse(sse::content_stream(&["Done."])))
    });
    Model::scripted(script)
}

/// `sayri.toml` for the model (no retries, no system policy files), questions open for
/// `ask_timeout` seconds, `default_agent` active; creates `$CONFIG/agents`.
pub fn write_config(env: &Env, model: &Model, ask_timeout: u64, default_agent: &str) {
    let config = env.config_dir();
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n\
             [permissions]\nask_timeout = {ask_timeout}\npolicy_files = []\n\n\
             [agent]\ndefault_agent = \"{default_agent}\"\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
}

/// `sayri.toml` for the model, and agent `hostile` at level 3 (`ask_before_run` as given).
pub fn setup(env: &Env, model: &Model, ask_before_run: bool, ask_timeout: u64) {
    write_config(env, model, ask_timeout, "hostile");
    let config = env.config_dir();
    let profile = json!({
        "id": "hostile",
        "name": "Hostile",
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "ask_before_run": ask_before_run,
            "timeout_seconds": 10,
            "blocked_binaries": [],
            "permission_rules": [{"action": "shell", "resource": "touch *", "effect": "ask"}],
        },
    });
    std::fs::write(config.join("agents/hostile.json"), profile.to_string()).unwrap();
}

/// Reads lines until an event named `name` arrives (or `limit` passes); returns it.
pub fn wait_event(c: &mut RawClient, name: &str, limit: Duration) -> Option<Value> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let v = c.read_value();
        if v["event"] == name {
            return Some(v);
        }
    }
    None
}

/// Sends `ask` without waiting for the answer.
pub fn send_ask(c: &mut RawClient, text: &str, id: u64) {
    let line =
        json!({"cmd": "ask", "params": {"text": text, "timeout": 60}, "id": id}).to_string() + "\n";
    c.write(line.as_bytes());
}

/// Connects, sends `ask {text}` as request 1, and waits up to `secs` for its permission card;
/// returns the connection and the card's request id.
pub fn ask_until_card(env: &Env, text: &str, secs: u64, what: &str) -> (RawClient, String) {
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    send_ask(&mut c, text, 1);
    let card = wait_event(&mut c, "permission_request", Duration::from_secs(secs))
        .unwrap_or_else(|| panic!("no card: {what}"));
    let id = card["request"]["id"].as_str().unwrap().to_string();
    (c, id)
}

/// Reads until the response with `id`; returns it and how long it took.
pub fn wait_response(c: &mut RawClient, id: u64) -> (Value, Duration) {
    let t0 = Instant::now();
    loop {
        let v = c.read_value();
        if v.get("event").is_none() && v["id"] == id {
            return (v, t0.elapsed());
        }
    }
}

pub fn marker_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

pub fn ran(marker: &Path) -> bool {
    marker.exists()
}
