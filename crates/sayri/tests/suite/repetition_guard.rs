//! A model that keeps proposing the same command with the same result is stopped: the real
//! daemon, the real shell at level 3, the real SQLite file, and a scripted server that answers
//! every request of a scenario with the same SSE body, byte for byte.
//!
//! Fixtures live in `/tmp/sy-loop` (the scripted bodies name those paths), so the three
//! scenarios run one after the other in one test.

use super::scripted_turns::{Model, fixture};
use super::support::{Env, RawClient, stderr, stdout};
use sayri_testkit::turns::{is_title_request, last_content};
use sayri_testkit::{RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const LOOP_DIR: &str = "/tmp/sy-loop";
const TAIL: &str = "tail -n 5 /tmp/sy-loop/app.log";
const APPEND: &str = "echo 'alias ll=\"ls -l\"' >> /tmp/sy-loop/rc";
const COUNTER: &str = "cat /tmp/sy-loop/counter";

/// Fresh fixtures: a five-line log, an empty rc file, an empty counter.
fn fresh_fixtures() {
    let _ = std::fs::remove_dir_all(LOOP_DIR);
    std::fs::create_dir_all(LOOP_DIR).unwrap();
    let log: String = (1..=5)
        .map(|i| format!("2026-11-30T09:00:0{i}Z INFO worker idle\n"))
        .collect();
    std::fs::write(format!("{LOOP_DIR}/app.log"), log).unwrap();
    std::fs::write(format!("{LOOP_DIR}/rc"), "").unwrap();
    std::fs::write(format!("{LOOP_DIR}/counter"), "").unwrap();
}

/// What one scenario produced.
struct Run {
    /// Turn requests the server answered (the session-title request left out).
    requests: Vec<Value>,
    /// Events of the turn, in order.
    events: Vec<Value>,
    /// `sayri ask` stdout.
    answer: String,
    env: Env,
}

impl Run {
    fn tool_starts(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["event"] == "tool_start")
            .map(|e| e["command"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn named(&self, name: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["event"] == name).collect()
    }

    /// `(role, content, tool_call_json)` of every stored message, in order.
    fn stored(&self) -> Vec<(String, String, Option<String>)> {
        let db = rusqlite::Connection::open_with_flags(
            self.env.state_dir().join("sessions.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut st = db
            .prepare("SELECT role, content, tool_call_json FROM messages ORDER BY id")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

/// Runs `text` with agent `loop` (level 3, `* allow`, no investigation loop) against a server
/// that answers every request with `body`; with `count`, the server writes the number of the
/// turn request it is about to answer into `/tmp/sy-loop/counter`.
fn scenario(body: Vec<u8>, text: &str, count: bool) -> Run {
    fresh_fixtures();
    let turn_requests = Arc::new(Mutex::new(Vec::new()));
    let n = Arc::new(AtomicUsize::new(0));
    let seen = turn_requests.clone();
    let model = Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        if !req.json().is_some_and(|b| is_title_request(&b)) {
            let k = n.fetch_add(1, Ordering::SeqCst) + 1;
            if count {
                std::fs::write(format!("{LOOP_DIR}/counter"), format!("{k}\n")).unwrap();
            }
            seen.lock().unwrap().push(req.json().unwrap());
        }
        Reply::sse(body.clone())
    }));
    let env = Env::new_in("/var/tmp");
    std::fs::create_dir_all(env.config_dir().join("agents")).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"local\"\nretries = 0\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    let profile = json!({
        "id": "loop", "name": "Loop",
        "investigation_loop": false,
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "timeout_seconds": 20,
            "permission_rules": [{"action": "*", "resource": "*", "effect": "allow"}],
        },
    });
    std::fs::write(
        env.config_dir().join("agents/loop.json"),
        profile.to_string(),
    )
    .unwrap();
    let daemon = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    let out = env.run(&["ask", "--agent", "loop", "--new", text]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut events = Vec::new();
    let mut started = false;
    loop {
        let v = watcher.read_value();
        started |= v["event"] == "busy" && v["active"] == true;
        let done = started && v["event"] == "busy" && v["active"] == false;
        events.push(v);
        if done {
            break;
        }
    }
    drop(daemon);
    let requests = turn_requests.lock().unwrap().clone();
    Run {
        requests,
        events,
        answer: stdout(&out),
        env,
    }
}

/// The refusal as the model and the store see it.
fn assert_refusal_told_and_stored(run: &Run, command: &str) {
    let told = last_content(&run.requests[3]);
    assert!(
        told.starts_with("[Command NOT RUN: repeated]"),
        "request 4's observation: {told}"
    );
    assert!(
        told.contains(command) && told.contains("already ran 2 times"),
        "{told}"
    );
    assert!(
        told.contains("different approach") && told.contains("final answer"),
        "{told}"
    );
    let stored = run.stored();
    let refusal = stored
        .iter()
        .find(|(role, content, _)| {
            role == "tool" && content.starts_with("[Command NOT RUN: repeated]")
        })
        .unwrap_or_else(|| panic!("no stored refusal in {stored:#?}"));
    let call: Value = serde_json::from_str(refusal.2.as_deref().unwrap()).unwrap();
    assert_eq!(call["command"], command);
    assert_eq!(call["status"], "repeated");
}

#[test]
fn a_command_repeated_with_the_same_result_runs_twice_then_is_refused_and_the_turn_ends() {
    // A: the same read-only command, same output every time.
    let a = scenario(
        fixture("loop-repeated-command.a.sse"),
        "Why did the worker stop? Check the log.",
        false,
    );
    assert_eq!(a.tool_starts(), [TAIL, TAIL], "{:#?}", a.events);
    assert_eq!(a.requests.len(), 4, "model requests");
    assert_refusal_told_and_stored(&a, TAIL);
    let done = a.named("assistant_done");
    assert_eq!(done.len(), 1);
    let text = done[0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("kept repeating `{TAIL}`")) && text.contains("stopped"),
        "{text}"
    );
    assert!(a.answer.contains("kept repeating"), "{}", a.answer);
    assert!(a.named("error").is_empty(), "{:#?}", a.named("error"));

    // B: a successful command with a side effect: success is not progress.
    let b = scenario(
        fixture("loop-repeated-command.b.sse"),
        "Add an ll alias to /tmp/sy-loop/rc.",
        false,
    );
    assert_eq!(b.tool_starts(), [APPEND, APPEND]);
    assert_eq!(b.requests.len(), 4);
    let rc = std::fs::read_to_string(format!("{LOOP_DIR}/rc")).unwrap();
    assert_eq!(rc.lines().count(), 2, "{rc:?}");
    assert_refusal_told_and_stored(&b, APPEND);
    assert!(b.named("error").is_empty());

    // C (control): the output changes every time, so nothing is refused; the step cap ends it.
    let c = scenario(
        fixture("loop-repeated-command.c.sse"),
        "Wait until the counter reaches 5.",
        true,
    );
    assert_eq!(c.tool_starts(), [COUNTER; 5]);
    assert_eq!(c.requests.len(), 6);
    for (i, r) in c.requests[1..].iter().enumerate() {
        let obs = last_content(r);
        assert!(
            obs.starts_with("[Command result: exit code 0]")
                && obs.contains(&format!(">\n{}\n</data-", i + 1)),
            "observation {}: {obs}",
            i + 1
        );
    }
    let done = c.named("assistant_done");
    let text = done[0]["text"].as_str().unwrap();
    assert!(
        text.contains("step limit") && text.contains(&format!("`{COUNTER}`")),
        "{text}"
    );
    assert!(
        !c.stored()
            .iter()
            .any(|(_, content, _)| content.contains("NOT RUN"))
    );
    let _ = std::fs::remove_dir_all(LOOP_DIR);
}
