//! One daemon per runtime dir; stale sockets are replaced.

use super::support::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn a_second_daemon_is_refused_with_a_clear_message() {
    let env = Env::new();
    let d = env.start_daemon();
    let o = env.run(&["daemon"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("already running"), "{err}");
    assert!(err.contains(&format!("pid {}", d.pid())), "{err}");
    // The first one is unharmed.
    let mut c = RawClient::connect(&env.socket());
    assert_eq!(c.call("ping", json!({}), 1)["result"], "pong");
}

#[test]
fn a_stale_socket_file_is_replaced() {
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    // A socket file whose listener is gone (a crashed daemon leaves exactly this).
    drop(std::os::unix::net::UnixListener::bind(env.socket()).unwrap());
    assert!(env.socket().exists());
    assert!(std::os::unix::net::UnixStream::connect(env.socket()).is_err());
    let mut d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    assert_eq!(c.call("ping", json!({}), 1)["result"], "pong");
    assert!(
        d.log_text().contains("removed stale socket"),
        "{}",
        d.log_text()
    );
    // SIGKILL leaves the socket behind; the next daemon takes over.
    let mut child = d.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(env.socket().exists());
    let _d2 = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    assert_eq!(c.call("ping", json!({}), 2)["result"], "pong");
    let _ = Duration::ZERO;
}
