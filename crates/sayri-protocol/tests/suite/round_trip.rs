//! The shapes no recording holds (commands the socket tests only see refused or through the
//! CLI, and the rarer variants of recorded ones), written as the daemon writes them: each reads
//! into its type and writes back unchanged.

use sayri_protocol::event::{AnyEvent, voice::Transcript};
use sayri_protocol::{Event, params};
use serde_json::{Value, json};

fn reply_round_trips(cmd: &str, wire: Value) {
    let info = params::info(cmd).unwrap();
    let again = (info.reply_round_trip)(wire.clone()).unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert_eq!(again.to_string(), wire.to_string(), "{cmd}");
}

fn event_round_trips(wire: Value) -> AnyEvent {
    let frame: Event = serde_json::from_value(wire.clone()).unwrap();
    let typed = AnyEvent::read(&frame).unwrap();
    assert!(!matches!(typed, AnyEvent::Unknown(_)), "{wire}");
    assert_eq!(serde_json::to_value(typed.frame().unwrap()).unwrap(), wire);
    typed
}

#[test]
fn voice_replies_and_the_transcript_event_round_trip() {
    reply_round_trips("listen", json!({"text": "what time is it"}));
    reply_round_trips("listen", json!({"text": ""}));
    let t = event_round_trips(json!({"event": "transcript", "text": ""}));
    assert_eq!(t, AnyEvent::Transcript(Transcript { text: "".into() }));
}

#[test]
fn a_broken_agent_and_a_broken_routine_are_listed_with_their_error() {
    reply_round_trips(
        "agents_list",
        json!([{"error": "agents/x.json: `sandbox.level`: unknown level", "id": "x",
                "is_builtin": false, "name": "X", "parent": null}]),
    );
    reply_round_trips(
        "routines_list",
        json!([{"error": "trigger `weekly` is not known", "id": "r1", "name": "Old"}]),
    );
}

#[test]
fn every_shape_of_the_status_sandbox_and_local_model_round_trips() {
    let base = |sandbox: Value, local: Value| {
        let mut v: Value = serde_json::from_str(
            include_str!("../golden/replies/status.ndjson")
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        v["result"]["sandbox"] = sandbox;
        v["result"]["local_model"] = local;
        v["result"].take()
    };
    let ready = json!({"configured": "qwen", "log_file": "/l", "model": "qwen", "port": 4000,
                       "state": "ready"});
    let failed = json!({"configured": "qwen", "error": "no llama-server", "log_file": "/l",
                        "model": null, "state": "failed"});
    reply_round_trips("status", base(json!({"probing": true}), ready));
    reply_round_trips("status", base(json!({"error": "fork failed"}), failed));
    reply_round_trips("status", base(Value::Null, Value::Null));
}

#[test]
fn refused_skill_installs_and_scans_say_why() {
    let report = json!({"bytes_scanned": 10, "explanation": "blocked", "files_scanned": 1,
        "findings": [{"detail": "d", "excerpt": "e", "file": "SKILL.md", "kind": "hidden_text",
                      "line": 3, "weight": 30}],
        "scanner_version": 4, "score": 80, "verdict": "BLOCK"});
    let mut install = report.clone();
    install["installed"] = json!(false);
    install["replaced"] = json!(false);
    install["slug"] = Value::Null;
    install["message"] = json!("refused: BLOCK");
    reply_round_trips("skills_install", install.clone());
    install["sha256"] = json!("ab".repeat(32));
    install["download_url"] = json!("https://skills.example.org/w.zip");
    reply_round_trips("skills_install", install);
    let mut scan = report;
    scan["admitted"] = json!(false);
    scan["message"] = json!("refused: BLOCK");
    reply_round_trips("skills_scan", scan);
}

#[test]
fn a_failed_copy_an_invalid_trigger_and_a_vault_key_round_trip() {
    reply_round_trips(
        "clipboard_copy",
        json!({"copied": false, "reason": "wl-copy: not installed"}),
    );
    reply_round_trips(
        "triggers_list",
        json!([{"error": "cannot read it: denied", "file": "/t/x.json", "id": "x",
                "last_outcome": null, "next_run_at": null, "running": false}]),
    );
    reply_round_trips(
        "config_set",
        json!({"group": "provider", "key": "api_key", "stored_in": "vault", "value": "***"}),
    );
}

#[test]
fn skill_searches_round_trip_as_a_list_and_detailed() {
    let found = json!([{"description": "d", "installed": false, "name": "w", "owner": "alice",
        "slug": "w", "source": "registry", "state": "available", "version": "1.0.0"}]);
    reply_round_trips("skills_search", found.clone());
    reply_round_trips(
        "skills_search",
        json!({"results": found, "warnings": ["the skills registry was not searched"]}),
    );
}
