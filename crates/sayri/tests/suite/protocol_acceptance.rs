//! Every command of PROTOCOL.md over the real socket: each command with valid params answers a
//! result of its documented shape, with each kind of invalid params (an unknown name, each
//! parameter of a wrong type, each parameter missing) a well-formed refusal naming the
//! parameter; no command answers `not_implemented`. A front-end watching meanwhile sees every
//! event the daemon produces, each of its documented shape (the voice loop's own events are
//! produced and checked in `voice_daemon`). Every reply and event is also exactly its type of
//! `sayri_protocol` (read into it and written again, the same bytes), so a handler whose reply
//! drifts from its declared type fails here.

use super::scripted_turns::{Model, setup, start_model, wait_event, wait_response};
use super::support::*;
use sayri_daemon::daemon::default_dispatcher;
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
        "routine_started" => (&["kind", "id", "name", "session_id", "reason"], true),
        "routine_finished" => (
            &["kind", "id", "name", "session_id", "status", "summary"],
            true,
        ),
        "wake" => (&["phrase", "score", "at_ms"], true),
        "transcript" => (&["text"], true),
        other => panic!("event {other} is not in PROTOCOL.md"),
    }
}

/// Events only the voice loop makes (a microphone, speech output, the wake word): produced and
/// checked by shape in `voice_daemon`.
const PRODUCED_ELSEWHERE: [&str; 6] = [
    "audio_level",
    "mic",
    "partial",
    "speaking",
    "wake",
    "transcript",
];

/// What the calls refer to: a session, an image, a skill folder, a folder a trigger watches, a
/// model file served on loopback.
#[derive(Default, Clone)]
struct Ids {
    session: String,
    image: String,
    skill: String,
    watched: String,
    asset_url: String,
    asset_sha: String,
}

/// What a valid call answers.
enum Expect {
    /// `ok: true` with a result of this shape.
    Ok(Shape),
    /// The documented refusal with this code (a command whose valid call needs a part this
    /// machine lacks, such as speech input without voice models, or a state this run never
    /// makes, such as a proposed fact).
    Refused(&'static str),
}

/// A skill that declares settings (the `plugin_settings_set` call sets one).
const SKILL: &str = "---
name: weather-brief
description: Short weather briefings.
settings:
  - key: city
    default: Lima
---
# Weather brief

Answer with one sentence about the weather in the city of the settings.
";

/// Valid params of every implemented command, and what it answers. A command registered
/// without a row here fails the test.
fn valid(cmd: &str, ids: &Ids) -> (Value, Expect) {
    use Shape::*;
    let (params, shape) = match cmd {
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
                "database",
                "config_dir",
                "state_dir",
                "socket",
                "pid",
                "clients",
                "uptime_ms",
                "supervised",
                "stt_ready",
                "tts_ready",
                "voice",
            ]),
        ),
        "quit" => (json!({}), Obj(&["ok"])),
        "client_hello" => (
            json!({"access": "assistant", "allow": ["permission_answer"]}),
            Obj(&["access", "allow"]),
        ),
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
        "skills_install" => (
            json!({"path": ids.skill}),
            Obj(&[
                "slug",
                "installed",
                "replaced",
                "verdict",
                "score",
                "explanation",
                "findings",
                "message",
            ]),
        ),
        "skills_list" => (
            json!({}),
            ArrOf(&[
                "slug",
                "name",
                "description",
                "state",
                "verdict",
                "score",
                "source",
                "path",
            ]),
        ),
        "skills_scan" => (
            json!({"slug": "weather-brief"}),
            Obj(&[
                "verdict",
                "score",
                "explanation",
                "findings",
                "files_scanned",
                "bytes_scanned",
                "scanner_version",
                "admitted",
            ]),
        ),
        "plugin_settings_set" => (
            json!({"plugin_id": "weather-brief", "key": "city", "value": "Cusco"}),
            Obj(&["ok", "plugin_id", "key", "value"]),
        ),
        "skills_search" => (
            json!({"query": "weather"}),
            ArrOf(&["slug", "name", "description", "state", "installed"]),
        ),
        "skills_uninstall" => (json!({"slug": "weather-brief"}), Obj(&["slug", "removed"])),
        "plugins_list" => (
            json!({}),
            ArrOf(&[
                "id",
                "name",
                "description",
                "version",
                "type",
                "auth_mode",
                "required_secrets",
                "path",
                "has_service",
                "service_enabled",
                "service_running",
            ]),
        ),
        // No plugin of this Sayri has a background service: the answer says so.
        "plugin_set_enabled" => {
            return (
                json!({"plugin_id": "web", "enabled": true}),
                Expect::Refused("invalid_params"),
            );
        }
        "ui_list" => (
            json!({}),
            ArrOf(&[
                "id",
                "name",
                "version",
                "description",
                "author",
                "entrypoint",
                "path",
                "scope",
                "kind",
                "xui_renderer",
                "running",
                "pid",
                "is_default",
            ]),
        ),
        "ui_start" => (
            json!({"ui_id": "web"}),
            Obj(&["ui_id", "running", "already_running", "pid", "log_file"]),
        ),
        "ui_status" => (
            json!({"ui_id": "web"}),
            Obj(&["ui_id", "running", "pid", "state", "last_error", "log_file"]),
        ),
        "ui_stop" => (json!({"ui_id": "web"}), Obj(&["ui_id", "stopped"])),
        "asset_download" => (
            json!({"kind": "wake_word", "params": {"name": "acceptance_word",
                   "url": ids.asset_url, "sha256": ids.asset_sha}}),
            Obj(&["started", "token"]),
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
        // Lowered to level 0, the command is refused before any question: the reply says so.
        "run_command" => (
            json!({"command": "echo acceptance", "agent_id": "hostile",
                   "level": "LEVEL_0_NO_EXEC"}),
            Obj(&[
                "agent_id",
                "level",
                "status",
                "exit_code",
                "output",
                "output_tail",
                "omitted_bytes",
                "duration_ms",
            ]),
        ),
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
        // A sound file is left as it is.
        "db_recover" => (
            json!({}),
            Obj(&["database", "damaged_copy", "tables", "summary"]),
        ),
        "gateway_save" => (
            json!({"instance": {"id": "acc", "plugin": "sleeper", "auto_start": false},
                   "mode": "create"}),
            Obj(&["saved", "instance_id", "created", "instance", "restarted"]),
        ),
        "gateway_list" => (
            json!({}),
            ArrOf(&[
                "id",
                "plugin",
                "agent",
                "level_cap",
                "state",
                "pid",
                "restarts",
                "last_error",
                "log_file",
                "peers",
            ]),
        ),
        "gateway_pin" => (
            json!({"instance_id": "acc"}),
            Obj(&["instance_id", "pin", "expires_at", "expires_in"]),
        ),
        "gateway_peer_add" => (
            json!({"instance_id": "acc", "peer_id": 4242}),
            Obj(&["instance_id", "peer_id", "added"]),
        ),
        "gateway_peers" => (
            json!({"instance_id": "acc"}),
            ArrOf(&["peer_id", "agent_id", "authorized_at", "via", "name"]),
        ),
        "gateway_peer_remove" => (
            json!({"instance_id": "acc", "peer_id": "4242"}),
            Obj(&["instance_id", "peer_id", "removed"]),
        ),
        "gateway_start" => (
            json!({"instance_id": "acc"}),
            Obj(&["started", "instance_id", "message", "gateway"]),
        ),
        "gateway_stop" => (
            json!({"instance_id": "acc"}),
            Obj(&["stopped", "instance_id"]),
        ),
        "gateway_delete" => (
            json!({"instance_id": "acc", "keep_secrets": false}),
            Obj(&["deleted", "instance_id", "secrets_deleted"]),
        ),
        // MCP servers: one whose program exits at once, so `mcp_test` is the documented
        // failure (the handshake fails, the reason names how the server ended).
        "mcp_add" => (
            json!({"name": "acc", "command": "/bin/false", "args": ["x"], "env": {"A": "1"}}),
            Obj(MCP_SERVER),
        ),
        "mcp_list" => (json!({}), ArrOf(MCP_SERVER)),
        "mcp_show" | "mcp_enable" | "mcp_disable" => (json!({"name": "acc"}), Obj(MCP_SERVER)),
        "mcp_test" => return (json!({"name": "acc"}), Expect::Refused("unavailable")),
        "mcp_approve" => {
            return (
                json!({"name": "acc", "tools": {"t": "sha256:00"}}),
                Expect::Refused("unavailable"),
            );
        }
        "mcp_remove" => (json!({"name": "acc"}), Obj(&["name", "removed"])),
        "trigger_save" => (
            json!({"trigger": {"id": "acc_t", "event_type": "on_file_changed", "name": "T",
                               "prompt": "notes changed", "path": ids.watched, "glob": "*.md"}}),
            Obj(&[
                "id",
                "file",
                "event_type",
                "name",
                "prompt",
                "enabled",
                "error",
            ]),
        ),
        "triggers_list" => (
            json!({}),
            ArrOf(&[
                "id",
                "file",
                "event_type",
                "name",
                "prompt",
                "target_agent_id",
                "enabled",
                "next_run_at",
                "running",
                "last_outcome",
                "error",
            ]),
        ),
        "trigger_delete" => (
            json!({"trigger_id": "acc_t"}),
            Obj(&["trigger_id", "deleted"]),
        ),
        "routine_save" => (
            json!({"id": "acc_r", "name": "Acceptance", "trigger": "daily_at",
                   "time_spec": "09:00", "prompt": "Say hi.", "agent_id": "default",
                   "speak_tts": false, "notify_desktop": false, "enabled": true}),
            Obj(&[
                "id",
                "name",
                "trigger",
                "time_spec",
                "zone",
                "prompt",
                "agent_id",
                "enabled",
                "next_run",
                "next_run_at",
                "last_outcome",
                "error",
            ]),
        ),
        "routines_list" => (
            json!({}),
            ArrOf(&[
                "id",
                "name",
                "trigger",
                "time_spec",
                "next_run_at",
                "running",
                "error",
            ]),
        ),
        "routine_next" => (
            json!({"routine_id": "acc_r", "count": 2}),
            Obj(&["routine_id", "zone", "next"]),
        ),
        "routine_set_enabled" => (
            json!({"routine_id": "acc_r", "enabled": false}),
            Obj(&["routine_id", "enabled", "next_run_at"]),
        ),
        "routines_run" => (
            json!({"routine_id": "acc_r"}),
            Obj(&["scheduled", "routine_id", "name"]),
        ),
        "routine_delete" => (
            json!({"routine_id": "acc_r"}),
            Obj(&["routine_id", "deleted"]),
        ),
        // No voice models in this test's store: speech input says what to install.
        "listen" => return (json!({"timeout": 2}), Expect::Refused("unavailable")),
        "toggle_listening" => return (json!({}), Expect::Refused("unavailable")),
        "stop_listening" => (json!({}), Obj(&["stopped"])),
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
        // Long-term memory: the fresh database's first fact has id 1.
        "memory_add" => (
            json!({"text": "The acceptance fact: lunch is at one"}),
            Obj(MEMORY_FACT),
        ),
        "memory_list" => (json!({"agent": "default"}), ArrOf(MEMORY_FACT)),
        "memory_get" => (json!({"id": 1}), Obj(MEMORY_FACT)),
        "memory_edit" => (
            json!({"id": 1, "text": "The acceptance fact: lunch is at two"}),
            Obj(MEMORY_FACT),
        ),
        "memory_search" => (json!({"query": "LUNCH", "limit": 5}), ArrOf(MEMORY_FACT)),
        "memory_export" => (json!({}), Obj(&["count", "lines"])),
        "memory_import" => (
            json!({"lines": "{\"text\": \"An imported fact\"}\n"}),
            Obj(&["imported", "skipped"]),
        ),
        "memory_forget" => (json!({"id": 1}), Obj(&["id", "forgotten"])),
        "memory_review" => (
            json!({}),
            Obj(&["ttl_days", "conflicts", "stale", "proposed"]),
        ),
        "memory_reject" => (json!({"id": 1}), Obj(&["id", "rejected"])),
        // No turn of this run had no approver, so nothing waits: the documented refusal.
        "memory_accept" => return (json!({"id": 1}), Expect::Refused("not_found")),
        other => panic!("{other} is implemented but has no valid call in this test; add one"),
    };
    (params, Expect::Ok(shape))
}

/// The order the valid calls run in (settings and skills first, turns next so that sessions
/// and cards exist, `routines_run` after the scripted replies are used up, `quit` last).
/// The members of an MCP server in the `mcp_*` replies.
const MCP_SERVER: &[&str] = &[
    "name",
    "transport",
    "command",
    "args",
    "url",
    "enabled",
    "level",
    "network",
    "read",
    "env",
    "workspace",
];

/// The members of a fact in the `memory_*` replies.
const MEMORY_FACT: &[&str] = &[
    "id",
    "text",
    "agent",
    "source",
    "created_at",
    "updated_at",
    "recalled_count",
    "last_recalled_at",
];

const ORDER: &[&str] = &[
    "ping",
    "version",
    "status",
    "client_hello",
    "config_get",
    "config_set",
    "config_list",
    "settings_schema",
    "settings_save",
    "skills_install",
    "skills_list",
    "skills_scan",
    "plugin_settings_set",
    "skills_search",
    "skills_uninstall",
    "plugins_list",
    "plugin_set_enabled",
    "asset_download",
    "new_conversation",
    "attach_image",
    "talk",
    "ask",
    "interrupt",
    "run_command",
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
    "db_recover",
    "gateway_save",
    "gateway_list",
    "gateway_pin",
    "gateway_peer_add",
    "gateway_peers",
    "gateway_peer_remove",
    "gateway_start",
    "gateway_stop",
    "gateway_delete",
    "mcp_add",
    "mcp_list",
    "mcp_show",
    "mcp_disable",
    "mcp_enable",
    "mcp_test",
    "mcp_approve",
    "mcp_remove",
    "memory_add",
    "memory_list",
    "memory_get",
    "memory_edit",
    "memory_search",
    "memory_export",
    "memory_import",
    "memory_review",
    "memory_accept",
    "memory_reject",
    "memory_forget",
    "trigger_save",
    "triggers_list",
    "trigger_delete",
    "routine_save",
    "routines_list",
    "routine_next",
    "routine_set_enabled",
    "routines_run",
    "routine_delete",
    "listen",
    "toggle_listening",
    "stop_listening",
    "clipboard_copy",
    "window",
    "ui_list",
    "ui_start",
    "ui_status",
    "ui_stop",
    "killall",
    "session_delete",
    "quit",
];

/// The model: `talk` gets a greeting; `ask` a command that needs approval, then an answer with
/// reasoning; one more `ask` a server error (as does the routine, once the script is used up).
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

/// Runs the valid call of `cmd` on `c`; `ask` answers its permission card on the way, and
/// `client_hello` narrows a connection of its own.
fn call_valid(env: &Env, c: &mut RawClient, cmd: &str, ids: &Ids, id: u64) -> Value {
    let (params, expect) = valid(cmd, ids);
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
    } else if cmd == "client_hello" {
        let mut own = RawClient::connect(&env.socket());
        let r = own.call(cmd, params, id);
        let refused = own.call("config_set", json!({"key": "ui.orb_size", "value": 90}), id);
        assert_eq!(
            refused["code"], "denied",
            "the connection gave it up: {refused}"
        );
        r
    } else {
        c.call(cmd, params, id)
    };
    assert_eq!(r["id"], id, "{cmd}: the id is echoed");
    match expect {
        Expect::Ok(shape) => {
            assert_eq!(r["ok"], true, "{cmd}: {r}");
            check_shape(cmd, &r["result"], &shape);
            // Exactly its declared reply type: a handler that drifts from it fails here.
            if let Err(e) = sayri_protocol::reply::conforms(cmd, &r["result"]) {
                panic!("{e}");
            }
        }
        Expect::Refused(code) => {
            assert_eq!(r["ok"], false, "{cmd}: {r}");
            assert_eq!(r["code"], code, "{cmd}: {r}");
            assert!(
                r["error"].as_str().is_some_and(|e| e.len() > 20),
                "{cmd}: the refusal says what to do: {r}"
            );
        }
    }
    r
}

/// Serves `body` on loopback for every connection (`Connection: close`); returns its URL.
fn serve_file(body: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let mut req = [0u8; 4096];
            let _ = s.read(&mut req);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    format!("http://{addr}/acceptance_word.onnx")
}

/// `sayri daemon` with `bin` first on its `PATH` (where the `sleeper` gateway program is).
fn daemon_with_path(env: &Env, bin: &std::path::Path) -> Daemon {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = env.cmd();
    c.env("PATH", path);
    env.start_daemon_cmd(c)
}

/// The files the calls use, under `env`'s temporary directory.
fn fixtures(env: &Env) -> Ids {
    let dir = env.dir.path();
    let image = dir.join("dot.gif");
    std::fs::write(&image, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
    let skill = dir.join("weather-brief");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), SKILL).unwrap();
    let watched = dir.join("watched");
    std::fs::create_dir_all(&watched).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let sleeper = bin.join("sayri-gateway-sleeper");
    std::fs::write(&sleeper, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(
        &sleeper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let served = dir.join("acceptance_word.onnx");
    std::fs::write(&served, &body).unwrap();
    let asset_sha = sayri_voice::models::sha256_file(&served).unwrap();
    Ids {
        image: image.display().to_string(),
        skill: skill.display().to_string(),
        watched: watched.display().to_string(),
        asset_url: serve_file(body),
        asset_sha,
        ..Ids::default()
    }
}

#[test]
fn every_command_answers_its_documented_shape_and_reply_type_and_every_event_its_event_type() {
    let env = Env::new();
    let marker_dir = super::scripted_turns::marker_dir();
    let marker = marker_dir.path().join("touched");
    let model = model(&marker);
    setup(&env, &model, true, 30);
    let mut ids = fixtures(&env);
    let mut d = daemon_with_path(&env, &env.dir.path().join("bin"));
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
    let documented: BTreeSet<&str> = sayri_protocol::names::cmd::ALL.iter().copied().collect();
    let missing: Vec<&&str> = documented.difference(&registered).collect();
    assert!(
        missing.is_empty(),
        "commands of PROTOCOL.md without a handler: {missing:?}"
    );
    for (n, cmd) in ORDER.iter().enumerate() {
        if *cmd == "routines_run" {
            // Events the calls above do not make: the other window actions and an error.
            for action in ["show", "hide", "settings"] {
                let r = c.call("window", json!({"action": action}), 500);
                assert_eq!(r["ok"], true, "{r}");
            }
            let r = c.call("ask", json!({"text": "fail please"}), 501);
            assert!(r["result"]["error"].is_string(), "{r}");
        }
        let r = call_valid(&env, &mut c, cmd, &ids, n as u64 + 1);
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
            "asset_download" => {
                let done = loop {
                    let e = wait_event(&mut c, "asset_progress", Duration::from_secs(30))
                        .expect("the download reports progress");
                    if e.get("done").is_some() {
                        break e;
                    }
                };
                assert_eq!(done["done"], true, "{done}");
                assert_eq!(done["percent"], 100, "{done}");
            }
            "routines_run" => {
                wait_event(&mut c, "routine_finished", Duration::from_secs(60))
                    .expect("the routine ends");
            }
            "ui_start" => {
                let url = env.state_dir().join("sayri-web.url");
                assert!(
                    eventually(Duration::from_secs(20), || url.exists()),
                    "the web bubble started and wrote its address"
                );
            }
            "ui_stop" => assert_eq!(r["result"]["stopped"], true, "{r}"),
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
        // Exactly its declared event type.
        assert_typed(&line);
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
            let Expect::Ok(status) = valid("status", &Ids::default()).1 else {
                unreachable!()
            };
            check_shape("ready", &v["info"], &status);
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
fn every_command_refuses_each_kind_of_invalid_params_naming_the_parameter() {
    let env = Env::new();
    // Turns that the calls start find no model (a closed port) and end at once.
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        "[provider]\nbase_url = \"http://127.0.0.1:9/v1\"\nretries = 0\n",
    )
    .unwrap();
    let ids = Ids {
        session: "no-such-session".into(),
        image: env.dir.path().join("none.png").display().to_string(),
        ..fixtures(&env)
    };
    let _d = env.start_daemon();
    let mut main = RawClient::connect(&env.socket());
    main.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    // The skill is there, so a bad value of its setting is judged as a value.
    let r = main.call("skills_install", json!({"path": ids.skill}), 0);
    assert_eq!(r["result"]["installed"], true, "{r}");
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
        // `client_hello` narrows the connection it is sent on: it gets one of its own.
        let mut own;
        let c = if *cmd == "client_hello" {
            own = RawClient::connect(&env.socket());
            &mut own
        } else {
            &mut main
        };
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
        assert!(
            registered.contains(cmd),
            "{cmd} is in PROTOCOL.md but has no handler"
        );
    }
    let r = main.call("no_such_command", json!({}), next());
    assert_eq!(r["code"], "unknown_command", "{r}");
    assert_eq!(main.call("ping", json!({}), next())["result"], "pong");
}
