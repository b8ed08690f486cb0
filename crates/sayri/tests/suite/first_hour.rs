//! What a new user meets in the first hour, through the real binary and daemon: failed
//! requests stored as error records, session id prefixes, the sandbox line of the first
//! `status` (probing, then the levels), locale speech defaults, `HOME` at levels 1–2, and the
//! prompt naming the real user.

use super::support::*;
use serde_json::Value;

/// An endpoint where nothing listens (port 9, discard, is closed on loopback).
const DEAD_ENDPOINT: &str = "http://127.0.0.1:9/v1";

#[test]
fn a_failed_request_is_an_error_record_shown_as_an_error_and_named_by_an_id_prefix() {
    let env = Env::new();
    let set = env.run(&["config", "set", "provider.base_url", DEAD_ENDPOINT]);
    assert!(set.status.success(), "{}", stderr(&set));
    let ask = env.run(&["ask", "How much disk is free?"]);
    let said = format!("{}{}", stdout(&ask), stderr(&ask));
    assert!(said.contains("no model server at"), "{said}");
    assert!(
        said.contains("sayri config set provider.base_url"),
        "the error names the fix: {said}"
    );

    let list = env.run(&["sessions", "list", "--json"]);
    let sessions: Value = serde_json::from_slice(&list.stdout).unwrap();
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let prefix = &id[..6];

    let json = env.run(&["sessions", "show", prefix, "--json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let session: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(session["id"], id.as_str(), "the prefix names the session");
    let roles: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "error"]);

    let shown = stdout(&env.run(&["sessions", "show", prefix]));
    assert!(
        shown.contains("[error] ✗ Provider error: no model server"),
        "{shown}"
    );
    assert!(
        !shown.contains("[assistant]"),
        "an error is not something Sayri said: {shown}"
    );
    assert!(!shown.contains("⚠️"), "{shown}");

    let short = env.run(&["sessions", "show", &id[..3]]);
    assert!(!short.status.success());
    assert!(
        stderr(&short).contains("session not found"),
        "{}",
        stderr(&short)
    );
    let _ = env.run(&["quit"]);
}

/// The first `status` (which starts the daemon) says the sandbox is being probed; once the probe
/// has run, `status` lists the levels. The test build's probe gate
/// (`SAYRI_TEST_SANDBOX_PROBE_GATE`) holds the probe until the test creates the gate file, so
/// both states are seen for certain, not by timing.
#[test]
fn the_first_status_says_probing_and_a_later_one_lists_the_levels() {
    let env = Env::new();
    let gate = env.dir.path().join("probe-gate");
    let status = |args: &[&str]| {
        let o = env
            .cmd()
            .env("SAYRI_TEST_SANDBOX_PROBE_GATE", &gate)
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let sandbox_line = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("sandbox:"))
            .unwrap_or_else(|| panic!("no sandbox line in status:\n{text}"))
            .to_string()
    };

    let first = status(&["status"]);
    assert_eq!(
        sandbox_line(&first),
        "sandbox:  probing what each level can guarantee here… (run `sayri status` again in a moment)"
    );
    let st: Value = serde_json::from_str(&status(&["status", "--json"])).unwrap();
    assert_eq!(st["sandbox"], serde_json::json!({"probing": true}), "{st}");

    std::fs::write(&gate, "").unwrap();
    let mut st = Value::Null;
    let probed = eventually(std::time::Duration::from_secs(20), || {
        st = serde_json::from_str(&status(&["status", "--json"])).unwrap();
        st["sandbox"].get("probing").is_none()
    });
    assert!(probed, "the sandbox probe never finished: {st}");
    let levels: Vec<&str> = st["sandbox"]["levels"]
        .as_array()
        .unwrap_or_else(|| panic!("no levels after the probe: {st}"))
        .iter()
        .filter_map(|l| l["level"].as_str())
        .collect();
    assert_eq!(levels.len(), 5, "{st}");
    let later = sandbox_line(&status(&["status"]));
    assert!(
        later == "sandbox:  every level available"
            || later.starts_with("sandbox:  unavailable here: "),
        "{later}"
    );
    let _ = env.run(&["quit"]);
}

fn config_get_with_locale(vars: &[(&str, &str)], key: &str) -> String {
    let env = Env::new();
    let mut c = env.cmd();
    c.env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env_remove("LANG");
    for (k, v) in vars {
        c.env(k, v);
    }
    let o = c
        .args(["--no-start", "config", "get", key])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

#[test]
fn speech_languages_follow_the_locale_and_default_to_english() {
    assert_eq!(config_get_with_locale(&[], "stt.language"), "en");
    assert_eq!(config_get_with_locale(&[], "tts.language"), "en_US");
    let es = [("LANG", "es_MX.UTF-8")];
    assert_eq!(config_get_with_locale(&es, "stt.language"), "es");
    assert_eq!(config_get_with_locale(&es, "tts.language"), "es_MX");
    let de = [("LANG", "fr_FR.UTF-8"), ("LC_ALL", "de_DE.UTF-8")];
    assert_eq!(config_get_with_locale(&de, "tts.language"), "de_DE");
}

#[test]
fn level_1_and_2_commands_have_a_home_even_when_the_daemon_has_none() {
    let env = Env::new();
    let passwd_home = {
        let o = std::process::Command::new("sh")
            .args(["-c", "getent passwd \"$(id -u)\" | cut -d: -f6"])
            .output()
            .unwrap();
        stdout(&o).trim().to_string()
    };
    let run = |level: &str| {
        let o = env
            .cmd()
            .env_remove("HOME")
            .args(["sandbox", "run", "--level", level, "--"])
            .arg("printf '%s\\n' \"$HOME\" \"$PWD\"; touch \"$HOME/.sayri-probe\" 2>/dev/null && echo writable || echo read-only")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).lines().map(str::to_string).collect::<Vec<_>>()
    };
    let l1 = run("1");
    assert_eq!(l1[0], passwd_home, "level 1: the real home");
    assert_eq!(l1[2], "read-only");
    let l2 = run("2");
    assert!(!l2[0].is_empty());
    assert_eq!(l2[0], l2[1], "level 2: the workspace is the home");
    assert_eq!(l2[2], "writable");
    let _ = env.run(&["quit", "--no-start"]);
}

#[test]
fn the_prompt_names_the_user_commands_run_as() {
    let env = Env::new();
    let o = env.run(&["prompt", "show"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // SAFETY: getuid/geteuid take no arguments, touch no memory and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(text.contains("as root"), root, "{text}");
    assert_eq!(text.contains("(not root)"), !root, "{text}");
}
