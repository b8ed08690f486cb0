//! A creator and its sub-agent for the tests of the paths that run an agent without a person
//! at the keyboard (routines, gateway instances): `lead` runs on the host (level 3), allows
//! everything but asks before `touch` (settled without a card while its ask switch is off);
//! `scout`, created by `lead`, asks in its own file for root (level 4), allows everything and
//! never asks. Whatever `scout` runs is bound by `lead` as it is *now*: the tests tighten `lead`
//! with `sayri agents edit` between runs and watch `scout`'s next run follow.

use super::support::*;
use serde_json::{Value, json};
use std::path::Path;

/// Writes `lead` and `scout` into `env`'s agents directory.
pub fn write_lead_and_scout(env: &Env) {
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let lead = json!({"id": "lead", "name": "Lead", "sandbox": {
        "level": "LEVEL_3_HOST_USER", "ask_before_run": false, "timeout_seconds": 30,
        "blocked_binaries": [],
        "permission_rules": [
            {"action": "shell", "resource": "*", "effect": "allow"},
            {"action": "shell", "resource": "touch *", "effect": "ask"}]}});
    let scout = json!({"id": "scout", "name": "Scout", "parent": "lead", "sandbox": {
        "level": "LEVEL_4_HOST_ROOT", "ask_before_run": false, "timeout_seconds": 30,
        "blocked_binaries": [],
        "permission_rules": [{"action": "shell", "resource": "*", "effect": "allow"}]}});
    std::fs::write(dir.join("lead.json"), lead.to_string()).unwrap();
    std::fs::write(dir.join("scout.json"), scout.to_string()).unwrap();
}

/// `scout`'s profile file as written.
pub fn scout_file(env: &Env) -> String {
    std::fs::read_to_string(env.config_dir().join("agents/scout.json")).unwrap()
}

/// `sayri agents edit lead ARGS` (the person tightening the creator); panics unless it saved.
pub fn edit_lead(env: &Env, args: &[&str]) {
    let o = env.run(&[&["agents", "edit", "lead"], args].concat());
    assert!(
        o.status.success(),
        "agents edit lead {args:?}: {}",
        stderr(&o)
    );
}

/// `scout`'s effective level as `sayri agents show scout --json` reports it.
pub fn scout_level(env: &Env) -> String {
    let o = env.run(&["agents", "show", "scout", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["written"]["sandbox"]["level"], "LEVEL_4_HOST_ROOT", "{v}");
    v["effective"]["sandbox"]["level"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string()
}

/// The probe command: its pid namespace, its working directory, then a file written outside
/// any workspace (`marker`).
pub fn probe(marker: &Path) -> String {
    format!(
        "readlink /proc/self/ns/pid; pwd; touch {}",
        marker.display()
    )
}

/// Whether a probe's `output` shows it ran in a pid namespace of its own (levels 1–2).
pub fn own_pid_namespace(output: &str) -> bool {
    let theirs = output
        .lines()
        .find(|l| l.starts_with("pid:["))
        .unwrap_or_else(|| panic!("no pid namespace in {output:?}"));
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    theirs != ours.to_str().unwrap()
}

/// `scout`'s level-2 workspace.
pub fn scout_workspace(env: &Env) -> String {
    env.state_dir()
        .join("sandboxes/scout")
        .to_string_lossy()
        .into_owned()
}
