//! Secrets through the daemon: a canary secret printed by real commands in every encoding never
//! reaches the model, the database, the log or any client; the provider key lives in the vault
//! and is masked where an error message echoes it; output that wraps or splits a secret is
//! masked; the IPC surface never returns plaintext; a tampered vault file is refused.
//!
//! Every test runs the real `sayri daemon` process (foreground, `RUST_LOG=debug`, stderr to a
//! file), a scripted OpenAI-compatible server on loopback, the real sandbox at level 3 and the
//! real SQLite file, and scans bytes after the daemon stopped.

use super::secret_rig::*;
use super::support::*;
use sayri_testkit::{FakeLlm, Reply, Script};
use serde_json::json;

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

    // On the command line the key is refused (every user could read it there), and nothing
    // is stored; piped to stdin it is taken.
    let o = env.run(&["config", "set", "provider.api_key", &key]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("is a secret") && err.contains("nothing was changed") && err.contains("stdin"),
        "{err}"
    );
    assert_clean("refused `config set` stderr", err.as_bytes(), &key);
    let mut c = RawClient::connect(&env.socket());
    let shown = c.call("config_get", json!({"key": "provider.api_key"}), 1);
    assert_eq!(shown["result"]["value"], "", "nothing was stored: {shown}");
    drop(c);
    let o = run_with_stdin(
        &env,
        &["config", "set", "provider.api_key"],
        &format!("{key}\n"),
    );
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
    assert!(
        rows.contains("\"role\":\"error\""),
        "an error record is stored: {rows}"
    );
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
        json!({"key": "CANARY_TOKEN", "saved": true, "rewritten": 0}),
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
