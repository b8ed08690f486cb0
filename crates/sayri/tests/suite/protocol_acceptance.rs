//! Every command of PROTOCOL.md over the real socket: each implemented command with valid params
//! answers a result of its documented shape, with each kind of invalid params (an unknown name,
//! each parameter of a wrong type, each parameter missing) a well-formed refusal naming the
//! parameter, and each command not implemented yet `not_implemented`. A front-end watching
//! meanwhile sees every event the daemon produces, each of its documented shape.

use super::scripted_turns::{Model, setup, start_model, wait_event, wait_response};
use super::support::*;
use sayri::daemon::default_dispatcher;
use sayri_testkit::{Reply, sse};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

/// The members a result must have (`[]` for a string or a number).
enum Shape {
    /// A string equal to this.
    Str(&'static str),
    /// An object with at least these members.
    Obj(&'static [&'static str]),
    /// An array whose items are objects with at least these members (checked on the first).
    ArrOf(&'static [&'static str]),
}

fn check_shape(cmd: &str, result: &Value, shape: &Shape) {
    let has = |v: &Value, keys: &[&str]| {
        let missing: Vec<&&str> = keys.iter().filter(|k| v.get(**k).is_none()).collect();
        assert!(
            v.is_object() && missing.is_empty(),
            "{cmd}: missing {missing:?} in {v}"
        );
    };
    match shape {
        Shape::Str(s) => assert_eq!(result, s, "{cmd}"),
        Shape::Obj(keys) => has(result, keys),
        Shape::ArrOf(keys) => {
            let items = result
                .as_array()
                .unwrap_or_else(|| panic!("{cmd}: {result}"));
            assert!(!items.is_empty(), "{cmd}: an empty list proves nothing");
            has(&items[0], keys);
        }
    }
}

/// Every event's payload members (besides `event`); `exact` when nothing else may be there.
fn event_members(name: &str) -> (&'static [&'static str], bool) {
    match name {
        "ready" => (&["info"], true),
        "state" => (&["state"], true),
        "audio_level" => (&["level"], true),
        "mic" | "busy" | "speaking" => (&["active"], true),
        "partial" | "user" | "assistant_done" | "hint" => (&["text"], true),
        "assistant_delta" | "reasoning_delta" => (&["delta"], true),
        "tool_start" => (&["command"], false),
        "tool_finish" => (&["command", "output", "exit_code"], false),
        "error" => (&["error"], true),
        "show" | "hide" | "toggle" | "settings_requested" | "shutdown" => (&[], true),
        "attach_image" => (&["path"], true),
        "conversation_started" => (&["session_id"], true),
        "permission_request" => (&["request"], true),
        "permission_resolved" => (&["request_id"], false),
        "settings_changed" => (&["keys", "values"], true),
        "plugin_settings_changed" => (&["plugin_id", "key", "value"], true),
        "asset_progress" => (&["token", "kind", "percent"], false),
        other => panic!("event {other} is not in PROTOCOL.md"),
    }
}

/// Events that need a part of Sayri this branch does not run: voice input and output, plugin
/// settings and asset downloads.
const PRODUCED_ELSEWHERE: [&str; 6] = [
    "audio_level",
    "mic",
    "partial",
    "speaking",
    "plugin_settings_changed",
    "asset_progress",
];

/// The ids the valid calls refer to.
#[derive(Default, Clone)]
struct Ids {
    session: String,
    image: String,
}

/// Valid params of every implemented command, and the shape of its result. A command
/// registered without a row here fails the test.
fn valid(cmd: &str, ids: &Ids) -> (Value, Shape) {
    use Shape::*;
    match cmd {
        "ping" => (json!({}), Str("pong")),
        "version" => (json!({}), Obj(&["version", "protocol_version"])),
        "status" => (
            json!({}),
            Obj(&[
                "version",
                "protocol_version",
                "state",
                "busy",
                "session_id",
                "agent",
                "provider",
                "sandbox",
                "vault",
                "config_dir",
                "state_dir",
                "socket",
                "pid",
                "clients",
                "uptime_ms",
                "supervised",
            ]),
        ),
        "quit" => (json!({}), Obj(&["ok"])),
        "config_get" => (
            json!({"key": "ui.orb_size"}),
            Obj(&["group", "key", "value"]),
        ),
        "config_set" => (
            json!({"key": "ui.orb_size", "value": 150}),
            Obj(&["group", "key", "value"]),
        ),
        "config_list" => (
            json!({}),
            ArrOf(&["group", "key", "value", "is_secret", "type", "doc"]),
        ),
        "settings_schema" => (json!({}), Obj(&["sections", "plugin_sections"])),
        "settings_save" => (
            json!({"values": {"ui.orb_size": 160}}),
            Obj(&["ok", "saved", "values", "errors", "restart_required"]),
        ),
        "new_conversation" => (json!({}), Obj(&["session_id"])),
        "talk" => (
            json!({"text": "hello"}),
            Obj(&["sent", "text", "session_id"]),
        ),
        "ask" => (
            json!({"text": "touch it", "timeout": 60}),
            Obj(&["text", "error", "session_id"]),
        ),
        "interrupt" => (json!({}), Obj(&["interrupted"])),
        "switch_session" => (json!({"session_id": ids.session}), Obj(&["session_id"])),
        "sessions_list" => (
            json!({"limit": 5}),
            ArrOf(&["id", "title", "agent_id", "messages", "updated_at"]),
        ),
        "session_get" => (
            json!({"session_id": ids.session}),
            Obj(&[
                "id",
                "title",
                "agent_id",
                "created_at",
                "updated_at",
                "messages",
            ]),
        ),
        "session_rename" => (
            json!({"session_id": ids.session, "title": "Renamed"}),
            Obj(&["session_id", "title"]),
        ),
        "session_delete" => (
            json!({"session_id": ids.session}),
            Obj(&["session_id", "deleted"]),
        ),
        "permission_list" => (json!({}), Obj(&["pending", "approvals"])),
        "permission_answer" => (
            json!({"request_id": "0123456789ab", "allow": false}),
            Obj(&["delivered", "request_id", "allow"]),
        ),
        "permission_forget" => (json!({"action": "shell"}), Obj(&["removed"])),
        "agents_list" => (json!({}), ArrOf(&["id", "name", "sandbox", "error"])),
        "agent_save" => (
            json!({"id": "helper", "name": "Helper", "parent": "hostile"}),
            Obj(&["id", "name", "created", "parent", "effective", "narrowed"]),
        ),
        "agent_switch" => (json!({"agent_id": "hostile"}), Obj(&["agent_id", "name"])),
        "agent_detach" => (
            json!({"agent_id": "helper"}),
            Obj(&["agent_id", "detached", "parent", "widened"]),
        ),
        "agent_delete" => (json!({"agent_id": "helper"}), Obj(&["agent_id", "deleted"])),
        "vault_set" => (
            json!({"key": "ACCEPT_KEY", "value": "value-0123456789", "description": "test"}),
            Obj(&["key", "saved", "rewritten"]),
        ),
        "vault_list" => (
            json!({}),
            ArrOf(&["key", "masked", "description", "updated_at"]),
        ),
        "vault_delete" => (json!({"key": "ACCEPT_KEY"}), Obj(&["key", "deleted"])),
        "clipboard_copy" => (json!({"text": "copied"}), Obj(&["copied"])),
        "killall" => (
            json!({"include_daemon": false, "ui_id": ""}),
            Obj(&[
                "stopped",
                "stopped_ui",
                "signalled",
                "errors",
                "daemon_stopped",
            ]),
        ),
        "window" => (json!({"action": "toggle"}), Obj(&["event", "clients"])),
        "attach_image" => (
            json!({"path": ids.image}),
            Obj(&["path", "mime", "bytes", "waiting"]),
        ),
        other => panic!("{other} is implemented but has no valid call in this test; add one"),
    }
}

/// The order the valid calls run in (turns first, so that sessions and cards exist; `quit`
/// last).
const ORDER: &[&str] = &[
    "ping",
    "version",
    "status",
    "config_get",
    "config_set",
    "config_list",
    "settings_schema",
    "settings_save",
    "new_conversation",
    "attach_image",
    "talk",
    "ask",
    "interrupt",
    "switch_session",
    "sessions_list",
    "session_get",
    "session_rename",
    "agents_list",
    "agent_save",
    "agent_switch",
    "agent_detach",
    "agent_delete",
    "permission_list",
    "permission_answer",
    "permission_forget",
    "vault_set",
    "vault_list",
    "vault_delete",
    "clipboard_copy",
    "window",
    "killall",
    "session_delete",
    "quit",
];

/// The model: `talk` gets a greeting; `ask` a command that needs approval, then an answer with
/// reasoning; one more `ask` a server error.
fn model(marker: &std::path::Path) -> Model {
    let mut with_reasoning =
        sse::data_event(&sse::chunk(json!({"reasoning_content": "Checking."}), None));
    with_reasoning.push_str(&sse::data_event(&sse::chunk(
        json!({"content": "Done."}),
        Some("stop"),
    )));
    with_reasoning.push_str(sse::DONE);
    start_model(vec![
        Reply::sse(sse::content_stream(&["Hello."])),
        Reply::sse(sse::content_stream(&[&format!(
            "```bash\ntouch {}\n```\n",
            marker.display()
        )])),
        Reply::sse(with_reasoning),
        Reply::json(500, &json!({"error": {"message": "overloaded"}})),
    ])
}

/// Runs the valid call of `cmd` on `c`; `ask` answers its permission card on the way.
fn call_valid(c: &mut RawClient, cmd: &str, ids: &Ids, id: u64) -> Value {
    let (params, shape) = valid(cmd, ids);
    let r = if cmd == "ask" {
        c.write(format!("{}\n", json!({"cmd": "ask", "params": params, "id": id})).as_bytes());
        let card = wait_event(c, "permission_request", Duration::from_secs(30)).expect("a card");
        let listed = c.call("permission_list", json!({}), id + 1000);
        assert_eq!(
            listed["result"]["pending"][0]["id"], card["request"]["id"],
            "{listed}"
        );
        let answer = json!({"request_id": card["request"]["id"], "allow": true});
        let a = c.call("permission_answer", answer, id + 2000);
        assert_eq!(a["result"]["delivered"], true, "{a}");
        wait_response(c, id).0
    } else {
        c.call(cmd, params, id)
    };
    assert_eq!(r["ok"], true, "{cmd}: {r}");
    assert_eq!(r["id"], id, "{cmd}: the id is echoed");
    check_shape(cmd, &r["result"], &shape);
    r
}

#[test]
fn every_command_answers_valid_params_with_its_documented_shape_and_every_event_has_its_shape() {
    let env = Env::new();
    let marker_dir = super::scripted_turns::marker_dir();
    let marker = marker_dir.path().join("touched");
    let model = model(&marker);
    setup(&env, &model, true, 30);
    let image = env.dir.path().join("dot.gif");
    std::fs::write(&image, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
    let mut d = env.start_daemon();
    // The watcher keeps its `ready` greeting among the events it checks.
    let stream = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut watcher = RawClient {
        reader: std::io::BufReader::new(stream.try_clone().unwrap()),
        writer: stream,
    };
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();

    let registered: BTreeSet<&str> = default_dispatcher().commands().map(|(c, ..)| c).collect();
    let ordered: BTreeSet<&str> = ORDER.iter().copied().collect();
    assert_eq!(
        registered, ordered,
        "every implemented command runs here once"
    );
    let mut ids = Ids {
        image: image.display().to_string(),
        ..Ids::default()
    };
    for (n, cmd) in ORDER.iter().enumerate() {
        if *cmd == "quit" {
            // Events the calls above do not make: the other window actions and an error.
            for action in ["show", "hide", "settings"] {
                let r = c.call("window", json!({"action": action}), 500);
                assert_eq!(r["ok"], true, "{r}");
            }
            let r = c.call("ask", json!({"text": "fail please"}), 501);
            assert!(r["result"]["error"].is_string(), "{r}");
        }
        let r = call_valid(&mut c, cmd, &ids, n as u64 + 1);
        match *cmd {
            "new_conversation" => {
                ids.session = r["result"]["session_id"].as_str().unwrap().to_string()
            }
            "talk" => {
                wait_event(&mut c, "assistant_done", Duration::from_secs(30)).expect("talk ends");
                // The session has its first message now.
                wait_event(&mut c, "busy", Duration::from_secs(30));
            }
            "ask" => assert!(marker.exists(), "the approved command ran"),
            _ => {}
        }
    }
    assert!(
        eventually(Duration::from_secs(10), || d
            .child
            .as_mut()
            .unwrap()
            .try_wait()
            .unwrap()
            .is_some()),
        "quit stops the daemon"
    );

    // Every event the watcher saw has its documented shape; every event is seen.
    let mut seen = BTreeSet::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut watcher.reader, &mut line).unwrap() == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        let Some(name) = v["event"].as_str() else {
            continue;
        };
        let (members, exact) = event_members(name);
        let payload: Map<String, Value> = v
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k != "event")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for m in members {
            assert!(payload.contains_key(*m), "{name} lacks {m}: {v}");
        }
        if exact {
            assert_eq!(
                payload.len(),
                members.len(),
                "{name} has only {members:?}: {v}"
            );
        }
        if name == "ready" {
            check_shape("ready", &v["info"], &valid("status", &Ids::default()).1);
        }
        seen.insert(name.to_string());
    }
    let missing: Vec<&&str> = sayri_protocol::names::event::ALL
        .iter()
        .filter(|e| !seen.contains(**e) && !PRODUCED_ELSEWHERE.contains(e))
        .collect();
    assert!(
        missing.is_empty(),
        "events never produced: {missing:?} (seen {seen:?})"
    );
}

/// The refusal of a bad call: `invalid_params`, a message naming the command and `field` when
/// the params could not be read at all; the daemon stays usable.
fn assert_refused(cmd: &str, what: &str, r: &Value, field: &str) {
    assert_eq!(r["ok"], false, "{cmd} {what}: {r}");
    assert_eq!(r["code"], "invalid_params", "{cmd} {what}: {r}");
    let msg = r["error"].as_str().unwrap_or_default();
    if msg.starts_with("invalid params for") {
        assert!(
            msg.contains(cmd) && msg.contains(field),
            "{cmd} {what}: {msg}"
        );
    } else {
        assert!(!msg.is_empty(), "{cmd} {what}: {r}");
    }
}

#[test]
fn every_command_refuses_each_kind_of_invalid_params_and_unimplemented_ones_say_so() {
    let env = Env::new();
    // Turns that the calls start find no model (a closed port) and end at once.
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        "[provider]\nbase_url = \"http://127.0.0.1:9/v1\"\nretries = 0\n",
    )
    .unwrap();
    let _d = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    let ids = Ids {
        session: "no-such-session".into(),
        image: env.dir.path().join("none.png").display().to_string(),
    };
    let registered: Vec<&str> = default_dispatcher().commands().map(|(c, ..)| c).collect();
    let mut id = 0;
    let mut next = || {
        id += 1;
        id
    };
    for cmd in &registered {
        let info = sayri_protocol::params::info(cmd).unwrap();
        let fields = (info.fields)();
        if fields.is_empty() {
            // Commands without params ignore extras (`quit` is not sent: it would stop).
            continue;
        }
        let (params, _) = valid(cmd, &ids);
        // An unknown parameter name.
        let mut bad = params.clone();
        bad["__bogus__"] = json!(1);
        let r = c.call(cmd, bad, next());
        assert_refused(cmd, "unknown param", &r, "__bogus__");
        for field in fields {
            // A value of a type no parameter takes.
            let mut bad = params.clone();
            bad[*field] = json!([[{"x": null}]]);
            let r = c.call(cmd, bad, next());
            assert_refused(cmd, &format!("{field} of a wrong type"), &r, field);
            // The parameter missing: refused naming it when it is required, else answered.
            let mut without = params.clone();
            without.as_object_mut().unwrap().remove(*field);
            let r = c.call(cmd, without, next());
            if r["code"] == "invalid_params" {
                assert_refused(cmd, &format!("without {field}"), &r, field);
            } else {
                assert!(
                    r["ok"].is_boolean() && r.get("id").is_some(),
                    "{cmd} without {field}: {r}"
                );
            }
        }
    }
    for cmd in sayri_protocol::names::cmd::ALL {
        if !registered.contains(cmd) {
            let r = c.call(cmd, json!({}), next());
            assert_eq!(r["code"], "not_implemented", "{cmd}: {r}");
        }
    }
    assert_eq!(c.call("ping", json!({}), next())["result"], "pong");
}
