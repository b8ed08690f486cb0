//! Canned event scripts for `sayri-orb --demo STATE`: the window driven exactly as a daemon would
//! drive it, without one (documentation screenshots, trying the look).

use crate::view::{Input, LinkState, Tag};
use sayri_protocol::Event;
use serde_json::{Map, Value, json};

/// The scripted scenes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Demo {
    /// The idle orb with its card.
    Idle,
    /// An answer streaming in after a command step.
    Streaming,
    /// A permission card waiting for an answer.
    Permission,
}

fn event(name: &str, payload: Value) -> Input {
    let payload: Map<String, Value> = match payload {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Input::Event(Event::new(name, payload))
}

fn response(tag: Tag, value: Value) -> Input {
    Input::Response {
        tag,
        result: Ok(value),
    }
}

/// The greeting and lists every scene starts from.
fn connected() -> Vec<Input> {
    vec![
        Input::Link(LinkState::Demo),
        Input::Ready(json!({
            "state": "idle", "busy": false, "session_id": "demo-1", "agent": "default",
        })),
        Input::Link(LinkState::Demo),
        response(
            Tag::AgentsList,
            json!([
                {"id": "default", "name": "Sayri"},
                {"id": "builder", "name": "Builder"}
            ]),
        ),
        response(
            Tag::SessionsList,
            json!([
                {"id": "demo-1", "title": "Disk space", "agent_id": "default", "messages": 4, "updated_at": 1.0},
                {"id": "demo-0", "title": "Weekly notes", "agent_id": "default", "messages": 9, "updated_at": 0.5}
            ]),
        ),
    ]
}

/// The inputs of `demo`, in order.
pub fn script(demo: Demo) -> Vec<Input> {
    let mut s = connected();
    match demo {
        Demo::Idle => {
            s.push(event("hint", json!({"text": "Ask me anything…"})));
        }
        Demo::Streaming => {
            s.extend([
                event("busy", json!({"active": true})),
                event("state", json!({"state": "thinking"})),
                event("user", json!({"text": "How much disk space is free?"})),
                event("assistant_delta", json!({"delta": "Let me check the disk."})),
                event("tool_start", json!({"command": "df -h /"})),
                event(
                    "tool_finish",
                    json!({
                        "command": "df -h /",
                        "output": "Filesystem  Size  Used Avail Use% Mounted on\n/dev/sda1    98G   41G   52G  44% /\n",
                        "exit_code": 0
                    }),
                ),
                event("state", json!({"state": "speaking"})),
                event("audio_level", json!({"level": 0.6})),
            ]);
            for piece in [
                "Your root disk has **52 GB free** ",
                "of 98 GB (44% used).\n\n",
                "- Largest user: `~/Videos`\n",
                "- Run `du -sh ~/*` to see more",
            ] {
                s.push(event("assistant_delta", json!({"delta": piece})));
            }
        }
        Demo::Permission => {
            s.extend([
                event("busy", json!({"active": true})),
                event("state", json!({"state": "thinking"})),
                event("user", json!({"text": "Clean the build directory"})),
                event(
                    "assistant_delta",
                    json!({"delta": "I will remove the old build output."}),
                ),
                event("tool_start", json!({"command": "cd ~/src/app && rm -rf build"})),
                event(
                    "permission_request",
                    json!({"request": {
                        "id": "0a1b2c3d4e5f",
                        "action": "shell",
                        "resource": "cd ~/src/app && rm -rf build",
                        "reason": "`rm -rf build` matches the rule shell `rm *` (ask) of agent Sayri",
                        "agent_id": "default",
                        "agent_name": "Sayri",
                        "session_id": "demo-1",
                        "policy": false,
                        "expires_in": 120.0,
                        "segments": [
                            {"command": "cd ~/src/app", "effect": "allow", "reason": "changes directory only"},
                            {"command": "rm -rf build", "effect": "ask", "reason": "rule shell `rm *` (ask)"}
                        ]
                    }}),
                ),
            ]);
        }
    }
    s
}
