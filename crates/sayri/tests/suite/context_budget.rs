//! A huge command output never pushes the system prompt out of a small context window: the
//! real daemon with a 4096-token context and `max_tokens` 512, the real shell at level 3, the
//! real SQLite file, and a scripted server that counts every request's prompt tokens with
//! `o200k_base` and marks any request an Ollama-like server would have cut from the front
//! (prompt + `max_tokens` > 4096).
//!
//! The log lives in `/tmp/sy-ctx` (the scripted bodies name that path), so the scenarios run
//! one after the other in one test.

use super::scripted_turns::{Model, fixture};
use super::support::{Env, stderr, stdout};
use sayri_core::domain::tokens::exact::ExactTokenizer;
use sayri_testkit::turns::is_title_request;
use sayri_testkit::{RecordedRequest, Reply, Script, sse, tokens};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const CONTEXT: usize = 4096;
const MAX_TOKENS: usize = 512;
const LOG: &str = "/tmp/sy-ctx/big.log";
const QUESTION: &str = "How many lines does /tmp/sy-ctx/big.log have, and what is the last line?";

/// A turn request as the server saw it.
#[derive(Clone)]
struct Seen {
    body: Value,
    prompt_tokens: usize,
    /// An Ollama-like server would have dropped the front of this prompt.
    would_truncate: bool,
}

/// The scripted server: `reply(turn request number, body)` answers; with `report_usage`, each
/// reply carries the `o200k_base` usage the daemon calibrates its estimate with.
struct Server {
    model: Model,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start(
        reply: impl Fn(usize, &Value) -> Vec<u8> + Send + 'static,
        report_usage: bool,
    ) -> Server {
        let tokenizer = ExactTokenizer::load().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let model = Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
            let body = req.json().unwrap();
            if is_title_request(&body) {
                return Reply::sse(sse::content_stream(&["Big log"]));
            }
            let prompt_tokens = tokens::prompt_tokens(&tokenizer, &body);
            let n = {
                let mut log = log.lock().unwrap();
                log.push(Seen {
                    body: body.clone(),
                    prompt_tokens,
                    would_truncate: prompt_tokens + MAX_TOKENS > CONTEXT,
                });
                log.len()
            };
            let stream = reply(n, &body);
            if report_usage {
                Reply::sse(sse::with_usage(&stream, prompt_tokens, 20))
            } else {
                Reply::sse(stream)
            }
        }));
        Server { model, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn configure(env: &Env, server: &Server) {
    std::fs::create_dir_all(env.config_dir().join("agents")).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"local\"\nretries = 0\ncontext_tokens = {CONTEXT}\n",
            server.model.llm.base_url()
        ),
    )
    .unwrap();
    let profile = json!({
        "id": "ctx", "name": "Context",
        "model": {"max_tokens": MAX_TOKENS},
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "timeout_seconds": 30,
            "permission_rules": [{"action": "*", "resource": "*", "effect": "allow"}],
        },
    });
    std::fs::write(
        env.config_dir().join("agents/ctx.json"),
        profile.to_string(),
    )
    .unwrap();
}

/// `/tmp/sy-ctx/big.log`: 60,000 lines, 1,380,000 bytes. Written aside and renamed, so a test
/// running at the same time never reads a half-written file.
fn make_log() {
    std::fs::create_dir_all("/tmp/sy-ctx").unwrap();
    let tmp = format!(
        "{LOG}.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    );
    let out = std::process::Command::new("bash")
        .args([
            "-c",
            &format!("seq -f 'line %06g: status=ok' 1 60000 > '{tmp}' && mv '{tmp}' {LOG}"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::metadata(LOG).unwrap().len(), 1_380_000);
}

fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().unwrap()
}

fn assert_within_budget(seen: &[Seen], system: &Value) {
    for (i, s) in seen.iter().enumerate() {
        assert_eq!(
            &messages(&s.body)[0],
            system,
            "request {}: system message",
            i + 1
        );
        assert!(
            s.prompt_tokens + MAX_TOKENS <= CONTEXT && !s.would_truncate,
            "request {}: {} prompt tokens + {MAX_TOKENS} > {CONTEXT}",
            i + 1,
            s.prompt_tokens
        );
        assert_eq!(s.body["max_tokens"], MAX_TOKENS, "request {}", i + 1);
    }
}

/// The observation keeps the first and the last line and says exactly how much it left out.
fn assert_head_and_tail(observation: &str) {
    assert!(
        observation
            .starts_with("[Command result: exit code 0; output 60,000 lines / 1,380,000 bytes"),
        "{observation}"
    );
    assert!(
        observation.contains("line 000001: status=ok\n"),
        "{observation}"
    );
    assert!(
        observation.contains("line 060000: status=ok\n"),
        "{observation}"
    );
    let kept: Vec<&str> = observation
        .lines()
        .filter(|l| l.starts_with("line "))
        .collect();
    let kept_bytes: usize = kept.iter().map(|l| l.len() + 1).sum();
    let marker = format!(
        "[… {} lines / {} bytes omitted …]",
        group(60_000 - kept.len()),
        group(1_380_000 - kept_bytes)
    );
    assert!(
        observation.contains(&marker),
        "{marker} missing from {observation}"
    );
}

fn group(n: usize) -> String {
    sayri_core::domain::observation::thousands(n as u64)
}

#[test]
fn a_huge_output_and_a_long_history_never_push_the_system_prompt_out_of_a_4k_context() {
    make_log();
    let env = Env::new_in("/var/tmp");
    let step1 = fixture("context-budget.step1.sse");
    let step2 = fixture("context-budget.step2.sse");
    let server = Server::start(
        move |n, _| if n == 1 { step1.clone() } else { step2.clone() },
        false,
    );
    configure(&env, &server);
    let _d = env.start_daemon();

    let out = env.run(&["ask", "--agent", "ctx", "--new", QUESTION]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("line 060000: status=ok"),
        "{}",
        stdout(&out)
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    let system = messages(&seen[0].body)[0].clone();
    assert_eq!(system["role"], "system");
    assert_within_budget(&seen, &system);
    let second = messages(&seen[1].body);
    assert!(
        second
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == QUESTION)
    );
    let observation = second.last().unwrap()["content"].as_str().unwrap();
    assert_head_and_tail(observation);
    eprintln!(
        "request 2: {} prompt tokens (o200k_base) of {CONTEXT} - {MAX_TOKENS}",
        seen[1].prompt_tokens
    );

    // Stored: the command, exit code 0 and the capped output with its marker; not 1.3 MB.
    let db = rusqlite::Connection::open_with_flags(
        env.state_dir().join("sessions.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let (content, call): (String, String) = db
        .query_row(
            "SELECT content, tool_call_json FROM messages WHERE role = 'tool'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        content, observation,
        "the stored observation is what the model saw"
    );
    let call: Value = serde_json::from_str(&call).unwrap();
    assert_eq!(call["command"], format!("cat {LOG}"));
    assert_eq!(call["exit_code"], 0);
    let output = call["output"].as_str().unwrap();
    assert!(output.starts_with("line 000001: status=ok\n"));
    assert!(output.ends_with("line 060000: status=ok\n"));
    assert!(
        output.contains(" bytes omitted …]\n"),
        "no marker in the stored output"
    );
    let row_bytes: i64 = db
        .query_row(
            "SELECT SUM(LENGTH(content) + LENGTH(COALESCE(tool_call_json, ''))) FROM messages",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(row_bytes < 200_000, "{row_bytes} bytes stored");

    // `sayri sessions show` displays the stored capture.
    let sid = db
        .query_row("SELECT id FROM sessions", [], |r| r.get::<_, String>(0))
        .unwrap();
    let shown = env.run(&["sessions", "show", &sid]);
    assert!(
        stdout(&shown).contains(&format!("$ cat {LOG} → exit 0")),
        "{}",
        stdout(&shown)
    );
    assert!(stdout(&shown).contains("    line 060000: status=ok"));
}

#[test]
fn twelve_turns_of_output_keep_every_request_within_the_context_and_the_system_prompt_first() {
    make_log();
    let env = Env::new_in("/var/tmp");
    let server = Server::start(
        |_, body| {
            let last = messages(body).last().unwrap()["content"]
                .as_str()
                .unwrap_or("");
            let text = if last.starts_with("[Command") {
                "ok".to_string()
            } else {
                format!("Reading it.\n```bash\nhead -c 8000 {LOG}\n```\n")
            };
            sse::content_stream(&[&text])
        },
        true,
    );
    configure(&env, &server);
    let _d = env.start_daemon();
    let mut session = String::new();
    for i in 1..=12 {
        let text = format!("Turn {i}: show me the start of the log.");
        let mut args = vec!["ask", "--agent", "ctx", "--json"];
        if i == 1 {
            args.push("--new");
        } else {
            args.extend(["--session", &session]);
        }
        args.push(&text);
        let out = env.run(&args);
        assert!(out.status.success(), "turn {i}: {}", stderr(&out));
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(v["text"], "ok", "turn {i}: {v}");
        session = v["session_id"].as_str().unwrap().to_string();
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 24);
    let system = messages(&seen[0].body)[0].clone();
    assert_within_budget(&seen, &system);
    let last = messages(&seen[23].body);
    assert!(
        last.iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.contains("Turn 12: show me"))),
        "the last request lost the last user message"
    );
    let replays_turn_1 = messages(&seen[23].body).iter().any(|m| {
        m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Turn 1: show me"))
    });
    assert!(!replays_turn_1, "old turns are summarised or dropped");
    eprintln!(
        "prompt tokens per request: {:?}",
        seen.iter().map(|s| s.prompt_tokens).collect::<Vec<_>>()
    );

    // The usage reports calibrated the daemon's estimate for this model.
    let status = env.run(&["status", "--json"]);
    let status: Value = serde_json::from_str(&stdout(&status)).unwrap();
    assert!(
        status["tokens"]["bytes_per_token"]["local"].is_number(),
        "{status}"
    );

    // A message that cannot fit with the system prompt is refused before anything is sent.
    let huge = "x ".repeat(15_000);
    let out = env.run(&["ask", "--agent", "ctx", "--session", &session, &huge]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("does not fit the model's context"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.seen().len(), 24, "a request was sent anyway");
}
