//! The agent turn end to end: the real `sayri` daemon over its real
//! socket, the real sandbox, the real SQLite file, and a scripted OpenAI-compatible server on
//! loopback (`sayri_testkit::FakeLlm`) whose recorded request bodies are asserted — plus one
//! turn answered by a real local model.
//!
//! The scripted model decides each reply from the request it receives: the current request text
//! (the last user message that is not an observation) and the step (assistant messages after
//! it). The session-title request the daemon makes after a new session's first answer is told
//! apart by its own system prompt and left out of the step counts.

use super::support::{Env, RawClient, eventually, stderr, stdout};
use sayri_testkit::turns::{is_title_request as is_title, last_content, request_and_step};
use sayri_testkit::{FakeLlm, RealModelServer, RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A scripted model server with its own runtime, so the tests stay synchronous.
struct Llm {
    server: FakeLlm,
    _rt: tokio::runtime::Runtime,
}

impl Llm {
    fn start(script: Script) -> Llm {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(FakeLlm::start(script)).unwrap();
        Llm { server, _rt: rt }
    }

    /// Bodies of the turn requests (title requests left out), in arrival order.
    fn turn_bodies(&self) -> Vec<Value> {
        self.server
            .chat_bodies()
            .into_iter()
            .filter(|b| !is_title(b))
            .collect()
    }
}

/// A model that answers turn requests with `f(request text, step)` and title requests with a
/// fixed title.
fn react(f: impl Fn(&str, usize) -> Reply + Send + 'static) -> Script {
    Script::from_fn(move |req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title(&body) {
            return say("Agent turn test");
        }
        let (text, step) = request_and_step(&body);
        f(&text, step)
    })
}

/// A streamed answer, in deltas of 7 characters (so fences arrive split).
fn say(text: &str) -> Reply {
    let chars: Vec<char> = text.chars().collect();
    let pieces: Vec<String> = chars.chunks(7).map(|c| c.iter().collect()).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    Reply::sse(sse::content_stream(&refs))
}

/// Writes `sayri.toml` pointing at `base_url`, plus `extra` TOML tables.
fn configure(env: &Env, base_url: &str, model: &str, extra: &str) {
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!("[provider]\nbase_url = \"{base_url}\"\nmodel = \"{model}\"\nretries = 0\n{extra}"),
    )
    .unwrap();
}

/// Writes `$CONFIG/agents/<id>.json`.
fn write_agent(env: &Env, id: &str, profile: Value) {
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{id}.json")),
        serde_json::to_string_pretty(&profile).unwrap(),
    )
    .unwrap();
}

/// An agent profile at `level` with temperature 0.5 (exact in f32) and extra sandbox fields.
fn agent(id: &str, level: &str, sandbox_extra: Value) -> Value {
    let mut sandbox = json!({"level": level, "allow_network": false, "timeout_seconds": 20});
    if let (Value::Object(s), Value::Object(extra)) = (&mut sandbox, sandbox_extra) {
        s.extend(extra);
    }
    json!({"id": id, "name": format!("Agent {id}"), "model": {"temperature": 0.5}, "sandbox": sandbox})
}

/// The system prompt `sayri prompt show --agent ID` prints (independent of the daemon).
fn prompt_show(env: &Env, id: &str) -> String {
    let out = env.run(&["prompt", "show", "--agent", id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = stdout(&out);
    s.strip_suffix('\n').unwrap_or(&s).to_string()
}

/// The body the LLM client sends for `messages` at temperature 0.5 and the default 512 tokens.
fn expected_body(messages: Value) -> Value {
    json!({
        "model": "fake-model",
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0.5,
        "max_tokens": 512,
    })
}

fn msg(role: &str, content: &str) -> Value {
    json!({"role": role, "content": content})
}

/// Reads events until one named `name` satisfies `pred`; returns every event read, that one last.
fn read_until(c: &mut RawClient, name: &str, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let v = c.read_value();
        let hit = v["event"] == name && pred(&v);
        seen.push(v);
        if hit {
            return seen;
        }
    }
}

fn pgrep(pattern: &str) -> String {
    let out = Command::new("pgrep")
        .args(["-a", "-f", pattern])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const STEP1: &str = "Let me compute it.\n```bash\necho sayri-$((6*7))\n```\n";
const FINAL: &str = "The answer is sayri-42.";
const QUESTION: &str = "What is six times seven?";

/// A two-step turn at `level`: one real command in the real sandbox, then the answer.
fn multi_step_turn(level: &str, env: &Env, llm: &Llm) {
    let system = prompt_show(env, "worker");
    assert!(!system.is_empty());
    let out = env.run(&["ask", "--agent", "worker", QUESTION]);
    let (so, se) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{level}: exit {:?}\n{se}", out.status);
    // The answer on stdout; the block itself is never streamed as text.
    assert!(
        so.ends_with(&format!("{FINAL}\n")),
        "{level}: stdout {so:?}"
    );
    assert!(so.starts_with("Let me compute it."), "{level}: {so:?}");
    assert!(
        !so.contains("echo"),
        "{level}: the block leaked into stdout: {so:?}"
    );
    // The tool step on stderr, with the real output.
    assert!(
        se.contains("$ echo sayri-$((6*7))\n"),
        "{level}: stderr {se:?}"
    );
    assert!(se.contains("→ exit 0: sayri-42"), "{level}: stderr {se:?}");

    let bodies = llm.turn_bodies();
    assert_eq!(bodies.len(), 2, "{level}: {bodies:#?}");
    let first = vec![msg("system", &system), msg("user", QUESTION)];
    assert_eq!(bodies[0], expected_body(json!(first)), "{level}");
    // The output stands inside the turn's random boundary, under a header naming the command.
    let sent = last_content(&bodies[1]);
    let start = sent
        .find("<data-")
        .unwrap_or_else(|| panic!("{level}: not framed: {sent}"));
    let tag = &sent[start + 1..start + 18];
    assert!(
        tag[5..].chars().all(|c| c.is_ascii_hexdigit()),
        "{level}: {tag}"
    );
    let observation = format!(
        "[Command result: exit code 0] `echo sayri-$((6*7))` printed:\n<{tag}>\nsayri-42\n</{tag}>\nAnswer the user from this result, or run the next command."
    );
    let mut second = first.clone();
    second.push(msg("assistant", STEP1));
    second.push(msg("user", &observation));
    assert_eq!(bodies[1], expected_body(json!(second)), "{level}");
}

fn step_model(home_file: String) -> Script {
    react(move |text, step| match (text, step) {
        (QUESTION, 0) => say(STEP1),
        (QUESTION, _) => say(FINAL),
        (_, 0) => say(&format!(
            "I will try.\n```bash\ntouch {home_file} && echo wrote\n```\n"
        )),
        _ => say("Writing failed."),
    })
}

#[test]
fn multi_step_turn_at_level_1_runs_read_only_and_isolated() {
    let env = Env::new_in("/var/tmp");
    let home_file = env.dir.path().join("x");
    let llm = Llm::start(step_model(home_file.display().to_string()));
    configure(&env, &llm.server.base_url(), "fake-model", "");
    write_agent(
        &env,
        "worker",
        agent("worker", "LEVEL_1_READONLY", json!({})),
    );
    let _d = env.start_daemon();
    multi_step_turn("L1", &env, &llm);

    // Isolation: a write into $HOME fails inside the sandbox and nothing appears on the host.
    let before = llm.turn_bodies().len();
    let out = env.run(&["ask", "--new", "Write a file in my home."]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with("Writing failed.\n"),
        "{}",
        stdout(&out)
    );
    assert!(!home_file.exists(), "L1 wrote {}", home_file.display());
    let bodies = llm.turn_bodies();
    assert_eq!(bodies.len(), before + 2);
    let obs = last_content(&bodies[before + 1]);
    assert!(
        obs.starts_with("[Command FAILED: exit code 1] `touch "),
        "observation: {obs}"
    );
    assert!(
        obs.contains("Read-only file system") || obs.contains("Permission denied"),
        "observation: {obs}"
    );
    let printed = obs.split_once("printed:\n").map_or("", |(_, p)| p);
    assert!(!printed.contains("wrote"), "observation: {obs}");
}

#[test]
fn multi_step_turn_at_level_3_runs_on_the_host() {
    let env = Env::new_in("/var/tmp");
    let home_file = env.dir.path().join("x");
    let llm = Llm::start(step_model(home_file.display().to_string()));
    configure(&env, &llm.server.base_url(), "fake-model", "");
    write_agent(
        &env,
        "worker",
        agent("worker", "LEVEL_3_HOST_USER", json!({})),
    );
    let _d = env.start_daemon();
    multi_step_turn("L3", &env, &llm);

    // Contrast with level 1: at level 3 the same write lands on the host.
    let out = env.run(&["ask", "--new", "Write a file in my home."]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        home_file.exists(),
        "L3 should write {}",
        home_file.display()
    );
    let bodies = llm.turn_bodies();
    let obs = last_content(&bodies[bodies.len() - 1]);
    assert!(
        obs.starts_with("[Command result: exit code 0]") && obs.contains(">\nwrote\n"),
        "{obs}"
    );
}

/// A model that proposes `touch MARKER` once, then answers.
fn touch_model(marker: String, answer: &'static str) -> Script {
    react(move |_, step| match step {
        0 => say(&format!("```bash\ntouch {marker}\n```")),
        _ => say(answer),
    })
}

#[test]
fn a_denied_command_never_runs_and_the_model_hears_which_rule_refused_it() {
    let env = Env::new_in("/var/tmp");
    let marker = env.dir.path().join("denied-marker");
    let llm = Llm::start(touch_model(marker.display().to_string(), "It was refused."));
    configure(&env, &llm.server.base_url(), "fake-model", "");
    write_agent(
        &env,
        "guarded",
        agent(
            "guarded",
            "LEVEL_3_HOST_USER",
            json!({"permission_rules": [
                {"action": "shell", "resource": "ls *", "effect": "allow"},
                {"action": "shell", "resource": "touch *", "effect": "deny"},
            ]}),
        ),
    );
    let _d = env.start_daemon();
    let out = env.run(&["ask", "--agent", "guarded", "Create the marker."]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).ends_with("It was refused.\n"));
    assert!(stderr(&out).contains(&format!("$ touch {}", marker.display())));
    assert!(stderr(&out).contains("→ exit 126"), "{}", stderr(&out));
    assert!(!marker.exists(), "a denied command ran");

    let bodies = llm.turn_bodies();
    assert_eq!(bodies.len(), 2);
    let obs = last_content(&bodies[1]);
    assert!(obs.starts_with("[Command NOT RUN: refused]\n"), "{obs}");
    assert!(obs.contains("agent rule #1: touch *"), "{obs}");
    assert!(obs.contains("Do not retry"), "{obs}");
}

#[test]
fn an_unanswered_question_times_out_runs_nothing_and_is_resolved_for_every_client() {
    let env = Env::new_in("/var/tmp");
    let marker = env.dir.path().join("asked-marker");
    let llm = Llm::start(touch_model(
        marker.display().to_string(),
        "Nobody approved it.",
    ));
    configure(
        &env,
        &llm.server.base_url(),
        "fake-model",
        "[permissions]\nask_timeout = 2\n",
    );
    write_agent(
        &env,
        "careful",
        agent(
            "careful",
            "LEVEL_3_HOST_USER",
            json!({"ask_before_run": true, "permission_rules": [
                {"action": "shell", "resource": "touch *", "effect": "ask"},
            ]}),
        ),
    );
    let _d = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    let ask = env
        .cmd()
        .args(["ask", "--agent", "careful", "Create the marker."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = read_until(&mut watcher, "permission_request", |_| true);
    let request = seen.last().unwrap()["request"].clone();
    assert_eq!(request["action"], "shell", "{request}");
    assert_eq!(
        request["resource"],
        format!("touch {}", marker.display()),
        "{request}"
    );
    let id = request["id"].as_str().unwrap().to_string();
    // Nobody answers: the broker resolves it when ask_timeout passes.
    let asked_at = Instant::now();
    let seen = read_until(&mut watcher, "permission_resolved", |v| {
        v["request_id"] == id
    });
    let waited = asked_at.elapsed();
    assert!(
        !seen
            .iter()
            .any(|v| v["event"] == "tool_finish" && v["exit_code"] == 0),
        "{seen:?}"
    );
    let out = ask.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("? permission needed for `touch"),
        "{}",
        stderr(&out)
    );
    assert!(!marker.exists(), "an unanswered command ran");
    let bodies = llm.turn_bodies();
    assert_eq!(bodies.len(), 2);
    let obs = last_content(&bodies[1]);
    assert!(obs.starts_with("[Command NOT RUN: refused]\n"), "{obs}");
    assert!(obs.contains("nobody answered within 2 s"), "{obs}");
    eprintln!("permission_resolved {waited:?} after the request was seen (ask_timeout 2 s)");
}

#[test]
fn interrupt_kills_the_running_command_and_ends_the_turn() {
    let env = Env::new_in("/var/tmp");
    let marker = env.dir.path().join("late-marker");
    // A sleep length no other test uses, so pgrep finds only ours.
    let sleep = "sleep 30.0606";
    let command = format!("{sleep}; touch {}", marker.display());
    let block = format!("Waiting.\n```bash\n{command}\n```\n");
    let llm = Llm::start(react(move |_, _| say(&block)));
    configure(&env, &llm.server.base_url(), "fake-model", "");
    write_agent(
        &env,
        "slow",
        agent("slow", "LEVEL_3_HOST_USER", json!({"timeout_seconds": 60})),
    );
    let _d = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    let ask = env
        .cmd()
        .args(["ask", "--agent", "slow", "Wait a while."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    read_until(&mut watcher, "tool_start", |v| v["command"] == command);
    assert!(
        eventually(Duration::from_secs(5), || pgrep(sleep).contains(sleep)),
        "the command never started"
    );

    let mut other = RawClient::connect(&env.socket());
    let t0 = Instant::now();
    let r = other.call("interrupt", json!({}), 1);
    assert_eq!(r["result"]["interrupted"], true, "{r}");
    let out = ask.wait_with_output().unwrap();
    let ended = t0.elapsed();
    assert!(
        eventually(Duration::from_secs(2), || pgrep(sleep).is_empty()),
        "the command survived the interrupt: {}",
        pgrep(sleep)
    );
    assert!(!out.status.success(), "an interrupted ask is not an answer");
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));

    // Nothing of the interrupted turn reaches clients after `interrupt` returned, and no further
    // model request is made.
    watcher
        .reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let mut after = Vec::new();
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut watcher.reader, &mut line).is_ok_and(|n| n > 0) {
        after.push(serde_json::from_str::<Value>(&line).unwrap());
        line.clear();
    }
    for v in &after {
        let name = v["event"].as_str().unwrap_or_default();
        assert!(
            !matches!(
                name,
                "tool_finish" | "assistant_delta" | "assistant_done" | "tool_start"
            ),
            "stale event after interrupt: {v}"
        );
    }
    assert_eq!(
        llm.turn_bodies().len(),
        1,
        "a model request followed the interrupt"
    );
    assert!(!marker.exists());
    eprintln!("ask ended {ended:?} after interrupt was sent");
}

#[test]
fn the_step_cap_stops_after_six_model_calls_and_says_what_was_not_run() {
    let env = Env::new_in("/var/tmp");
    let counter = env.dir.path().join("count");
    let path = counter.display().to_string();
    // A different command at every step, so the repetition guard never steps in.
    let llm = Llm::start(react(move |_, step| {
        say(&format!(
            "Once more.\n```bash\necho x{step} >> {path}\n```\n"
        ))
    }));
    configure(&env, &llm.server.base_url(), "fake-model", "");
    write_agent(&env, "loop", agent("loop", "LEVEL_3_HOST_USER", json!({})));
    let _d = env.start_daemon();
    let out = env.run(&["ask", "--agent", "loop", "Keep going."]);
    assert!(out.status.success(), "{}", stderr(&out));
    let so = stdout(&out);
    assert_eq!(llm.turn_bodies().len(), 6);
    assert!(
        so.contains(&format!(
            "this command was not run: `echo x5 >> {}`",
            counter.display()
        )),
        "{so}"
    );
    // Five commands ran (steps 1–5); the sixth block did not.
    let runs = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(runs.lines().count(), 5, "{runs:?}");
    assert_eq!(stderr(&out).matches("$ echo x").count(), 5);
}

#[test]
fn a_block_in_reasoning_never_runs_and_never_replays() {
    let env = Env::new_in("/var/tmp");
    let m1 = env.dir.path().join("reasoning-marker");
    let m2 = env.dir.path().join("think-marker");
    let (p1, p2) = (m1.display().to_string(), m2.display().to_string());
    let llm = Llm::start(react(move |text, _| match text {
        "First question." => {
            let mut s = sse::data_event(&sse::chunk(json!({"role": "assistant"}), None));
            for piece in [
                "I could run\n```bash\n",
                &format!("touch {p1}\n"),
                "```\nbut no need.",
            ] {
                s.push_str(&sse::data_event(&sse::chunk(
                    json!({"reasoning_content": piece}),
                    None,
                )));
            }
            s.push_str(&sse::data_event(&sse::chunk(
                json!({"content": "Four."}),
                None,
            )));
            s.push_str(&sse::data_event(&sse::chunk(json!({}), Some("stop"))));
            s.push_str(sse::DONE);
            Reply::sse(s)
        }
        "Second question." => say(&format!(
            "<think>maybe\n```bash\ntouch {p2}\n```\n</think>Five."
        )),
        _ => say("Six."),
    }));
    configure(&env, &llm.server.base_url(), "fake-model", "");
    write_agent(
        &env,
        "thinker",
        agent("thinker", "LEVEL_3_HOST_USER", json!({})),
    );
    let _d = env.start_daemon();
    for (q, a) in [
        ("First question.", "Four."),
        ("Second question.", "Five."),
        ("Third question.", "Six."),
    ] {
        let out = env.run(&["ask", "--agent", "thinker", q]);
        assert!(out.status.success(), "{q}: {}", stderr(&out));
        assert!(
            stdout(&out).trim_end().ends_with(a),
            "{q}: {:?}",
            stdout(&out)
        );
        assert!(!stderr(&out).contains("$ touch"), "{q}: {}", stderr(&out));
    }
    assert!(!m1.exists(), "a block in reasoning_content ran");
    assert!(!m2.exists(), "a block inside <think> ran");
    let bodies = llm.turn_bodies();
    assert_eq!(bodies.len(), 3, "one model call per question: {bodies:#?}");
    for (i, b) in bodies.iter().enumerate() {
        let text = b.to_string();
        assert!(
            !text.contains("touch"),
            "request {i} replays a block: {text}"
        );
        assert!(
            !text.contains("<think>"),
            "request {i} replays <think>: {text}"
        );
    }
    // The answers themselves are replayed, so the history is there.
    let third: Vec<Value> = bodies[2]["messages"].as_array().unwrap()[1..].to_vec();
    assert_eq!(
        third,
        vec![
            msg("user", "First question."),
            msg("assistant", "Four."),
            msg("user", "Second question."),
            msg("assistant", "Five."),
            msg("user", "Third question."),
        ]
    );
}

#[test]
fn two_clients_see_identical_event_streams() {
    let env = Env::new_in("/var/tmp");
    let llm = Llm::start(react(|_, step| match step {
        0 => say(STEP1),
        _ => say(FINAL),
    }));
    configure(&env, &llm.server.base_url(), "fake-model", "");
    write_agent(
        &env,
        "worker",
        agent("worker", "LEVEL_1_READONLY", json!({})),
    );
    let _d = env.start_daemon();
    let mut a = RawClient::connect(&env.socket());
    let mut b = RawClient::connect(&env.socket());
    let out = env.run(&["ask", "--agent", "worker", QUESTION]);
    assert!(out.status.success(), "{}", stderr(&out));
    let turn = |c: &mut RawClient| -> Vec<Value> {
        read_until(c, "busy", |v| v["active"] == true);
        let mut evs = read_until(c, "busy", |v| v["active"] == false);
        evs.retain(|v| v["event"] != "busy");
        evs
    };
    let (ea, eb) = (turn(&mut a), turn(&mut b));
    assert_eq!(ea, eb);
    let names: Vec<&str> = ea.iter().filter_map(|v| v["event"].as_str()).collect();
    for n in [
        "state",
        "user",
        "assistant_delta",
        "tool_start",
        "tool_finish",
        "assistant_done",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let finish = ea.iter().find(|v| v["event"] == "tool_finish").unwrap();
    assert_eq!(finish["exit_code"], 0);
    assert_eq!(finish["output"].as_str().unwrap().trim(), "sayri-42");
    let done = ea.iter().find(|v| v["event"] == "assistant_done").unwrap();
    assert_eq!(done["text"], FINAL);
}

#[test]
fn a_real_local_model_answers_through_the_daemon_and_the_session_is_stored() {
    let server = RealModelServer::start().unwrap_or_else(|e| {
        panic!("the real-model test needs the test model: {e} (run ./scripts/setup --tests)")
    });
    let env = Env::new_in("/var/tmp");
    configure(&env, &server.base_url(), server.model_id(), "");
    // The first-run agent (its id and name are in the prompt), decoding greedy as the bundled
    // model does: the 135M model's answer depends on every word of the prompt, and this is the
    // prompt whose answer BENCHMARKS.md's model table pins (10 of 10).
    write_agent(
        &env,
        "default",
        json!({
            "id": "default", "name": "Main Sayri",
            "model": {"temperature": 0.0},
            "sandbox": {"level": "LEVEL_1_READONLY", "allow_network": false},
        }),
    );
    let _d = env.start_daemon();
    let question = "What is the capital of France?";
    let out = env.run(&[
        "ask",
        "--agent",
        "default",
        "--json",
        "--timeout",
        "120",
        question,
    ]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let answer = result["text"].as_str().unwrap();
    assert!(answer.contains("Paris"), "answer: {answer:?}");
    let sid = result["session_id"].as_str().unwrap().to_string();

    // Through the daemon.
    let out = env.run(&["sessions", "show", &sid, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let session: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(session["agent_id"], "default", "{session}");
    let msgs = session["messages"].as_array().unwrap();
    assert_eq!(msgs.first().unwrap()["role"], "user");
    assert_eq!(msgs.first().unwrap()["content"], question);
    assert_eq!(msgs.last().unwrap()["role"], "assistant");
    assert_eq!(msgs.last().unwrap()["content"], answer);

    // In the SQLite file itself, opened read-only.
    assert_stored(&env.state_dir().join("sessions.db"), &sid, question, answer);
}

fn assert_stored(db: &Path, sid: &str, question: &str, answer: &str) {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    let agent: String = conn
        .query_row("SELECT agent_id FROM sessions WHERE id = ?1", [sid], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(agent, "default");
    let mut stmt = conn
        .prepare("SELECT role, content FROM messages WHERE session_id = ?1 ORDER BY id")
        .unwrap();
    let rows: Vec<(String, String)> = stmt
        .query_map([sid], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows.first(),
        Some(&("user".to_string(), question.to_string())),
        "{rows:?}"
    );
    assert_eq!(
        rows.last(),
        Some(&("assistant".to_string(), answer.to_string())),
        "{rows:?}"
    );
}
