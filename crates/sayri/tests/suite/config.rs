//! Configuration through the daemon: typed set (a value of the wrong JSON type is refused, never
//! coerced), masking, unknown keys, `config set` editing the user's file in place, and an
//! invalid file that stops the daemon with file:line and is left untouched.

use super::support::*;
use serde_json::json;

#[test]
fn typed_set_get_list_and_persistence() {
    let env = Env::new();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call(
        "config_set",
        json!({"key": "ui.autostart", "value": "false"}),
        1,
    );
    assert_eq!(r["code"], "invalid_params", "a string is not coerced: {r}");
    let msg = r["error"].as_str().unwrap();
    assert!(
        msg.contains("ui.autostart") && msg.contains("a string where a boolean"),
        "{msg}"
    );
    let r = c.call(
        "config_set",
        json!({"key": "ui.autostart", "value": false}),
        1,
    );
    assert_eq!(
        r["result"],
        json!({"group": "ui", "key": "autostart", "value": false})
    );
    let r = c.call("config_get", json!({"group": "ui", "key": "autostart"}), 2);
    assert_eq!(r["result"]["value"], false);
    let r = c.call(
        "config_set",
        json!({"key": "provider.retries", "value": "many"}),
        3,
    );
    assert_eq!(r["code"], "invalid_params");
    let msg = r["error"].as_str().unwrap();
    assert!(
        msg.contains("provider.retries") && msg.contains("integer"),
        "{msg}"
    );
    let r = c.call("config_get", json!({"key": "provider.nope"}), 4);
    assert_eq!(r["code"], "unknown_setting");
    assert!(r["error"].as_str().unwrap().contains("provider.nope"));
    let r = c.call("config_get", json!({}), 5);
    assert_eq!(r["code"], "invalid_params");

    c.call(
        "config_set",
        json!({"key": "provider.api_key", "value": "sk-abcdef123456"}),
        6,
    );
    let r = c.call("config_list", json!({}), 7);
    let list = r["result"].as_array().unwrap();
    assert_eq!(list.len(), sayri_core::domain::config::KEYS.len());
    // The provider key lives in the vault (shown masked); the file holds none.
    let key = list.iter().find(|e| e["key"] == "api_key").unwrap();
    assert_eq!(
        (key["value"].clone(), key["is_secret"].clone()),
        (json!("***"), json!(true))
    );
    let hist = list.iter().find(|e| e["key"] == "history_tokens").unwrap();
    assert_eq!(
        (hist["value"].clone(), hist["is_secret"].clone()),
        (json!(2500), json!(false))
    );
    let st = c.call("status", json!({}), 8);
    assert_eq!(st["result"]["provider"]["api_key_set"], true);

    let text = std::fs::read_to_string(env.config_dir().join("sayri.toml")).unwrap();
    assert!(text.contains("autostart = false"), "{text}");
    assert!(
        !text.contains("sk-abcdef"),
        "no plaintext key in the config: {text}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.config_dir().join("sayri.toml"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // The CLI reads the same values, typed and masked.
    assert_eq!(
        stdout(&env.run(&["config", "get", "ui.autostart"])),
        "false\n"
    );
    assert_eq!(
        stdout(&env.run(&["config", "get", "provider.api_key"])),
        "***\n"
    );
    let o = env.run(&["config", "set", "ui.orb_size", "big"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("ui.orb_size"));
}

#[test]
fn invalid_config_file_stops_the_daemon_with_file_and_line() {
    let env = Env::new();
    std::fs::create_dir_all(env.config_dir()).unwrap();
    let path = env.config_dir().join("sayri.toml");
    let original = "[provider]\nmodel = \"qwen\"\ntemprature = 0.5\n";
    std::fs::write(&path, original).unwrap();
    let o = env.run(&["daemon"]);
    assert_eq!(o.status.code(), Some(78), "EX_CONFIG");
    let err = stderr(&o);
    let expect = format!("{}:3:", path.display());
    assert!(
        err.contains(&expect) && err.contains("provider.temprature"),
        "{err}"
    );
    // Auto-start reports the same cause.
    let o = env.run(&["status"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&expect), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        original,
        "never reset"
    );
}

/// `sayri config set` (and `config_set` over IPC) changes the value where it stands: every
/// comment, blank line, the key order and keys it does not know about stay as the user wrote
/// them.
#[test]
fn config_set_keeps_the_users_comments_and_key_order() {
    let env = Env::new();
    std::fs::create_dir_all(env.config_dir()).unwrap();
    let path = env.config_dir().join("sayri.toml");
    let original = "\
# Sayri settings for my laptop.

[ui]
orb_size = 90 # big enough to see

# The local model server.
[provider]
base_url = \"http://127.0.0.1:11434/v1\"
# Pick one that fits in memory.
model = \"qwen\"
retries = 1
";
    std::fs::write(&path, original).unwrap();
    let _d = env.start_daemon();
    let o = env.run(&["config", "set", "provider.model", "x"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let expected = original.replace("model = \"qwen\"", "model = \"x\"");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);

    let mut c = RawClient::connect(&env.socket());
    let r = c.call("config_set", json!({"key": "ui.orb_size", "value": 120}), 1);
    assert_eq!(r["result"]["value"], 120, "{r}");
    let expected = expected.replace("orb_size = 90 #", "orb_size = 120 #");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    // A refused value leaves the file as it was.
    let r = c.call(
        "config_set",
        json!({"key": "ui.orb_size", "value": "huge"}),
        2,
    );
    assert_eq!(r["code"], "invalid_params", "{r}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
}
