//! The rig of the permission tests: a scripted OpenAI-compatible model server on loopback
//! (`sayri-testkit`) and clients that keep every frame, around the real daemon binary, its real
//! socket, the real level-3 sandbox and the real SQLite approval store.
//!
//! The scripted model runs whatever the user wrote between `<cmd>` and `</cmd>` as one fenced
//! `bash` block, and answers `Finished.` once it sees an observation, so each turn is exactly one
//! proposed command. Commands append to marker files, which count how often they really ran.

use super::support::{Env, RawClient};
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::Path;

pub const AGENT: &str = "perm";
pub const AGENT_NAME: &str = "Permission Tester";
pub const TITLE_PROMPT: &str = "Write an ultra-short title";

// ---------------------------------------------------------------------------------------------
// The scripted model

/// The text of a chat message (string content, or the text parts of an array).
pub fn content(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

pub fn is_title_request(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.first())
        .is_some_and(|m| content(m).starts_with(TITLE_PROMPT))
}

/// The last message of a chat request body.
pub fn last_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(content)
        .unwrap_or_default()
}

pub fn reply_for(req: &RecordedRequest) -> Reply {
    let body = req.json().unwrap_or(Value::Null);
    if is_title_request(&body) {
        return Reply::sse(sse::content_stream(&["Permission test"]));
    }
    let last = last_message(&body);
    if last.contains("[Command") {
        return Reply::sse(sse::content_stream(&["Finished."]));
    }
    let command = last
        .split_once("<cmd>")
        .and_then(|(_, rest)| rest.split_once("</cmd>"))
        .map(|(c, _)| c.to_string());
    match command {
        Some(c) => Reply::sse(sse::content_stream(&[
            "I will run it.\n```bash\n",
            &c,
            "\n```\n",
        ])),
        None => Reply::sse(sse::content_stream(&["Nothing to run."])),
    }
}

pub use super::scripted_turns::Model;

impl Model {
    /// The model of the permission tests ([`reply_for`]).
    pub fn start() -> Model {
        Model::scripted(Script::from_fn(reply_for))
    }

    /// Chat request bodies of turns (title requests left out).
    pub fn turn_bodies(&self) -> Vec<Value> {
        self.llm
            .chat_bodies()
            .into_iter()
            .filter(|b| !is_title_request(b))
            .collect()
    }

    /// The observation the model received for the command whose output or text contains
    /// `needle`: the last message of the first turn request that mentions it after a
    /// `[Command` header.
    pub fn observation_containing(&self, needle: &str) -> Option<String> {
        self.turn_bodies()
            .iter()
            .map(last_message)
            .find(|m| m.contains("[Command") && m.contains(needle))
    }
}

// ---------------------------------------------------------------------------------------------
// Environment

/// Writes `sayri.toml` (provider = the scripted model, no system policy files) and the agent
/// profile `perm` at level 3 with `ask_before_run` and ask rules for `echo *` and `rm *`.
pub fn setup(env: &Env, model: &Model, ask_timeout: u64) {
    let config = env.config_dir();
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n\
             [permissions]\nask_timeout = {ask_timeout}\npolicy_files = []\n\n\
             [agent]\ndefault_agent = \"{AGENT}\"\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    let profile = json!({
        "id": AGENT,
        "name": AGENT_NAME,
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "ask_before_run": true,
            "timeout_seconds": 10,
            "blocked_binaries": [],
            "permission_rules": [
                {"action": "shell", "resource": "echo *", "effect": "ask"},
                {"action": "shell", "resource": "rm *", "effect": "ask"}
            ]
        }
    });
    std::fs::write(
        config.join("agents").join(format!("{AGENT}.json")),
        serde_json::to_string_pretty(&profile).unwrap(),
    )
    .unwrap();
}

pub fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().map(String::from).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// A client that keeps every frame it has read, so events and responses can be awaited in any
// order without losing any.

pub struct Peer {
    pub name: &'static str,
    pub c: RawClient,
    pub inbox: Vec<Value>,
    pub next_id: u64,
}

impl Peer {
    pub fn connect(env: &Env, name: &'static str) -> Peer {
        Peer {
            name,
            c: RawClient::connect(&env.socket()),
            inbox: Vec::new(),
            next_id: 1,
        }
    }

    /// Sends a request; returns its id.
    pub fn send(&mut self, cmd: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"cmd": cmd, "params": params, "id": id}).to_string() + "\n";
        self.c.write(line.as_bytes());
        id
    }

    /// Reads one frame; `None` at EOF. Panics when nothing arrives within the socket's read
    /// timeout (10 s), listing what was seen.
    pub fn read_frame(&mut self, what: &str) -> Option<Value> {
        let mut line = String::new();
        match self.c.reader.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap()),
            Err(e) => panic!(
                "{}: no {what} ({e}); frames seen: {:#?}",
                self.name, self.inbox
            ),
        }
    }

    /// Returns the first frame (kept or new) matching `pred`; other frames stay in the inbox.
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.inbox.iter().position(&pred) {
            return self.inbox.remove(pos);
        }
        loop {
            let Some(v) = self.read_frame(what) else {
                panic!(
                    "{}: connection closed before {what}; frames seen: {:#?}",
                    self.name, self.inbox
                );
            };
            if pred(&v) {
                return v;
            }
            self.inbox.push(v);
        }
    }

    pub fn event(&mut self, name: &str) -> Value {
        self.wait_for(&format!("'{name}' event"), |v| v["event"] == name)
    }

    pub fn response(&mut self, id: u64) -> Value {
        let r = self.wait_for(&format!("response to request {id}"), |v| {
            v.get("event").is_none() && v["id"] == id
        });
        assert_eq!(r["ok"], true, "{}: {r}", self.name);
        r["result"].clone()
    }

    pub fn call(&mut self, cmd: &str, params: Value) -> Value {
        let id = self.send(cmd, params);
        self.response(id)
    }

    /// Makes sure every event broadcast so far has been read (a `ping` reply comes after them).
    pub fn sync(&mut self) {
        self.call("ping", json!({}));
    }

    /// Every kept frame that is the event `name`.
    pub fn kept_events(&self, name: &str) -> Vec<Value> {
        self.inbox
            .iter()
            .filter(|v| v["event"] == name)
            .cloned()
            .collect()
    }

    /// Reads until the daemon closes the connection; keeps everything.
    pub fn drain_to_eof(&mut self) {
        while let Some(v) = self.read_frame("end of connection") {
            self.inbox.push(v);
        }
    }
}

/// Starts an `ask` turn of the test agent in a new session that proposes `command`.
pub fn start_ask(peer: &mut Peer, command: &str) -> u64 {
    peer.send(
        "ask",
        json!({
            "text": format!("Please run <cmd>{command}</cmd>"),
            "agent_id": AGENT,
            "new": true,
            "timeout": 25,
        }),
    )
}

pub fn is_hex12(s: &str) -> bool {
    s.len() == 12
        && s.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

/// Runs one turn that must not ask: no `permission_request` reaches either client.
pub fn run_without_card(a: &mut Peer, b: &mut Peer, command: &str) -> Value {
    let id = start_ask(a, command);
    let result = a.response(id);
    a.sync();
    b.sync();
    assert!(
        a.kept_events("permission_request").is_empty()
            && b.kept_events("permission_request").is_empty(),
        "a card appeared for {command:?}: {:?}",
        a.kept_events("permission_request")
    );
    a.inbox.clear();
    b.inbox.clear();
    result
}

/// Runs one turn that must ask; answers it from `b` with `allow`/`remember`, checks both clients
/// saw the question and its end. Returns (request, ask result).
pub fn run_with_answer(
    a: &mut Peer,
    b: &mut Peer,
    command: &str,
    allow: bool,
    remember: bool,
) -> (Value, Value) {
    let id = start_ask(a, command);
    let req_a = a.event("permission_request")["request"].clone();
    let req_b = b.event("permission_request")["request"].clone();
    assert_eq!(req_a, req_b, "both clients get the same question");
    assert_eq!(req_a["resource"], command, "{req_a}");
    let rid = req_a["id"].as_str().unwrap().to_string();
    let answer = b.call(
        "permission_answer",
        json!({"request_id": rid, "allow": allow, "remember": remember}),
    );
    assert_eq!(
        answer,
        json!({"delivered": true, "request_id": rid, "allow": allow})
    );
    for p in [&mut *a, &mut *b] {
        assert_eq!(p.event("permission_resolved")["request_id"], rid.as_str());
    }
    let result = a.response(id);
    a.inbox.clear();
    b.inbox.clear();
    (req_a, result)
}
