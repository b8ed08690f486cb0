//! Plugin background services that cannot run, beside ones that can, over the real daemon and real
//! processes. Started with the daemon: a service whose program stays up is listed `running` with
//! its pid; one whose required secret is not in the vault is listed `failed` with that reason; one
//! whose program exits at once is listed with its exit as the last error, and `failed` once the
//! supervisor's crash-loop breaker trips; one turned off by default is `stopped` with no error.
//! `plugin_set_enabled` starts the one that lacked its secret once the secret is there (the failure
//! is then gone) and stops another. `sayri status` shows one line per service.

use super::support::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes plugin `id` into `$CONFIG/plugins/<id>/`: `manifest` and the shell script `run.sh`
/// running `script`, writable by their owner only (the loader runs nothing else).
fn install(env: &Env, id: &str, manifest: Value, script: &str) -> PathBuf {
    let dir = env.config_dir().join("plugins").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("run.sh"), format!("#!/bin/sh\n{script}\n")).unwrap();
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };
    mode(&dir, 0o755);
    mode(&dir.join("run.sh"), 0o755);
    mode(&dir.join("manifest.json"), 0o644);
    dir
}

/// The `service` object of plugin `id` in a `plugins_list` result.
fn service_of(listed: &Value, id: &str) -> Value {
    let p = listed
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {listed}"))
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not listed: {listed}"));
    assert_eq!(p["has_service"], true, "{p}");
    p["service"].clone()
}

fn plugins(c: &mut RawClient, id: u64) -> Value {
    let r = c.call("plugins_list", json!({}), id);
    assert_eq!(r["ok"], true, "{r}");
    r["result"].clone()
}

/// The `service:` lines of `sayri status`.
fn status_lines(env: &Env) -> Vec<String> {
    let o = env.run(&["status", "--no-start"]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| l.strip_prefix("service:  "))
        .map(str::to_string)
        .collect()
}

#[test]
fn services_that_cannot_start_with_the_daemon_are_listed_failed_with_the_reason() {
    let env = Env::new();
    let service = |extra: Value| {
        let mut m = json!({"type": "service", "service": {"start": ["run.sh"]}});
        for (k, v) in extra.as_object().unwrap() {
            if k == "service" {
                for (sk, sv) in v.as_object().unwrap() {
                    m["service"][sk] = sv.clone();
                }
            } else {
                m[k] = v.clone();
            }
        }
        m
    };
    install(&env, "steady", service(json!({})), "exec sleep 600");
    install(
        &env,
        "crasher",
        service(json!({})),
        "echo 'no configuration' >&2\nexit 3",
    );
    install(
        &env,
        "locked",
        service(json!({"required_secrets": ["LOCKED_TOKEN"]})),
        "exec sleep 600",
    );
    install(
        &env,
        "manual",
        service(json!({"service": {"auto_start": false}})),
        "exec sleep 600",
    );
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();

    // The daemon starts its services right after it greets.
    let mut n = 0;
    let mut listed = Value::Null;
    let settled = eventually(Duration::from_secs(15), || {
        n += 1;
        listed = plugins(&mut c, n);
        service_of(&listed, "steady")["pid"].is_u64()
            && service_of(&listed, "crasher")["last_error"].is_string()
            && service_of(&listed, "locked")["state"] == "failed"
    });
    assert!(settled, "{listed}");
    let steady = service_of(&listed, "steady");
    assert_eq!(steady["state"], "running", "{steady}");
    assert!(steady["last_error"].is_null(), "{steady}");
    let locked = service_of(&listed, "locked");
    let why = locked["last_error"].as_str().unwrap_or_default();
    assert!(
        why.contains("LOCKED_TOKEN") && why.contains("not in the vault"),
        "{locked}"
    );
    assert!(locked["pid"].is_null(), "{locked}");
    let crasher = service_of(&listed, "crasher");
    assert!(
        ["backoff", "failed"].contains(&crasher["state"].as_str().unwrap_or_default()),
        "{crasher}"
    );
    assert!(
        crasher["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("exited with code 3")),
        "the exit is the reason: {crasher}"
    );
    let manual = service_of(&listed, "manual");
    assert_eq!(manual["state"], "stopped", "{manual}");
    assert!(manual["last_error"].is_null(), "{manual}");

    // `sayri status`: a line per service, with its pid or why it does not run.
    let lines = status_lines(&env);
    let line = |id: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{id}  ")))
            .cloned()
            .unwrap_or_else(|| panic!("no service line for {id}: {lines:?}"))
    };
    assert_eq!(
        line("steady"),
        format!("steady  running  pid {}", steady["pid"]),
        "{lines:?}"
    );
    assert!(
        line("locked").starts_with("locked  failed — ") && line("locked").contains("LOCKED_TOKEN"),
        "{lines:?}"
    );
    assert_eq!(line("manual"), "manual  stopped (off)", "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");

    // Turned on without its secret: the flag is stored, the reply and the listing say why it
    // does not run.
    let r = c.call(
        "plugin_set_enabled",
        json!({"plugin_id": "locked", "enabled": true}),
        99,
    );
    let refused = &r["result"];
    assert_eq!(refused["ok"], false, "{r}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not start") && m.contains("LOCKED_TOKEN")),
        "{r}"
    );
    assert_eq!(refused["service"]["state"], "failed", "{r}");
    assert!(
        refused["service"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("LOCKED_TOKEN")),
        "{r}"
    );

    // Once its secret is there, turning it on starts it and the failure is gone.
    let r = c.call(
        "vault_set",
        json!({"key": "LOCKED_TOKEN", "value": "tok-4711-secret"}),
        100,
    );
    assert_eq!(r["ok"], true, "{r}");
    let r = c.call(
        "plugin_set_enabled",
        json!({"plugin_id": "locked", "enabled": true}),
        101,
    );
    let on = &r["result"];
    assert_eq!(
        (on["ok"].clone(), on["enabled"].clone()),
        (json!(true), json!(true)),
        "{r}"
    );
    assert!(on["service"]["last_error"].is_null(), "{r}");
    assert!(
        ["starting", "running"].contains(&on["service"]["state"].as_str().unwrap_or_default()),
        "{r}"
    );
    let locked = service_of(&plugins(&mut c, 102), "locked");
    assert_ne!(locked["state"], "failed", "{locked}");
    assert!(locked["last_error"].is_null(), "{locked}");

    // Turning one off stops it and stores the choice in its settings file.
    let r = c.call(
        "plugin_set_enabled",
        json!({"plugin_id": "steady", "enabled": false}),
        103,
    );
    let off = &r["result"];
    assert_eq!(
        (off["ok"].clone(), off["enabled"].clone()),
        (json!(true), json!(false)),
        "{r}"
    );
    assert_eq!(off["service"]["state"], "stopped", "{r}");
    let stored: Value = serde_json::from_str(
        &std::fs::read_to_string(env.config_dir().join("steady.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(stored, json!({"enabled": false}));

    // The program that keeps exiting: failed once the breaker trips, its last exit the reason.
    let mut crasher = Value::Null;
    let tripped = eventually(Duration::from_secs(40), || {
        n += 1;
        crasher = service_of(&plugins(&mut c, 200 + n), "crasher");
        crasher["state"] == "failed"
    });
    assert!(tripped, "{crasher}");
    let why = crasher["last_error"].as_str().unwrap_or_default();
    assert!(
        why.contains("exited with code 3") && why.contains("no longer restarted"),
        "{crasher}"
    );
    assert!(
        status_lines(&env)
            .iter()
            .any(|l| l.starts_with("crasher  failed  restarts 4 — ")),
        "{:?}",
        status_lines(&env)
    );
}
