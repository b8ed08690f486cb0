//! A plugin with a `service` block (a Python program that starts a helper child and ticks until
//! stopped, and a `stop` command that records it ran) under three real daemons in turn: off by
//! the manifest's default, turned on with `plugin_set_enabled` (the flag written into its
//! settings file beside the keys already there), stopped with its whole tree when the daemon
//! stops, started with the next daemon, restarted after the backoff's delay when killed,
//! turned off (stopped, its `stop` command run, the choice persisted) and then not started by
//! the next daemon.

use super::gateway_rig::*;
use super::plugin_gateways::{alive, install_plugin, json_lines, plugin_entry};
use super::scripted_turns::start_model;
use super::support::*;
use sayri_testkit::procs::processes_with;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const PLUGIN: &str = "ticker";

fn settings(env: &Env) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.config_dir().join("ticker.json")).unwrap())
        .unwrap()
}

/// `(program pid, helper pid)` of each start so far.
fn starts(env: &Env) -> Vec<(u64, u64)> {
    json_lines(&env.state_dir().join("ticker-starts"))
        .iter()
        .map(|s| (s["pid"].as_u64().unwrap(), s["helper"].as_u64().unwrap()))
        .collect()
}

fn wait_starts(env: &Env, n: usize) -> (u64, u64) {
    wait_for(
        &format!("start {n} of the service"),
        Duration::from_secs(20),
        || starts(env).len() >= n,
    );
    let all = starts(env);
    assert_eq!(all.len(), n, "{all:?}");
    all[n - 1]
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn cleanups(env: &Env) -> usize {
    std::fs::read_to_string(env.state_dir().join("ticker-cleanups"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn assert_service(env: &Env, enabled: bool, running: bool) -> Value {
    let p = plugin_entry(env, PLUGIN);
    assert_eq!(p["has_service"], true, "{p}");
    assert_eq!(p["service_enabled"], enabled, "{p}");
    assert_eq!(p["service_running"], running, "{p}");
    p["service"].clone()
}

#[test]
fn a_plugin_service_follows_its_enable_flag_across_daemons_and_is_restarted_when_killed() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let dir = install_plugin(&env, "service-plugin", PLUGIN);
    let dir_text = dir.to_str().unwrap().to_string();
    std::fs::write(env.config_dir().join("ticker.json"), r#"{"color": "blue"}"#).unwrap();

    // Off by the manifest's default: listed, not started.
    let mut d = env.start_daemon();
    let service = assert_service(&env, false, false);
    assert_eq!(service["state"], "stopped", "{service}");
    assert_eq!(service["enabled_key"], "ticking", "{service}");
    assert_eq!(service["enabled_label"], "Keep ticking", "{service}");
    assert_eq!(service["auto_start"], true, "{service}");

    let r = ipc(
        &env,
        "plugin_set_enabled",
        json!({"plugin_id": PLUGIN, "enabled": true}),
    );
    assert_eq!(r["result"]["ok"], true, "{r}");
    assert_eq!(r["result"]["enabled"], true, "{r}");
    let (pid, helper) = wait_starts(&env, 1);
    assert!(alive(pid) && alive(helper));
    assert_eq!(settings(&env), json!({"color": "blue", "ticking": true}));
    let args = &json_lines(&env.state_dir().join("ticker-starts"))[0]["argv"];
    assert_eq!(args, &json!(["--every", "0.2"]), "the manifest's arguments");
    let service = assert_service(&env, true, true);
    assert_eq!(service["pid"], pid, "{service}");

    // The daemon's stop takes the service's whole tree with it, without its `stop` command.
    d.terminate(Duration::from_secs(20));
    assert!(
        !alive(pid) && !alive(helper),
        "left running: {pid} {helper}"
    );
    assert_eq!(processes_with(&dir_text), vec![]);
    assert_eq!(cleanups(&env), 0);

    // Enabled: it starts with the next daemon.
    let mut d = env.start_daemon();
    let (pid, helper) = wait_starts(&env, 2);
    wait_for("the service shown running", Duration::from_secs(10), || {
        assert_service(&env, true, true)["pid"] == pid
    });

    // Killed on purpose: restarted after the first backoff delay (1 s), its old tree gone.
    let killed_at = now_secs();
    // SAFETY: kill takes plain integers and touches no memory of this process.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let (pid2, helper2) = wait_starts(&env, 3);
    let started_at = json_lines(&env.state_dir().join("ticker-starts"))[2]["at"]
        .as_f64()
        .unwrap();
    assert!(
        started_at - killed_at >= 0.9,
        "restarted {:.2} s after it was killed",
        started_at - killed_at
    );
    assert_ne!(pid2, pid);
    wait_for("the old helper to be gone", Duration::from_secs(10), || {
        !alive(helper)
    });
    let service = assert_service(&env, true, true);
    assert_eq!(service["restarts"], 1, "{service}");
    assert_eq!(service["pid"], pid2, "{service}");

    // Turned off: stopped with its tree, its `stop` command run, the choice persisted.
    let r = ipc(
        &env,
        "plugin_set_enabled",
        json!({"plugin_id": PLUGIN, "enabled": false}),
    );
    assert_eq!(r["result"]["ok"], true, "{r}");
    assert_eq!(r["result"]["enabled"], false, "{r}");
    assert_eq!(r["result"]["service"]["state"], "stopped", "{r}");
    assert!(!alive(pid2) && !alive(helper2));
    assert_eq!(cleanups(&env), 1, "the stop command ran once");
    assert_eq!(settings(&env), json!({"color": "blue", "ticking": false}));
    d.terminate(Duration::from_secs(20));

    // Off: the next daemon leaves it stopped.
    let mut d = env.start_daemon();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(starts(&env).len(), 3, "started although it is off");
    assert_eq!(assert_service(&env, false, false)["state"], "stopped");
    d.terminate(Duration::from_secs(20));
    assert_eq!(processes_with(&dir_text), vec![]);
}
