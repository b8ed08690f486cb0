//! A UI plugin (a plugin folder of type `ui` with a Python entry point, written the way the
//! original companions are) over the real daemon and real processes: it is listed by
//! `ui_list`, started with `ui_start` after its settings file was created with the manifest's
//! defaults, connects to the daemon, is reported running with its pid (also in
//! `$STATE/<id>.pid`, rewritten after a crash and restart), gets no `LD_PRELOAD`; its settings
//! are read through `settings_schema` and changed one key at a time with
//! `plugin_settings_set`, every other key of the file kept; `ui_stop` stops it and removes the
//! pid file. Hostile ids, undeclared keys, values of the wrong type and a manifest whose
//! settings file points outside `$CONFIG` or at Sayri's own files are refused with a sentence
//! saying why, and nothing is written.

use super::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

const PLUGIN: &str = "sayri-ui-testpal";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ui-plugin")
        .join(name)
}

/// Copies the fixture plugin into `$CONFIG/plugins/<name>/`, with `edit` applied to its
/// manifest.
fn install(env: &Env, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let dir = env.config_dir().join("plugins").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let src = fixture(PLUGIN);
    std::fs::copy(src.join("main.py"), dir.join("main.py")).unwrap();
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("manifest.json")).unwrap()).unwrap();
    edit(&mut manifest);
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    // The loader runs only a plugin that no one else can change.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for f in ["main.py", "manifest.json"] {
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    dir
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
}

fn entry(listed: &Value, id: &str) -> Value {
    listed["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} is not listed: {listed}"))
}

fn section(schema: &Value, id: &str) -> Value {
    schema["result"]["plugin_sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["plugin_id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no settings section for {id}: {schema}"))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn pid_in(file: &Path) -> Option<u64> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

fn set(c: &mut RawClient, plugin: &str, key: &str, value: Value, id: u64) -> Value {
    c.call(
        "plugin_settings_set",
        json!({"plugin_id": plugin, "key": key, "value": value}),
        id,
    )
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_ui_plugin_is_listed_started_with_its_default_settings_changed_one_key_at_a_time_and_stopped() {
    let env = Env::new();
    let plugin_dir = install(&env, PLUGIN, |_| {}).canonicalize().unwrap();
    // A preload the daemon itself runs with never reaches a UI plugin.
    let _d = env.start_daemon_with("info", &[("LD_PRELOAD", "/nonexistent/libsayri-probe.so")]);
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    let settings_file = env.config_dir().join(format!("{PLUGIN}.json"));
    let pid_file = env.state_dir().join(format!("{PLUGIN}.pid"));

    let listed = c.call("ui_list", json!({}), 1);
    let e = entry(&listed, PLUGIN);
    assert_eq!(e["name"], "Test Pal", "{e}");
    assert_eq!(e["version"], "2.3.4", "{e}");
    assert_eq!(e["author"], "Sayri tests", "{e}");
    assert_eq!(e["kind"], "character", "{e}");
    assert_eq!(e["xui_renderer"], "speech-bubble", "{e}");
    assert_eq!(e["scope"], "user", "{e}");
    assert_eq!(e["path"], plugin_dir.to_str().unwrap(), "{e}");
    assert_eq!(
        e["entrypoint"],
        plugin_dir.join("main.py").to_str().unwrap(),
        "{e}"
    );
    assert_eq!(
        (e["running"].clone(), e["pid"].clone()),
        (json!(false), Value::Null)
    );
    assert_eq!(entry(&listed, "orb")["scope"], "builtin");

    // Reading the settings writes nothing.
    let schema = c.call("settings_schema", json!({}), 2);
    let s = section(&schema, PLUGIN);
    assert_eq!(s["id"], format!("plugin:{PLUGIN}"));
    assert_eq!(s["type"], "ui");
    assert_eq!(s["error"], Value::Null, "{s}");
    assert_eq!(s["settings_file"], settings_file.to_str().unwrap());
    let fields: Vec<(Value, Value, Value)> = s["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["key"].clone(), f["kind"].clone(), f["value"].clone()))
        .collect();
    assert_eq!(
        fields,
        [
            (json!("character"), json!("choice"), json!("Clippy")),
            (json!("sound_effects"), json!("toggle"), json!(true)),
        ]
    );
    assert!(!settings_file.exists(), "settings_schema wrote the file");

    // Started by its short name: the settings file is there with the defaults before it runs.
    let r = c.call("ui_start", json!({"ui_id": "testpal"}), 3);
    assert_eq!(r["result"]["ui_id"], PLUGIN, "{r}");
    assert_eq!(r["result"]["already_running"], false, "{r}");
    assert_eq!(
        read_json(&settings_file),
        json!({"character": "Clippy", "sound_effects": true})
    );
    let seen_file = env.state_dir().join("testpal.seen");
    assert!(
        eventually(Duration::from_secs(20), || seen_file.exists()),
        "the plugin connected to the daemon: {:?}",
        std::fs::read_to_string(env.state_dir().join(format!("logs/ui-{PLUGIN}.log")))
    );
    let seen = read_json(&seen_file);
    assert_eq!(seen["ping"]["result"], "pong", "{seen}");
    assert_eq!(
        seen["settings"],
        json!({"character": "Clippy", "sound_effects": true})
    );
    assert!(
        seen["listed_ids"]
            .as_array()
            .unwrap()
            .contains(&json!(PLUGIN)),
        "{seen}"
    );
    assert_eq!(seen["ld_preload"], Value::Null, "{seen}");
    assert_eq!(seen["cwd"], plugin_dir.to_str().unwrap(), "{seen}");
    let pid = seen["pid"].as_u64().unwrap();

    let st = c.call("ui_status", json!({"ui_id": PLUGIN}), 4);
    assert_eq!(st["result"]["running"], true, "{st}");
    assert_eq!(st["result"]["pid"], pid, "{st}");
    assert_eq!(pid_in(&pid_file), Some(pid), "the pid file names it");
    let again = c.call("ui_start", json!({"ui_id": "Test Pal"}), 5);
    assert_eq!(again["result"]["already_running"], true, "{again}");
    assert_eq!(
        entry(&c.call("ui_list", json!({}), 6), PLUGIN)["running"],
        true
    );

    // The plugin keeps a key of its own in the file; a change merges one key and keeps it.
    std::fs::write(
        &settings_file,
        r#"{"character": "Clippy", "sound_effects": true, "window": [40, 60]}"#,
    )
    .unwrap();
    let r = set(
        &mut c,
        &format!("plugin:{PLUGIN}"),
        "character",
        json!("Merlin"),
        7,
    );
    assert_eq!(
        r["result"],
        json!({"ok": true, "plugin_id": PLUGIN, "key": "character", "value": "Merlin"}),
        "{r}"
    );
    assert_eq!(
        read_json(&settings_file),
        json!({"character": "Merlin", "sound_effects": true, "window": [40, 60]})
    );
    let r = set(&mut c, PLUGIN, "sound_effects", json!("off"), 8);
    assert_eq!(r["result"]["value"], false, "{r}");
    let schema = c.call("settings_schema", json!({}), 9);
    let values: Vec<Value> = section(&schema, PLUGIN)["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["value"].clone())
        .collect();
    assert_eq!(values, [json!("Merlin"), json!(false)]);

    // Refused, and the file is byte for byte what it was.
    let before = std::fs::read(&settings_file).unwrap();
    for (key, value, says) in [
        ("volume", json!(3), "has no setting \"volume\""),
        ("sound_effects", json!("maybe"), "expected true or false"),
        ("character", json!(5), "expected one of Clippy, Merlin"),
        (
            "character",
            json!("Bonzi"),
            "expected one of Clippy, Merlin",
        ),
    ] {
        let r = set(&mut c, PLUGIN, key, value.clone(), 10);
        assert_eq!(r["code"], "invalid_params", "{key}={value}: {r}");
        assert!(r["error"].as_str().unwrap().contains(says), "{r}");
        assert_eq!(
            std::fs::read(&settings_file).unwrap(),
            before,
            "{key}={value}"
        );
    }

    // A crash: the supervisor starts it again and the pid file follows the new pid.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(
        eventually(Duration::from_secs(20), || {
            pid_in(&pid_file).is_some_and(|p| p != pid && alive(p))
        }),
        "restarted with a new pid file: {:?}",
        std::fs::read_to_string(&pid_file)
    );
    let new_pid = pid_in(&pid_file).unwrap();
    let st = c.call("ui_status", json!({"ui_id": PLUGIN}), 11);
    assert_eq!(st["result"]["pid"], new_pid, "{st}");

    let r = c.call("ui_stop", json!({"ui_id": "sayri-testpal"}), 12);
    assert_eq!(
        r["result"],
        json!({"ui_id": PLUGIN, "stopped": true}),
        "{r}"
    );
    assert!(!alive(new_pid), "ui_stop waits until it is gone");
    assert!(!pid_file.exists(), "the pid file is removed");
    let st = c.call("ui_status", json!({"ui_id": PLUGIN}), 13);
    assert_eq!(st["result"]["running"], false, "{st}");
    assert_eq!(st["result"]["state"], "stopped", "{st}");
    assert_eq!(st["result"]["pid"], Value::Null, "{st}");
    let r = c.call("ui_stop", json!({"ui_id": PLUGIN}), 14);
    assert_eq!(r["result"]["stopped"], false, "{r}");
}

#[test]
fn hostile_ui_plugin_ids_and_settings_files_outside_the_config_folder_are_refused_writing_nothing()
{
    let env = Env::new();
    install(&env, PLUGIN, |_| {});
    let outside = env.dir.path().join("outside.json");
    let absolute = env.dir.path().join("absolute-outside.json");
    install(&env, "sayri-ui-climber", |m| {
        m["id"] = json!("sayri-ui-climber");
        m["ui"]["settings_file"] = json!("../outside.json");
    });
    install(&env, "sayri-ui-absolute", |m| {
        m["id"] = json!("sayri-ui-absolute");
        m["ui"]["settings_file"] = json!(absolute.to_str().unwrap());
    });
    install(&env, "sayri-ui-config-eater", |m| {
        m["id"] = json!("sayri-ui-config-eater");
        m["ui"]["settings_file"] = json!("routines.json");
    });
    install(&env, "sayri-ui-vault-eater", |m| {
        m["id"] = json!("sayri-ui-vault-eater");
        m["ui"]["settings_file"] = json!("vault.json");
    });
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    let config_before = files_under(&env.config_dir());

    for (n, id) in [
        "../sayri-ui-testpal",
        "../../etc/passwd",
        "sayri-ui-testpal/../x",
        "/tmp",
    ]
    .iter()
    .enumerate()
    {
        let n = n as u64 * 10;
        for (cmd, m) in [("ui_start", 1), ("ui_status", 2), ("ui_stop", 3)] {
            let r = c.call(cmd, json!({"ui_id": id}), n + m);
            assert_eq!(r["code"], "not_found", "{cmd} {id}: {r}");
            assert!(r["error"].as_str().unwrap().contains("no UI named"), "{r}");
        }
        let r = set(&mut c, id, "character", json!("Merlin"), n + 4);
        assert_eq!(r["code"], "not_found", "{id}: {r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .contains("no skill or UI plugin"),
            "{r}"
        );
    }

    // A manifest whose settings file is a path, or one of Sayri's own files, is refused by the
    // plugin loader: the plugin is not listed, and naming it says why.
    let listed = c.call("ui_list", json!({}), 100);
    let schema = c.call("settings_schema", json!({}), 101);
    for id in [
        "sayri-ui-climber",
        "sayri-ui-absolute",
        "sayri-ui-config-eater",
    ] {
        assert!(
            !listed["result"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u["id"] == id),
            "{id} is listed: {listed}"
        );
        assert!(
            !schema["result"]["plugin_sections"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["plugin_id"] == id),
            "{id} has a settings section"
        );
        for r in [
            set(&mut c, id, "character", json!("Merlin"), 102),
            c.call("ui_start", json!({"ui_id": id}), 103),
        ] {
            assert_eq!(r["code"], "invalid_params", "{id}: {r}");
            let msg = r["error"].as_str().unwrap();
            assert!(
                msg.contains("settings file") && msg.contains("plain file name"),
                "{msg}"
            );
        }
    }
    // One the loader lets through but that names the original's vault: listed, its settings
    // refused where they would be written.
    let s = section(&schema, "sayri-ui-vault-eater");
    assert_eq!(s["fields"], json!([]), "{s}");
    let error = s["error"].as_str().unwrap_or_else(|| panic!("{s}"));
    assert!(
        error.contains("Sayri's own files") && error.contains("ui.settings_file"),
        "{error}"
    );
    let r = set(
        &mut c,
        "sayri-ui-vault-eater",
        "character",
        json!("Merlin"),
        104,
    );
    assert_eq!(r["code"], "invalid_params", "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("Sayri's own files"),
        "{r}"
    );
    let r = c.call("ui_start", json!({"ui_id": "sayri-ui-vault-eater"}), 105);
    assert_eq!(r["code"], "invalid_params", "{r}");
    assert_eq!(
        c.call("ui_status", json!({"ui_id": "sayri-ui-vault-eater"}), 106)["result"]["running"],
        false
    );
    assert!(!env.config_dir().join("vault.json").exists());
    assert!(!outside.exists(), "nothing written above the config folder");
    assert!(!absolute.exists(), "nothing written at the absolute path");
    assert!(
        !env.config_dir().join("routines.json").exists() || {
            // The daemon's own routines file, if it made one, is still its own.
            let v = read_json(&env.config_dir().join("routines.json"));
            v.get("character").is_none()
        }
    );
    assert!(!env.state_dir().join(format!("{PLUGIN}.pid")).exists());
    assert_eq!(
        files_under(&env.config_dir()),
        config_before,
        "the refused calls wrote nothing in the config folder"
    );
}

#[test]
fn a_ui_plugins_secret_setting_is_kept_in_the_vault_shown_masked_and_reaches_only_its_program() {
    const TOKEN: &str = "uitok-Zr91-Qm44-never-in-a-file";
    let env = Env::new();
    install(&env, PLUGIN, |m| {
        m["ui"]["settings"]
            .as_array_mut()
            .unwrap()
            .push(json!({"t": "entry", "key": "api_token", "label": "API token", "secret": true}));
    });
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let settings_file = env.config_dir().join(format!("{PLUGIN}.json"));

    let r = set(&mut c, PLUGIN, "api_token", json!(TOKEN), 1);
    assert_eq!(r["ok"], true, "{r}");
    assert!(
        !r.to_string().contains(TOKEN),
        "the answer repeats the secret: {r}"
    );
    let vault = c.call("vault_list", json!({}), 2);
    assert!(
        vault
            .to_string()
            .contains("PLUGIN_SAYRI_UI_TESTPAL_API_TOKEN"),
        "stored in the vault under the plugin's key: {vault}"
    );
    let schema = c.call("settings_schema", json!({}), 3);
    let field = section(&schema, PLUGIN)["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "api_token")
        .cloned()
        .unwrap();
    assert!(!field.to_string().contains(TOKEN), "{field}");

    let r = c.call("ui_start", json!({"ui_id": PLUGIN}), 4);
    assert_eq!(r["result"]["already_running"], false, "{r}");
    let seen_file = env.state_dir().join("testpal.seen");
    assert!(eventually(Duration::from_secs(20), || seen_file.exists()));
    let seen = read_json(&seen_file);
    let reversed: String = TOKEN.chars().rev().collect();
    assert_eq!(seen["api_token_reversed"], reversed, "{seen}");
    let pid = seen["pid"].as_u64().unwrap();
    for part in ["cmdline", "environ"] {
        let bytes = std::fs::read(format!("/proc/{pid}/{part}")).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "the secret is in the plugin's {part}"
        );
    }
    let r = c.call("ui_stop", json!({"ui_id": PLUGIN}), 5);
    assert_eq!(r["ok"], true, "{r}");

    // In no file Sayri or the plugin keeps.
    for name in files_under(env.dir.path()) {
        let bytes = std::fs::read(env.dir.path().join(&name)).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "the secret is in {name}"
        );
    }
    assert!(settings_file.exists());
}
