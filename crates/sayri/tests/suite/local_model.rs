//! The local model the daemon serves itself (`provider.local_model`) and the quick start that
//! sets it up: a real daemon supervising the real model server (SmolLM2-135M on node-llama-cpp,
//! installed by `./scripts/setup --tests`), real processes, real loopback sockets. Fails —
//! never skips — when the model is not installed.

use super::support::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MODEL: &str = "SmolLM2-135M-Instruct.Q4_1";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The test-model cache of `./scripts/setup --tests`, found from the real `HOME` (the tests'
/// commands get a temporary one).
fn models_cache() -> PathBuf {
    sayri_testkit::real_model::cache_dir()
}

/// A command with `env`'s environment, the real model cache, and `PATH` as the test has it.
fn env_cmd(env: &Env, program: &Path) -> Command {
    let mut c = env.cmd_for(program);
    c.env("SAYRI_TEST_MODELS_DIR", models_cache());
    c
}

/// Runs the quick start's model step (`scripts/setup.d/55-local-model.sh --model`) for `env`.
fn install_local_model(env: &Env) {
    let out = env_cmd(env, Path::new("bash"))
        .arg(repo().join("scripts/setup.d/55-local-model.sh"))
        .arg("--model")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "55-local-model.sh failed (run ./scripts/setup --tests): {}{}",
        stdout(&out),
        stderr(&out)
    );
}

fn status(env: &Env) -> Value {
    let mut c = RawClient::connect(&env.socket());
    c.call("status", json!({}), 1)["result"].clone()
}

/// The local model's status once it is `ready` (up to 120 s), with the server's pid.
fn wait_ready(env: &Env, not_pid: Option<u64>) -> (u16, u64, Value) {
    let mut last = Value::Null;
    let ok = eventually(Duration::from_secs(120), || {
        last = status(env);
        let child = last["supervised"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == "local-model").cloned())
            .unwrap_or(Value::Null);
        last["local_model"]["state"] == "ready"
            && child["pid"].as_u64().is_some()
            && child["pid"].as_u64() != not_pid
    });
    assert!(ok, "the local model never became ready: {last:#}");
    let child = last["supervised"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == "local-model").cloned())
        .unwrap();
    let port = last["local_model"]["port"].as_u64().unwrap() as u16;
    (port, child["pid"].as_u64().unwrap(), child)
}

/// Every TCP socket listening on `port`, as `(local address hex, table)` from `/proc/net`.
fn listeners(port: u16) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let Some((addr, p)) = f.get(1).and_then(|a| a.split_once(':')) else {
                continue;
            };
            if f.get(3) == Some(&"0A") && u16::from_str_radix(p, 16) == Ok(port) {
                out.push((addr.to_string(), table));
            }
        }
    }
    out
}

/// `GET path` on loopback without a token; the status line.
fn http_status_line(port: u16, path: &str) -> String {
    http_status_line_with(port, path, "")
}

/// `GET path` on loopback with `extra` header lines (each ending in `\r\n`); the status line.
fn http_status_line_with(port: u16, path: &str, extra: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines().next().unwrap_or("").to_string()
}

fn alive(pid: u64) -> bool {
    // SAFETY: kill takes plain integers and touches no memory of this process.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

#[test]
fn the_daemon_serves_the_local_model_on_loopback_restarts_it_and_stops_it_with_itself() {
    let env = Env::new();
    install_local_model(&env);
    let mut daemon = env.start_daemon();
    let set = env.run(&["config", "set", "provider.local_model", MODEL]);
    assert!(set.status.success(), "{}", stderr(&set));

    let (port, pid, _) = wait_ready(&env, None);
    // Loopback only, and only for the daemon: no listener beyond 127.0.0.1, and a request
    // without the daemon's token is refused.
    let l = listeners(port);
    assert_eq!(
        l,
        [("0100007F".to_string(), "tcp")],
        "listeners on {port}: {l:?}"
    );
    assert!(
        http_status_line(port, "/v1/models").contains(" 401 "),
        "a request without the token must be refused"
    );
    let st = status(&env);
    assert_eq!(st["provider"]["local"], true, "{st:#}");
    assert_eq!(st["provider"]["model"], MODEL);

    // A plain `sayri ask` is answered by the local model through the daemon.
    let asked = env.run(&["ask", "What is the capital of France?"]);
    assert!(asked.status.success(), "{}", stderr(&asked));
    assert!(!stdout(&asked).trim().is_empty(), "no answer");
    assert!(
        !stdout(&asked).contains("Provider error"),
        "{}",
        stdout(&asked)
    );

    // Killed: restarted by the supervisor, on a new pid, and usable again.
    // SAFETY: kill takes plain integers and touches no memory of this process.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let (_, new_pid, child) = wait_ready(&env, Some(pid));
    assert_ne!(new_pid, pid);
    assert!(child["restarts"].as_u64().unwrap_or(0) >= 1, "{child:#}");
    assert!(!alive(pid));

    // Stopped with the daemon.
    assert!(daemon.terminate(Duration::from_secs(10)).is_some());
    assert!(
        eventually(Duration::from_secs(5), || !alive(new_pid)),
        "the model server outlived the daemon"
    );
}

#[test]
fn a_local_model_that_is_not_installed_is_refused_with_what_to_do() {
    let env = Env::new();
    let out = env.run(&["config", "set", "provider.local_model", "no-such-model"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("no-such-model.gguf does not exist"), "{err}");
    assert!(err.contains("sayri models install"), "{err}");
    let _ = env.run(&["quit", "--no-start"]);
}

#[test]
fn models_list_shows_installed_local_models_without_remote() {
    let env = Env::new();
    install_local_model(&env);
    let out = env.run(&["--no-start", "models", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(MODEL), "{text}");
    assert!(
        text.contains(&format!("sayri config set provider.local_model {MODEL}")),
        "{text}"
    );
}

/// `scripts/ask-local` as the quick start runs it, on a temporary `HOME` (the build step uses
/// this test's binary).
fn quick_start(env: &Env) -> Output {
    env_cmd(env, &repo().join("scripts/ask-local"))
        .arg("What is the capital of France?")
        .env("SAYRI_ASK_LOCAL_BIN", BIN)
        .current_dir(repo())
        .output()
        .unwrap()
}

#[test]
fn after_the_quick_start_a_plain_sayri_ask_in_a_new_terminal_answers_from_the_local_model() {
    let env = Env::with_home_config("/tmp");
    install_local_model(&env);
    let out = quick_start(&env);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        !stdout(&out).trim().is_empty(),
        "the quick start printed no answer"
    );
    let installed = env.dir.path().join(".local/bin/sayri");
    assert!(
        installed.is_file(),
        "sayri was not installed in ~/.local/bin"
    );
    let toml = std::fs::read_to_string(env.config_dir().join("sayri.toml")).unwrap();
    assert!(
        toml.contains(&format!("local_model = \"{MODEL}\"")),
        "{toml}"
    );

    // A new terminal: only the installed program and the same HOME.
    let again = env_cmd(&env, &installed)
        .args(["ask", "What is the capital of France?"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!stdout(&again).trim().is_empty());
    assert!(
        !stderr(&again).contains("started it in the background"),
        "the quick start's daemon should still be running: {}",
        stderr(&again)
    );
    let st = status(&env);
    assert_eq!(st["local_model"]["state"], "ready", "{st:#}");
    let _ = env.run(&["quit", "--no-start"]);
}

#[test]
fn the_quick_start_leaves_existing_settings_untouched_and_prints_the_switch_command() {
    let env = Env::with_home_config("/tmp");
    install_local_model(&env);
    std::fs::create_dir_all(env.config_dir()).unwrap();
    let mine = "# mine\n[provider]\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let file = env.config_dir().join("sayri.toml");
    std::fs::write(&file, mine).unwrap();
    let out = quick_start(&env);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), mine);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("sayri config set provider.local_model {MODEL}")),
        "{err}"
    );
    // The question went to the user's own (unreachable) endpoint, and the failure says how
    // to fix it.
    assert!(err.contains("sayri config set provider.base_url"), "{err}");
    let _ = env.run(&["quit", "--no-start"]);
}

/// Lines a package manager prints when its output is let through: apt/dpkg, pip, npm.
const PACKAGE_MANAGER_NOISE: &[&str] = &[
    "Reading package lists",
    "Building dependency tree",
    "Reading state information",
    "Selecting previously unselected",
    "Preparing to unpack",
    "Unpacking ",
    "Setting up ",
    "Processing triggers",
    "Get:",
    "Hit:",
    "Collecting ",
    "Downloading ",
    "Successfully installed",
    "Requirement already satisfied",
    "npm WARN",
    "npm notice",
    "added ",
];

/// Lines of `text` a package manager printed.
fn package_manager_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            PACKAGE_MANAGER_NOISE
                .iter()
                .any(|n| l.trim_start().starts_with(n))
        })
        .collect()
}

/// Quick-start command 1 as the README gives it (`./scripts/setup --model && ./scripts/ask-local
/// "…"`), on a temporary `HOME` with no settings: setup prints one summary line per step and
/// ask-local a line per stage, `[1/4]` to `[4/4]` in order, then the answer; no line of apt,
/// dpkg, pip or npm output reaches the terminal.
#[test]
fn the_quick_start_shows_a_line_per_stage_and_no_package_manager_output() {
    let env = Env::with_home_config("/tmp");
    let setup = env_cmd(&env, &repo().join("scripts/setup"))
        .arg("--model")
        .current_dir(repo())
        .output()
        .unwrap();
    let setup_text = format!("{}{}", stdout(&setup), stderr(&setup));
    assert!(setup.status.success(), "{setup_text}");
    for line in setup_text.lines() {
        assert!(
            line.starts_with("setup: ") || line.starts_with("[5"),
            "setup printed a line that is not its own summary: {line:?}\n{setup_text}"
        );
    }
    assert!(
        setup_text.contains("[55-local-model] local model installed in"),
        "{setup_text}"
    );
    let last = setup_text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("setup: ok in ") && last.ends_with(" s"),
        "setup should end saying how long it took: {setup_text}"
    );

    let out = quick_start(&env);
    let (said, answer) = (stderr(&out), stdout(&out));
    assert!(out.status.success(), "{answer}{said}");
    let stages: Vec<&str> = said
        .lines()
        .filter_map(|l| l.strip_prefix("ask-local: ["))
        .filter_map(|l| l.get(..3))
        .collect();
    assert_eq!(stages, ["1/4", "2/4", "3/4", "4/4"], "{said}");
    assert!(
        said.contains("ask-local: [4/4] asking: What is the capital of France?"),
        "{said}"
    );
    assert!(!answer.trim().is_empty(), "no answer: {said}");
    let done = said.lines().last().unwrap_or_default();
    assert!(
        done.starts_with("ask-local: done in ") && done.contains("answer "),
        "ask-local should end with the total time: {said}"
    );
    for text in [&setup_text, &said, &answer] {
        let noise = package_manager_lines(text);
        assert!(
            noise.is_empty(),
            "package-manager output: {noise:?}\n{text}"
        );
    }
    let _ = env.run(&["quit", "--no-start"]);
}

// ---------------------------------------------------------------------------------------------
// Nobody stands in for the server: its port is the daemon's, its token new at every start.

/// A stranger that tries, for as long as it runs, to take `port` in every way a local process
/// could (plain, `SO_REUSEADDR`, `SO_REUSEPORT`, on 127.0.0.1 and on the wildcard address);
/// a bind that succeeds is served, and every byte it receives is recorded.
struct Stranger {
    stop: Arc<AtomicBool>,
    attempts: Arc<AtomicUsize>,
    bound: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// One bind attempt on `addr:port` with `SO_REUSEADDR` set.
fn squat(addr: std::net::Ipv4Addr, port: u16) -> Option<std::net::TcpListener> {
    use nix::sys::socket::*;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .ok()?;
    setsockopt(&fd, sockopt::ReuseAddr, &true).ok()?;
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &SockaddrIn::from(std::net::SocketAddrV4::new(addr, port)),
    )
    .ok()?;
    listen(&fd, Backlog::new(16).ok()?).ok()?;
    Some(std::net::TcpListener::from(fd))
}

/// As [`squat`] with `SO_REUSEPORT` too.
fn squat_sharing(addr: std::net::Ipv4Addr, port: u16) -> Option<std::net::TcpListener> {
    use nix::sys::socket::*;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .ok()?;
    setsockopt(&fd, sockopt::ReusePort, &true).ok()?;
    setsockopt(&fd, sockopt::ReuseAddr, &true).ok()?;
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &SockaddrIn::from(std::net::SocketAddrV4::new(addr, port)),
    )
    .ok()?;
    listen(&fd, Backlog::new(16).ok()?).ok()?;
    Some(std::net::TcpListener::from(fd))
}

impl Stranger {
    fn start(port: u16) -> Stranger {
        let stop = Arc::new(AtomicBool::new(false));
        let attempts = Arc::new(AtomicUsize::new(0));
        let bound = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (s, a, b, r) = (
            stop.clone(),
            attempts.clone(),
            bound.clone(),
            received.clone(),
        );
        let thread = std::thread::spawn(move || {
            let mut held: Vec<std::net::TcpListener> = Vec::new();
            while !s.load(Ordering::Relaxed) {
                let lo = std::net::Ipv4Addr::LOCALHOST;
                let any = std::net::Ipv4Addr::UNSPECIFIED;
                let tries = [
                    std::net::TcpListener::bind(("127.0.0.1", port)).ok(),
                    squat(lo, port),
                    squat_sharing(lo, port),
                    squat_sharing(any, port),
                ];
                a.fetch_add(tries.len(), Ordering::Relaxed);
                for l in tries.into_iter().flatten() {
                    b.fetch_add(1, Ordering::Relaxed);
                    let _ = l.set_nonblocking(true);
                    held.push(l);
                }
                for l in &held {
                    while let Ok((mut c, _)) = l.accept() {
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(Duration::from_millis(300)));
                        let mut buf = [0u8; 65536];
                        if let Ok(n) = c.read(&mut buf) {
                            r.lock().unwrap().extend_from_slice(&buf[..n]);
                        }
                        let _ = c.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n\
                              data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"STRANGER\"}}]}\n\n\
                              data: [DONE]\n\n",
                        );
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        Stranger {
            stop,
            attempts,
            bound,
            received,
            thread: Some(thread),
        }
    }

    /// Stops it; `(bind attempts, binds that succeeded, bytes received)`.
    fn finish(mut self) -> (usize, usize, Vec<u8>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        (
            self.attempts.load(Ordering::Relaxed),
            self.bound.load(Ordering::Relaxed),
            self.received.lock().unwrap().clone(),
        )
    }
}

#[test]
fn a_killed_local_model_servers_port_is_never_free_and_a_stranger_receives_nothing_20_times() {
    let env = Env::new();
    install_local_model(&env);
    let mut daemon = env.start_daemon();
    // Short answers: the property under test is who answers, not what.
    let short = env.run(&["config", "set", "provider.max_tokens", "24"]);
    assert!(short.status.success(), "{}", stderr(&short));
    let set = env.run(&["config", "set", "provider.local_model", MODEL]);
    assert!(set.status.success(), "{}", stderr(&set));
    let (mut last_pid, mut last_port) = (None, 0);
    for round in 0..20 {
        // The supervisor's breaker gives up after 5 crashes within 5 minutes, and its backoff
        // doubles: every 2 kills the setting is applied again, which starts the server afresh
        // on a new port (the old one is given back).
        let fresh = round > 0 && round % 2 == 0;
        if fresh {
            for value in ["", MODEL] {
                let o = env.run(&["config", "set", "provider.local_model", value]);
                assert!(o.status.success(), "{}", stderr(&o));
            }
        }
        let (mut port, mut pid, _) = wait_ready(&env, last_pid);
        while fresh && port == last_port {
            std::thread::sleep(Duration::from_millis(100));
            (port, pid, _) = wait_ready(&env, last_pid);
        }
        last_port = port;
        let stranger = Stranger::start(port);
        // SAFETY: kill takes plain integers and touches no memory of this process.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        assert!(
            eventually(Duration::from_secs(5), || !alive(pid)),
            "round {round}: the server did not die"
        );
        assert_eq!(
            listeners(port),
            [("0100007F".to_string(), "tcp")],
            "round {round}: the port stays the daemon's while no server runs"
        );
        let asked = env.run(&["ask", "--new", "What is the capital of France?"]);
        let (attempts, bound, received) = stranger.finish();
        assert!(attempts > 0, "round {round}: the stranger never tried");
        assert_eq!(bound, 0, "round {round}: the stranger took port {port}");
        assert!(
            received.is_empty(),
            "round {round}: the stranger received {:?}",
            String::from_utf8_lossy(&received)
        );
        // The answer is the real model's: text, or (the tiny model rambles at times) its
        // answer cut at the token limit; never the stranger's, never a connection error.
        let (out, err) = (stdout(&asked), stderr(&asked));
        assert!(
            !out.contains("STRANGER") && !err.contains("STRANGER"),
            "round {round}"
        );
        assert!(
            (asked.status.success() && !out.trim().is_empty())
                || err.contains("cut off at the token limit"),
            "round {round}: {out}{err}"
        );
        last_pid = Some(pid);
    }
    assert!(daemon.terminate(Duration::from_secs(10)).is_some());
}

#[test]
fn the_local_model_servers_token_is_in_no_command_line_or_environment_in_any_encoding_and_every_route_wants_it()
 {
    use super::proc_scan::{assert_no_form, read_as_nobody, read_as_us, tree};
    let env = Env::new();
    install_local_model(&env);
    let mut daemon = env.start_daemon();
    let set = env.run(&["config", "set", "provider.local_model", MODEL]);
    assert!(set.status.success(), "{}", stderr(&set));
    let (port, pid, _) = wait_ready(&env, None);
    let all = tree(daemon.pid());
    assert!(
        all.contains(&(pid as u32)),
        "the server runs below the daemon"
    );
    // A 32-hex-digit word (the token's shape) or the token's name is nowhere readable.
    let token_like = |b: &[u8]| {
        let t = String::from_utf8_lossy(b);
        t.contains("SAYRI_LLM_TOKEN")
            || t.split(|c: char| !c.is_ascii_hexdigit())
                .any(|w| w.len() >= 32)
    };
    for (who, seen) in [
        ("uid 65534", read_as_nobody(&all)),
        ("the same uid", read_as_us(&all)),
    ] {
        for s in &seen {
            if let Some(b) = &s.bytes {
                assert!(
                    !token_like(b),
                    "{who}: {} of pid {}: {}",
                    s.file,
                    s.pid,
                    String::from_utf8_lossy(b)
                );
            }
        }
    }
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        environ.contains("SAYRI_SECRETS_FD=3") && environ.contains("SAYRI_LISTEN_FD=4"),
        "{environ}"
    );
    // Without the token every route is refused but the health check, which says nothing.
    for path in [
        "/v1/models",
        "/v1/chat/completions",
        "/",
        "/props",
        "/slots",
        "/metrics",
    ] {
        let line = http_status_line(port, path);
        assert!(line.contains(" 401 "), "{path}: {line}");
    }
    assert!(http_status_line(port, "/health").contains(" 200 "));

    // The token itself, as it goes over the loopback wire to the server (the test is root and
    // listens on `lo`): it opens the model, and no process shows it in any encoding.
    let short = env.run(&["config", "set", "provider.max_tokens", "24"]);
    assert!(short.status.success(), "{}", stderr(&short));
    let sniffer = LoopbackSniffer::start(port);
    let asked = env.run(&["ask", "--new", "Say hi."]);
    let tokens = sniffer.finish();
    assert!(
        asked.status.success() || stderr(&asked).contains("cut off at the token limit"),
        "{}",
        stderr(&asked)
    );
    assert_eq!(tokens.len(), 1, "one bearer token on the wire: {tokens:?}");
    let token = &tokens[0];
    let bearer = format!("Authorization: Bearer {token}\r\n");
    assert!(
        http_status_line_with(port, "/v1/models", &bearer).contains(" 200 "),
        "the token seen on the wire is the server's"
    );
    let all = tree(daemon.pid());
    assert_no_form("uid 65534", &read_as_nobody(&all), token);
    assert_no_form("the same uid", &read_as_us(&all), token);
    assert!(daemon.terminate(Duration::from_secs(10)).is_some());
}

/// Records, as root on the loopback interface, every `Authorization: Bearer <32 hex>` sent to
/// `port` (a raw packet socket: what any root process could see, and how the test learns the
/// token the daemon made, which nothing else shows).
struct LoopbackSniffer {
    child: std::process::Child,
}

/// Prints `ready`, then each distinct token sent to the port in `argv[1]` as `token HEX`; stops
/// after the first one or 120 s.
const SNIFF: &str = r#"import re, socket, sys, time
port = int(sys.argv[1])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(3))
s.bind(("lo", 0))
s.settimeout(0.2)
print("ready", flush=True)
end = time.time() + 120
while time.time() < end:
    try:
        d = s.recv(65535)
    except socket.timeout:
        continue
    # Ethernet (14) + IPv4 header; the TCP destination port follows the IP header.
    if len(d) < 40 or d[12:14] != b"\x08\x00" or d[23] != 6:
        continue
    ihl = (d[14] & 15) * 4
    if int.from_bytes(d[14 + ihl + 2:14 + ihl + 4], "big") != port:
        continue
    m = re.search(rb"[Aa]uthorization: Bearer ([0-9a-f]{32})\r\n", d)
    if m:
        print("token", m.group(1).decode(), flush=True)
        break
"#;

impl LoopbackSniffer {
    fn start(port: u16) -> LoopbackSniffer {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .args(["-c", SNIFF, &port.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "the sniffer needs root: {line}");
        LoopbackSniffer { child }
    }

    /// The tokens it saw (waits for it to stop).
    fn finish(self) -> Vec<String> {
        let out = self.child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("token ").map(str::to_string))
            .collect()
    }
}
