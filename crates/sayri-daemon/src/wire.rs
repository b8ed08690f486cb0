//! The daemon's values as the protocol's reply and event types (`sayri_protocol::reply`,
//! `sayri_protocol::event`): one function per kind, naming every member, so a member renamed
//! in the protocol fails to compile here.
//!
//! Only conversions live here: what a value is comes from its own module (the core, the
//! store, the vault, the supervisor).

use crate::supervisor::ChildStatus;
use sayri_core::domain::agents::Narrowing;
use sayri_core::domain::gateway::GatewayInstance;
use sayri_core::domain::voice::VoiceEvent;
use sayri_core::engine::CoreEvent;
use sayri_core::engine::broker::{AskedSegment, PermissionRequest};
use sayri_core::ports::{Delegated, SessionInfo, StoredMessage, ToolCallRecord, Usage};
use sayri_permissions::Approval;
use sayri_protocol::event::{self, AnyEvent};
use sayri_protocol::reply::{agents, database, gateways, permissions, runtime, sessions, vault};
use sayri_store::RecoveryReport;
use sayri_vault::SecretInfo;

/// A permission question as clients see it.
pub fn request(r: &PermissionRequest) -> permissions::PermissionRequest {
    permissions::PermissionRequest {
        id: r.id.clone(),
        action: r.action.clone(),
        resource: r.resource.clone(),
        reason: r.reason.clone(),
        agent_id: r.agent_id.clone(),
        agent_name: r.agent_name.clone(),
        session_id: r.session_id.clone(),
        policy: r.policy,
        expires_in: r.expires_in,
        segments: r.segments.iter().map(segment).collect(),
        from_step: r.from_step.clone(),
    }
}

fn segment(s: &AskedSegment) -> permissions::AskedSegment {
    permissions::AskedSegment {
        command: s.command.clone(),
        effect: s.effect.name().to_string(),
        reason: s.reason.clone(),
    }
}

/// A remembered approval.
pub fn approval(a: &Approval) -> permissions::Approval {
    permissions::Approval {
        agent_id: a.agent_id.clone(),
        action: a.action.clone(),
        resource: a.resource.clone(),
        created_at: a.created_at,
    }
}

/// A session as listed.
pub fn session(s: &SessionInfo) -> sessions::SessionSummary {
    sessions::SessionSummary {
        id: s.id.clone(),
        title: s.title.clone(),
        agent_id: s.agent_id.clone(),
        created_at: s.created_at,
        updated_at: s.updated_at,
        messages: s.messages,
        parent_id: s.parent_id.clone(),
    }
}

/// A stored message.
pub fn message(m: &StoredMessage) -> sessions::Message {
    sessions::Message {
        id: m.id,
        session_id: m.session_id.clone(),
        role: m.role.as_str().to_string(),
        content: m.content.clone(),
        tool_call: m.tool_call.as_ref().map(tool_call),
        usage: m.usage.map(usage),
        reasoning: m.reasoning.clone(),
        timestamp: m.timestamp,
    }
}

fn tool_call(t: &ToolCallRecord) -> sessions::ToolCall {
    sessions::ToolCall {
        command: t.command.clone(),
        exit_code: t.exit_code,
        status: t.status.clone(),
        output: t.output.clone(),
        duration_ms: t.duration_ms,
        delegated: t.delegated.as_ref().map(delegated),
    }
}

fn delegated(d: &Delegated) -> sessions::Delegated {
    sessions::Delegated {
        agent_id: d.agent_id.clone(),
        session_id: d.session_id.clone(),
        prompt_tokens: d.prompt_tokens,
        completion_tokens: d.completion_tokens,
        model_calls: d.model_calls,
    }
}

fn usage(u: Usage) -> sessions::Usage {
    sessions::Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        total_tokens: u.total_tokens,
    }
}

/// One way an agent's effective profile differs from its file.
pub fn narrowing(n: &Narrowing) -> agents::Narrowing {
    agents::Narrowing {
        field: n.field.to_string(),
        written: n.written.clone(),
        effective: n.effective.clone(),
    }
}

/// A secret as listed (masked).
pub fn secret(s: &SecretInfo) -> vault::SecretInfo {
    vault::SecretInfo {
        key: s.key.clone(),
        masked: s.masked.clone(),
        description: s.description.clone(),
        updated_at: s.updated_at,
    }
}

/// A supervised child program.
pub fn child(c: &ChildStatus) -> runtime::SupervisedChild {
    runtime::SupervisedChild {
        name: c.name.clone(),
        state: c.state.as_str().to_string(),
        pid: c.pid,
        keeper_pid: c.keeper_pid,
        restarts: c.restarts,
        last_error: c.last_error.clone(),
        restart_in_ms: c.restart_in_ms,
        log_file: c.log_file.clone(),
    }
}

/// What a rebuild of the session database did, as `db_recover` answers it.
pub fn recovery(r: &RecoveryReport) -> database::DbRecoverReply {
    database::DbRecoverReply {
        database: r.database.clone(),
        damaged_copy: r.damaged_copy.clone(),
        tables: r
            .tables
            .iter()
            .map(|t| database::TableRecovery {
                table: t.table.clone(),
                rows_kept: t.rows_kept,
                unreadable_rowids: t.unreadable_rowids.clone(),
                rows_dropped: t.rows_dropped,
                error: t.error.clone(),
            })
            .collect(),
        summary: r.summary(),
    }
}

/// A gateway instance's settings.
pub fn gateway_instance(i: &GatewayInstance) -> gateways::GatewayInstance {
    gateways::GatewayInstance {
        id: i.id.clone(),
        name: if i.name.is_empty() {
            i.id.clone()
        } else {
            i.name.clone()
        },
        plugin: i.plugin.clone(),
        agent: i.agent.clone(),
        agents: i.agents.clone(),
        level_cap: i.level_cap,
        secrets: i.secrets.clone(),
        options: i.options.clone(),
        allowed_groups: i.allowed_groups.clone(),
        auto_start: i.auto_start,
        legacy: i.legacy,
        legacy_authors: i.legacy_authors.clone(),
        legacy_chats: i.legacy_chats.clone(),
        secret_key: i.secret_key.clone(),
        allow_resume_previous: i.allow_resume_previous,
        inactivity_timeout_minutes: i.inactivity_timeout_minutes,
    }
}

/// An event of the core.
pub fn core_event(e: &CoreEvent) -> AnyEvent {
    use event::turns as t;
    match e {
        CoreEvent::State(s) => t::State {
            state: s.as_str().into(),
        }
        .into(),
        CoreEvent::Busy(active) => t::Busy { active: *active }.into(),
        CoreEvent::User(text) => t::User { text: text.clone() }.into(),
        CoreEvent::AssistantDelta(d) => t::AssistantDelta { delta: d.clone() }.into(),
        CoreEvent::ReasoningDelta(d) => t::ReasoningDelta { delta: d.clone() }.into(),
        CoreEvent::AssistantDone(text) => t::AssistantDone { text: text.clone() }.into(),
        CoreEvent::ToolStart(c) => t::ToolStart { command: c.clone() }.into(),
        CoreEvent::ToolFinish {
            command,
            output,
            exit_code,
        } => t::ToolFinish {
            command: command.clone(),
            output: output.clone(),
            exit_code: *exit_code,
        }
        .into(),
        CoreEvent::Hint(text) => t::Hint { text: text.clone() }.into(),
        CoreEvent::Error(e) => t::Error::new(e.clone()).into(),
        CoreEvent::ConversationStarted(s) => t::ConversationStarted {
            session_id: s.clone(),
        }
        .into(),
    }
}

/// An event of the voice loop; `at_ms` is where on the loop's audio clock it happened (a
/// `wake` carries it).
pub fn voice_event(e: &VoiceEvent, at_ms: u64) -> AnyEvent {
    use event::{turns as t, voice as v, window as w};
    match e {
        VoiceEvent::State(s) => t::State {
            state: s.as_str().into(),
        }
        .into(),
        VoiceEvent::AudioLevel(level) => v::AudioLevel { level: *level }.into(),
        VoiceEvent::Mic(active) => v::Mic::open(*active).into(),
        VoiceEvent::MicStatus {
            active,
            device,
            problem,
        } => v::Mic {
            active: *active,
            device: Some(device.clone()),
            problem: Some(problem.clone()),
        }
        .into(),
        VoiceEvent::Busy(active) => t::Busy { active: *active }.into(),
        VoiceEvent::Partial(text) => v::Partial { text: text.clone() }.into(),
        VoiceEvent::User(text) => t::User { text: text.clone() }.into(),
        VoiceEvent::Speaking(active) => v::Speaking { active: *active }.into(),
        VoiceEvent::Hint(text) => t::Hint { text: text.clone() }.into(),
        VoiceEvent::Error(e) => t::Error::new(e.clone()).into(),
        VoiceEvent::Show => w::Show {}.into(),
        VoiceEvent::Wake { phrase, score } => v::Wake {
            phrase: phrase.clone(),
            score: *score,
            at_ms,
        }
        .into(),
        VoiceEvent::Transcript(text) => v::Transcript { text: text.clone() }.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sayri_core::engine::CoreState;
    use serde_json::{Value, json};

    fn wire(e: &AnyEvent) -> Value {
        serde_json::to_value(e.frame().unwrap()).unwrap()
    }

    #[test]
    fn core_events_become_their_protocol_events_under_the_core_s_names() {
        let cases = [
            (
                CoreEvent::ToolFinish {
                    command: "ls".into(),
                    output: "a".into(),
                    exit_code: Some(0),
                },
                json!({"event":"tool_finish","command":"ls","output":"a","exit_code":0}),
            ),
            (
                CoreEvent::ToolFinish {
                    command: "sleep 9".into(),
                    output: String::new(),
                    exit_code: None,
                },
                json!({"event":"tool_finish","command":"sleep 9","output":"","exit_code":null}),
            ),
            (CoreEvent::Busy(true), json!({"event":"busy","active":true})),
            (
                CoreEvent::State(CoreState::Thinking),
                json!({"event":"state","state":"thinking"}),
            ),
            (
                CoreEvent::AssistantDelta("x".into()),
                json!({"event":"assistant_delta","delta":"x"}),
            ),
            (
                CoreEvent::ReasoningDelta("r".into()),
                json!({"event":"reasoning_delta","delta":"r"}),
            ),
            (
                CoreEvent::ConversationStarted("s".into()),
                json!({"event":"conversation_started","session_id":"s"}),
            ),
            (
                CoreEvent::User("u".into()),
                json!({"event":"user","text":"u"}),
            ),
            (
                CoreEvent::AssistantDone("d".into()),
                json!({"event":"assistant_done","text":"d"}),
            ),
            (
                CoreEvent::Hint("h".into()),
                json!({"event":"hint","text":"h"}),
            ),
            (
                CoreEvent::Error("e".into()),
                json!({"event":"error","error":"e"}),
            ),
            (
                CoreEvent::ToolStart("ls".into()),
                json!({"event":"tool_start","command":"ls"}),
            ),
        ];
        for (core, expected) in cases {
            let typed = core_event(&core);
            assert_eq!(typed.name(), core.name(), "{core:?}");
            assert_eq!(wire(&typed), expected, "{core:?}");
        }
    }

    #[test]
    fn voice_events_become_their_protocol_events_and_a_wake_carries_its_time() {
        let cases = [
            (
                VoiceEvent::State(CoreState::Activated),
                json!({"event": "state", "state": "activated"}),
            ),
            (
                VoiceEvent::Speaking(true),
                json!({"event": "speaking", "active": true}),
            ),
            (
                VoiceEvent::Partial(String::new()),
                json!({"event": "partial", "text": ""}),
            ),
            (
                VoiceEvent::AudioLevel(0.5),
                json!({"event": "audio_level", "level": 0.5}),
            ),
            (
                VoiceEvent::Mic(false),
                json!({"event": "mic", "active": false}),
            ),
            (
                VoiceEvent::MicStatus {
                    active: false,
                    device: "pipe:/run/mic".into(),
                    problem: Some("no sound for 2 s".into()),
                },
                json!({"event": "mic", "active": false, "device": "pipe:/run/mic",
                       "problem": "no sound for 2 s"}),
            ),
            (
                VoiceEvent::MicStatus {
                    active: true,
                    device: "pipe:/run/mic".into(),
                    problem: None,
                },
                json!({"event": "mic", "active": true, "device": "pipe:/run/mic",
                       "problem": null}),
            ),
            (
                VoiceEvent::Busy(true),
                json!({"event": "busy", "active": true}),
            ),
            (
                VoiceEvent::User("u".into()),
                json!({"event": "user", "text": "u"}),
            ),
            (
                VoiceEvent::Hint("h".into()),
                json!({"event": "hint", "text": "h"}),
            ),
            (
                VoiceEvent::Error("e".into()),
                json!({"event": "error", "error": "e"}),
            ),
            (VoiceEvent::Show, json!({"event": "show"})),
            (
                VoiceEvent::Wake {
                    phrase: "hey sayri".into(),
                    score: 0.75,
                },
                json!({"event": "wake", "phrase": "hey sayri", "score": 0.75, "at_ms": 1500}),
            ),
            (
                VoiceEvent::Transcript("t".into()),
                json!({"event": "transcript", "text": "t"}),
            ),
        ];
        for (voice, expected) in cases {
            let typed = voice_event(&voice, 1500);
            assert_eq!(typed.name(), voice.name(), "{voice:?}");
            assert_eq!(wire(&typed), expected, "{voice:?}");
        }
    }
}
