//! Second red-team pass on the integrated daemon: a hostile model (scripted with `sayri-testkit`)
//! against the real `sayri daemon`, its real socket, the real sandbox and the real SQLite store.

use super::support::*;
use sayri_testkit::{FakeLlm, RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The scripted model with the runtime that drives it (dropped after the server).
struct Model {
    llm: FakeLlm,
    _rt: tokio::runtime::Runtime,
}

/// Title requests (`max_tokens: 15`) get a title; every other request takes the next reply.
fn start_model(replies: Vec<Reply>) -> Model {
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let llm = rt.block_on(FakeLlm::start(script)).unwrap();
    Model { llm, _rt: rt }
}

/// `sayri.toml` for the model, and agent `hostile` at level 3 (`ask_before_run` as given).
fn setup(env: &Env, model: &Model, ask_before_run: bool, ask_timeout: u64) {
    let config = env.config_dir();
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n\
             [permissions]\nask_timeout = {ask_timeout}\npolicy_files = []\n\n\
             [agent]\ndefault_agent = \"hostile\"\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
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
fn wait_event(c: &mut RawClient, name: &str, limit: Duration) -> Option<Value> {
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
fn send_ask(c: &mut RawClient, text: &str, id: u64) {
    let line =
        json!({"cmd": "ask", "params": {"text": text, "timeout": 60}, "id": id}).to_string() + "\n";
    c.write(line.as_bytes());
}

/// Reads until the response with `id`; returns it and how long it took.
/// Connects, sends `ask {text}` as request 1, and waits up to `secs` for its permission card;
/// returns the connection and the card's request id.
fn ask_until_card(env: &Env, text: &str, secs: u64, what: &str) -> (RawClient, String) {
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

fn wait_response(c: &mut RawClient, id: u64) -> (Value, Duration) {
    let t0 = Instant::now();
    loop {
        let v = c.read_value();
        if v.get("event").is_none() && v["id"] == id {
            return (v, t0.elapsed());
        }
    }
}

fn marker_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

fn ran(marker: &Path) -> bool {
    marker.exists()
}

/// A reply whose first block holds a 1 MiB command and is followed by 10 000 more blocks: one
/// card (for the first block only), `interrupt` settles it, nothing runs, and a late answer to
/// the settled card is not delivered.
#[test]
fn a_flood_reply_raises_one_card_and_interrupt_settles_it_without_running() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let mut text = format!("Sure.\n```bash\ntouch {} # ", marker.display());
    text.push_str(&"A".repeat(1 << 20));
    text.push_str("\n```\n~~~bash\ntouch x\n~~~\r\n```bash\r\ntouch y\r\n```\r\n");
    for i in 0..10_000 {
        text.push_str(&format!("```bash\necho {i}\n```\n"));
    }
    text.push_str("```bash\nunterminated");
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&text]))]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let d = env.start_daemon();
    let (mut c, id) = ask_until_card(&env, "go", 20, "a card for the first block");
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("interrupt", json!({}), 9);
    assert_eq!(r["result"]["interrupted"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 1);
    assert!(resp["result"]["error"].is_string(), "{resp}");
    let r = o.call(
        "permission_answer",
        json!({"request_id": id, "allow": true}),
        10,
    );
    assert_eq!(r["result"]["delivered"], false, "{r}");
    let r = o.call("permission_list", json!({}), 11);
    assert_eq!(r["result"]["pending"], json!([]), "{r}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran(&marker), "nothing may run after an interrupt");
    eprintln!("daemon RSS after the flood: {} KiB", d.rss_kib());
}

/// A model that sends nothing but SSE comments (keep-alives) forever: `interrupt` still ends
/// the turn, and the daemon drops the model connection.
#[test]
fn interrupt_ends_an_endless_keep_alive_stream() {
    let body = ": keep-alive\n\n".repeat(100_000);
    let model = start_model(vec![
        Reply::sse(body)
            .with_write_size(14)
            .with_write_delay(Duration::from_millis(5)),
    ]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok();
    send_ask(&mut c, "go", 1);
    wait_event(&mut c, "user", Duration::from_secs(10)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("interrupt", json!({}), 9);
    assert_eq!(r["result"]["interrupted"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 1);
    assert!(resp["result"]["error"].is_string(), "{resp}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let gone = rt.block_on(model.llm.wait_for_disconnect(Duration::from_secs(5)));
    assert!(gone.is_some(), "the model connection was left open");
}

/// A `tool_calls` flood, a command with a NUL byte, and invalid UTF-8 in content: nothing
/// runs, the daemon keeps answering.
#[test]
fn tool_call_flood_nul_command_and_invalid_utf8_run_nothing() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let mut flood = Vec::new();
    for i in 0..20_000 {
        let c = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":format!("c{i}"),"type":"function","function":{"name":"bash","arguments":format!("{{\"cmd\":\"touch {}\"}}", marker.display())}}]},"finish_reason":null}]});
        flood.extend_from_slice(sse::data_event(&c).as_bytes());
    }
    flood.extend_from_slice(&sse::content_stream(&["flooded"]));
    let nul = format!("```bash\ntouch {}\u{0}\n```\n", marker.display());
    let mut bad =
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe bad\"}}]}\n\n"
            .to_vec();
    bad.extend_from_slice(&sse::content_stream(&[" end"]));
    let model = start_model(vec![
        Reply::sse(flood),
        Reply::sse(sse::content_stream(&[&nul])),
        Reply::sse(bad),
    ]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    let r = c.call("ask", json!({"text": "one", "timeout": 20}), 1);
    assert_eq!(r["result"]["text"], "flooded", "{r}");
    let r = c.call("ask", json!({"text": "two", "timeout": 20}), 2);
    assert_eq!(r["ok"], true, "{r}");
    assert!(!ran(&marker), "no tool call and no NUL-cut command may run");
    let r = c.call("ping", json!({}), 3);
    assert_eq!(r["ok"], true, "{r}");
}

/// 100 clients ask at once: exactly one turn runs, every other client gets a prompt answer
/// (busy), nobody hangs.
#[test]
fn a_hundred_concurrent_asks_get_one_turn_and_ninety_nine_busy_answers() {
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&["slow"])).with_head_delay(Duration::from_secs(2)),
    ]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let d = env.start_daemon();
    let sock = env.socket();
    // Connected first: a client that connects while a turn runs may see a broadcast event
    // before its `ready` greeting (reported separately), which `RawClient` treats as an error.
    let barrier = Arc::new(std::sync::Barrier::new(100));
    let hs: Vec<_> = (0..100)
        .map(|i| {
            let sock = sock.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut c = RawClient::connect(&sock);
                barrier.wait();
                c.writer
                    .set_read_timeout(Some(Duration::from_secs(20)))
                    .ok();
                c.call("ask", json!({"text": format!("q{i}"), "timeout": 10}), 1)
            })
        })
        .collect();
    let rs: Vec<Value> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let ok: Vec<_> = rs.iter().filter(|r| r["ok"] == true).collect();
    assert_eq!(ok.len(), 1, "{ok:?}");
    assert_eq!(ok[0]["result"]["text"], "slow");
    for r in rs.iter().filter(|r| r["ok"] != true) {
        assert!(r.to_string().to_lowercase().contains("busy"), "{r}");
    }
    eprintln!("RSS {} KiB, {} fds", d.rss_kib(), d.fd_count());
}

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

/// Clients that connect while a turn streams events still get `ready` as their first line
/// (before the fix a broadcast such as a delta or a `hint` could come first).
#[test]
fn ready_is_the_first_line_even_while_a_turn_streams() {
    let deltas: Vec<String> = (0..400).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&refs))
            .with_event_writes()
            .with_write_delay(Duration::from_millis(5)),
    ]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    send_ask(&mut c, "stream", 1);
    wait_event(&mut c, "assistant_delta", Duration::from_secs(10)).unwrap();
    // A second client keeps asking: each refused ask broadcasts a `hint` to every client.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spam = {
        let stop = stop.clone();
        let socket = env.socket();
        std::thread::spawn(move || {
            let mut b = RawClient::connect(&socket);
            let mut id = 100;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                id += 1;
                b.call("ask", json!({"text": "again"}), id);
            }
        })
    };
    // The asking client keeps reading, so it is never dropped as a slow consumer.
    let asker = std::thread::spawn(move || wait_response(&mut c, 1).0);
    let mut firsts = Vec::new();
    for _ in 0..150 {
        let s = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(s), &mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        firsts.push(v["event"].as_str().unwrap_or("").to_string());
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spam.join().unwrap();
    let resp = asker.join().unwrap();
    assert_eq!(resp["ok"], true, "{resp}");
    let wrong: Vec<_> = firsts.iter().filter(|e| *e != "ready").collect();
    assert!(
        wrong.is_empty(),
        "first lines that were not `ready`: {wrong:?}"
    );
}

/// A command of a turn (level 3, allowed by the agent's rules) that talks to the daemon's socket
/// directly, without the `sayri` CLI the baseline policy knows: it may ping, but it may not
/// point the provider elsewhere (which would send the API key there), change secrets, forget
/// approvals or stop the daemon.
#[test]
fn a_command_reaching_the_socket_directly_cannot_manage_sayri() {
    let dir = marker_dir();
    let out = dir.path().join("answers.ndjson");
    let env = Env::new();
    let script = format!(
        r#"import json, socket
s = socket.socket(socket.AF_UNIX)
s.connect({sock:?})
f = s.makefile("rwb")
f.readline()
reqs = [
    {{"cmd": "ping", "id": 1}},
    {{"cmd": "config_set", "params": {{"key": "provider.base_url", "value": "http://127.0.0.1:9/v1"}}, "id": 2}},
    {{"cmd": "vault_set", "params": {{"key": "PLANTED", "value": "x"}}, "id": 3}},
    {{"cmd": "permission_forget", "params": {{}}, "id": 4}},
    {{"cmd": "session_delete", "params": {{"session_id": "x"}}, "id": 5}},
    {{"cmd": "quit", "id": 6}},
]
with open({out:?}, "w") as o:
    for r in reqs:
        f.write((json.dumps(r) + "\n").encode()); f.flush()
        while True:
            v = json.loads(f.readline())
            if "event" not in v:
                break
        o.write(json.dumps(v) + "\n")
"#,
        sock = env.socket().display().to_string(),
        out = out.display().to_string(),
    );
    let probe = dir.path().join("probe.py");
    std::fs::write(&probe, script).unwrap();
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&format!(
        "```bash\npython3 {}\n```\n",
        probe.display()
    )]))]);
    setup(&env, &model, false, 30);
    let mut d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    let r = c.call("ask", json!({"text": "go", "timeout": 20}), 1);
    assert_eq!(r["ok"], true, "{r}");
    let answers: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| {
            panic!(
                "the probe wrote no answers ({e}); daemon log: {}",
                d.log_text()
            )
        })
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 6, "{answers:?}");
    assert_eq!(answers[0]["ok"], true, "ping is fine: {}", answers[0]);
    for a in &answers[1..] {
        assert_eq!(
            a["ok"], false,
            "a management command from a command went through: {a}"
        );
        assert_eq!(a["code"], "denied", "{a}");
    }
    let r = c.call("config_get", json!({"key": "provider.base_url"}), 2);
    assert_eq!(r["result"]["value"], json!(model.llm.base_url()), "{r}");
    assert!(
        d.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the daemon was stopped"
    );
    // The user's own CLI still manages Sayri.
    let o = env.run(&["config", "set", "provider.retries", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
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

/// `new_conversation` while a permission card is open ends the turn like `interrupt`: the card
/// is settled for every client, a late `allow` is not delivered, and nothing runs.
#[test]
fn new_conversation_while_a_card_is_open_settles_it_and_runs_nothing() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&format!(
        "```bash\ntouch {}\n```\n",
        marker.display()
    )]))]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    send_ask(&mut c, "go", 1);
    let card = wait_event(&mut c, "permission_request", Duration::from_secs(15)).unwrap();
    let id = card["request"]["id"].as_str().unwrap().to_string();
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("new_conversation", json!({}), 2);
    assert_eq!(r["ok"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 1);
    assert_eq!(resp["ok"], true, "{resp}");
    let r = o.call("permission_list", json!({}), 3);
    assert_eq!(
        r["result"]["pending"],
        json!([]),
        "the card is still open: {r}"
    );
    let r = o.call(
        "permission_answer",
        json!({"request_id": id, "allow": true}),
        4,
    );
    assert_eq!(r["result"]["delivered"], false, "{r}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran(&marker), "a command ran after its turn ended");
}

/// The daemon stops while a card is open and starts again: the command never runs, the new
/// daemon has no pending card, and the old card's id is not delivered.
#[test]
fn a_restart_while_a_card_is_open_runs_nothing_and_forgets_the_card() {
    let dir = marker_dir();
    let marker = dir.path().join("ran");
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&format!(
        "```bash\ntouch {}\n```\n",
        marker.display()
    )]))]);
    let env = Env::new();
    setup(&env, &model, true, 30);
    let mut d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    send_ask(&mut c, "go", 1);
    let card = wait_event(&mut c, "permission_request", Duration::from_secs(15)).unwrap();
    let id = card["request"]["id"].as_str().unwrap().to_string();
    assert!(
        d.terminate(Duration::from_secs(10)).is_some(),
        "the daemon did not stop"
    );
    drop(c);
    let _d2 = env.start_daemon();
    let mut o = RawClient::connect(&env.socket());
    let r = o.call("permission_list", json!({}), 1);
    assert_eq!(r["result"]["pending"], json!([]), "{r}");
    let r = o.call(
        "permission_answer",
        json!({"request_id": id, "allow": true, "remember": true}),
        2,
    );
    assert_eq!(r["result"]["delivered"], false, "{r}");
    let r = o.call("permission_list", json!({}), 3);
    assert_eq!(
        r["result"]["approvals"],
        json!({}),
        "a stale answer was remembered: {r}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ran(&marker), "the command ran across a restart");
}

/// A model answer larger than the 1 MiB request-line limit still reaches `sayri ask`: the
/// daemon's own lines to its client are not bound by the limit on requests.
#[test]
fn sayri_ask_prints_an_answer_larger_than_one_mib() {
    let big = "word ".repeat(300_000);
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&big]))]);
    let env = Env::new();
    setup(&env, &model, false, 30);
    let _d = env.start_daemon();
    let o = env.run(&["ask", "--timeout", "30", "talk a lot"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).trim_end().len() >= big.trim_end().len(),
        "{} bytes",
        stdout(&o).len()
    );
}
