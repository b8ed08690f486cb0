//! Socket activation with both of the daemon's sockets, as systemd passes them: the real daemon
//! under `systemd-socket-activate`, which listens on the given paths, waits for the first
//! connection and then executes the daemon with the descriptors from 3 on and `LISTEN_FDS`,
//! `LISTEN_PID` and `LISTEN_FDNAMES` set exactly as systemd sets them.

use super::secret_rig::write_config;
use super::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn legacy_socket(env: &Env) -> PathBuf {
    env.state_dir().join("sayri.sock")
}

/// `systemd-socket-activate` listening on `listen` (paths or addresses) with `names`, then
/// running `sayri daemon` with this env's variables.
fn activated(env: &Env, listen: &[String], names: &str) -> Daemon {
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut c = Command::new("systemd-socket-activate");
    for l in listen {
        c.arg("-l").arg(l);
    }
    c.arg(format!("--fdname={names}"));
    for (k, v) in env.cmd().get_envs() {
        if let Some(v) = v {
            let mut kv = std::ffi::OsString::from(k);
            kv.push("=");
            kv.push(v);
            c.arg("-E").arg(kv);
        }
    }
    c.args(["-E", "PATH"]).arg(BIN).arg("daemon");
    let log = std::fs::File::create(env.daemon_log()).unwrap();
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("systemd-socket-activate is missing; run ./scripts/setup --tests");
    let d = Daemon {
        child: Some(child),
        log: env.daemon_log(),
    };
    let paths: Vec<&String> = listen.iter().filter(|l| l.starts_with('/')).collect();
    let ready = |d: &Daemon| {
        paths.iter().all(|p| Path::new(p.as_str()).exists())
            && d.log_text().contains("Listening on")
    };
    assert!(
        eventually(Duration::from_secs(10), || ready(&d)),
        "systemd-socket-activate did not listen: {}",
        d.log_text()
    );
    d
}

/// `sayri-gui-ping` on the legacy socket; the answer line.
fn legacy_ping(path: &Path) -> String {
    let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"sayri-gui-ping\n").unwrap();
    let mut line = String::new();
    let _ = BufReader::new(s).read_line(&mut line);
    line.trim().to_string()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn two_named_activation_sockets_passed_legacy_first_are_both_adopted_and_answer() {
    let env = Env::new();
    write_config(&env, "http://127.0.0.1:9/v1", "");
    let (control, legacy) = (env.socket(), legacy_socket(&env));
    let mut d = activated(
        &env,
        &[legacy.display().to_string(), control.display().to_string()],
        "sayri.sock:sayri-daemon.sock",
    );
    // As `SocketMode=0600` in the units makes them (systemd-socket-activate makes 0644).
    for p in [&control, &legacy] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let inodes = [&control, &legacy].map(|p| std::fs::metadata(p).unwrap().ino());
    // The first connection starts the daemon; it is served.
    let mut c = RawClient::connect(&control);
    let pong = c.call("ping", json!({}), 1);
    assert_eq!(pong["result"], "pong", "{pong}\n{}", d.log_text());
    assert_eq!(legacy_ping(&legacy), "DAEMON", "{}", d.log_text());
    let st = c.call("status", json!({}), 2);
    assert_eq!(
        st["result"]["pid"].as_u64(),
        Some(u64::from(d.pid())),
        "{st}"
    );
    assert_eq!(st["result"]["socket_warnings"], json!([]), "{st}");
    drop(c);
    assert_eq!(
        [&control, &legacy].map(|p| std::fs::metadata(p).unwrap().ino()),
        inodes,
        "both sockets are the passed ones, never re-bound"
    );
    assert_eq!((mode(&control), mode(&legacy)), (0o600, 0o600));
    // Both are the daemon's and nobody else's: exactly two listening Unix sockets of its own.
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", d.pid()))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|t| t.display().to_string())
        .collect();
    assert!(fds.iter().filter(|t| t.starts_with("socket:")).count() >= 2);
    assert!(env.run(&["quit"]).status.success());
    let st = d.child.as_mut().unwrap().wait().unwrap();
    assert!(st.success(), "{st:?}: {}", d.log_text());
    assert!(
        control.exists() && legacy.exists(),
        "the daemon removed a socket it did not bind"
    );
}

#[test]
fn a_passed_socket_with_an_unknown_name_is_closed_and_logged() {
    let env = Env::new();
    write_config(&env, "http://127.0.0.1:9/v1", "");
    let stray = env.state_dir().join("stray.sock");
    let d = activated(
        &env,
        &[
            stray.display().to_string(),
            env.socket().display().to_string(),
        ],
        "mystery:sayri-daemon.sock",
    );
    let mut c = RawClient::connect(&env.socket());
    assert_eq!(c.call("ping", json!({}), 1)["result"], "pong");
    let st = c.call("status", json!({}), 2);
    let warnings = st["result"]["socket_warnings"].to_string();
    assert!(warnings.contains("unknown name \\\"mystery\\\""), "{st}");
    assert!(
        d.log_text().contains("unknown name \"mystery\""),
        "{}",
        d.log_text()
    );
    // The daemon made its own legacy socket, since none was passed for it.
    assert_eq!(legacy_ping(&legacy_socket(&env)), "DAEMON");
    drop(c);
    let _ = env.run(&["quit"]);
}

#[test]
fn a_passed_socket_looser_than_0600_is_made_private_and_warned_about_in_the_log_status_and_doctor()
{
    let env = Env::new();
    write_config(&env, "http://127.0.0.1:9/v1", "");
    let d = activated(
        &env,
        &[env.socket().display().to_string()],
        "sayri-daemon.sock",
    );
    // As `SocketMode=0666` would make it: connectable by every user.
    std::fs::set_permissions(env.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let loose = mode(&env.socket());
    let mut c = RawClient::connect(&env.socket());
    let st = c.call("status", json!({}), 1);
    drop(c);
    assert_eq!(mode(&env.socket()), 0o600);
    let warnings: Vec<Value> = st["result"]["socket_warnings"].as_array().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{st}");
    let w = warnings[0].as_str().unwrap();
    assert!(
        w.contains(&format!("mode {loose:04o}")) && w.contains("SocketMode=0600"),
        "{w}"
    );
    assert_eq!(d.log_text().matches("other users could connect").count(), 1);
    let doctor = env.run(&["--no-start", "doctor"]);
    let text = stdout(&doctor);
    assert!(
        text.lines()
            .any(|l| l.starts_with("[warn] daemon socket")
                && l.contains("other users could connect")),
        "{text}"
    );
    let _ = env.run(&["quit"]);
}

#[test]
fn a_passed_tcp_socket_is_refused_and_nothing_ever_answers_on_tcp() {
    let env = Env::new();
    write_config(&env, "http://127.0.0.1:9/v1", "");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut d = activated(&env, &[format!("127.0.0.1:{port}")], "sayri-daemon.sock");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n{\"cmd\":\"ping\",\"id\":1}\n");
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut s, &mut answer);
    assert!(answer.is_empty(), "{:?}", String::from_utf8_lossy(&answer));
    let st = d.child.as_mut().unwrap().wait().unwrap();
    assert_eq!(st.code(), Some(1), "{}", d.log_text());
    assert!(d.log_text().contains("TCP socket"), "{}", d.log_text());
    assert!(!env.socket().exists(), "it bound a socket of its own");
}
