//! Configuration through the daemon: typed set (spec §15.4: "false" is false), masking, unknown
//! keys, and an invalid file that stops the daemon with file:line and is left untouched.

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
    assert_eq!(o.status.code(), Some(1));
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
