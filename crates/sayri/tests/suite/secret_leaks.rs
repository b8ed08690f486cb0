//! The remaining ways a secret could leave the daemon, each closed with a canary of its own that
//! must then be in no request body to the model, no byte of the SQLite file or its WAL, no log
//! line and no event: multi-line hex dumps by the real tools, command text in `tool_start`,
//! permission cards and stored rows, rows stored before a value became a secret (rewritten by
//! `vault_set`, by `sayri vault set` without a daemon, and at start), history search as an
//! oracle, and a URL-special secret in what the real `curl` and `git` print.
//!
//! Every test runs the real `sayri daemon` (debug log), a scripted model server on loopback,
//! the real sandbox at level 3 and the real SQLite file.

use super::scripted_turns::{wait_event, wait_response};
use super::secret_rig::*;
use super::support::*;
use sayri_testkit::{FakeLlm, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

const LEAK_MARKER: &str = "$SECRET:LEAK_TOKEN";

/// An agent at level 3 given `allowed` secrets; `ask_curl` adds an `ask` rule for `curl *`
/// (and asks before running); `learn` records learned preferences.
fn write_profile(env: &Env, id: &str, allowed: &[&str], ask_curl: bool, learn: bool) {
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let rules = if ask_curl {
        json!([{"action": "shell", "resource": "curl *", "effect": "ask"}])
    } else {
        json!([])
    };
    let profile = json!({
        "id": id,
        "name": format!("Agent {id}"),
        "sandbox": {
            "level": "LEVEL_3_HOST_USER",
            "ask_before_run": ask_curl,
            "timeout_seconds": 20,
            "permission_rules": rules,
        },
        "allowed_secrets": allowed,
        "reinforcement_learning": learn,
    });
    std::fs::write(dir.join(format!("{id}.json")), profile.to_string()).unwrap();
}

/// Sends `ask` (a new session of `agent`) as request `id` without waiting.
fn send_ask(c: &mut RawClient, text: &str, agent: &str, id: u64) {
    let line = json!({"cmd": "ask", "id": id,
        "params": {"text": text, "agent_id": agent, "new": true, "timeout": 60}})
    .to_string()
        + "\n";
    c.write(line.as_bytes());
}

/// Everything that left the daemon, checked for `secret`: request bodies (from the
/// `first_body`-th on: earlier ones may predate the value becoming a secret), the database
/// file, its WAL and shared memory, the daemon log, every line clients received, and `extra`.
fn assert_nothing_left(
    env: &Env,
    llm: &FakeLlm,
    first_body: usize,
    lines: &[String],
    extra: &[u8],
    secret: &str,
) {
    let all = bodies(&llm.requests());
    assert!(
        all.len() > first_body,
        "no request after the secret was set"
    );
    for (i, body) in all.iter().enumerate().skip(first_body) {
        assert_clean(&format!("request body #{i}"), body.as_bytes(), secret);
    }
    for (path, bytes) in file_bytes(&db_files(env)) {
        assert_clean(&path.display().to_string(), &bytes, secret);
    }
    assert_clean(
        "daemon log",
        &std::fs::read(env.daemon_log()).unwrap(),
        secret,
    );
    assert_clean("events", lines.concat().as_bytes(), secret);
    assert_clean("other output", extra, secret);
}

// ---------------------------------------------------------------------------------------------
// Multi-line dumps

const DUMPS: &[&str] = &[
    "printf %s \"$LEAK_TOKEN\" | xxd",
    "printf 'key=%s\\n' \"$LEAK_TOKEN\" | hexdump -C",
    "printf %s \"$LEAK_TOKEN\" | od -An -tx1",
    "printf 'x%s' \"$LEAK_TOKEN\" | od -c",
    "printf %s \"$LEAK_TOKEN\" | xxd -g1 -c 8; printf %s \"$LEAK_TOKEN\" | od -x",
];

#[test]
fn multi_line_hex_dumps_of_a_long_canary_reach_no_request_row_log_or_event() {
    let env = Env::new();
    let secret = canary();
    assert!(secret.len() > 16, "longer than one dump line");
    let rt = runtime();
    let mut replies: Vec<Reply> = DUMPS.iter().map(|c| run_reply(c)).collect();
    replies.push(answer_reply("Dumped."));
    let llm = rt.block_on(FakeLlm::start(scripted(replies))).unwrap();
    write_config(&env, &llm.base_url(), "");
    write_profile(&env, "dumper", &["LEAK_TOKEN"], false, false);
    let mut d = start_debug_daemon(&env);
    let a = Listener::connect(&env.socket());

    let set = run_with_stdin(&env, &["vault", "set", "LEAK_TOKEN"], &secret);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let o = ask(&env, &["--agent", "dumper", "--new", "dump the token"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("Dumped."), "{}", stdout(&o));
    quit_daemon(&env, &mut d);
    let lines = a.finish();

    let finishes = events(&lines, "tool_finish");
    assert_eq!(finishes.len(), DUMPS.len(), "{finishes:#?}");
    for (ev, cmd) in finishes.iter().zip(DUMPS) {
        let out = ev["output"].as_str().unwrap();
        assert!(out.contains(LEAK_MARKER), "{cmd}: {out}");
    }
    // The dump around the secret is kept: `hexdump -C` still shows `key=` and its last offset.
    let hexdump = finishes[1]["output"].as_str().unwrap().trim_end();
    assert!(
        hexdump.starts_with(&format!("00000000  6b 65 79 3d {LEAK_MARKER}"))
            && hexdump.ends_with(&format!("\n{:08x}", secret.len() + 5)),
        "{hexdump}"
    );
    let mut extra = set.stdout.clone();
    extra.extend_from_slice(&o.stdout);
    extra.extend_from_slice(&o.stderr);
    assert_nothing_left(&env, &llm, 0, &lines, &extra, &secret);
    drop(rt);
}

// ---------------------------------------------------------------------------------------------
// Command text in events, cards and stored rows

#[test]
fn command_text_with_the_canary_is_redacted_in_tool_start_cards_stored_rows_and_approvals() {
    let env = Env::new();
    let secret = canary();
    let command =
        format!("curl -s -m 2 -H 'X-Token: {secret}' http://127.0.0.1:9/ ; echo 'sent {secret}'");
    let rt = runtime();
    let llm = rt
        .block_on(FakeLlm::start(scripted(vec![
            run_reply(&command),
            answer_reply("Sent."),
            run_reply(&command),
            answer_reply("Not sent."),
        ])))
        .unwrap();
    write_config(
        &env,
        &llm.base_url(),
        "\n[permissions]\nask_timeout = 60\npolicy_files = []",
    );
    write_profile(&env, "carrier", &[], true, true);
    let mut d = start_debug_daemon(&env);
    let a = Listener::connect(&env.socket());
    let mut m = RawClient::connect(&env.socket());
    let r = m.call(
        "vault_set",
        json!({"key": "LEAK_TOKEN", "value": secret, "description": "canary"}),
        1,
    );
    assert_eq!(r["result"]["saved"], true, "{r}");

    // The card shows the command, its reason and its segments with the marker.
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    send_ask(&mut c, "call the api", "carrier", 1);
    let card = wait_event(&mut c, "permission_request", Duration::from_secs(20)).unwrap();
    let req = &card["request"];
    let resource = req["resource"].as_str().unwrap();
    assert!(
        resource.contains(&format!("X-Token: {LEAK_MARKER}")),
        "{card}"
    );
    assert!(!card.to_string().contains(&secret), "{card}");
    let segments = req["segments"].as_array().unwrap();
    assert!(
        segments
            .iter()
            .any(|s| s["command"].as_str().unwrap().contains(LEAK_MARKER)),
        "{card}"
    );
    let pending = m.call("permission_list", json!({}), 2);
    assert!(pending.to_string().contains(LEAK_MARKER), "{pending}");
    // "Allow always".
    let r = m.call(
        "permission_answer",
        json!({"request_id": req["id"], "allow": true, "remember": true}),
        3,
    );
    assert_eq!(r["result"]["delivered"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 1);
    assert_eq!(resp["result"]["text"], "Sent.", "{resp}");
    let listed = m.call("permission_list", json!({}), 4);
    let approvals = listed["result"]["approvals"].to_string();
    assert!(approvals.contains(LEAK_MARKER), "{listed}");

    // The stored approval lost its secret, so it cannot match again: the same command asks.
    send_ask(&mut c, "call it again", "carrier", 2);
    let again = wait_event(&mut c, "permission_request", Duration::from_secs(20))
        .expect("an approval that held a secret asks again");
    let r = m.call(
        "permission_answer",
        json!({"request_id": again["request"]["id"], "allow": false}),
        5,
    );
    assert_eq!(r["result"]["delivered"], true, "{r}");
    let (resp, _) = wait_response(&mut c, 2);
    assert_eq!(resp["result"]["text"], "Not sent.", "{resp}");

    // What is stored shows the marker too.
    let sessions = m.call("sessions_list", json!({}), 6);
    let sid = sessions["result"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let stored = m.call("session_get", json!({"session_id": sid}), 7);
    let mut extra = stored.to_string().into_bytes();
    extra.extend_from_slice(listed.to_string().as_bytes());
    extra.extend_from_slice(pending.to_string().as_bytes());
    drop((c, m));
    quit_daemon(&env, &mut d);
    let lines = a.finish();

    let starts = events(&lines, "tool_start");
    assert!(!starts.is_empty());
    for s in &starts {
        assert!(s["command"].as_str().unwrap().contains(LEAK_MARKER), "{s}");
    }
    let cards = events(&lines, "permission_request");
    assert_eq!(cards.len(), 2, "{cards:#?}");
    assert_nothing_left(&env, &llm, 0, &lines, &extra, &secret);
    drop(rt);
}

// ---------------------------------------------------------------------------------------------
// Rows stored before the value became a secret; history search

/// Commands whose output and text hold the value before it is a secret.
fn before_replies(value: &str) -> Vec<Reply> {
    vec![
        run_reply(&format!("printf '%s\\n' '{value}' | base64")),
        run_reply(&format!("printf '%s' '{value}' | xxd")),
        answer_reply(&format!("Noted the deploy key {value} for later.")),
    ]
}

/// A turn of agent `keeper` that stores the value in the request, the title, the answer, tool
/// outputs (plain, base64, a hex dump) and a learned preference.
fn store_value_before_it_is_a_secret(env: &Env, value: &str) {
    let o = ask(
        env,
        &[
            "--agent",
            "keeper",
            "--new",
            &format!("keep {value} as the deploy key"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Waits (up to 60 s: the machine may be busy with other tests) until the title request of the
/// first session has reached `llm`: it is sent after the turn's answer, and it still carries
/// the value from before it became a secret.
fn wait_for_title_request(llm: &FakeLlm) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !llm
        .chat_bodies()
        .iter()
        .any(|b| b.get("max_tokens") == Some(&json!(15)))
    {
        assert!(
            Instant::now() < deadline,
            "the first session's title was never asked for"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `search_history` blocks of the oracle turn, one per reply, and the final answer.
fn search_replies(probes: &[String]) -> Vec<Reply> {
    let mut v: Vec<Reply> = probes
        .iter()
        .map(|p| {
            Reply::sse(sayri_testkit::sse::content_stream(&[
                "```search_history\n",
                p,
                "\n```\n",
            ]))
        })
        .collect();
    v.push(answer_reply("Searched."));
    v
}

#[test]
fn vault_set_rewrites_rows_already_stored_and_search_history_is_no_oracle() {
    let env = Env::new();
    let value = canary();
    let chars: Vec<char> = value.chars().collect();
    let piece = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    // Pieces of 7 characters (the model's own query goes back to it; 8 would count as a leak
    // of the query itself), the whole value, and controls. A piece starts at the value's
    // beginning or right after one of its symbols other than `:`: the leak check also reads
    // the text with whitespace removed, where the fence's `search_history` and the card's
    // `search_history:` end just before the query, and a piece preceded in the value by a `y`
    // or a `:` would read as 8 characters of it.
    // Five searches and the answer fill the turn's six model calls.
    let inner = [22, 19, 16, 13, 10, 7, 4]
        .into_iter()
        .find(|&s| chars[s - 1] != ':')
        .unwrap_or(0);
    let probes = vec![
        piece(0, 7),
        piece(inner, inner + 7),
        value.clone(),
        "zq-nowhere-7".to_string(),
        "deploy key".to_string(),
    ];
    let rt = runtime();
    let mut replies = before_replies(&value);
    replies.extend(search_replies(&probes));
    // No generated titles: the first session keeps its request's first 30 characters, which
    // end inside the value.
    let llm = rt
        .block_on(FakeLlm::start(scripted_titles(replies, None)))
        .unwrap();
    write_config(&env, &llm.base_url(), "");
    write_profile(&env, "keeper", &[], false, true);
    let mut d = start_debug_daemon(&env);
    store_value_before_it_is_a_secret(&env, &value);
    wait_for_title_request(&llm);
    let first_body = llm.requests().len();
    let before: Vec<u8> = file_bytes(&db_files(&env))
        .into_iter()
        .flat_map(|(_, b)| b)
        .collect();
    assert!(
        !leaks(&before, &value).is_empty(),
        "before vault_set the value is stored in the clear"
    );

    let mut m = RawClient::connect(&env.socket());
    let r = m.call(
        "vault_set",
        json!({"key": "LEAK_TOKEN", "value": value, "description": ""}),
        1,
    );
    assert_eq!(r["result"]["saved"], true, "{r}");
    let a = Listener::connect(&env.socket());
    let rewritten = r["result"]["rewritten"].as_u64().unwrap();
    assert!(rewritten >= 5, "title, request, answer, two tool rows: {r}");
    for (path, bytes) in file_bytes(&db_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &value);
    }
    let sessions = m.call("sessions_list", json!({}), 2);
    assert_eq!(
        sessions["result"][0]["title"],
        format!("keep {LEAK_MARKER} as"),
        "the title holding the value is rewritten: {sessions}"
    );

    // History search: a piece of the secret finds nothing, exactly like text that is nowhere.
    let o = ask(&env, &["--agent", "keeper", "--new", "search my history"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let all = bodies(&llm.requests());
    let observation = |probe: &str| -> String {
        let shown = if probe == value {
            LEAK_MARKER.to_string()
        } else {
            probe.to_string()
        };
        let head = format!("[History search for '{shown}']");
        let body = all
            .iter()
            .rev()
            .find(|b| b.contains(&head))
            .unwrap_or_else(|| panic!("no observation for {probe:?}"));
        let v: Value = serde_json::from_str(body).unwrap();
        let msgs = v["messages"].as_array().unwrap();
        msgs.iter()
            .filter_map(|m| m["content"].as_str())
            .find(|c| c.contains(&head))
            .unwrap()
            .to_string()
    };
    for p in &probes[..4] {
        let obs = observation(p);
        assert!(
            obs.contains("no matching messages"),
            "{p:?} revealed something: {obs}"
        );
    }
    let found = observation("deploy key");
    assert!(
        found.contains(LEAK_MARKER) && !found.contains("no matching"),
        "ordinary words still find the rewritten rows: {found}"
    );
    drop(m);
    quit_daemon(&env, &mut d);
    let lines = a.finish();
    // The oracle turn's own 7-character queries are the model's text; nothing else may hold
    // the secret.
    let mut extra = r.to_string().into_bytes();
    extra.extend_from_slice(sessions.to_string().as_bytes());
    assert_nothing_left(&env, &llm, first_body, &lines, &extra, &value);
    drop(rt);
}

#[test]
fn cli_vault_set_rewrites_rows_without_a_daemon_and_a_start_rewrites_what_is_still_due() {
    let env = Env::new();
    let value = canary();
    let rt = runtime();
    let mut replies = before_replies(&value);
    replies.push(answer_reply("Nothing new."));
    let llm = rt.block_on(FakeLlm::start(scripted(replies))).unwrap();
    write_config(&env, &llm.base_url(), "");
    write_profile(&env, "keeper", &[], false, true);
    let mut d = start_debug_daemon(&env);
    store_value_before_it_is_a_secret(&env, &value);
    quit_daemon(&env, &mut d);
    let first_body = llm.requests().len();

    // No daemon runs: `sayri vault set` rewrites the file itself.
    let set = run_with_stdin(&env, &["vault", "set", "LEAK_TOKEN"], &value);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    assert!(
        stdout(&set).contains("stored row(s)"),
        "says what it rewrote: {}",
        stdout(&set)
    );
    for (path, bytes) in file_bytes(&db_files(&env)) {
        assert_clean(&path.display().to_string(), &bytes, &value);
    }

    // A database that missed the change (rows from an older version, no stamps): the next
    // start rewrites it.
    {
        let conn = rusqlite::Connection::open(env.state_dir().join("sessions.db")).unwrap();
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp)
             SELECT id, 'tool', ?1, 99 FROM sessions LIMIT 1",
            [format!("old output {value}")],
        )
        .unwrap();
        conn.execute("DELETE FROM redacted_secrets", []).unwrap();
    }
    let mut d = start_debug_daemon(&env);
    // A turn after the start: its requests carry no trace of the value either.
    let o = ask(&env, &["--agent", "keeper", "--new", "anything new?"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let clean = eventually(Duration::from_secs(15), || {
        file_bytes(&db_files(&env))
            .iter()
            .all(|(_, b)| leaks(b, &value).is_empty())
    });
    quit_daemon(&env, &mut d);
    assert!(clean, "the start did not rewrite the row it missed");
    let log = String::from_utf8_lossy(&std::fs::read(env.daemon_log()).unwrap()).into_owned();
    assert!(log.contains("rewrote stored rows"), "{log}");
    assert_nothing_left(&env, &llm, first_body, &[], &set.stdout, &value);
    drop(rt);
}

// ---------------------------------------------------------------------------------------------
// A URL-special secret in what curl and git print

/// A secret with every URL-special character: `@`, `:`, `/`, `+`, `%` (followed by hex digits,
/// so decoding changes it), between random pieces that each mix upper case, lower case and
/// digits.
fn url_canary() -> String {
    const UPPER: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ";
    const LOWER: &[u8] = b"abcdefghijkmnopqrstuvwxyz";
    const DIGIT: &[u8] = b"23456789";
    let r = random_bytes(64);
    let mut i = 0;
    let mut pick = |set: &[u8]| {
        i += 1;
        set[r[i] as usize % set.len()] as char
    };
    let mut piece = || {
        let mut s = String::new();
        for _ in 0..3 {
            s.push(pick(UPPER));
            s.push(pick(LOWER));
            s.push(pick(DIGIT));
        }
        s
    };
    format!(
        "{}@{}:{}/{}+{}%4B{}",
        piece(),
        piece(),
        piece(),
        piece(),
        piece(),
        piece()
    )
}

/// A loopback HTTP server answering `401` (Basic realm) with a body echoing the request line
/// and its `Authorization` header; stops after `limit` connections or 60 s.
fn echo_server(limit: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut served = 0;
        while served < limit && Instant::now() < deadline {
            let Ok((s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            served += 1;
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let mut auth = String::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if h.to_ascii_lowercase().starts_with("authorization:") {
                    auth = h[14..].trim().to_string();
                }
            }
            let _ = reader.read(&mut [0u8; 0]);
            let text = format!("got {} auth={auth}\n", line.trim());
            let reply = format!(
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
            let mut s = s;
            let _ = s.write_all(reply.as_bytes());
        }
    });
    port
}

#[test]
fn a_url_special_canary_in_what_curl_and_git_print_reaches_nothing() {
    let env = Env::new();
    let secret = url_canary();
    let port = echo_server(20);
    let enc = "E=$(python3 -c 'import urllib.parse,os;print(urllib.parse.quote(os.environ[\"URL_TOKEN\"],safe=\"\"))')";
    let commands = [
        format!("{enc}; curl -sv \"http://ci:$E@127.0.0.1:{port}/p?t=$E\" 2>&1"),
        format!(
            "{enc}; export GIT_TERMINAL_PROMPT=0; git ls-remote \"http://ci:$E@127.0.0.1:{port}/x.git\" 2>&1 | head -5; printf 'url=http://ci:%s@127.0.0.1:{port}/x.git\\n\\n' \"$E\" | git credential fill"
        ),
        format!(
            "export GIT_TERMINAL_PROMPT=0; git ls-remote \"http://ci:$URL_TOKEN@127.0.0.1:{port}/x.git\" 2>&1 | head -3; echo \"url was http://ci:$URL_TOKEN@127.0.0.1:{port}/x.git\""
        ),
        format!(
            "{enc}; curl -s -u \"ci:$URL_TOKEN\" -w '%{{url_effective}}\\n' \"http://127.0.0.1:{port}/u?t=$(printf %s \"$E\" | sed 's/%\\(..\\)/%\\L\\1/g')\"; python3 -c 'import urllib.parse,os;print(urllib.parse.quote(urllib.parse.quote_plus(os.environ[\"URL_TOKEN\"])))'"
        ),
    ];
    let rt = runtime();
    let mut replies: Vec<Reply> = commands.iter().map(|c| run_reply(c)).collect();
    replies.push(answer_reply("Fetched."));
    let llm = rt.block_on(FakeLlm::start(scripted(replies))).unwrap();
    write_config(&env, &llm.base_url(), "");
    write_profile(&env, "fetcher", &["URL_TOKEN"], false, false);
    let mut d = start_debug_daemon(&env);
    let a = Listener::connect(&env.socket());
    // Command substitution and pipes into other programs may be asked for: a person allows.
    let approver = AutoApprover::start(&env.socket());
    let mut m = RawClient::connect(&env.socket());
    let r = m.call(
        "vault_set",
        json!({"key": "URL_TOKEN", "value": secret, "description": ""}),
        1,
    );
    assert_eq!(r["result"]["saved"], true, "{r}");
    drop(m);
    let o = ask(&env, &["--agent", "fetcher", "--new", "fetch it"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    quit_daemon(&env, &mut d);
    let lines = a.finish();
    approver.finish();

    let finishes = events(&lines, "tool_finish");
    assert_eq!(finishes.len(), commands.len(), "{finishes:#?}");
    let outputs: Vec<&str> = finishes
        .iter()
        .map(|f| f["output"].as_str().unwrap())
        .collect();
    // The tools really ran and printed the secret in some form, now masked.
    assert!(
        outputs[0].contains("Authorization: Basic"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].contains("password="), "{}", outputs[1]);
    assert!(outputs[2].contains("url was"), "{}", outputs[2]);
    for (i, out) in outputs.iter().enumerate() {
        assert!(out.contains("$SECRET:URL_TOKEN"), "command {i}: {out}");
    }
    let mut extra = o.stdout.clone();
    extra.extend_from_slice(&o.stderr);
    assert_nothing_left(&env, &llm, 0, &lines, &extra, &secret);
    drop(rt);
}
