//! Secrets through the daemon: a canary secret printed by real commands in every encoding never
//! reaches the model, the database, the log or any client; the provider key lives in the vault
//! and is masked where an error message echoes it; output that wraps or splits a secret is
//! masked; the IPC surface never returns plaintext; a tampered vault file is refused.
//!
//! Every test runs the real `sayri daemon` process (foreground, `RUST_LOG=debug`, stderr to a
//! file), a scripted OpenAI-compatible server on loopback, the real sandbox at level 3 and the
//! real SQLite file, and scans bytes after the daemon stopped.

use super::support::*;
use base64::Engine as _;
use sayri_testkit::{FakeLlm, RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Secrets and the forms they may leak in

/// Bytes from the kernel's CSPRNG.
fn random_bytes(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b
}

/// A random canary of 32 characters with letters, digits and symbols. No quote, backslash,
/// whitespace or glob character, so `echo $KEY` prints it unchanged. No `@` either: a URL
/// parser (git, in the URL command) splits userinfo at it and prints only the part after
/// it, a fragment no redactor can tell from other text (a known limit, see the vault README).
fn canary() -> String {
    const ALNUM: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    const SYMBOLS: &[u8] = b"~+/-_.!#%^&=:,";
    let r = random_bytes(64);
    let mut s = String::from("cy");
    for (i, b) in r.iter().take(30).enumerate() {
        // Every third character a symbol, so every 8-character window holds some.
        let set = if i % 3 == 1 { SYMBOLS } else { ALNUM };
        s.push(set[*b as usize % set.len()] as char);
    }
    s
}

/// `sk-local-` and 16 random alphanumerics (the shape of a local provider's key).
fn provider_key() -> String {
    const ALNUM: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let tail: String = random_bytes(16)
        .iter()
        .map(|b| ALNUM[*b as usize % ALNUM.len()] as char)
        .collect();
    format!("sk-local-{tail}")
}

/// The characters of `enc` that depend only on `secret`'s bytes when `secret` starts `offset`
/// bytes into a longer base64 encoding (both alphabets).
fn base64_cores(secret: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut input = vec![0u8; offset];
        input.extend_from_slice(secret);
        let enc = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&input);
        let start = (8 * offset).div_ceil(6);
        let end = 8 * (offset + secret.len()) / 6;
        let core = enc[start..end].to_string();
        out.push(core.replace('+', "-").replace('/', "_"));
        out.push(core);
    }
    out
}

/// Percent-encoding as Python's `urllib.parse.quote` does it (`/` and unreserved kept), in
/// both hex cases.
fn url_forms(secret: &str) -> Vec<String> {
    let mut upper = String::new();
    for b in secret.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~/".contains(&b) {
            upper.push(b as char);
        } else {
            upper.push_str(&format!("%{b:02X}"));
        }
    }
    let mut lower = String::new();
    for b in secret.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~/".contains(&b) {
            lower.push(b as char);
        } else {
            lower.push_str(&format!("%{b:02x}"));
        }
    }
    vec![upper, lower]
}

/// Every form of `secret` that must not appear: plain, base64 at each offset (std and
/// url-safe), hex lower/upper, percent-encoded.
fn forms(secret: &str) -> Vec<(String, String)> {
    let mut v = vec![("plain".to_string(), secret.to_string())];
    for (i, f) in base64_cores(secret.as_bytes()).into_iter().enumerate() {
        v.push((format!("base64#{i}"), f));
    }
    v.push(("hex".into(), hex::encode(secret)));
    v.push(("HEX".into(), hex::encode_upper(secret)));
    for (i, f) in url_forms(secret).into_iter().enumerate() {
        v.push((format!("url#{i}"), f));
    }
    v
}

/// Which forms of `secret` occur in `hay`: the forms above in the bytes as they are, and —
/// after removing line breaks, raw or JSON-escaped (`\n`, `\r`) — any 8-character piece of the
/// secret. Returns descriptions of the hits (empty = clean).
fn leaks(hay: &[u8], secret: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(hay);
    let mut hits = Vec::new();
    for (name, f) in forms(secret) {
        if text.contains(&f) {
            hits.push(format!("{name} form {f:?}"));
        }
    }
    let flat = text
        .replace(['\n', '\r'], "")
        .replace("\\n", "")
        .replace("\\r", "");
    let chars: Vec<char> = secret.chars().collect();
    for w in chars.windows(8) {
        let piece: String = w.iter().collect();
        if flat.contains(&piece) {
            hits.push(format!("8-char piece {piece:?}"));
            break;
        }
    }
    hits
}

fn assert_clean(what: &str, hay: &[u8], secret: &str) {
    let hits = leaks(hay, secret);
    assert!(
        hits.is_empty(),
        "{what} leaks the secret {secret:?}: {hits:?}\n--- {what} ---\n{}",
        String::from_utf8_lossy(hay)
    );
}

/// Bytes of every existing file among `paths`.
fn file_bytes(paths: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok().map(|b| (p.clone(), b)))
        .collect()
}

fn db_files(env: &Env) -> Vec<PathBuf> {
    ["sessions.db", "sessions.db-wal", "sessions.db-shm"]
        .iter()
        .map(|n| env.state_dir().join(n))
        .collect()
}

/// `$CONFIG/vault.*` files.
fn vault_files(env: &Env) -> Vec<PathBuf> {
    std::fs::read_dir(env.config_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vault."))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Rig: scripted model server, config, agents, a debug-logging daemon, listening clients

const MARKER_CANARY: &str = "$SECRET:CANARY_TOKEN";

/// A scripted model: title requests (`max_tokens: 15`) get a title; every other request takes
/// the next reply from the queue.
fn scripted(replies: Vec<Reply>) -> Script {
    let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
    Script::from_fn(move |req: &RecordedRequest| {
        let is_title = req
            .json()
            .is_some_and(|v| v.get("max_tokens") == Some(&json!(15)));
        if is_title {
            return Reply::sse(sse::content_stream(&["Canary check"]));
        }
        queue.lock().unwrap().pop_front().unwrap_or_else(|| {
            Reply::json(
                500,
                &json!({"error": {"message": "vault_canary: script exhausted"}}),
            )
        })
    })
}

/// A streamed reply that runs `command` in one `bash` block.
fn run_reply(command: &str) -> Reply {
    Reply::sse(sse::content_stream(&[
        "Let me check.\n```bash\n",
        command,
        "\n```\n",
    ]))
}

fn answer_reply(text: &str) -> Reply {
    Reply::sse(sse::content_stream(&[text]))
}

/// `sayri.toml` pointing at `base_url`, plus `extra` lines in `[provider]`.
fn write_config(env: &Env, base_url: &str, extra_provider: &str) {
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\nretries = 0\n{extra_provider}\n"
        ),
    )
    .unwrap();
}

/// `$CONFIG/agents/<id>.json` at level 3 with these allowed secrets.
fn write_agent(env: &Env, id: &str, allowed: &[&str]) {
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let profile = json!({
        "id": id,
        "name": format!("Agent {id}"),
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "ask_before_run": false,
            "timeout_seconds": 20,
        },
        "allowed_secrets": allowed,
    });
    std::fs::write(dir.join(format!("{id}.json")), profile.to_string()).unwrap();
}

/// `sayri daemon` in the foreground with `RUST_LOG=debug`, stderr to `env.daemon_log()`.
fn start_debug_daemon(env: &Env) -> Daemon {
    env.start_daemon_logging("debug")
}

/// Stops the daemon with `quit` and waits for the process to end.
fn quit_daemon(env: &Env, d: &mut Daemon) {
    let o = env.run(&["quit"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut child = d.child.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "daemon did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A connected client that records every line it receives until the daemon closes it.
struct Listener {
    lines: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    fn connect(socket: &Path) -> Listener {
        let c = RawClient::connect(socket);
        c.writer.set_read_timeout(None).unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let mut reader = c.reader;
        let writer = c.writer;
        let thread = std::thread::spawn(move || {
            let _keep = writer;
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => sink.lock().unwrap().push(line),
                }
            }
        });
        Listener {
            lines,
            thread: Some(thread),
        }
    }

    /// Waits for EOF (the daemon stopped) and returns every line received.
    fn finish(mut self) -> Vec<String> {
        let t = self.thread.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        while !t.is_finished() {
            assert!(Instant::now() < deadline, "client connection never closed");
            std::thread::sleep(Duration::from_millis(20));
        }
        t.join().unwrap();
        self.lines.lock().unwrap().clone()
    }
}

fn events(lines: &[String], name: &str) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == name)
        .collect()
}

/// Runs `sayri ARGS` with `input` on stdin.
fn run_with_stdin(env: &Env, args: &[&str], input: &str) -> Output {
    let mut child = env
        .cmd()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn ask(env: &Env, args: &[&str]) -> Output {
    let mut all = vec!["ask", "--timeout", "60"];
    all.extend_from_slice(args);
    env.run(&all)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// The text of all request bodies the model server received, one per entry.
fn bodies(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. The canary

/// Commands of turn 1 and turn 2, and what their (redacted) output must be, if exact.
const TURN1: &[&str] = &[
    "echo $CANARY_TOKEN",
    "printf %s \"$CANARY_TOKEN\" | base64",
    "printf %s \"$CANARY_TOKEN\" | xxd -p; printf %s \"$CANARY_TOKEN\" | od -An -tx1 | tr -d ' \\n' | tr a-f A-F; echo",
    "python3 -c 'import urllib.parse,os;print(urllib.parse.quote(os.environ[\"CANARY_TOKEN\"]))'",
    "printf %s \"${CANARY_TOKEN:0:10}\"; sleep 1; printf '%s\\n' \"${CANARY_TOKEN:10}\"",
];
const TURN2: &[&str] = &[
    "printf %s \"$CANARY_TOKEN\" | fold -w 8; echo",
    "printf %s \"$CANARY_TOKEN\" | fold -w 8 | sed 's/$/\\r/'",
    "echo \"using $CANARY_TOKEN\" ; echo \"error: bad token $CANARY_TOKEN\" >&2 ; exit 3",
    "python3 -c 'import os; raise RuntimeError(\"auth failed for token \" + os.environ[\"CANARY_TOKEN\"])'",
    "git ls-remote \"https://ci:${CANARY_TOKEN}@127.0.0.1:9/x.git\" 2>&1 | head -3 ; echo \"url was https://ci:${CANARY_TOKEN}@127.0.0.1:9/x.git\"",
];
const UNSET: &str = "echo ${CANARY_TOKEN:-unset}";

#[test]
fn canary_secret_in_every_form_reaches_no_request_row_log_or_event() {
    let env = Env::new();
    let secret = canary();
    let rt = runtime();
    let mut replies: Vec<Reply> = TURN1.iter().map(|c| run_reply(c)).collect();
    replies.push(answer_reply("Turn one done."));
    replies.extend(TURN2.iter().map(|c| run_reply(c)));
    replies.push(answer_reply("Turn two done."));
    replies.push(run_reply(UNSET));
    replies.push(answer_reply("Turn three done."));
    let llm = rt.block_on(FakeLlm::start(scripted(replies))).unwrap();
    write_config(&env, &llm.base_url(), "");
    write_agent(&env, "canary", &["CANARY_TOKEN"]);
    write_agent(&env, "plain", &[]);

    let mut d = start_debug_daemon(&env);
    let a = Listener::connect(&env.socket());
    let b = Listener::connect(&env.socket());

    // Stored with the local CLI while the daemon runs (value on stdin, never argv).
    let o = run_with_stdin(
        &env,
        &["vault", "set", "CANARY_TOKEN"],
        &format!("{secret}\n"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut cli_output = o.stdout.clone();
    cli_output.extend_from_slice(&o.stderr);
    // A client lists the vault first (the daemon re-reads the changed file here).
    let mut c = RawClient::connect(&env.socket());
    let r = c.call("vault_list", json!({}), 1);
    assert_eq!(r["result"][0]["key"], "CANARY_TOKEN", "{r}");
    assert_eq!(r["result"][0]["masked"], sayri_vault::mask(&secret), "{r}");
    cli_output.extend_from_slice(r.to_string().as_bytes());
    drop(c);

    let o1 = ask(&env, &["--agent", "canary", "--new", "print the token"]);
    assert_eq!(o1.status.code(), Some(0), "{}", stderr(&o1));
    assert!(stdout(&o1).contains("Turn one done."), "{}", stdout(&o1));
    let o2 = ask(&env, &["--agent", "canary", "show the token wrapped"]);
    assert_eq!(o2.status.code(), Some(0), "{}", stderr(&o2));
    assert!(stdout(&o2).contains("Turn two done."), "{}", stdout(&o2));
    let o3 = ask(&env, &["--agent", "plain", "--new", "is the token there"]);
    assert_eq!(o3.status.code(), Some(0), "{}", stderr(&o3));
    for o in [&o1, &o2, &o3] {
        cli_output.extend_from_slice(&o.stdout);
        cli_output.extend_from_slice(&o.stderr);
    }

    quit_daemon(&env, &mut d);
    let lines_a = a.finish();
    let lines_b = b.finish();
    let requests = llm.requests();
    drop(rt);

    // --- No leak anywhere.
    let chat = bodies(&requests);
    assert!(
        chat.len() >= 12,
        "expected every step to reach the model: {}",
        chat.len()
    );
    for (i, body) in chat.iter().enumerate() {
        assert_clean(&format!("request body #{i}"), body.as_bytes(), &secret);
    }
    for (path, bytes) in file_bytes(&db_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &secret);
    }
    let log = std::fs::read(env.daemon_log()).unwrap();
    assert!(
        String::from_utf8_lossy(&log).contains("DEBUG"),
        "the daemon log is at debug level"
    );
    assert_clean("daemon log", &log, &secret);
    for (name, lines) in [("client A", &lines_a), ("client B", &lines_b)] {
        assert_clean(name, lines.concat().as_bytes(), &secret);
    }
    assert_clean("CLI output", &cli_output, &secret);
    for (path, bytes) in file_bytes(&vault_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &secret);
    }

    // --- The marker stands where the secret was.
    for lines in [&lines_a, &lines_b] {
        let finishes = events(lines, "tool_finish");
        assert_eq!(
            finishes.len(),
            TURN1.len() + TURN2.len() + 1,
            "{finishes:#?}"
        );
        for (i, ev) in finishes.iter().take(TURN1.len() + TURN2.len()).enumerate() {
            let out = ev["output"].as_str().unwrap();
            assert!(out.contains(MARKER_CANARY), "step {i}: {ev}");
        }
        let exact = |i: usize| finishes[i]["output"].as_str().unwrap().trim().to_string();
        // Plain, base64, the delayed split, and both folds collapse to the marker alone.
        for i in [0, 1, 4, 5, 6] {
            assert_eq!(exact(i), MARKER_CANARY, "step {i}: {}", finishes[i]);
        }
        // Error on stderr: both lines masked, exit code kept.
        let err_step = &finishes[TURN1.len() + 2];
        assert_eq!(err_step["exit_code"], 3, "{err_step}");
        assert!(
            err_step["output"]
                .as_str()
                .unwrap()
                .contains(&format!("error: bad token {MARKER_CANARY}")),
            "{err_step}"
        );
        let tb = &finishes[TURN1.len() + 3];
        assert_eq!(tb["exit_code"], 1, "{tb}");
        assert!(
            tb["output"].as_str().unwrap().contains("RuntimeError")
                && tb["output"].as_str().unwrap().contains(MARKER_CANARY),
            "{tb}"
        );
        // A secret inside a URL that an error message repeats (git echoes the remote URL).
        let url = &finishes[TURN1.len() + 4];
        assert!(
            url["output"].as_str().unwrap().contains(&format!(
                "url was https://ci:{MARKER_CANARY}@127.0.0.1:9/x.git"
            )),
            "{url}"
        );
        // The agent without `allowed_secrets` gets no such variable.
        let unset = finishes.last().unwrap();
        assert_eq!(unset["command"], UNSET);
        assert_eq!(unset["output"].as_str().unwrap().trim(), "unset", "{unset}");
    }
    // The observations sent back to the model carry the marker too.
    let with_marker = chat.iter().filter(|b| b.contains(MARKER_CANARY)).count();
    assert!(
        with_marker >= TURN1.len(),
        "{with_marker} bodies with the marker"
    );
    let db = std::fs::read(env.state_dir().join("sessions.db")).unwrap();
    let mut db_all = db.clone();
    if let Ok(wal) = std::fs::read(env.state_dir().join("sessions.db-wal")) {
        db_all.extend_from_slice(&wal);
    }
    assert!(
        String::from_utf8_lossy(&db_all).contains(MARKER_CANARY),
        "stored tool rows carry the marker"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. The provider key

fn echo_401(key: &str) -> Reply {
    Reply::json(
        401,
        &json!({"error": {
            "message": format!("Incorrect API key provided: {key}"),
            "type": "invalid_request_error",
        }}),
    )
}

/// Whether error text shows the provider key's redaction marker where the server echoed it.
fn masked_key(text: &str) -> bool {
    text.contains("Incorrect API key provided: $SECRET:PROVIDER_API_KEY")
}

#[test]
fn provider_key_lives_in_the_vault_goes_out_as_bearer_and_is_masked_in_a_401_echo() {
    let env = Env::new();
    let key = provider_key();
    let rt = runtime();
    let llm = rt
        .block_on(FakeLlm::start(Script::repeat(echo_401(&key))))
        .unwrap();
    write_config(&env, &llm.base_url(), "");
    let mut d = start_debug_daemon(&env);
    let a = Listener::connect(&env.socket());
    let b = Listener::connect(&env.socket());

    let o = env.run(&["config", "set", "provider.api_key", &key]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_clean("`config set` output", &o.stdout, &key);
    let toml = std::fs::read(env.config_dir().join("sayri.toml")).unwrap();
    assert_clean("sayri.toml", &toml, &key);
    for (path, bytes) in file_bytes(&vault_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &key);
    }

    let o = ask(&env, &["--new", "hello"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert_clean("`sayri ask` stderr", err.as_bytes(), &key);
    assert!(masked_key(&err), "the error names the masked key: {err}");
    assert_clean("`sayri ask` stdout", &o.stdout, &key);

    // The key went out, once per request, as a bearer token.
    let requests = llm.requests();
    let chats: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert!(!chats.is_empty());
    for r in &chats {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {key}").as_str())
        );
        assert_clean("request body", &r.body, &key);
    }

    // The stored error row.
    let mut c = RawClient::connect(&env.socket());
    let st = c.call("status", json!({}), 1);
    let session = st["result"]["session_id"].as_str().unwrap().to_string();
    let s = c.call("session_get", json!({"session_id": session}), 2);
    let rows = s["result"]["messages"].to_string();
    assert!(rows.contains("⚠️"), "an error row is stored: {rows}");
    assert!(masked_key(&rows), "{rows}");
    assert_clean("session_get", rows.as_bytes(), &key);
    drop(c);

    quit_daemon(&env, &mut d);
    for (name, lines) in [("client A", a.finish()), ("client B", b.finish())] {
        let errors = events(&lines, "error");
        assert!(!errors.is_empty(), "{name} got the error event: {lines:?}");
        for e in &errors {
            assert!(masked_key(&e.to_string()), "{name}: {e}");
        }
        assert_clean(name, lines.concat().as_bytes(), &key);
    }
    assert_clean(
        "daemon log",
        &std::fs::read(env.daemon_log()).unwrap(),
        &key,
    );
    for (path, bytes) in file_bytes(&db_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &key);
    }
    for (path, bytes) in file_bytes(&vault_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &key);
    }
    drop(rt);
}

#[test]
fn a_plaintext_key_in_sayri_toml_moves_into_the_vault_on_first_start() {
    let env = Env::new();
    let key = provider_key();
    let rt = runtime();
    let llm = rt
        .block_on(FakeLlm::start(Script::repeat(answer_reply("Hi."))))
        .unwrap();
    write_config(&env, &llm.base_url(), &format!("api_key = \"{key}\""));
    assert!(
        !leaks(
            &std::fs::read(env.config_dir().join("sayri.toml")).unwrap(),
            &key
        )
        .is_empty(),
        "the fixture holds the key"
    );
    let mut d = start_debug_daemon(&env);

    let toml = std::fs::read(env.config_dir().join("sayri.toml")).unwrap();
    assert_clean("sayri.toml after the first start", &toml, &key);
    let o = env.run(&["vault", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let list = stdout(&o);
    assert!(list.contains("PROVIDER_API_KEY"), "{list}");
    assert!(list.contains(&sayri_vault::mask(&key)), "{list}");
    assert_clean("`vault list`", list.as_bytes(), &key);

    // The migrated key is the one the client sends.
    let o = ask(&env, &["--new", "hello"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let chats: Vec<_> = llm
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert!(!chats.is_empty());
    for r in &chats {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {key}").as_str())
        );
    }
    quit_daemon(&env, &mut d);
    assert_clean(
        "daemon log",
        &std::fs::read(env.daemon_log()).unwrap(),
        &key,
    );
    for (path, bytes) in file_bytes(&vault_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &key);
    }
    // A restart does not bring it back into the file.
    let toml = std::fs::read_to_string(env.config_dir().join("sayri.toml")).unwrap();
    assert!(!toml.contains(&key), "{toml}");
    drop(rt);
}

// ---------------------------------------------------------------------------------------------
// 3. The IPC surface

#[test]
fn ipc_lists_masked_values_only_and_no_command_returns_plaintext() {
    let env = Env::new();
    let secret = canary();
    let key = provider_key();
    let mut d = start_debug_daemon(&env);
    let mut c = RawClient::connect(&env.socket());

    let r = c.call(
        "vault_set",
        json!({"key": "canary token", "value": secret, "description": "e2e"}),
        1,
    );
    assert_eq!(
        r["result"],
        json!({"key": "CANARY_TOKEN", "saved": true}),
        "{r}"
    );
    let r = c.call(
        "config_set",
        json!({"key": "provider.api_key", "value": key}),
        2,
    );
    assert_eq!(r["result"]["stored_in"], "vault", "{r}");

    // A 3-character value is refused with the reason.
    let r = c.call("vault_set", json!({"key": "SHORT", "value": "abc"}), 3);
    assert_eq!(r["code"], "invalid_params", "{r}");
    let msg = r["error"].as_str().unwrap();
    assert!(msg.contains('4') && msg.contains("SHORT"), "{msg}");

    let r = c.call("vault_list", json!({}), 4);
    let list = r["result"].as_array().unwrap();
    let keys: Vec<&str> = list.iter().map(|e| e["key"].as_str().unwrap()).collect();
    assert!(
        keys.contains(&"CANARY_TOKEN") && keys.contains(&"PROVIDER_API_KEY"),
        "{r}"
    );
    assert!(!keys.contains(&"SHORT"), "{r}");
    let canary_row = list.iter().find(|e| e["key"] == "CANARY_TOKEN").unwrap();
    assert_eq!(canary_row["masked"], sayri_vault::mask(&secret), "{r}");

    // Everything a client can ask for, including names a plaintext getter might have.
    let mut all = r.to_string();
    let mut id = 10;
    for cmd in [
        "vault_get",
        "vault_reveal",
        "vault_show",
        "vault_export",
        "vault_read",
        "secret_get",
        "get_secret",
    ] {
        id += 1;
        let r = c.call(cmd, json!({"key": "CANARY_TOKEN", "reveal": true}), id);
        assert!(r.get("result").is_none(), "{cmd} answered: {r}");
        assert!(r["error"].is_string(), "{cmd}: {r}");
        all += &r.to_string();
    }
    for (cmd, params) in [
        ("status", json!({})),
        ("config_list", json!({})),
        ("config_get", json!({"key": "provider.api_key"})),
        ("agents_list", json!({})),
    ] {
        id += 1;
        all += &c.call(cmd, params, id).to_string();
    }
    assert_clean("IPC answers (canary)", all.as_bytes(), &secret);
    assert_clean("IPC answers (provider key)", all.as_bytes(), &key);

    // `get --reveal` without a terminal refuses and prints nothing secret.
    let o = env.run(&["vault", "get", "CANARY_TOKEN", "--reveal"]);
    assert_ne!(o.status.code(), Some(0));
    let mut out = o.stdout.clone();
    out.extend_from_slice(&o.stderr);
    assert_clean("`vault get --reveal`", &out, &secret);
    assert!(
        stderr(&o).to_lowercase().contains("terminal"),
        "{}",
        stderr(&o)
    );

    quit_daemon(&env, &mut d);
    for (path, bytes) in file_bytes(&vault_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &secret);
        assert_clean(&path.display().to_string(), &bytes, &key);
    }
    assert_clean(
        "daemon log",
        &std::fs::read(env.daemon_log()).unwrap(),
        &secret,
    );
    assert_clean(
        "daemon log",
        &std::fs::read(env.daemon_log()).unwrap(),
        &key,
    );
}

// ---------------------------------------------------------------------------------------------
// 4. A tampered vault file

#[test]
fn a_flipped_byte_makes_the_vault_unavailable_and_the_file_is_left_untouched() {
    let env = Env::new();
    let secret = canary();
    let mut d = start_debug_daemon(&env);
    let o = run_with_stdin(&env, &["vault", "set", "CANARY_TOKEN"], &secret);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    quit_daemon(&env, &mut d);

    let files = vault_files(&env);
    let path = &env.config_dir().join("vault.enc");
    assert!(files.contains(path), "{files:?}");
    let mut bytes = std::fs::read(path).unwrap();
    assert_clean("vault file", &bytes, &secret);
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(path, &bytes).unwrap();
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();

    let mut d = start_debug_daemon(&env);
    let mut c = RawClient::connect(&env.socket());
    let st = c.call("status", json!({}), 1);
    assert_eq!(st["result"]["vault"]["available"], false, "{st}");
    let why = st["result"]["vault"]["error"].as_str().unwrap().to_string();
    assert!(
        why.contains(&path.display().to_string()),
        "names the file: {why}"
    );
    let r = c.call("vault_list", json!({}), 2);
    assert!(r["error"].as_str().unwrap().contains("unavailable"), "{r}");
    // Writing is refused too; nothing replaces the damaged file.
    let r = c.call("vault_set", json!({"key": "OTHER", "value": "abcdefgh"}), 3);
    assert!(r["error"].is_string(), "{r}");
    drop(c);
    quit_daemon(&env, &mut d);

    assert_eq!(std::fs::read(path).unwrap(), bytes, "the file is unchanged");
    assert_eq!(std::fs::metadata(path).unwrap().modified().unwrap(), mtime);
    assert_eq!(vault_files(&env), files, "no new vault file appeared");
}
