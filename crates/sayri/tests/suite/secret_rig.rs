//! The rig of the secret-leak tests: canary secrets, every form they may leak in and a checker
//! that scans bytes for them, and a debug-logging daemon with a scripted model server and
//! listening clients. Shared by `vault_canary.rs` and `secret_leaks.rs`.

use super::support::*;
use base64::Engine as _;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
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
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b
}

/// A random canary of 32 characters with letters, digits and symbols. No quote, backslash,
/// whitespace or glob character, so `echo $KEY` prints it unchanged. No `@` either, so the
/// URL command's pieces stay long; `secret_leaks.rs` has a canary with every URL-special
/// character, whose pieces the redactor catches when they are distinctive.
pub fn canary() -> String {
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
pub fn provider_key() -> String {
    const ALNUM: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let tail: String = random_bytes(16)
        .iter()
        .map(|b| ALNUM[*b as usize % ALNUM.len()] as char)
        .collect();
    format!("sk-local-{tail}")
}

/// The characters of `enc` that depend only on `secret`'s bytes when `secret` starts `offset`
/// bytes into a longer base64 encoding (both alphabets).
pub fn base64_cores(secret: &[u8]) -> Vec<String> {
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
pub fn url_forms(secret: &str) -> Vec<String> {
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
pub fn forms(secret: &str) -> Vec<(String, String)> {
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

/// Which forms of `secret` occur in `hay`: the forms above in the bytes as they are; after
/// removing line breaks (raw or JSON-escaped `\n`, `\r`), and after percent-decoding once or
/// twice, any 8-character piece of the secret; and — with all whitespace removed, as a
/// multi-line dump would leave it — any 8-character piece or any 4 bytes of it in hex (either
/// byte order). Returns descriptions of the hits (empty = clean).
pub fn leaks(hay: &[u8], secret: &str) -> Vec<String> {
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
    let once = percent_decoded(&flat);
    let dense: String = text
        .replace("\\n", " ")
        .replace("\\r", " ")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let chars: Vec<char> = secret.chars().collect();
    for (what, hay) in [
        ("", flat.clone()),
        (" (percent-decoded)", once.clone()),
        (" (percent-decoded twice)", percent_decoded(&once)),
        (" (whitespace removed)", dense.clone()),
    ] {
        if let Some(w) = chars
            .windows(8)
            .find(|w| hay.contains(&w.iter().collect::<String>()))
        {
            hits.push(format!(
                "8-char piece{what} {:?}",
                w.iter().collect::<String>()
            ));
        }
    }
    let dense_lower = dense.to_ascii_lowercase();
    for w in secret.as_bytes().windows(4) {
        let reversed: Vec<u8> = w.iter().rev().copied().collect();
        for h in [hex::encode(w), hex::encode(reversed)] {
            if dense_lower.contains(&h) {
                hits.push(format!("dump hex {h}"));
                return hits;
            }
        }
    }
    hits
}

/// `%XX` escapes decoded once (invalid ones kept).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|c| hex(*c)),
            b.get(i + 2).and_then(|c| hex(*c)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn assert_clean(what: &str, hay: &[u8], secret: &str) {
    let hits = leaks(hay, secret);
    assert!(
        hits.is_empty(),
        "{what} leaks the secret {secret:?}: {hits:?}\n--- {what} ---\n{}",
        String::from_utf8_lossy(hay)
    );
}

/// Bytes of every existing file among `paths`.
pub fn file_bytes(paths: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok().map(|b| (p.clone(), b)))
        .collect()
}

pub fn db_files(env: &Env) -> Vec<PathBuf> {
    ["sessions.db", "sessions.db-wal", "sessions.db-shm"]
        .iter()
        .map(|n| env.state_dir().join(n))
        .collect()
}

/// `$CONFIG/vault.*` files.
pub fn vault_files(env: &Env) -> Vec<PathBuf> {
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

pub const MARKER_CANARY: &str = "$SECRET:CANARY_TOKEN";

/// A scripted model: title requests (`max_tokens: 15`) get a title; every other request takes
/// the next reply from the queue.
pub fn scripted(replies: Vec<Reply>) -> Script {
    scripted_titles(replies, Some("Canary check"))
}

/// As [`scripted`]; title requests get `title`, or fail (`None`: the session keeps the first
/// 30 characters of its first request as its title).
pub fn scripted_titles(replies: Vec<Reply>, title: Option<&'static str>) -> Script {
    let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
    Script::from_fn(move |req: &RecordedRequest| {
        let is_title = req
            .json()
            .is_some_and(|v| v.get("max_tokens") == Some(&json!(15)));
        if is_title {
            return match title {
                Some(t) => Reply::sse(sse::content_stream(&[t])),
                None => Reply::json(500, &json!({"error": {"message": "no titles here"}})),
            };
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
pub fn run_reply(command: &str) -> Reply {
    Reply::sse(sse::content_stream(&[
        "Let me check.\n```bash\n",
        command,
        "\n```\n",
    ]))
}

pub fn answer_reply(text: &str) -> Reply {
    Reply::sse(sse::content_stream(&[text]))
}

/// `sayri.toml` pointing at `base_url`, plus `extra` lines in `[provider]`.
pub fn write_config(env: &Env, base_url: &str, extra_provider: &str) {
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
pub fn write_agent(env: &Env, id: &str, allowed: &[&str]) {
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
pub fn start_debug_daemon(env: &Env) -> Daemon {
    env.start_daemon_logging("debug")
}

/// Stops the daemon with `quit` and waits for the process to end.
pub fn quit_daemon(env: &Env, d: &mut Daemon) {
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
pub struct Listener {
    lines: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    pub fn connect(socket: &Path) -> Listener {
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
    pub fn finish(mut self) -> Vec<String> {
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

/// A connected client that allows every permission question once, as a person would in the
/// app, until the daemon closes it.
pub struct AutoApprover {
    thread: Option<JoinHandle<()>>,
}

impl AutoApprover {
    pub fn start(socket: &Path) -> AutoApprover {
        let c = RawClient::connect(socket);
        c.writer.set_read_timeout(None).unwrap();
        let mut reader = c.reader;
        let mut writer = c.writer;
        let thread = std::thread::spawn(move || {
            let mut id = 1000;
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if v["event"] == "permission_request" {
                    id += 1;
                    let answer = json!({"cmd": "permission_answer", "id": id, "params":
                        {"request_id": v["request"]["id"], "allow": true}});
                    let _ = writer.write_all(format!("{answer}\n").as_bytes());
                }
            }
        });
        AutoApprover {
            thread: Some(thread),
        }
    }

    /// Waits for the daemon to close the connection.
    pub fn finish(mut self) {
        if let Some(t) = self.thread.take() {
            let deadline = Instant::now() + Duration::from_secs(15);
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

pub fn events(lines: &[String], name: &str) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == name)
        .collect()
}

/// Runs `sayri ARGS` with `input` on stdin.
pub fn run_with_stdin(env: &Env, args: &[&str], input: &str) -> Output {
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

pub fn ask(env: &Env, args: &[&str]) -> Output {
    let mut all = vec!["ask", "--timeout", "60"];
    all.extend_from_slice(args);
    env.run(&all)
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// The text of all request bodies the model server received, one per entry.
pub fn bodies(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}
