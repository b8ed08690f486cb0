//! Agent-turn figures (printed, never asserted). Run: `cargo bench -p sayri --bench ask`.
//!
//! * `sayri ask` wall time: the whole CLI process (spawn, connect, one turn, exit) against a
//!   daemon that is already running and a scripted model that answers at once; median and p90
//!   of 30 runs after one warm-up.
//! * Prompt tokens per model request over a scripted 20-turn `sayri chat` with one command
//!   (`df -h /`) per turn, counted with `sayri_core::domain::tokens::count_message` (o200k_base
//!   plus the per-message overhead) over each recorded request body's messages. Each turn makes
//!   two requests (the command step and the answer); both are printed, then the maximum.

use sayri_core::domain::tokens;
use sayri_testkit::procs::ChildGuard;
use sayri_testkit::{FakeLlm, RecordedRequest, Reply, Script, sse};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sayri");
const TITLE_PROMPT: &str = "Write an ultra-short title";
const TURNS: usize = 20;
const RUNS: usize = 30;

fn is_title(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(TITLE_PROMPT))
}

fn say(text: &str) -> Reply {
    Reply::sse(sse::content_stream(&[text]))
}

/// Step 0 of every turn proposes `df -h /`; step 1 answers.
fn model() -> Script {
    Script::from_fn(|req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title(&body) {
            return say("Bench session");
        }
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        if last == "ping" {
            say("pong")
        } else if last.starts_with("[Command") {
            say("The root filesystem has space left; see the figures above.")
        } else {
            say("I will check.\n```bash\ndf -h /\n```")
        }
    })
}

fn cmd(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("SAYRI_CONFIG_DIR", dir.join("config"))
        .env("SAYRI_STATE_DIR", dir.join("state"))
        .env("HOME", dir)
        .env_remove("XDG_RUNTIME_DIR")
        .env("SAYRI_LOG", "warn")
        .stdin(Stdio::null());
    c
}

/// A client command that never starts a daemon of its own in the background (one the bench
/// could not stop).
fn client(dir: &Path) -> Command {
    let mut c = cmd(dir);
    c.arg("--no-start");
    c
}

/// The daemon, stopped when the guard drops — also when an assertion fails half-way, so the
/// bench never leaves a daemon running on a deleted temp dir.
fn start_daemon(dir: &Path) -> ChildGuard {
    let child = ChildGuard::spawn_tied(
        cmd(dir)
            .arg("daemon")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        Duration::from_secs(5),
    )
    .expect("spawn sayri daemon");
    let socket = dir.join("state/sayri-daemon.sock");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(s) = UnixStream::connect(&socket) {
            let mut line = String::new();
            if BufReader::new(s).read_line(&mut line).is_ok() && line.contains("\"ready\"") {
                return child;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the daemon did not start");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(FakeLlm::start(model())).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("sybench")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n",
            server.base_url()
        ),
    )
    .unwrap();
    let daemon = start_daemon(dir.path());

    // (a) `sayri ask` wall time.
    let ask = || {
        let t = Instant::now();
        let out = client(dir.path()).args(["ask", "ping"]).output().unwrap();
        let d = t.elapsed();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "pong",
            "ask failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        d
    };
    ask();
    let mut times: Vec<Duration> = (0..RUNS).map(|_| ask()).collect();
    times.sort();
    println!(
        "sayri ask wall time (instant scripted model, {RUNS} runs): median {:.1} ms, p90 {:.1} ms, min {:.1} ms, max {:.1} ms",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.9)),
        ms(times[0]),
        ms(times[times.len() - 1]),
    );

    // (b) Prompt tokens per request over a 20-turn chat, one command per turn.
    let before = server.chat_bodies().len();
    let mut chat = client(dir.path())
        .args(["chat", "--new"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = chat.stdin.take().unwrap();
        for i in 1..=TURNS {
            writeln!(stdin, "Turn {i}: how much disk space is free?").unwrap();
        }
    }
    let status = chat.wait().unwrap();
    assert!(status.success(), "sayri chat failed");
    let bodies: Vec<Value> = server.chat_bodies()[before..]
        .iter()
        .filter(|b| !is_title(b))
        .cloned()
        .collect();
    assert_eq!(bodies.len(), 2 * TURNS, "two model requests per turn");
    let counts: Vec<usize> = bodies
        .iter()
        .map(|b| {
            b["messages"]
                .as_array()
                .map(|ms| {
                    ms.iter()
                        .map(|m| tokens::count_message(m["content"].as_str().unwrap_or("")))
                        .sum()
                })
                .unwrap_or(0)
        })
        .collect();
    println!(
        "prompt tokens per request, {TURNS}-turn chat with one command per turn (o200k_base + {} per message):",
        tokens::MESSAGE_OVERHEAD
    );
    for (turn, pair) in counts.chunks(2).enumerate() {
        println!(
            "  turn {:>2}: command step {:>5}, answer step {:>5}",
            turn + 1,
            pair[0],
            pair[1]
        );
    }
    println!(
        "  max {} tokens; first request {} tokens",
        counts.iter().max().unwrap_or(&0),
        counts[0]
    );
    let mut daemon = daemon;
    let status = daemon.stop();
    assert!(
        status.is_some_and(|s| s.success()),
        "the daemon did not stop cleanly on SIGTERM: {status:?}"
    );
    let left = sayri_testkit::procs::stop_leftovers(dir.path(), Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "the bench left processes running: {left:?}"
    );
}
