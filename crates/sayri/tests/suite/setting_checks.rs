//! Every setting is checked for what it means, not only for its type, wherever a value enters:
//! `config_set` over IPC (JSON, never coerced), `sayri config set` (text parsed by the key's
//! type, with or without a daemon), and `sayri.toml` at start (file:line, exit 78). A refusal
//! names the key and what it expects, and leaves the file byte-identical.

use super::support::*;
use serde_json::{Value, json};

const FIXTURE: &[u8] = include_bytes!("../fixtures/config-save-integrity.toml");

/// Values a careless or hostile client could store before every key had its check, with a
/// phrase the refusal must contain besides the key and what the key expects.
fn refused_over_ipc() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        // A number for a text setting is its decimal text, then checked like any text.
        (
            "provider.base_url",
            json!(5),
            "got \"5\" (does not start with http:// or https://)",
        ),
        (
            "provider.base_url",
            json!(true),
            "a boolean where a string is needed",
        ),
        ("provider.base_url", json!("http://"), "empty host"),
        ("provider.base_url", json!("http:// spaces here"), "space"),
        (
            "provider.base_url",
            json!("https://x.invalid:99999/v1"),
            "invalid port number",
        ),
        (
            "provider.base_url",
            json!("a".repeat(1000)),
            "1002 characters",
        ),
        ("provider.strip_patterns", json!("(((("), "unclosed group"),
        // Text for a list setting is comma-separated entries, each checked.
        (
            "sandbox.deny_read",
            json!("notalist"),
            "commas and line breaks separate entries",
        ),
        (
            "permissions.policy_files",
            json!(["relative/path.json"]),
            "not an absolute path",
        ),
        ("provider.max_tokens", json!(0), "from 1 to 1000000"),
    ]
}

fn config_path(env: &Env) -> std::path::PathBuf {
    env.config_dir().join("sayri.toml")
}

fn write_fixture(env: &Env) {
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(config_path(env), FIXTURE).unwrap();
}

fn expected_of(key: &str) -> String {
    sayri_core::domain::config::Config::spec(key)
        .unwrap()
        .expected()
}

#[test]
fn each_value_that_used_to_be_stored_is_refused_over_ipc_and_the_file_is_unchanged() {
    let env = Env::new();
    write_fixture(&env);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    for (i, (key, value, why)) in refused_over_ipc().into_iter().enumerate() {
        let before = c.call("config_get", json!({ "key": key }), 1000 + i as u64);
        let r = c.call("config_set", json!({"key": key, "value": value}), i as u64);
        assert_eq!(r["ok"], false, "{key} = {value} was stored: {r}");
        assert_eq!(r["code"], "invalid_params", "{r}");
        let msg = r["error"].as_str().unwrap();
        assert!(
            msg.starts_with(&format!("invalid value for {key}: expected "))
                && msg.contains(&expected_of(key))
                && msg.contains(why),
            "{key} = {value}: {msg}"
        );
        assert_eq!(
            std::fs::read(config_path(&env)).unwrap(),
            FIXTURE,
            "{key}: the file changed after a refusal"
        );
        let after = c.call("config_get", json!({ "key": key }), 2000 + i as u64);
        assert_eq!(after["result"], before["result"], "{key} changed in memory");
    }
    // The URL refusal shows an example of what works.
    let r = c.call(
        "config_set",
        json!({"key": "provider.base_url", "value": "http://"}),
        99,
    );
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("e.g. http://127.0.0.1:11434/v1"),
        "{r}"
    );
}

/// The command line receives text: it parses it by the key's type (a list is a JSON array),
/// and the same checks refuse the same values whether a daemon runs or not.
#[test]
fn the_cli_refuses_the_same_values_with_and_without_a_daemon_and_leaves_the_file_alone() {
    let rows: &[(&str, &str, &str)] = &[
        (
            "provider.base_url",
            "5",
            "does not start with http:// or https://",
        ),
        ("provider.base_url", "http://", "empty host"),
        ("provider.base_url", "http:// spaces here", "space"),
        (
            "provider.base_url",
            "https://x.invalid:99999/v1",
            "invalid port number",
        ),
        ("provider.strip_patterns", "((((", "unclosed group"),
        ("sandbox.deny_read", "notalist", "JSON array"),
        (
            "permissions.policy_files",
            r#"["relative/path.json"]"#,
            "not an absolute path",
        ),
        ("provider.max_tokens", "0", "from 1 to 1000000"),
        ("ui.orb_size", "5000", "from 80 to 400"),
    ];
    let env = Env::new();
    write_fixture(&env);
    for with_daemon in [false, true] {
        let daemon = with_daemon.then(|| env.start_daemon());
        for (key, text, why) in rows {
            let o = env.run(&["config", "set", key, text, "--no-start"]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{key} {text}: {err}");
            assert!(
                err.contains(&format!("invalid value for {key}")) && err.contains(why),
                "{key} {text} (daemon: {with_daemon}): {err}"
            );
            assert_eq!(std::fs::read(config_path(&env)).unwrap(), FIXTURE, "{key}");
        }
        drop(daemon);
    }
    // Accepted text is typed by the key: a list from a JSON array, a number from its digits.
    let o = env.run(&["config", "set", "sandbox.deny_read", r#"["/srv/private"]"#]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "sandbox.deny_read = [\"/srv/private\"]\n");
    let text = std::fs::read_to_string(config_path(&env)).unwrap();
    assert!(
        text.ends_with("\n[sandbox]\ndeny_read = [\"/srv/private\"]\n"),
        "{text}"
    );
}

#[test]
fn a_file_holding_a_refused_value_stops_the_daemon_with_file_line_and_exit_78() {
    let rows: &[(&str, &str)] = &[
        (
            "[provider]\nbase_url = \"https://x.invalid:99999/v1\"\n",
            "provider.base_url",
        ),
        ("[provider]\nmodel = 5\n", "provider.model"),
        (
            "[provider]\nstrip_patterns = \"((((\"\n",
            "provider.strip_patterns",
        ),
        ("[sandbox]\ndeny_read = \"notalist\"\n", "sandbox.deny_read"),
        (
            "[permissions]\npolicy_files = [\"relative/path.json\"]\n",
            "permissions.policy_files",
        ),
        ("[provider]\nmax_tokens = 0\n", "provider.max_tokens"),
    ];
    for (text, key) in rows {
        let env = Env::new();
        std::fs::create_dir_all(env.config_dir()).unwrap();
        let path = config_path(&env);
        let content = format!("# mine\n{text}");
        std::fs::write(&path, &content).unwrap();
        let o = env.run(&["daemon"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(78), "{key}: {err}");
        assert!(
            err.contains(&format!("{}:3: {key} must be ", path.display())),
            "{key}: {err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
    }
}

/// Checks that need this machine: a policy file must load, the default agent must exist, and
/// the provider client must accept the URL.
#[test]
fn a_value_that_cannot_work_on_this_machine_is_refused_before_it_is_written() {
    let env = Env::new();
    write_fixture(&env);
    let policy = env.dir.path().join("not-json.json");
    std::fs::write(&policy, "this is not JSON").unwrap();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let cases = [
        ("permissions.policy_files", json!(["/"]), "Is a directory"),
        (
            "permissions.policy_files",
            json!([policy.display().to_string()]),
            "not-json.json",
        ),
        (
            "agent.default_agent",
            json!("nobody"),
            "agent not found: nobody",
        ),
    ];
    for (i, (key, value, why)) in cases.into_iter().enumerate() {
        let r = c.call("config_set", json!({"key": key, "value": value}), i as u64);
        let msg = r["error"].as_str().unwrap_or_default();
        assert!(
            r["code"] == "invalid_params"
                && msg.starts_with(&format!("invalid value for {key}: expected "))
                && msg.contains(why),
            "{key}: {r}"
        );
        assert_eq!(std::fs::read(config_path(&env)).unwrap(), FIXTURE);
    }
    // A policy file that does not exist yet is accepted (it is skipped until it does).
    let r = c.call(
        "config_set",
        json!({"key": "permissions.policy_files", "value": ["/etc/sayri/not-yet.json"]}),
        9,
    );
    assert_eq!(r["ok"], true, "{r}");
}

/// A value of the right type over IPC is stored as given, and the file then loads.
#[test]
fn values_of_the_right_type_and_meaning_are_stored_over_ipc() {
    let env = Env::new();
    write_fixture(&env);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    for (i, (key, value)) in [
        (
            "provider.base_url",
            json!("https://api.example.invalid:8443/openai/v1"),
        ),
        (
            "provider.strip_patterns",
            json!("<x>.*?</x>\n\\[\\[.*?\\]\\]"),
        ),
        (
            "sandbox.deny_read",
            json!(["/srv/private", "/home/me/.aws"]),
        ),
        ("provider.max_tokens", json!(4096)),
        ("provider.extra_headers", json!(["X-Title: Sayri"])),
    ]
    .into_iter()
    .enumerate()
    {
        let r = c.call("config_set", json!({"key": key, "value": value}), i as u64);
        assert_eq!(r["result"]["value"], value, "{key}: {r}");
    }
    let (cfg, _) = sayri_daemon::config_file::load(&config_path(&env)).unwrap();
    assert_eq!(cfg.provider.max_tokens, 4096);
    assert_eq!(cfg.sandbox.deny_read, ["/srv/private", "/home/me/.aws"]);
}
