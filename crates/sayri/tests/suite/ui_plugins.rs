//! Front-ends the daemon runs (`ui_*`), over the real daemon: the web bubble started with
//! `ui_start` is a supervised program that really serves, is never started twice, survives a
//! `killall` that names it, and `ui_stop` stops exactly it; its login secret never reaches its
//! log.

use super::support::*;
use serde_json::json;
use std::time::Duration;

fn alive(pid: u64) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn the_web_bubble_runs_once_survives_a_killall_that_keeps_it_and_ui_stop_stops_only_it() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    let listed = c.call("ui_list", json!({}), 1);
    let ids: Vec<&str> = listed["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["orb", "web"], "{listed}");
    assert_eq!(listed["result"][1]["running"], false, "{listed}");

    let r = c.call("ui_start", json!({"ui_id": "sayri-ui-web"}), 2);
    assert_eq!(r["result"]["ui_id"], "web", "{r}");
    assert_eq!(r["result"]["already_running"], false, "{r}");
    let url_file = env.state_dir().join("sayri-web.url");
    assert!(
        eventually(Duration::from_secs(20), || url_file.exists()),
        "the bubble serves and wrote its address"
    );
    let url = std::fs::read_to_string(&url_file).unwrap();
    let port: u16 = url
        .trim()
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a loopback address: {url}"));
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    // The login secret is in the 0600 url file and nowhere in the bubble's log.
    let secret = url
        .trim()
        .split_once("?s=")
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| panic!("a login address: {url}"));
    assert!(secret.len() >= 16, "{url}");
    let log_file = env.state_dir().join("logs").join("ui-web.log");
    assert!(
        eventually(Duration::from_secs(10), || std::fs::read_to_string(
            &log_file
        )
        .is_ok_and(|l| l.contains("?s=") || l.contains("sayri-web.url"))),
        "the bubble said in its log where to log in: {:?}",
        std::fs::read_to_string(&log_file)
    );
    let log = std::fs::read_to_string(&log_file).unwrap();
    assert!(
        !log.contains(&secret),
        "the login secret is in the log: {log}"
    );
    assert!(
        log.contains("sayri-web.url"),
        "the log names the url file: {log}"
    );
    let again = c.call("ui_start", json!({"ui_id": "web"}), 3);
    assert_eq!(again["result"]["already_running"], true, "{again}");
    let st = c.call("ui_status", json!({"ui_id": "web"}), 4);
    assert_eq!(st["result"]["running"], true, "{st}");
    let pid = st["result"]["pid"].as_u64().expect("a pid");
    assert!(alive(pid));

    let k = c.call("killall", json!({"ui_id": "web"}), 5);
    assert_eq!(k["result"]["stopped_ui"], json!([]), "{k}");
    assert!(alive(pid), "killall kept the UI it names");

    let r = c.call("ui_stop", json!({"ui_id": "web"}), 6);
    assert_eq!(r["result"], json!({"ui_id": "web", "stopped": true}), "{r}");
    assert!(
        eventually(Duration::from_secs(10), || !alive(pid)),
        "the bubble is gone"
    );
    let r = c.call("ui_stop", json!({"ui_id": "web"}), 7);
    assert_eq!(r["result"]["stopped"], false, "{r}");
    assert_eq!(
        c.call("ui_status", json!({"ui_id": "web"}), 8)["result"]["running"],
        false
    );
    let r = c.call("ui_start", json!({"ui_id": "clippy"}), 9);
    assert_eq!(r["code"], "not_found", "{r}");
    assert!(r["error"].as_str().unwrap().contains("orb, web"), "{r}");
    // The daemon goes on.
    assert_eq!(c.call("ping", json!({}), 10)["result"], "pong");
}
