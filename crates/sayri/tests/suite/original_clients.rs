//! The original Sayri's clients against the real daemon, through a client written from the
//! original wire's description (control socket: one JSON object per line, `{"cmd", "params",
//! "id"}` answered `{"ok", "result"|"error", "id"}` among `{"event"}` lines; legacy socket: one
//! request per connection, plain text or one JSON object, the original gateways writing it
//! without a newline and reading one answer line):
//!
//! * with `XDG_RUNTIME_DIR` set the daemon answers at the original paths in the state dir as
//!   well, 0600 and under the same peer-uid check, and removes them at exit; a stale socket
//!   there is replaced, a planted file, symlink or live socket is left alone;
//! * the legacy socket's plain-text commands and an `INCOMING_MSG` without `sender_id` and
//!   without a newline (one `done` line) — refused until the person turns the implicit
//!   `default` instance on and names the author, and never above its level 1 cap;
//! * settings sent as text: comma text for each list setting becomes a list, an inexact value
//!   is refused and the file is unchanged.

use super::gateway_rig::{ipc, setup};
use super::scripted_turns::start_model;
use super::support::*;
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `$XDG_RUNTIME_DIR` of these tests (inside the test's directory).
fn runtime(env: &Env) -> PathBuf {
    let dir = env.dir.path().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// Starts `sayri daemon` with `XDG_RUNTIME_DIR` set and waits until its runtime-dir socket
/// greets.
pub(super) fn start_with_runtime(env: &Env) -> Daemon {
    let run = runtime(env);
    let log = std::fs::File::create(env.daemon_log()).unwrap();
    let child = env
        .cmd()
        .env("XDG_RUNTIME_DIR", &run)
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut d = Daemon {
        child: Some(child),
        log: env.daemon_log(),
    };
    let socket = run.join("sayri/sayri-daemon.sock");
    let deadline = Instant::now() + Duration::from_secs(15);
    while RawClient::try_connect(&socket).is_err() {
        if let Some(st) = d.child.as_mut().unwrap().try_wait().unwrap() {
            panic!("daemon exited early ({st}): {}", d.log_text());
        }
        assert!(Instant::now() < deadline, "no daemon: {}", d.log_text());
        std::thread::sleep(Duration::from_millis(10));
    }
    d
}

/// A client of the original control socket, written from its description.
pub(super) struct OriginalClient {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl OriginalClient {
    pub(super) fn connect(path: &Path) -> OriginalClient {
        let s = UnixStream::connect(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        OriginalClient {
            reader: BufReader::new(s.try_clone().unwrap()),
            writer: s,
        }
    }

    /// Sends `{"cmd", "params", "id"}` and returns the response with that id, skipping events.
    pub(super) fn request(&mut self, cmd: &str, params: Value, id: u64) -> Value {
        let line = format!("{}\n", json!({"cmd": cmd, "params": params, "id": id}));
        self.writer.write_all(line.as_bytes()).unwrap();
        loop {
            let mut l = String::new();
            assert!(
                self.reader.read_line(&mut l).unwrap() > 0,
                "closed before {cmd} was answered"
            );
            let v: Value = serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"));
            if v.get("event").is_none() && v["id"] == id {
                return v;
            }
        }
    }
}

/// One legacy request written as the original gateways write it (no newline, the connection
/// left open for the answer); returns the whole answer and how long the first byte took.
fn legacy_raw(path: &Path, request: &[u8], half_close: bool) -> (String, Duration) {
    let mut s = UnixStream::connect(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let sent = Instant::now();
    s.write_all(request).unwrap();
    if half_close {
        s.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let mut first = [0u8; 1];
    let n = s.read(&mut first).unwrap();
    let took = sent.elapsed();
    let mut rest = String::new();
    s.read_to_string(&mut rest).unwrap();
    let mut answer = String::from_utf8_lossy(&first[..n]).into_owned();
    answer.push_str(&rest);
    (answer, took)
}

fn is_socket(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn with_a_runtime_dir_the_daemon_also_answers_at_the_original_paths_and_removes_them_at_exit() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let mut d = start_with_runtime(&env);
    let original = env.state_dir().join("sayri-daemon.sock");
    let original_legacy = env.state_dir().join("sayri.sock");
    let run = env.dir.path().join("run/sayri");
    for p in [
        &original,
        &original_legacy,
        &run.join("sayri-daemon.sock"),
        &run.join("sayri.sock"),
    ] {
        assert!(is_socket(p), "{} is not a socket", p.display());
        assert_eq!(mode(p), 0o600, "{}", p.display());
    }

    // The original client's "is the daemon running": the file exists, connects, ping → pong.
    let mut c = OriginalClient::connect(&original);
    let r = c.request("ping", json!({}), 1);
    assert_eq!(r, json!({"ok": true, "result": "pong", "id": 1}));
    let r = c.request("version", json!({}), 2);
    assert!(r["result"]["version"].is_string(), "{r}");
    let r = c.request("status", json!({}), 3);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"]["socket_warnings"], json!([]), "{r}");
    let r = c.request("no_such_command", json!({}), 4);
    assert_eq!(r["ok"], false, "{r}");

    let (answer, _) = legacy_raw(&original_legacy, b"sayri-gui-ping\n", false);
    assert_eq!(answer, "DAEMON\n");

    // Another uid is refused at the original paths too, even where file modes let it in.
    // SAFETY: geteuid takes no arguments, touches no memory and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        for (p, m) in [(env.dir.path(), 0o711), (&env.state_dir(), 0o711)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        }
        for p in [&original, &original_legacy] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
        let probe = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.settimeout(10)\n\
                     s.connect(sys.argv[1])\ntry:\n    s.sendall(b'sayri-gui-ping\\n')\n\
                     \x20   print(repr(s.recv(100)))\nexcept OSError as e:\n    print(\"closed\", e)\n";
        for p in [&original, &original_legacy] {
            let o = Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .args(["/usr/bin/python3", "-c", probe])
                .arg(p)
                .output()
                .expect("setpriv and python3");
            let out = stdout(&o);
            assert!(
                out.trim() == "b''" || out.starts_with("closed"),
                "{}: {out} {}",
                p.display(),
                stderr(&o)
            );
        }
        assert!(d.log_text().contains("refused connection from uid 65534"));
    }

    let r = c.request("quit", json!({}), 5);
    assert_eq!(r["ok"], true, "{r}");
    let exited = eventually(Duration::from_secs(15), || {
        d.child.as_mut().unwrap().try_wait().unwrap().is_some()
    });
    assert!(exited, "{}", d.log_text());
    for p in [&original, &original_legacy] {
        assert!(!p.exists(), "{} left behind", p.display());
    }
}

#[test]
fn at_the_original_paths_a_stale_socket_is_replaced_and_a_planted_file_link_or_live_socket_left_alone()
 {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let original = env.state_dir().join("sayri-daemon.sock");
    let original_legacy = env.state_dir().join("sayri.sock");

    // 1. A symlink to a file of the person's, and a stale socket (its server is gone).
    let victim = env.dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, &original).unwrap();
    drop(UnixListener::bind(&original_legacy).unwrap());
    let mut d = start_with_runtime(&env);
    let (answer, _) = legacy_raw(&original_legacy, b"sayri-gui-ping", true);
    assert_eq!(answer, "DAEMON\n", "the stale socket was replaced");
    let link = std::fs::symlink_metadata(&original).unwrap();
    assert!(link.file_type().is_symlink(), "the symlink was replaced");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    let mut c = RawClient::connect(&env.dir.path().join("run/sayri/sayri-daemon.sock"));
    let warnings = c.call("status", json!({}), 1)["result"]["socket_warnings"].clone();
    assert!(
        warnings.to_string().contains("sayri-daemon.sock")
            && warnings.to_string().contains("not a socket"),
        "{warnings}"
    );
    drop(c);
    d.terminate(Duration::from_secs(15));
    assert!(
        std::fs::symlink_metadata(&original)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(
        !original_legacy.exists(),
        "its own socket is removed at exit"
    );

    // 2. A live socket of another program, and a plain file.
    std::fs::remove_file(&original).unwrap();
    let live = UnixListener::bind(&original).unwrap();
    std::fs::write(&original_legacy, "a file of mine").unwrap();
    let mut d = start_with_runtime(&env);
    live.set_nonblocking(true).unwrap();
    let mut c = RawClient::connect(&env.dir.path().join("run/sayri/sayri-daemon.sock"));
    let warnings = c.call("status", json!({}), 1)["result"]["socket_warnings"].to_string();
    assert!(
        warnings.contains("another program answers on it"),
        "{warnings}"
    );
    assert!(
        warnings.contains("sayri.sock: it is not a socket"),
        "{warnings}"
    );
    drop(c);
    d.terminate(Duration::from_secs(15));
    assert!(is_socket(&original), "the live socket was removed");
    assert!(live.local_addr().is_ok());
    assert_eq!(
        std::fs::read_to_string(&original_legacy).unwrap(),
        "a file of mine"
    );
}

/// The original gateway's message: no `sender_id`, `instance_id` "default", no newline.
fn original_message(text: &str, author: &str, level: &str) -> Vec<u8> {
    json!({"type": "INCOMING_MSG", "text": text, "author": author, "target_agent": "default",
           "sandbox_level": level, "instance_id": "default", "session_id": null})
    .to_string()
    .into_bytes()
}

fn one_event(answer: &str) -> Value {
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(lines.len(), 1, "one answer line: {answer:?}");
    assert!(answer.ends_with('\n'), "{answer:?}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

#[test]
fn an_original_gateway_message_without_sender_id_or_newline_gets_one_done_line_once_allowed() {
    let env = Env::new();
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&["Hello ", "from Sayri."])),
        Reply::sse(sse::content_stream(&["Still level one."])),
        Reply::sse(sse::content_stream(&["Streamed."])),
        Reply::sse(sse::content_stream(&["Half closed."])),
    ]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let mut d = start_with_runtime(&env);
    let sock = env.state_dir().join("sayri.sock");
    let turns = || {
        model
            .llm
            .chat_bodies()
            .iter()
            .filter(|b| b.get("max_tokens") != Some(&json!(15)))
            .count()
    };

    // The plain-text commands of the original, without a newline.
    for (request, expected) in [
        ("sayri-gui-ping", "DAEMON\n"),
        ("toggle", "OK\n"),
        ("show", "OK\n"),
        ("hide", "OK\n"),
        ("settings", "OK\n"),
    ] {
        let (answer, took) = legacy_raw(&sock, request.as_bytes(), false);
        assert_eq!(answer, expected, "{request}");
        assert!(took < Duration::from_secs(2), "{request} took {took:?}");
    }

    // Off until the person turns it on: nothing runs.
    let (answer, _) = legacy_raw(
        &sock,
        &original_message("hi", "Ada", "LEVEL_1_READONLY"),
        false,
    );
    let ev = one_event(&answer);
    assert_eq!(ev["event"], "ignored", "{ev}");
    assert!(ev["reason"].as_str().unwrap().contains("legacy"), "{ev}");
    let r = ipc(
        &env,
        "gateway_save",
        json!({"instance": {"id": "default", "legacy": true, "legacy_authors": "Ada"}}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        r["result"]["instance"]["level_cap"], "LEVEL_1_READONLY",
        "{r}"
    );
    assert_eq!(
        r["result"]["instance"]["legacy_authors"],
        json!(["Ada"]),
        "{r}"
    );
    let (answer, _) = legacy_raw(&sock, &original_message("hi", "Mallory", ""), false);
    assert_eq!(one_event(&answer)["event"], "ignored", "{answer}");
    assert_eq!(turns(), 0, "nothing reached the model");

    // Allowed: one `done` line, within 2 s of the scripted reply.
    let (answer, took) = legacy_raw(
        &sock,
        &original_message("hi", "Ada", "LEVEL_1_READONLY"),
        false,
    );
    assert_eq!(
        one_event(&answer),
        json!({"event": "done", "ok": true, "text": "Hello from Sayri."})
    );
    assert!(took < Duration::from_secs(2), "the answer took {took:?}");

    // Asking for root runs at the cap.
    let (answer, _) = legacy_raw(
        &sock,
        &original_message("go", "Ada", "LEVEL_4_HOST_ROOT"),
        false,
    );
    assert_eq!(one_event(&answer)["text"], "Still level one.");
    assert!(
        d.log_text()
            .contains("with agent default at LEVEL_1_READONLY")
            && !d.log_text().contains("at LEVEL_4_HOST_ROOT"),
        "{}",
        d.log_text()
    );

    // A client that asks for the stream gets the turn's events first.
    let mut streamed: Value = serde_json::from_slice(&original_message("s", "Ada", "")).unwrap();
    streamed["stream"] = true.into();
    let (answer, _) = legacy_raw(&sock, format!("{streamed}\n").as_bytes(), false);
    let events: Vec<Value> = answer
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["event"], "start", "{answer}");
    assert_eq!(events.last().unwrap()["text"], "Streamed.", "{answer}");

    // Ended by closing the write side.
    let (answer, _) = legacy_raw(&sock, &original_message("h", "Ada", ""), true);
    assert_eq!(one_event(&answer)["text"], "Half closed.");
    assert_eq!(turns(), 4);
    assert!(d.child.as_mut().unwrap().try_wait().unwrap().is_none());
}

/// `sayri.toml` as it is on disk.
fn config_text(env: &Env) -> String {
    std::fs::read_to_string(env.config_dir().join("sayri.toml")).unwrap()
}

#[test]
fn comma_text_for_each_list_setting_is_stored_as_a_list_and_an_inexact_value_is_refused() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    let a = env.dir.path().join("a");
    let b = env.dir.path().join("b");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let cases = [
        ("sandbox.deny_read", format!("{a},{b}"), json!([a, b])),
        (
            "permissions.policy_files",
            format!("{a}.json, {b}.json"),
            json!([format!("{a}.json"), format!("{b}.json")]),
        ),
        (
            "provider.extra_headers",
            "X-One: 1,X-Two: 2".to_string(),
            json!(["X-One: 1", "X-Two: 2"]),
        ),
    ];
    for (key, text, list) in &cases {
        let r = ipc(&env, "config_set", json!({"key": key, "value": text}));
        assert_eq!(r["result"]["value"], *list, "{key}: {r}");
        let doc: toml_edit::DocumentMut = config_text(&env).parse().unwrap();
        let (group, name) = key.split_once('.').unwrap();
        let stored: Vec<&str> = doc[group][name]
            .as_array()
            .unwrap_or_else(|| panic!("{key} is not a list in the file"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(json!(stored), *list, "{key} in the file");
        // The settings form's save takes the same text the same way.
        let r = ipc(&env, "settings_save", json!({"values": {*key: text}}));
        assert_eq!(r["result"]["ok"], true, "{key}: {r}");
        assert!(r["result"]["saved"].to_string().contains(key), "{r}");
    }

    let before = config_text(&env);
    for (key, value) in [
        ("sandbox.deny_read", json!(format!("{a},relative/b"))),
        ("permissions.policy_files", json!("/etc/x.json,y.json")),
        ("provider.extra_headers", json!("Accept: a, b")),
        ("provider.model", json!(true)),
        ("provider.model", json!(1e300)),
    ] {
        let r = ipc(&env, "config_set", json!({"key": key, "value": value}));
        assert_eq!(r["ok"], false, "{key} {value}: {r}");
        assert!(r["error"].as_str().unwrap().contains(key), "{r}");
        let r = ipc(&env, "settings_save", json!({"values": {key: value}}));
        assert_eq!(r["result"]["ok"], false, "{key} {value}: {r}");
        assert!(
            r["result"]["errors"][key].as_str().unwrap().contains(key),
            "{r}"
        );
        assert_eq!(config_text(&env), before, "{key}: the file changed");
    }

    // A number for a text setting is its decimal text, then checked like any value.
    let r = ipc(
        &env,
        "config_set",
        json!({"key": "provider.model", "value": 42}),
    );
    assert_eq!(r["result"]["value"], "42", "{r}");
}
