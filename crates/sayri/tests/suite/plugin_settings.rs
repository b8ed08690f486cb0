//! Settings a skill declares in its `SKILL.md` frontmatter, over the real daemon: they appear
//! as a `plugin:<slug>` section of `settings_schema`, `plugin_settings_set` checks each value
//! against the declaration (never clamping) and broadcasts `plugin_settings_changed`, a secret
//! goes to the vault and never to a file, a form, an event or the model, and the model reads
//! the plain values after `SKILL.md`. Setting a value keeps the skill's scan approval.

use super::scripted_turns::{start_model, wait_event, wait_response, write_config};
use super::support::*;
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::time::Duration;

const SKILL: &str = "---
name: weather-brief
description: Short weather briefings for the city in the settings.
settings:
  - key: city
    label: City
    hint: Used when the question names none.
    default: Lima
  - key: units
    kind: choice
    options: [{value: metric, label: Metric}, {value: imperial, label: Imperial}]
    default: metric
  - key: days
    kind: number
    min: 1
    max: 14
    step: 1
  - key: api_token
    label: Weather service token
    secret: true
---
# Weather brief

Answer with one sentence about the weather in the city of the settings, in its units.
";

const TOKEN: &str = "wx-tok-5f1e9a7c3d";

fn section(schema: &Value) -> Value {
    schema["result"]["plugin_sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "plugin:weather-brief")
        .cloned()
        .unwrap_or_else(|| panic!("no section for the skill: {schema}"))
}

fn field(section: &Value, key: &str) -> Value {
    section["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == key)
        .cloned()
        .unwrap()
}

fn set(c: &mut RawClient, key: &str, value: Value, id: u64) -> Value {
    c.call(
        "plugin_settings_set",
        json!({"plugin_id": "weather-brief", "key": key, "value": value}),
        id,
    )
}

#[test]
fn a_skills_declared_settings_are_a_form_checked_values_and_what_the_model_reads_without_secrets() {
    let env = Env::new();
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&["```read_skill\nweather-brief\n```"])),
        Reply::sse(sse::content_stream(&["Sunny in Cusco."])),
    ]);
    write_config(&env, &model, 30, "default");
    let src = env.dir.path().join("weather-brief");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("SKILL.md"), SKILL).unwrap();
    let o = env.run(&["skills", "install", src.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let _d = env.start_daemon();
    let mut watcher = RawClient::connect(&env.socket());
    watcher
        .writer
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok();

    // The form: one section, fields as declared, defaults shown, the secret empty.
    let s = section(&c.call("settings_schema", json!({}), 1));
    assert_eq!(s["plugin_id"], "weather-brief");
    assert_eq!(s["state"], "ready");
    let keys: Vec<&str> = s["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["city", "units", "days", "api_token"]);
    assert_eq!(field(&s, "city")["value"], "Lima");
    assert_eq!(
        field(&s, "units")["options"],
        json!([{"value": "metric", "label": "Metric"}, {"value": "imperial", "label": "Imperial"}])
    );
    assert_eq!(
        (
            field(&s, "days")["min"].clone(),
            field(&s, "days")["max"].clone()
        ),
        (json!(1.0), json!(14.0))
    );
    let token = field(&s, "api_token");
    assert_eq!(
        (token["kind"].clone(), token["secret"].clone()),
        (json!("password"), json!(true))
    );
    assert_eq!(token["value"], "");

    // Values: checked, stored, announced.
    let r = set(&mut c, "city", json!("Cusco"), 2);
    assert_eq!(
        r["result"],
        json!({"ok": true, "plugin_id": "weather-brief", "key": "city", "value": "Cusco"}),
        "{r}"
    );
    let ev = wait_event(
        &mut watcher,
        "plugin_settings_changed",
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(
        ev,
        json!({"event": "plugin_settings_changed", "plugin_id": "weather-brief", "key": "city",
               "value": "Cusco"})
    );
    let r = set(&mut c, "days", json!("7"), 3);
    assert_eq!(r["result"]["value"], 7, "{r}");
    for (key, value, says) in [
        ("days", json!(15), "a number from 1 to 14"),
        ("days", json!(0), "a number from 1 to 14"),
        ("units", json!("kelvin"), "one of metric, imperial"),
        ("city", json!(["Cusco"]), "one line of text"),
    ] {
        let r = set(&mut c, key, value.clone(), 4);
        assert_eq!(r["code"], "invalid_params", "{key}={value}: {r}");
        assert!(r["error"].as_str().unwrap().contains(says), "{r}");
    }
    let r = set(&mut c, "colour", json!("red"), 5);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("city, units, days, api_token"),
        "{r}"
    );
    let r = c.call(
        "plugin_settings_set",
        json!({"plugin_id": "no-such-skill", "key": "city", "value": "x"}),
        6,
    );
    assert_eq!(r["code"], "not_found", "{r}");
    let r = c.call(
        "plugin_settings_set",
        json!({"plugin_id": "../weather-brief", "key": "city", "value": "x"}),
        7,
    );
    assert_eq!(r["code"], "not_found", "{r}");
    assert_eq!(
        field(&section(&c.call("settings_schema", json!({}), 8)), "days")["value"],
        7,
        "the refused values changed nothing"
    );

    // The secret: into the vault, shown masked everywhere, never in the settings file.
    let r = set(&mut c, "api_token", json!(TOKEN), 9);
    assert_eq!(r["result"]["value"], "***", "{r}");
    let ev = loop {
        let ev = wait_event(
            &mut watcher,
            "plugin_settings_changed",
            Duration::from_secs(5),
        )
        .expect("an event for the secret");
        if ev["key"] == "api_token" {
            break ev;
        }
    };
    assert_eq!(ev["value"], "***", "{ev}");
    let r = set(&mut c, "api_token", json!("bad\nline"), 10);
    assert!(!r["error"].as_str().unwrap().contains("bad"), "{r}");
    assert_eq!(
        field(
            &section(&c.call("settings_schema", json!({}), 11)),
            "api_token"
        )["value"],
        "***"
    );
    let vault = c.call("vault_list", json!({}), 12);
    assert!(
        vault["result"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["key"] == "SKILL_WEATHER_BRIEF_API_TOKEN"),
        "{vault}"
    );
    let stored =
        std::fs::read_to_string(env.config_dir().join("skills/.settings/weather-brief.json"))
            .unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored, json!({"city": "Cusco", "days": 7}));
    let r = c.call("skills_list", json!({}), 13);
    assert_eq!(
        r["result"][0]["state"], "ready",
        "settings keep the approval: {r}"
    );

    // The model reads the plain values after SKILL.md, and where the secret is — not its value.
    c.write(
        (json!({"cmd": "ask", "params": {"text": "weather?", "timeout": 60}, "id": 14})
            .to_string()
            + "\n")
            .as_bytes(),
    );
    let (r, _) = wait_response(&mut c, 14);
    assert_eq!(r["result"]["text"], "Sunny in Cusco.", "{r}");
    let bodies: Vec<Value> = model
        .llm
        .chat_bodies()
        .into_iter()
        .filter(|b| b.get("max_tokens") != Some(&json!(15)))
        .collect();
    let observed = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    for want in [
        "# Weather brief",
        "city: \"Cusco\"",
        "units: \"metric\" (default)",
        "days: 7",
        "$SKILL_WEATHER_BRIEF_API_TOKEN",
    ] {
        assert!(observed.contains(want), "{want} in {observed}");
    }
    for b in &bodies {
        assert!(
            !b.to_string().contains(TOKEN),
            "the secret reached the model: {b}"
        );
    }

    // Back to the default; the secret cleared.
    let r = set(&mut c, "city", Value::Null, 15);
    assert_eq!(r["result"]["value"], "Lima", "{r}");
    let r = set(&mut c, "api_token", json!(""), 16);
    assert_eq!(r["result"]["value"], "", "{r}");
    let vault = c.call("vault_list", json!({}), 17);
    assert!(
        !vault.to_string().contains("SKILL_WEATHER_BRIEF_API_TOKEN"),
        "{vault}"
    );
}
