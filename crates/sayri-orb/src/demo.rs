//! Canned event scripts for `sayri-orb --demo STATE`: the window driven exactly as a daemon would
//! drive it, without one (documentation screenshots, trying the look). The events and replies
//! are the protocol's types, as the daemon sends them.

use crate::view::{Input, LinkState, Tag};
use sayri_protocol::SandboxLevel;
use sayri_protocol::event::{AnyEvent, permissions::PermissionRequested, turns, voice};
use sayri_protocol::reply::agents::{Agent, AgentModel, AgentSandbox, ListedAgent, UsableAgent};
use sayri_protocol::reply::permissions::{AskedSegment, PermissionRequest};
use sayri_protocol::reply::runtime::StatusReply;
use sayri_protocol::reply::{self, sessions::SessionSummary};
use serde::Serialize;

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

fn event(e: impl Into<AnyEvent>) -> Input {
    Input::Event(e.into())
}

fn response(tag: Tag, value: &impl Serialize) -> Input {
    Input::Response {
        tag,
        result: reply::encode(value)
            .map_err(|e| sayri_protocol::ProtocolError::internal(format!("the demo reply: {e}"))),
    }
}

/// An agent of the switcher.
fn agent(id: &str, name: &str) -> ListedAgent {
    ListedAgent::Usable(Box::new(UsableAgent {
        agent: Agent {
            id: id.into(),
            name: name.into(),
            description: String::new(),
            system_prompt: String::new(),
            is_builtin: id == "default",
            model: AgentModel {
                provider: "openai".into(),
                model_name: "demo".into(),
                temperature: 0.7,
                base_url: None,
            },
            sandbox: AgentSandbox {
                level: SandboxLevel::ReadOnly,
                timeout_seconds: 60,
                allow_network: false,
                ask_before_run: true,
                default_effect: "ask".into(),
            },
            allowed_skills: Vec::new(),
            allowed_plugins: Vec::new(),
            allowed_tools: Vec::new(),
            allowed_secrets: Vec::new(),
            custom_instructions: String::new(),
            investigation_loop: false,
            reinforcement_learning: false,
            parent: None,
        },
        narrowed: Vec::new(),
        error: None,
    }))
}

/// A conversation of the session list.
fn session(id: &str, title: &str, messages: u32, updated_at: f64) -> SessionSummary {
    SessionSummary {
        id: id.into(),
        title: title.into(),
        agent_id: "default".into(),
        created_at: 0.0,
        updated_at,
        messages,
        parent_id: None,
    }
}

/// The greeting and lists every scene starts from.
fn connected() -> Vec<Input> {
    vec![
        Input::Link(LinkState::Demo),
        Input::Ready(StatusReply {
            state: "idle".into(),
            session_id: Some("demo-1".into()),
            agent: "default".into(),
            ..StatusReply::default()
        }),
        Input::Link(LinkState::Demo),
        response(
            Tag::AgentsList,
            &vec![agent("default", "Sayri"), agent("builder", "Builder")],
        ),
        response(
            Tag::SessionsList,
            &vec![
                session("demo-1", "Disk space", 4, 1.0),
                session("demo-0", "Weekly notes", 9, 0.5),
            ],
        ),
    ]
}

fn delta(text: &str) -> Input {
    event(turns::AssistantDelta { delta: text.into() })
}

/// A turn's opening: busy, thinking, the request.
fn asked(text: &str) -> [Input; 3] {
    [
        event(turns::Busy { active: true }),
        event(turns::State {
            state: "thinking".into(),
        }),
        event(turns::User { text: text.into() }),
    ]
}

fn streaming(s: &mut Vec<Input>) {
    s.extend(asked("How much disk space is free?"));
    s.extend([
        delta("Let me check the disk."),
        event(turns::ToolStart {
            command: "df -h /".into(),
        }),
        event(turns::ToolFinish {
            command: "df -h /".into(),
            output: "Filesystem  Size  Used Avail Use% Mounted on\n/dev/sda1    98G   41G   52G  44% /\n"
                .into(),
            exit_code: Some(0),
        }),
        event(turns::State {
            state: "speaking".into(),
        }),
        event(voice::AudioLevel { level: 0.6 }),
    ]);
    for piece in [
        "Your root disk has **52 GB free** ",
        "of 98 GB (44% used).\n\n",
        "- Largest user: `~/Videos`\n",
        "- Run `du -sh ~/*` to see more",
    ] {
        s.push(delta(piece));
    }
}

fn permission(s: &mut Vec<Input>) {
    s.extend(asked("Clean the build directory"));
    let segment = |command: &str, effect: &str, reason: &str| AskedSegment {
        command: command.into(),
        effect: effect.into(),
        reason: reason.into(),
    };
    s.extend([
        delta("I will remove the old build output."),
        event(turns::ToolStart {
            command: "cd ~/src/app && rm -rf build".into(),
        }),
        event(PermissionRequested {
            request: PermissionRequest {
                id: "0a1b2c3d4e5f".into(),
                action: "shell".into(),
                resource: "cd ~/src/app && rm -rf build".into(),
                reason: "`rm -rf build` matches the rule shell `rm *` (ask) of agent Sayri".into(),
                agent_id: "default".into(),
                agent_name: "Sayri".into(),
                session_id: "demo-1".into(),
                policy: false,
                expires_in: 120.0,
                segments: vec![
                    segment("cd ~/src/app", "allow", "changes directory only"),
                    segment("rm -rf build", "ask", "rule shell `rm *` (ask)"),
                ],
                from_step: None,
            },
        }),
    ]);
}

/// The inputs of `demo`, in order.
pub fn script(demo: Demo) -> Vec<Input> {
    let mut s = connected();
    match demo {
        Demo::Idle => s.push(event(turns::Hint {
            text: "Ask me anything…".into(),
        })),
        Demo::Streaming => streaming(&mut s),
        Demo::Permission => permission(&mut s),
    }
    s
}
