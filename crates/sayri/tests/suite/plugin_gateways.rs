//! A gateway plugin written in Python the way the original Sayri's gateways are (a folder in
//! `$CONFIG/plugins` with a `manifest.json` and `gateway.py`, speaking to `sayri.sock` in the
//! state directory), run by the real daemon as the program of a gateway instance saved with the
//! original's fields: it is discovered, started under the supervisor with the secret its
//! manifest declares (on the secrets descriptor only), crashes on purpose at its first start and
//! is restarted after the backoff's delay, and the answer to its message reaches it as the one
//! `done` line an original gateway reads.

use super::gateway_rig::*;
use super::scripted_turns::start_model;
use super::support::*;
use sayri_testkit::procs::processes_with;
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The plugin's id, folder name and `plugin_id` of its instance.
const PLUGIN: &str = "echo-gateway";
/// The secret the plugin's manifest requires.
const SECRET: &str = "echo-secret-Xq81-vL02-zz";

/// Copies `fixtures/<group>/<name>` into `$CONFIG/plugins/<name>/`, owner-writable only (the
/// loader runs nothing that another user can change).
pub fn install_plugin(env: &Env, group: &str, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(group)
        .join(name);
    let dir = env.config_dir().join("plugins").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        let to = dir.join(entry.file_name());
        std::fs::copy(entry.path(), &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
}

/// The JSON lines of `file` (none while it does not exist).
pub fn json_lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

/// `plugins_list`'s entry of `id`.
pub fn plugin_entry(env: &Env, id: &str) -> Value {
    let r = ipc(env, "plugins_list", json!({}));
    r["result"]
        .as_array()
        .unwrap_or_else(|| panic!("plugins_list: {r}"))
        .iter()
        .find(|p| p["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} is not listed: {r}"))
}

#[test]
fn a_python_gateway_plugin_is_discovered_restarted_after_a_crash_and_gets_one_done_line() {
    let env = Env::new();
    let model = start_model(vec![Reply::sse(sse::content_stream(&[
        "Echo ",
        "answered.",
    ]))]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let dir = install_plugin(&env, "gateway-plugin", PLUGIN);
    let mut d = env.start_daemon();

    let found = plugin_entry(&env, PLUGIN);
    for (field, value) in [
        ("type", json!("gateway")),
        ("scope", json!("user")),
        ("name", json!("Echo gateway")),
        ("version", json!("0.3.0")),
        ("required_secrets", json!(["ECHO_TOKEN"])),
        ("error", Value::Null),
    ] {
        assert_eq!(found[field], value, "{field} of {found}");
    }
    assert_eq!(
        found["entrypoint"],
        json!(dir.join("gateway.py")),
        "{found}"
    );

    let r = ipc(
        &env,
        "vault_set",
        json!({"key": "ECHO_TOKEN", "value": SECRET, "description": "echo channel"}),
    );
    assert_eq!(r["result"]["saved"], true, "{r}");
    // The original's instance fields, plus who may write through the original wire (which
    // carries no sender id).
    let r = ipc(
        &env,
        "gateway_save",
        json!({"instance": {"id": "echo1", "plugin_id": PLUGIN, "name": "Echo", "enabled": false,
                            "agent_id": "helper", "sandbox_level": "LEVEL_1_READONLY",
                            "legacy": true, "legacy_authors": "Ada"}}),
    );
    assert_eq!(r["result"]["saved"], true, "{r}");
    let r = ipc(&env, "gateway_start", json!({"instance_id": "echo1"}));
    assert_eq!(r["result"]["started"], true, "{r}");

    let state = env.state_dir().join("gateways/echo1");
    let answers = state.join("answers");
    wait_for(
        "the restarted gateway's answer",
        Duration::from_secs(30),
        || std::fs::read_to_string(&answers).is_ok_and(|a| a.ends_with('\n')),
    );
    let answer = std::fs::read_to_string(&answers).unwrap();
    assert_eq!(answer.lines().count(), 1, "one line: {answer:?}");
    let done: Value = serde_json::from_str(answer.trim_end()).unwrap();
    assert_eq!(
        done,
        json!({"event": "done", "ok": true, "text": "Echo answered."})
    );

    // It crashed once, on purpose, and was started again after the first backoff delay (1 s).
    let starts = json_lines(&state.join("starts"));
    assert_eq!(starts.len(), 2, "{starts:?}");
    let gap = starts[1]["at"].as_f64().unwrap() - starts[0]["at"].as_f64().unwrap();
    assert!(gap >= 0.9, "restarted {gap:.2} s after the crash");
    let row = listed(&env, "echo1");
    assert_eq!(row["restarts"], 1, "{row}");
    assert_eq!(row["running"], true, "{row}");
    assert_eq!(row["plugin_id"], PLUGIN, "{row}");
    assert!(
        gateway_log(&env, "echo1").contains("crashing on purpose"),
        "{}",
        gateway_log(&env, "echo1")
    );

    // Both starts got the vault's secret, which no process shows in its arguments or
    // environment.
    let reversed: String = SECRET.chars().rev().collect();
    for s in &starts {
        assert_eq!(s["token_reversed"], reversed, "{s}");
    }
    let pid = starts[1]["pid"].as_u64().unwrap();
    assert!(alive(pid));
    for part in ["cmdline", "environ"] {
        let bytes = std::fs::read(format!("/proc/{pid}/{part}")).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(SECRET),
            "the secret is in the gateway's {part}"
        );
    }
    let dir_text = dir.to_str().unwrap();
    assert_eq!(processes_with(dir_text).len(), 1, "one gateway process");

    let r = ipc(&env, "gateway_stop", json!({"instance_id": "echo1"}));
    assert_eq!(r["result"]["stopped"], true, "{r}");
    wait_for("the gateway to stop", Duration::from_secs(10), || {
        !alive(pid)
    });
    assert_eq!(listed(&env, "echo1")["status"], "stopped");
    d.terminate(Duration::from_secs(15));
    assert_eq!(
        processes_with(dir_text),
        vec![],
        "left after the daemon stopped"
    );
}
