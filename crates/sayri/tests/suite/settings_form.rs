//! The settings form of every front-end: `settings_schema` is generated from the key table, and
//! `settings_save` checks each field like `config_set`, saves the valid ones in place (the
//! user's comments stay) and reports the others.

use super::support::*;
use serde_json::{Map, Value, json};
use std::time::Duration;

const FIXTURE: &str = include_str!("../fixtures/config-save-integrity.toml");

/// A new valid value for every field of the form, as a front-end sends it (some as the text of
/// an input), and how `config_list` then shows it. A key added to the table without a row here
/// fails `every_field_of_the_schema_can_be_edited_through_settings_save`.
fn edits() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "provider.base_url",
            json!("http://127.0.0.1:9/v1"),
            json!("http://127.0.0.1:9/v1"),
        ),
        (
            "provider.api_key",
            json!("sk-test-0123456789"),
            json!("***"),
        ),
        ("provider.model", json!("qwen2.5"), json!("qwen2.5")),
        ("provider.temperature", json!("0.25"), json!(0.25)),
        ("provider.local_temperature", json!(0.3), json!(0.3)),
        ("provider.max_tokens", json!(2048), json!(2048)),
        ("provider.stream", json!("off"), json!(false)),
        ("provider.timeout", json!(30), json!(30)),
        (
            "provider.strip_patterns",
            json!("<x>.*?</x>"),
            json!("<x>.*?</x>"),
        ),
        ("provider.connect_timeout", json!("5"), json!(5)),
        ("provider.idle_timeout", json!(90), json!(90)),
        ("provider.retries", json!(1), json!(1)),
        (
            "provider.extra_headers",
            json!("X-Title: Sayri\nX-Test: 12345"),
            json!(["X-Title: ***", "X-Test: ***"]),
        ),
        ("provider.native_tools", json!(true), json!(true)),
        ("provider.context_tokens", json!("8192"), json!(8192)),
        // Naming a model file that is not installed is refused; "" (off) is the one value a
        // machine without local models can take.
        ("provider.local_model", json!(""), json!("")),
        ("stt.mode", json!("manual"), json!("manual")),
        ("stt.wake_word", json!("hola sayri"), json!("hola sayri")),
        ("stt.model_size", json!("small"), json!("small")),
        ("stt.language", json!("en"), json!("en")),
        ("stt.mic_device", json!("hw:1"), json!("hw:1")),
        ("stt.silence_ms", json!(900), json!(900)),
        ("stt.live_transcript", json!(false), json!(false)),
        // A named voice model must be installed; `auto` always passes.
        ("stt.whisper_model", json!("auto"), json!("auto")),
        ("stt.wake_model", json!("auto"), json!("auto")),
        ("stt.wake_threshold", json!("0.6"), json!(0.6)),
        ("stt.activation_timeout_ms", json!("8000"), json!(8000)),
        ("stt.max_utterance_ms", json!(20000), json!(20000)),
        ("tts.enabled", json!(false), json!(false)),
        ("tts.language", json!("en_US"), json!("en_US")),
        ("tts.voice", json!("lessac"), json!("lessac")),
        ("tts.quality", json!("high"), json!("high")),
        ("tts.speed", json!(1.5), json!(1.5)),
        ("tts.piper_voice", json!("auto"), json!("auto")),
        ("tts.output_device", json!("hw:0"), json!("hw:0")),
        ("ui.orb_size", json!(200), json!(200)),
        ("ui.orb_position", json!("top-left"), json!("top-left")),
        ("ui.autostart", json!(false), json!(false)),
        ("ui.always_on_top", json!("no"), json!(false)),
        ("ui.bubble_visible", json!(false), json!(false)),
        ("ui.default_ui", json!("orb"), json!("orb")),
        ("ui.autostart_mode", json!("daemon"), json!("daemon")),
        ("agent.default_agent", json!("helper"), json!("helper")),
        ("agent.auto_title", json!("off"), json!(false)),
        ("agent.history_tokens", json!(4000), json!(4000)),
        ("agent.output_limit", json!(131072), json!(131072)),
        ("agent.delegation_budget_calls", json!(40), json!(40)),
        (
            "agent.delegation_budget_tokens",
            json!(500000),
            json!(500000),
        ),
        ("memory.auto_accept", json!(true), json!(true)),
        ("memory.recall_tokens", json!("500"), json!(500)),
        ("memory.auto_recall", json!(true), json!(true)),
        (
            "memory.shared_with_sub_agents",
            json!("default, ops"),
            json!(["default", "ops"]),
        ),
        ("memory.ttl_days", json!(30), json!(30)),
        ("permissions.ask_timeout", json!(60), json!(60)),
        (
            "lookup.duckduckgo_url",
            json!("http://127.0.0.1:9/ddg"),
            json!("http://127.0.0.1:9/ddg"),
        ),
        (
            "lookup.wikipedia_url",
            json!("https://es.wikipedia.org/w/api.php"),
            json!("https://es.wikipedia.org/w/api.php"),
        ),
        (
            "lookup.archwiki_url",
            json!("https://wiki.archlinux.org/api.php"),
            json!("https://wiki.archlinux.org/api.php"),
        ),
        (
            "permissions.policy_files",
            json!(["/nonexistent/team-policies.json"]),
            json!(["/nonexistent/team-policies.json"]),
        ),
        (
            "skills.registry_url",
            json!("https://skills.example.org/index.json"),
            json!("https://skills.example.org/index.json"),
        ),
        ("skills.registry_timeout", json!("45"), json!(45)),
        (
            "sandbox.deny_read",
            json!("/srv/private\n/srv/other"),
            json!(["/srv/private", "/srv/other"]),
        ),
    ]
}

fn fresh(env: &Env) {
    std::fs::create_dir_all(env.config_dir().join("agents")).unwrap();
    std::fs::write(env.config_dir().join("sayri.toml"), FIXTURE).unwrap();
    let helper = json!({"id": "helper", "name": "Helper"});
    std::fs::write(
        env.config_dir().join("agents/helper.json"),
        helper.to_string(),
    )
    .unwrap();
}

fn schema_fields(schema: &Value) -> Vec<Value> {
    schema["result"]["sections"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["fields"].as_array().unwrap().clone())
        .collect()
}

/// Reads frames until the response `id`; returns it and the `settings_changed` events before it.
fn response_and_changes(c: &mut RawClient, id: u64) -> (Value, Vec<Value>) {
    let mut changes = Vec::new();
    loop {
        let v = c.read_value();
        if v["event"] == "settings_changed" {
            changes.push(v);
        } else if v.get("event").is_none() && v["id"] == id {
            return (v, changes);
        }
    }
}

#[test]
fn every_field_of_the_schema_can_be_edited_through_settings_save() {
    let env = Env::new();
    fresh(&env);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    let schema = c.call("settings_schema", json!({}), 1);
    assert_eq!(schema["ok"], true, "{schema}");
    assert_eq!(schema["result"]["plugin_sections"], json!([]));
    let fields = schema_fields(&schema);
    let edits = edits();
    let mut keys: Vec<&str> = fields.iter().map(|f| f["key"].as_str().unwrap()).collect();
    keys.sort();
    let mut edited: Vec<&str> = edits.iter().map(|(k, ..)| *k).collect();
    edited.sort();
    assert_eq!(
        keys, edited,
        "every field of the form has an edit here and nothing else"
    );
    let orb = fields.iter().find(|f| f["key"] == "ui.orb_size").unwrap();
    assert_eq!(
        (&orb["kind"], &orb["min"], &orb["max"], &orb["value"]),
        (&json!("number"), &json!(80), &json!(400), &json!(160))
    );

    let values: Map<String, Value> = edits
        .iter()
        .map(|(k, v, _)| (k.to_string(), v.clone()))
        .collect();
    c.write(
        format!(
            "{}\n",
            json!({"cmd": "settings_save", "params": {"values": values}, "id": 2})
        )
        .as_bytes(),
    );
    let (r, changes) = response_and_changes(&mut c, 2);
    assert_eq!(r["ok"], true, "{r}");
    let result = &r["result"];
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["errors"], json!({}));
    let mut saved: Vec<&str> = result["saved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    saved.sort();
    assert_eq!(saved, edited);
    let mut restart: Vec<&str> = result["restart_required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    restart.sort();
    assert_eq!(
        restart,
        ["permissions.ask_timeout", "sandbox.deny_read",],
        "voice settings apply at once (the voice loop is reconfigured)"
    );
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(
        !changes[0].to_string().contains("0123456789"),
        "{}",
        changes[0]
    );

    // The provider key goes to the vault when there is one (then shown as ***), else to the file.
    let vault = c.call("status", json!({}), 9)["result"]["vault"]["available"] == true;
    let key_shown = if vault {
        json!("***")
    } else {
        json!("sk-...789")
    };
    let o = env.run(&["config", "list", "--json", "--no-start"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let list: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for (key, _, shown) in &edits {
        let row = list
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                format!(
                    "{}.{}",
                    r["group"].as_str().unwrap(),
                    r["key"].as_str().unwrap()
                ) == *key
            })
            .unwrap();
        let shown = if *key == "provider.api_key" {
            &key_shown
        } else {
            shown
        };
        assert_eq!(&row["value"], shown, "{key}: {row}");
    }
    let text = std::fs::read_to_string(env.config_dir().join("sayri.toml")).unwrap();
    for comment in FIXTURE.lines().filter_map(|l| l.find('#').map(|i| &l[i..])) {
        assert!(text.contains(comment), "comment {comment:?} lost:\n{text}");
    }
    assert!(
        text.contains("orb_size = 200") && text.contains("mode = \"manual\""),
        "{text}"
    );
    assert_eq!(text.contains("sk-test-0123456789"), !vault, "{text}");
    // The schema now shows the new values, secrets masked.
    let again = c.call("settings_schema", json!({}), 3);
    assert!(!again.to_string().contains("0123456789"), "{again}");
    let orb = schema_fields(&again)
        .into_iter()
        .find(|f| f["key"] == "ui.orb_size")
        .unwrap();
    assert_eq!(orb["value"], 200);
}

#[test]
fn a_refused_field_is_reported_while_the_valid_ones_of_the_same_call_are_saved() {
    let env = Env::new();
    fresh(&env);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    let values = json!({
        "ui.orb_size": "2.5",
        "stt.mode": "sometimes",
        "agent.default_agent": "nobody",
        "provider.nope": 1,
        "tts.speed": 1.25,
        "ui.autostart": "off",
    });
    c.write(
        format!(
            "{}\n",
            json!({"cmd": "settings_save", "params": {"values": values}, "id": 1})
        )
        .as_bytes(),
    );
    let (r, changes) = response_and_changes(&mut c, 1);
    let result = &r["result"];
    assert_eq!(result["ok"], false, "{r}");
    assert_eq!(result["saved"], json!(["tts.speed", "ui.autostart"]));
    let errors = result["errors"].as_object().unwrap();
    let mut refused: Vec<&String> = errors.keys().collect();
    refused.sort();
    assert_eq!(
        refused,
        [
            "agent.default_agent",
            "provider.nope",
            "stt.mode",
            "ui.orb_size"
        ]
    );
    assert!(
        errors["ui.orb_size"]
            .as_str()
            .unwrap()
            .contains("integer from 80 to 400"),
        "{result}"
    );
    assert!(
        errors["agent.default_agent"]
            .as_str()
            .unwrap()
            .contains("agent not found: nobody"),
        "{result}"
    );
    assert!(
        errors["provider.nope"]
            .as_str()
            .unwrap()
            .contains("unknown setting"),
        "{result}"
    );
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["keys"], json!(["tts.speed", "ui.autostart"]));
    assert_eq!(
        changes[0]["values"],
        json!({"tts.speed": 1.25, "ui.autostart": false})
    );
    let text = std::fs::read_to_string(env.config_dir().join("sayri.toml")).unwrap();
    assert!(
        text.starts_with(FIXTURE.trim_end()),
        "the fixture's lines stay as they were:\n{text}"
    );
    assert!(
        text.contains("speed = 1.25") && text.contains("autostart = false"),
        "{text}"
    );

    // Nothing valid: nothing is written or announced.
    let before = std::fs::read(env.config_dir().join("sayri.toml")).unwrap();
    c.write(
        b"{\"cmd\":\"settings_save\",\"params\":{\"values\":{\"ui.orb_size\":5000}},\"id\":2}\n",
    );
    let (r, changes) = response_and_changes(&mut c, 2);
    assert_eq!(
        (r["result"]["ok"].clone(), r["result"]["saved"].clone()),
        (json!(false), json!([]))
    );
    assert!(changes.is_empty());
    assert_eq!(
        std::fs::read(env.config_dir().join("sayri.toml")).unwrap(),
        before
    );

    // An empty `values` is a parameter error.
    let r = c.call("settings_save", json!({"values": {}}), 3);
    assert_eq!(r["code"], "invalid_params", "{r}");
}

#[test]
fn an_empty_or_masked_secret_field_keeps_the_current_value() {
    let env = Env::new();
    fresh(&env);
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok();
    let headers = json!(["Authorization: Bearer abcdefghijk"]);
    let r = c.call(
        "config_set",
        json!({"key": "provider.extra_headers", "value": headers}),
        1,
    );
    assert_eq!(r["ok"], true, "{r}");
    let schema = c.call("settings_schema", json!({}), 2);
    let field = schema_fields(&schema)
        .into_iter()
        .find(|f| f["key"] == "provider.extra_headers")
        .unwrap();
    assert_eq!(field["secret"], true);
    assert_eq!(field["value"], json!(["Authorization: Bea...ijk"]));
    // A form sends every field back: the masked value and an empty key change nothing.
    let r = c.call(
        "settings_save",
        json!({"values": {"provider.extra_headers": field["value"], "provider.api_key": "",
                          "ui.orb_size": 150}}),
        3,
    );
    assert_eq!(r["result"]["saved"], json!(["ui.orb_size"]), "{r}");
    assert_eq!(r["result"]["ok"], true);
    let text = std::fs::read_to_string(env.config_dir().join("sayri.toml")).unwrap();
    assert!(text.contains("Authorization: Bearer abcdefghijk"), "{text}");
}

#[test]
fn settings_save_on_a_broken_file_saves_nothing_and_names_the_line() {
    let env = Env::new();
    fresh(&env);
    let _d = env.start_daemon();
    let broken = &FIXTURE.as_bytes()[..85];
    std::fs::write(env.config_dir().join("sayri.toml"), broken).unwrap();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call("settings_save", json!({"values": {"ui.orb_size": 210}}), 1);
    assert_eq!(r["code"], "config_invalid", "{r}");
    assert!(r["error"].as_str().unwrap().contains("sayri.toml:3"), "{r}");
    assert_eq!(
        std::fs::read(env.config_dir().join("sayri.toml")).unwrap(),
        broken
    );
    let r = c.call("config_get", json!({"key": "ui.orb_size"}), 2);
    assert_eq!(
        r["result"]["value"], 160,
        "the daemon keeps its last good settings"
    );
}
