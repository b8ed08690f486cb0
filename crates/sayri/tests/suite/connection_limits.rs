//! A program of the user that opens connections and leaves them half-sent cannot take every
//! descriptor the daemon may open: each socket serves at most a fixed number at once, closes
//! the ones beyond it unread, and the other socket keeps answering.

use super::gateway_rig::legacy_socket;
use super::support::*;
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// More than the daemon serves on one socket at once (256).
const FLOOD: usize = 320;

/// `n` connections to `socket`, each holding the start of a request and never its end.
fn half_sent(socket: &Path, n: usize, start: &[u8]) -> Vec<UnixStream> {
    (0..n)
        .map(|_| {
            let mut s = UnixStream::connect(socket).unwrap();
            s.write_all(start).unwrap();
            s
        })
        .collect()
}

/// How many of `conns` the daemon closed within 5 s: a read sees the end of the stream, or a
/// reset (a Unix socket closed with unread bytes in it resets its peer).
fn closed_by_daemon(conns: &mut [UnixStream]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut closed = 0;
    for c in conns.iter_mut() {
        let left = deadline.saturating_duration_since(Instant::now());
        c.set_read_timeout(Some(left.max(Duration::from_millis(20))))
            .unwrap();
        let mut buf = [0u8; 64];
        match c.read(&mut buf) {
            Ok(0) => closed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed += 1,
            _ => {}
        }
    }
    closed
}

#[test]
fn a_flood_of_half_sent_connections_on_either_socket_is_capped_and_the_daemon_keeps_answering() {
    let env = Env::new();
    let d = env.start_daemon();
    let baseline = d.fd_count();

    let mut legacy = half_sent(&legacy_socket(&env), FLOOD, b"{\"type\":\"INCOM");
    // The connections beyond the cap are closed at once, the first ones are kept waiting.
    let closed = closed_by_daemon(&mut legacy[256..]);
    assert_eq!(closed, FLOOD - 256, "connections beyond the cap are closed");
    let mut c = RawClient::connect(&env.socket());
    let r = c.call("ping", json!({}), 1);
    assert_eq!(r["result"], "pong", "{r}");
    // The daemon holds about one descriptor per served connection, not one per attempt.
    let held = d.fd_count().saturating_sub(baseline);
    assert!(
        held <= 256 + 16,
        "{held} descriptors held for {FLOOD} attempts"
    );

    // The control socket has its own cap: a flood there leaves the legacy socket answering.
    drop(legacy);
    let mut control = half_sent(&env.socket(), FLOOD, b"{\"cmd\":\"pi");
    let closed = closed_by_daemon(&mut control[256..]);
    assert!(closed >= FLOOD - 256, "{closed} closed");
    let mut s = UnixStream::connect(legacy_socket(&env)).unwrap();
    s.write_all(b"sayri-gui-ping\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert_eq!(answer.trim(), "DAEMON");

    // Once the flood ends, the control socket serves again.
    drop(control);
    assert!(
        eventually(Duration::from_secs(10), || {
            let Ok(mut c) = RawClient::try_connect(&env.socket()) else {
                return false;
            };
            c.call("ping", json!({}), 2)["result"] == "pong"
        }),
        "the control socket serves again after the flood"
    );
    let log = std::fs::read_to_string(env.daemon_log()).unwrap_or_default();
    assert!(
        log.contains("connections are open; new ones are closed"),
        "the cap is logged"
    );
}
