//! Every command of the original Sayri's command list, sent by a client written from the
//! original wire's description (`{"cmd", "params", "id"}`, parameters named and shaped as the
//! original clients send them) to the control socket at the original path while
//! `XDG_RUNTIME_DIR` is set. Each is answered on its id, and where the original answered with
//! an object or a list of objects, the fields the original clients read are there; where the
//! original answered an error, the answer is an error that says why.

use super::gateway_rig::setup;
use super::original_clients::{OriginalClient, start_with_runtime};
use super::scripted_turns::start_model;
use super::support::*;
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// What the original clients rely on in an answer.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// `ok: true` with exactly this result.
    Is(&'static str),
    /// `ok: true` with an object result holding these fields.
    Object(&'static [&'static str]),
    /// `ok: true` with a list result whose items (when there are any) hold these fields.
    List(&'static [&'static str]),
    /// `ok: false` with an error whose text contains this (case-insensitive).
    Refused(&'static str),
}

/// Checks one response against `shape`; returns the result for later steps.
fn check(cmd: &str, params: &Value, r: &Value, shape: Shape) -> Value {
    let what = format!("{cmd} {params} → {r}");
    let fields = |v: &Value, keys: &[&str]| {
        for k in keys {
            assert!(v.get(*k).is_some(), "no field {k:?}: {what}");
        }
    };
    match shape {
        Shape::Refused(why) => {
            assert_eq!(r["ok"], false, "{what}");
            let text = r["error"].to_string().to_lowercase();
            assert!(
                text.contains(&why.to_lowercase()),
                "expected {why:?}: {what}"
            );
        }
        Shape::Is(v) => {
            assert_eq!(r["ok"], true, "{what}");
            assert_eq!(r["result"], json!(v), "{what}");
        }
        Shape::Object(keys) => {
            assert_eq!(r["ok"], true, "{what}");
            assert!(r["result"].is_object(), "{what}");
            fields(&r["result"], keys);
        }
        Shape::List(keys) => {
            assert_eq!(r["ok"], true, "{what}");
            let items = r["result"].as_array().unwrap_or_else(|| panic!("{what}"));
            if let Some(first) = items.first() {
                fields(first, keys);
            }
        }
    }
    r["result"].clone()
}

const STATUS: &[&str] = &[
    "version",
    "state",
    "armed",
    "busy",
    "mic_on",
    "ui_visible",
    "stt_ready",
    "stt_mode",
    "stt_missing",
    "tts_ready",
    "tts_missing",
    "provider",
    "session_id",
    "agent",
    "config_dir",
    "state_dir",
];

const AGENT: &[&str] = &[
    "id",
    "name",
    "description",
    "system_prompt",
    "is_builtin",
    "model",
    "sandbox",
    "allowed_skills",
    "allowed_tools",
    "custom_instructions",
];

/// The commands that need nothing made before them, with the original's parameters.
fn standalone() -> Vec<(&'static str, Value, Shape)> {
    use Shape::*;
    vec![
        ("ping", json!({}), Is("pong")),
        // A documented change: an object carrying the protocol version too.
        ("version", json!({}), Object(&["version"])),
        ("status", json!({}), Object(STATUS)),
        ("talk", json!({"text": ""}), Refused("text")),
        ("ask", json!({"text": ""}), Refused("text")),
        ("listen", json!({"timeout": 1}), Refused("speech")),
        ("toggle_listening", json!({}), Refused("speech")),
        ("stop_listening", json!({}), Object(&["stopped"])),
        ("interrupt", json!({}), Object(&["interrupted"])),
        (
            "permission_list",
            json!({}),
            Object(&["pending", "approvals"]),
        ),
        (
            "permission_answer",
            json!({"request_id": "0123456789ab", "allow": false, "remember": false}),
            Object(&["delivered", "request_id", "allow"]),
        ),
        ("permission_answer", json!({}), Refused("request_id")),
        ("permission_forget", json!({}), Object(&["removed"])),
        (
            "permission_forget",
            json!({"action": "shell", "agent_id": ""}),
            Object(&["removed"]),
        ),
        (
            "config_get",
            json!({"key": "provider.model"}),
            Object(&["group", "key", "value"]),
        ),
        (
            "config_get",
            json!({"group": "provider", "key": "model"}),
            Object(&["group", "key", "value"]),
        ),
        (
            "config_get",
            json!({"key": "nope.nothing"}),
            Refused("unknown setting"),
        ),
        (
            "config_list",
            json!({}),
            List(&["group", "key", "value", "is_secret"]),
        ),
        (
            "settings_schema",
            json!({}),
            Object(&["sections", "plugin_sections"]),
        ),
        (
            "plugin_settings_set",
            json!({"plugin_id": "no-such-plugin", "key": "k", "value": true}),
            Refused("no-such-plugin"),
        ),
        (
            "asset_download",
            json!({"kind": "whisper_model", "params": {"model_size": "gigantic"}}),
            Refused("gigantic"),
        ),
        (
            "asset_download",
            json!({"kind": "spaceship", "params": {}}),
            Refused("spaceship"),
        ),
        (
            "skills_list",
            json!({}),
            List(&["name", "path", "description"]),
        ),
        (
            "skills_search",
            json!({"query": "weather"}),
            List(&["name"]),
        ),
        (
            "skills_install",
            json!({"slug": "no-such-skill"}),
            Refused(""),
        ), // RESTORE-REGISTRY
        (
            "skills_uninstall",
            json!({"slug": "no-such-skill"}),
            Refused("no-such-skill"),
        ),
        (
            "plugins_list",
            json!({}),
            List(&["id", "name", "description", "version", "has_service"]),
        ),
        (
            "plugin_set_enabled",
            json!({"plugin_id": "no-such-plugin", "enabled": true}),
            Refused("no-such-plugin"),
        ),
        (
            "ui_list",
            json!({}),
            List(&[
                "id",
                "name",
                "description",
                "kind",
                "running",
                "pid",
                "is_default",
            ]),
        ),
        (
            "ui_status",
            json!({"ui_id": "web"}),
            Object(&["ui_id", "running"]),
        ),
        (
            "ui_start",
            json!({"ui_id": "no-such-ui"}),
            Refused("no-such-ui"),
        ),
        (
            "ui_stop",
            json!({"ui_id": "web"}),
            Object(&["ui_id", "stopped"]),
        ),
        (
            "killall",
            json!({"include_daemon": false, "ui_id": ""}),
            Object(&["stopped_ui", "signalled", "daemon_stopped"]),
        ),
        ("gateway_list", json!({}), List(&["id", "name", "enabled"])),
        (
            "gateway_start",
            json!({"instance_id": "no-such-gw"}),
            Refused("no-such-gw"),
        ),
        ("gateway_save", json!({"instance": {}}), Refused("id")),
        ("agents_list", json!({}), List(AGENT)),
        (
            "agent_switch",
            json!({"agent_id": "default"}),
            Object(&["agent_id", "name"]),
        ),
        (
            "agent_switch",
            json!({"agent_id": "no-such-agent"}),
            Refused("no-such-agent"),
        ),
        (
            "agent_delete",
            json!({"agent_id": "default"}),
            Refused("built-in"),
        ),
        (
            "sessions_list",
            json!({"limit": 20}),
            List(&["id", "title", "agent_id", "updated_at"]),
        ),
        (
            "session_get",
            json!({"session_id": "ffffffffffff"}),
            Refused("ffffffffffff"),
        ),
        (
            "routines_list",
            json!({}),
            List(&["id", "name", "trigger", "enabled"]),
        ),
        (
            "routines_run",
            json!({"routine_id": "no-such-routine"}),
            Refused("no-such-routine"),
        ),
        (
            "vault_list",
            json!({}),
            List(&["key", "masked", "description", "updated_at"]),
        ),
        ("vault_set", json!({"value": "x"}), Refused("key")),
        (
            "clipboard_copy",
            json!({"text": "copied by the original-commands test"}),
            Object(&["copied"]),
        ),
    ]
}

/// Sends `cmd` with `params` on `c` and checks the answer; returns the result.
fn send(c: &mut OriginalClient, n: &mut u64, cmd: &str, params: Value, shape: Shape) -> Value {
    *n += 1;
    let r = c.request(cmd, params.clone(), *n);
    assert_eq!(r["id"], *n, "{cmd}: {r}");
    check(cmd, &params, &r, shape)
}

#[test]
fn every_original_command_with_its_original_parameters_is_answered_in_the_original_shape() {
    use Shape::*;
    let env = Env::new();
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&["Talked."])),
        Reply::sse(sse::content_stream(&["Asked."])),
    ]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let mut d = start_with_runtime(&env);
    let mut c = OriginalClient::connect(&env.state_dir().join("sayri-daemon.sock"));
    let n = &mut 0u64;
    for (cmd, params, shape) in standalone() {
        send(&mut c, n, cmd, params, shape);
    }

    // Conversation: a turn by `talk`, one by `ask`, then the session commands on it.
    let talk = send(
        &mut c,
        n,
        "talk",
        json!({"text": "hello"}),
        Object(&["sent", "text", "session_id"]),
    );
    // `talk` answers at once and its turn runs on; `ask` waits for a free core.
    let deadline = Instant::now() + Duration::from_secs(30);
    while send(&mut c, n, "status", json!({}), Object(&["busy"]))["busy"] == true {
        assert!(Instant::now() < deadline, "the talked turn never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    let answer = send(
        &mut c,
        n,
        "ask",
        json!({"text": "and again", "timeout": 60}),
        Object(&["text", "error", "session_id"]),
    );
    assert!(answer["error"].is_null(), "{answer}");
    let sid = talk["session_id"].as_str().unwrap().to_string();
    send(
        &mut c,
        n,
        "session_get",
        json!({"session_id": sid}),
        Object(&[
            "id",
            "title",
            "agent_id",
            "created_at",
            "updated_at",
            "messages",
        ]),
    );
    send(
        &mut c,
        n,
        "session_rename",
        json!({"session_id": sid, "title": "Renamed"}),
        Object(&["session_id", "title"]),
    );
    let fresh = send(
        &mut c,
        n,
        "new_conversation",
        json!({}),
        Object(&["session_id"]),
    );
    assert_ne!(fresh["session_id"], json!(sid));
    send(
        &mut c,
        n,
        "switch_session",
        json!({"session_id": sid}),
        Object(&["session_id"]),
    );
    send(
        &mut c,
        n,
        "switch_session",
        json!({}),
        Refused("session_id"),
    );
    send(
        &mut c,
        n,
        "session_delete",
        json!({"session_id": sid}),
        Object(&["session_id", "deleted"]),
    );

    // Settings: written back with the value they have, one at a time and as a form.
    let model_name = send(
        &mut c,
        n,
        "config_get",
        json!({"key": "provider.model"}),
        Object(&["value"]),
    )["value"]
        .clone();
    send(
        &mut c,
        n,
        "config_set",
        json!({"key": "provider.model", "value": model_name}),
        Object(&["group", "key", "value"]),
    );
    send(
        &mut c,
        n,
        "settings_save",
        json!({"values": {"provider.model": model_name}}),
        Object(&["ok", "saved", "values", "errors", "restart_required"]),
    );

    // Agents, routines, gateways and the vault: made, changed and removed.
    let saved = send(
        &mut c,
        n,
        "agent_save",
        json!({"id": "writer", "name": "Writer", "description": "d", "system_prompt": "p",
               "custom_instructions": "", "allowed_skills": "a, b", "allowed_tools": [],
               "investigation_loop": false, "reinforcement_learning": false,
               "sandbox_level": "LEVEL_1_READONLY", "ask_before_run": "yes"}),
        Object(&["id", "name"]),
    );
    assert_eq!(saved["id"], "writer");
    send(
        &mut c,
        n,
        "agent_save",
        json!({"id": "bad", "name": "Bad", "sandbox_level": "LEVEL_9"}),
        Refused("LEVEL_9"),
    );
    send(
        &mut c,
        n,
        "agent_delete",
        json!({"agent_id": "writer"}),
        Object(&["agent_id", "deleted"]),
    );
    let routine = send(
        &mut c,
        n,
        "routine_save",
        json!({"name": "Morning", "trigger": "daily_at", "time_spec": "09:00", "prompt": "hi",
               "agent_id": "default", "speak_tts": false, "notify_desktop": false, "enabled": true}),
        Object(&["id", "name", "trigger", "enabled"]),
    );
    let rid = routine["id"].as_str().unwrap().to_string();
    send(
        &mut c,
        n,
        "routine_save",
        json!({"name": "X", "trigger": "fortnightly"}),
        Refused("fortnightly"),
    );
    send(
        &mut c,
        n,
        "routine_set_enabled",
        json!({"routine_id": rid, "enabled": false}),
        Object(&["routine_id", "enabled"]),
    );
    send(
        &mut c,
        n,
        "routine_delete",
        json!({"routine_id": rid}),
        Object(&["routine_id", "deleted"]),
    );
    send(
        &mut c,
        n,
        "gateway_save",
        json!({"instance": {"id": "gw1", "plugin_id": "telegram", "name": "Draft", "enabled": false,
                            "agent_id": "default", "sandbox_level": "LEVEL_1_READONLY"}}),
        Object(&["saved", "instance_id"]),
    );
    // The original also took the instance's fields as the params themselves.
    send(
        &mut c,
        n,
        "gateway_save",
        json!({"id": "gw1", "name": "Chat", "mode": "update"}),
        Object(&["saved", "instance_id"]),
    );
    send(
        &mut c,
        n,
        "gateway_save",
        json!({"id": "gw1", "nmae": "Chat"}),
        Refused("nmae"),
    );
    let listed = send(&mut c, n, "gateway_list", json!({}), List(&["id"]));
    let row = listed
        .as_array()
        .and_then(|l| l.iter().find(|i| i["id"] == "gw1"))
        .unwrap_or_else(|| panic!("gw1 not listed: {listed}"))
        .clone();
    for (field, value) in [
        ("plugin_id", json!("telegram")),
        ("name", json!("Chat")),
        ("enabled", json!(false)),
        ("agent_id", json!("default")),
        ("sandbox_level", json!("LEVEL_1_READONLY")),
        ("running", json!(false)),
    ] {
        assert_eq!(row[field], value, "{field} of {row}");
    }
    send(
        &mut c,
        n,
        "gateway_stop",
        json!({"instance_id": "gw1"}),
        Object(&["stopped", "instance_id"]),
    );
    send(
        &mut c,
        n,
        "gateway_delete",
        json!({"instance_id": "gw1"}),
        Object(&["deleted", "instance_id"]),
    );
    send(
        &mut c,
        n,
        "vault_set",
        json!({"key": "original test key", "value": "s3cret-value-1234", "description": "d"}),
        Object(&["key", "saved"]),
    );
    send(
        &mut c,
        n,
        "vault_delete",
        json!({"key": "original test key"}),
        Object(&["key", "deleted"]),
    );

    // Last: `quit` answers, then the daemon stops by itself.
    send(&mut c, n, "quit", json!({}), Object(&["ok"]));
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.child.as_mut().unwrap().try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "still running after quit: {}",
            d.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
