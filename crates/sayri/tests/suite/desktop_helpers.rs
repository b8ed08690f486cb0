//! Front-end helpers over the real socket: `clipboard_copy` into a real X clipboard (Xvfb and
//! xclip), `killall` stopping only what the daemon supervises, the window events of
//! `sayri --show/--hide/--toggle/--settings`, and `conversation_started`.

use super::crash_safety::start_host;
use super::scripted_turns::wait_event;
use super::support::*;
use sayri_testkit::procs::ChildGuard;
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A private X server on a free display; stopped when dropped.
struct Xvfb {
    _guard: ChildGuard,
    display: String,
}

impl Xvfb {
    fn start() -> Xvfb {
        let base = 300 + (std::process::id() % 300);
        for n in base..base + 60 {
            if Path::new(&format!("/tmp/.X{n}-lock")).exists() {
                continue;
            }
            let child = Command::new("Xvfb")
                .arg(format!(":{n}"))
                .args(["-screen", "0", "640x480x24", "-nolisten", "tcp"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("Xvfb is missing; run ./scripts/setup --tests");
            let mut guard = ChildGuard::new(child, Duration::from_secs(2));
            let socket = format!("/tmp/.X11-unix/X{n}");
            if eventually(Duration::from_secs(10), || Path::new(&socket).exists()) {
                return Xvfb {
                    _guard: guard,
                    display: format!(":{n}"),
                };
            }
            guard.stop();
        }
        panic!("no free X display for Xvfb");
    }
}

/// What the X clipboard of `display` holds.
fn clipboard_of(display: &str) -> String {
    let o = Command::new("xclip")
        .args(["-selection", "clipboard", "-o"])
        .env("DISPLAY", display)
        .output()
        .expect("xclip is missing; run ./scripts/setup --tests");
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn clipboard_copy_puts_the_text_on_the_x_clipboard_and_says_which_program_did() {
    let env = Env::new();
    let x = Xvfb::start();
    let mut cmd = env.cmd();
    cmd.env("DISPLAY", &x.display).env_remove("WAYLAND_DISPLAY");
    let d = env.start_daemon_cmd(cmd);
    let mut c = RawClient::connect(&env.socket());
    let text = "naïve ✓ line one\nline two $HOME `x`";
    let r = c.call("clipboard_copy", json!({"text": text}), 1);
    assert_eq!(r["result"], json!({"copied": true, "via": "xclip"}), "{r}");
    assert_eq!(clipboard_of(&x.display), text);
    drop(c);
    drop(d);
    // The X server ends; the xclip keeping the selection ends with it.
    drop(x);
}

#[test]
fn clipboard_copy_without_a_graphical_session_says_why_each_program_failed() {
    let env = Env::new();
    let mut cmd = env.cmd();
    cmd.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    let _d = env.start_daemon_cmd(cmd);
    let mut c = RawClient::connect(&env.socket());
    let t0 = Instant::now();
    let r = c.call("clipboard_copy", json!({"text": "x"}), 1);
    assert!(t0.elapsed() < Duration::from_secs(5), "failures are quick");
    assert_eq!(r["result"]["copied"], false, "{r}");
    let reason = r["result"]["reason"].as_str().unwrap();
    for tool in ["wl-copy: ", "xclip: ", "xsel: "] {
        assert!(reason.contains(tool), "{reason}");
    }
    assert!(
        reason.contains("xclip: exited with status 1") && reason.contains("display"),
        "xclip's own words are kept: {reason}"
    );
    assert!(reason.contains("install wl-clipboard"), "{reason}");
    let r = c.call("clipboard_copy", json!({}), 2);
    assert_eq!(r["code"], "invalid_params", "{r}");
}

#[test]
fn killall_stops_the_supervised_programs_only_and_the_daemon_only_when_asked() {
    let env = Env::new_in("/var/tmp");
    let token = format!("{}7", std::process::id());
    let (mut host, program, keeper) = start_host(&env, &token);
    // A process whose command line matches the original's kill patterns, not started by the
    // daemon: it must survive.
    let decoy = Command::new("python3")
        .args([
            "-c",
            "import time; time.sleep(120)",
            "gateway.py",
            "python3 -m sayri",
        ])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let decoy_pid = decoy.id() as i32;
    let mut decoy = ChildGuard::new(decoy, Duration::from_secs(1));
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    let r = c.call("killall", json!({}), 1);
    assert_eq!(
        r["result"],
        json!({"stopped": ["stubborn"], "stopped_ui": [], "signalled": [], "errors": [],
               "daemon_stopped": false}),
        "{r}"
    );
    assert!(!alive(program) && !alive(keeper), "stopped and waited for");
    assert!(
        eventually(Duration::from_secs(5), || processes_with(&format!(
            "1000.{token}"
        ))
        .is_empty()),
        "its whole tree is gone"
    );
    assert!(alive(decoy_pid), "a process is never stopped by its name");
    let st = c.call("status", json!({}), 2);
    assert_eq!(st["result"]["supervised"][0]["state"], "stopped", "{st}");
    // Nothing left to stop; `ui_id` keeps a program running (none here).
    let r = c.call("killall", json!({"ui_id": "stubborn"}), 3);
    assert_eq!(r["result"]["stopped"], json!([]), "{r}");
    let r = c.call("killall", json!({"include_daemon": true}), 4);
    assert_eq!(r["result"]["daemon_stopped"], true, "{r}");
    let mut child = host.child.take().unwrap();
    assert!(
        eventually(Duration::from_secs(10), || child
            .try_wait()
            .unwrap()
            .is_some()),
        "the daemon stops after answering"
    );
    assert!(alive(decoy_pid));
    decoy.stop();
}

#[test]
fn window_flags_of_the_cli_reach_every_front_end_as_events() {
    let env = Env::new();
    let o = env.run(&["--toggle"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not running"), "{}", stderr(&o));
    let _d = env.start_daemon();
    let mut front = RawClient::connect(&env.socket());
    front
        .writer
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok();
    for (flag, event) in [
        ("--show", "show"),
        ("--hide", "hide"),
        ("--toggle", "toggle"),
        ("--settings", "settings_requested"),
    ] {
        let o = env.run(&[flag]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{flag}: a front-end is connected");
        let v = wait_event(&mut front, event, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{flag}: no {event} event"));
        assert_eq!(v, json!({"event": event}));
    }
    let o = env.run(&["--show", "--hide"]);
    assert_eq!(o.status.code(), Some(2), "one flag at a time");
    let o = env.run(&["--toggle", "status"]);
    assert_eq!(o.status.code(), Some(2), "a flag or a subcommand");
    drop(front);
    let o = env.run(&["--show"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("no front-end is connected"),
        "{}",
        stderr(&o)
    );
    let mut c = RawClient::connect(&env.socket());
    let r = c.call("window", json!({"action": "maximize"}), 1);
    assert_eq!(r["code"], "invalid_params", "{r}");
}

#[test]
fn new_conversation_announces_conversation_started_with_its_id() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    watcher
        .writer
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call("new_conversation", json!({}), 1);
    let id = r["result"]["session_id"].as_str().unwrap().to_string();
    let v = wait_event(&mut watcher, "conversation_started", Duration::from_secs(5)).unwrap();
    assert_eq!(
        v,
        json!({"event": "conversation_started", "session_id": id})
    );
}
