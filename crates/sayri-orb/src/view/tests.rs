use super::*;
use sayri_protocol::Event;
use sayri_protocol::reply::sessions::{Message, SessionGetReply, SessionUsage, ToolCall};
use serde_json::{Map, json};

/// A daemon frame as the link hands it over: typed, or unreadable.
fn wire(name: &str, payload: Value) -> Input {
    let payload: Map<String, Value> = match payload {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    Input::from_frame(&Event::new(name, payload))
}

/// A frame that must be a real event of the protocol.
fn ev(name: &str, payload: Value) -> Input {
    let input = wire(name, payload);
    assert!(matches!(input, Input::Event(_)), "{input:?}");
    input
}

/// A reply as the daemon writes it.
fn sent(reply: &impl serde::Serialize) -> Result<Value, ProtocolError> {
    Ok(reply::encode(reply).unwrap())
}

fn session(id: &str, title: &str, messages: u32, updated_at: f64) -> SessionSummary {
    SessionSummary {
        id: id.into(),
        title: title.into(),
        agent_id: "default".into(),
        created_at: 1.0,
        updated_at,
        messages,
        parent_id: None,
    }
}

fn agent(id: &str, name: &str) -> ListedAgent {
    use sayri_protocol::reply::agents::{Agent, AgentModel, AgentSandbox, UsableAgent};
    ListedAgent::Usable(Box::new(UsableAgent {
        agent: Agent {
            id: id.into(),
            name: name.into(),
            description: String::new(),
            system_prompt: String::new(),
            is_builtin: id == "default",
            model: AgentModel {
                provider: "openai".into(),
                model_name: "m".into(),
                temperature: 0.7,
                base_url: None,
            },
            sandbox: AgentSandbox {
                level: sayri_protocol::SandboxLevel::ReadOnly,
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

/// The greeting, read as the link reads it.
fn ready(info: Value) -> Input {
    Input::Ready(reply::decode::<StatusParams>(info).expect("a status object"))
}

fn connected() -> ViewModel {
    let mut vm = ViewModel::new();
    vm.apply(
        ready(json!({"state": "idle", "busy": false, "session_id": "s1", "agent": "default"})),
        0,
    );
    vm.take_changes();
    vm
}

fn request(id: &str, expires_in: f64) -> Value {
    json!({
        "id": id, "action": "shell", "resource": "rm -rf ~/x && ls",
        "reason": "rule rm * asks", "agent_id": "default", "agent_name": "Default",
        "session_id": "s1", "policy": false, "expires_in": expires_in,
        "segments": [
            {"command": "rm -rf ~/x", "effect": "ask", "reason": "rule rm * asks"},
            {"command": "ls", "effect": "allow", "reason": "read-only"}
        ]
    })
}

#[test]
fn greeting_sets_status_and_fetches_everything_the_window_shows() {
    let mut vm = ViewModel::new();
    let reqs = vm.apply(
        ready(json!({"state": "thinking", "busy": true, "session_id": "abc", "agent": "builder"})),
        0,
    );
    assert_eq!(vm.link, LinkState::Connected);
    assert_eq!(vm.orb, OrbState::Thinking);
    assert!(vm.busy);
    assert_eq!(vm.session_id.as_deref(), Some("abc"));
    assert_eq!(vm.agent_id.as_deref(), Some("builder"));
    let cmds: Vec<_> = reqs.iter().map(Request::command).collect();
    assert_eq!(
        cmds,
        vec![
            "permission_list",
            "agents_list",
            "sessions_list",
            "config_list",
            "session_get"
        ]
    );
    assert_eq!(reqs[4].params["session_id"], "abc");
}

#[test]
fn state_and_audio_level_drive_the_orb_and_bad_levels_are_clamped() {
    let mut vm = connected();
    vm.apply(ev("state", json!({"state": "listening"})), 0);
    assert_eq!(vm.orb, OrbState::Listening);
    assert!(vm.take_changes().orb);
    vm.apply(ev("state", json!({"state": "dancing"})), 0);
    assert_eq!(vm.orb, OrbState::Listening, "unknown states are ignored");
    vm.apply(ev("audio_level", json!({"level": 0.42})), 0);
    assert!((vm.audio_level - 0.42).abs() < 1e-6);
    vm.apply(ev("audio_level", json!({"level": 7.0})), 0);
    assert_eq!(vm.audio_level, 1.0);
    vm.apply(ev("audio_level", json!({"level": -1})), 0);
    assert_eq!(vm.audio_level, 0.0);
    // A level that is not a number is not an `audio_level` event at all.
    vm.apply(wire("audio_level", json!({"level": "loud"})), 0);
    assert_eq!(vm.audio_level, 0.0);
    assert!(
        vm.notices
            .last()
            .is_some_and(|n| n.error && n.text.contains("audio_level"))
    );
}

#[test]
fn a_turn_collects_transcript_streamed_reply_and_tool_steps_in_order() {
    let mut vm = connected();
    vm.apply(ev("partial", json!({"text": "what time"})), 0);
    assert_eq!(vm.partial, "what time");
    vm.apply(ev("busy", json!({"active": true})), 0);
    vm.apply(ev("user", json!({"text": "what time is it?"})), 0);
    assert!(
        vm.partial.is_empty(),
        "the final request replaces the live transcript"
    );
    vm.apply(ev("assistant_delta", json!({"delta": "Let me "})), 0);
    vm.apply(ev("assistant_delta", json!({"delta": "check."})), 0);
    vm.apply(ev("tool_start", json!({"command": "date"})), 0);
    assert!(vm.turns[0].steps().next().unwrap().running());
    vm.apply(
        ev(
            "tool_finish",
            json!({"command": "date", "output": "Mon 12:00\n", "exit_code": 0}),
        ),
        0,
    );
    vm.apply(ev("assistant_delta", json!({"delta": "It is "})), 0);
    vm.apply(ev("assistant_delta", json!({"delta": "noon"})), 0);
    vm.apply(ev("assistant_done", json!({"text": "It is noon."})), 0);
    assert_eq!(vm.turns.len(), 1);
    let t = &vm.turns[0];
    assert_eq!(t.user.as_deref(), Some("what time is it?"));
    assert!(t.done);
    assert_eq!(
        t.items,
        vec![
            TurnItem::Text("Let me check.".into()),
            TurnItem::Step(ToolStep {
                command: "date".into(),
                output: Some("Mon 12:00\n".into()),
                exit_code: Some(0)
            }),
            TurnItem::Text("It is noon.".into()),
        ],
        "the final answer replaces only the text streamed after the last step"
    );
}

#[test]
fn the_end_of_a_request_refreshes_status_and_sessions_and_closes_an_open_turn() {
    let mut vm = connected();
    vm.apply(ev("user", json!({"text": "hi"})), 0);
    vm.apply(ev("assistant_delta", json!({"delta": "Hel"})), 0);
    let reqs = vm.apply(ev("busy", json!({"active": false})), 0);
    assert!(vm.turns[0].done, "an interrupted turn is closed");
    let cmds: Vec<_> = reqs.iter().map(Request::command).collect();
    assert_eq!(cmds, vec!["status", "sessions_list"]);
    vm.apply(ev("assistant_delta", json!({"delta": "late"})), 0);
    assert_eq!(
        vm.turns.len(),
        2,
        "text after a closed turn starts a new one"
    );
}

#[test]
fn a_tool_finish_without_start_still_shows_the_step() {
    let mut vm = connected();
    vm.apply(
        ev(
            "tool_finish",
            json!({"command": "ls", "output": "a\nb", "exit_code": 2}),
        ),
        0,
    );
    let step = vm.turns[0].steps().next().unwrap().clone();
    assert_eq!(step.exit_code, Some(2));
    assert_eq!(step.output.as_deref(), Some("a\nb"));
}

#[test]
fn untrusted_text_is_stored_in_visible_form() {
    let mut vm = connected();
    vm.apply(ev("user", json!({"text": "a\u{1b}[2Jb"})), 0);
    vm.apply(ev("tool_start", json!({"command": "echo ok\rrm -rf /"})), 0);
    vm.apply(
        ev(
            "tool_finish",
            json!({"command": "echo ok\rrm -rf /", "output": "\u{1b}]52;c;eA==\u{7}", "exit_code": 0}),
        ),
        0,
    );
    vm.apply(ev("error", json!({"error": "bad \u{202e}txt"})), 0);
    vm.apply(ev("hint", json!({"text": "\u{9b}31m"})), 0);
    let t = &vm.turns[0];
    assert_eq!(t.user.as_deref(), Some("a\\x1b[2Jb"));
    let step = t.steps().next().unwrap();
    assert_eq!(step.command, "echo ok\\rrm -rf /");
    assert_eq!(step.output.as_deref(), Some("\\x1b]52;c;eA==\\x07"));
    assert_eq!(t.error.as_deref(), Some("bad \\u{202e}txt"));
    assert_eq!(vm.notices[0].text, "bad \\u{202e}txt");
    assert_eq!(vm.hint.as_deref(), Some("\\u{9b}31m"));
}

#[test]
fn permission_card_opens_counts_down_and_closes_on_resolution_from_any_client() {
    let mut vm = connected();
    vm.apply(
        ev(
            "permission_request",
            json!({"request": request("r1", 30.0)}),
        ),
        1_000,
    );
    assert_eq!(vm.permissions.len(), 1);
    let c = &vm.permissions[0];
    assert_eq!(c.resource, "rm -rf ~/x && ls");
    assert_eq!(c.segments.len(), 2);
    assert_eq!(c.segments[0].effect, "ask");
    assert_eq!(c.seconds_left(1_000), 30);
    assert_eq!(c.seconds_left(1_001), 30, "rounded up");
    assert_eq!(c.seconds_left(30_500), 1);
    assert_eq!(c.seconds_left(31_000), 0);
    assert_eq!(c.seconds_left(99_000), 0);
    vm.take_changes();
    vm.apply(Input::Tick, 2_000);
    assert!(vm.take_changes().permissions, "ticks redraw countdowns");
    // Another client (the CLI) answered it: no answer from us was ever sent.
    vm.apply(
        ev("permission_resolved", json!({"request_id": "r1"})),
        3_000,
    );
    assert!(vm.permissions.is_empty());
    assert!(vm.take_changes().permissions);
    vm.apply(Input::Tick, 4_000);
    assert!(
        !vm.take_changes().permissions,
        "no cards, nothing to redraw"
    );
}

#[test]
fn a_card_of_a_command_from_outside_text_names_the_step_it_came_from() {
    let mut vm = connected();
    let mut r = request("r9", 30.0);
    r["from_step"] = json!("sayri lookup \"widget\"\u{1b}[2J");
    vm.apply(ev("permission_request", json!({"request": r})), 1_000);
    let c = &vm.permissions[0];
    let step = c.from_step.as_deref().unwrap_or_default();
    assert!(
        step.starts_with("sayri lookup \"widget\"") && !step.contains('\u{1b}'),
        "{step:?}"
    );
    // An ordinary card has none.
    vm.apply(
        ev(
            "permission_request",
            json!({"request": request("r1", 30.0)}),
        ),
        1_000,
    );
    assert_eq!(vm.permissions[1].from_step, None);
}

#[test]
fn answering_sends_once_and_keeps_the_card_until_resolved() {
    let mut vm = connected();
    vm.apply(
        ev(
            "permission_request",
            json!({"request": request("r1", 30.0)}),
        ),
        0,
    );
    let reqs = vm.apply(
        Input::Action(Action::Answer {
            request_id: "r1".into(),
            allow: true,
            remember: true,
        }),
        0,
    );
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].command(), "permission_answer");
    assert_eq!(
        Value::Object(reqs[0].params.clone()),
        json!({"request_id": "r1", "allow": true, "remember": true})
    );
    assert!(vm.permissions[0].answering);
    let again = vm.apply(
        Input::Action(Action::Answer {
            request_id: "r1".into(),
            allow: false,
            remember: false,
        }),
        0,
    );
    assert!(
        again.is_empty(),
        "a second click while answering sends nothing"
    );
    vm.apply(
        Input::Response {
            tag: Tag::Answer {
                request_id: "r1".into(),
            },
            result: Ok(json!({"delivered": true})),
        },
        0,
    );
    assert_eq!(
        vm.permissions.len(),
        1,
        "the card waits for permission_resolved"
    );
    vm.apply(ev("permission_resolved", json!({"request_id": "r1"})), 0);
    assert!(vm.permissions.is_empty());
}

#[test]
fn deny_never_remembers_and_unknown_cards_send_nothing() {
    let mut vm = connected();
    vm.apply(
        ev(
            "permission_request",
            json!({"request": request("r1", 30.0)}),
        ),
        0,
    );
    let reqs = vm.apply(
        Input::Action(Action::Answer {
            request_id: "r1".into(),
            allow: false,
            remember: true,
        }),
        0,
    );
    assert_eq!(reqs[0].params["remember"], false);
    let none = vm.apply(
        Input::Action(Action::Answer {
            request_id: "nope".into(),
            allow: true,
            remember: false,
        }),
        0,
    );
    assert!(none.is_empty());
}

#[test]
fn an_answer_to_an_already_settled_card_removes_it_and_other_failures_show_on_it() {
    let mut vm = connected();
    vm.apply(
        ev(
            "permission_request",
            json!({"request": request("r1", 30.0)}),
        ),
        0,
    );
    vm.apply(
        ev(
            "permission_request",
            json!({"request": request("r2", 30.0)}),
        ),
        0,
    );
    for id in ["r1", "r2"] {
        vm.apply(
            Input::Action(Action::Answer {
                request_id: id.into(),
                allow: true,
                remember: false,
            }),
            0,
        );
    }
    vm.apply(
        Input::Response {
            tag: Tag::Answer {
                request_id: "r1".into(),
            },
            result: Err(ProtocolError::new(ErrorCode::NotFound, "no such request")),
        },
        0,
    );
    vm.apply(
        Input::Response {
            tag: Tag::Answer {
                request_id: "r2".into(),
            },
            result: Err(ProtocolError::new(ErrorCode::Internal, "disk full")),
        },
        0,
    );
    assert_eq!(vm.permissions.len(), 1);
    assert_eq!(vm.permissions[0].id, "r2");
    assert!(!vm.permissions[0].answering, "it can be answered again");
    assert_eq!(vm.permissions[0].error.as_deref(), Some("disk full"));
}

#[test]
fn reconnect_lists_pending_cards_again_without_duplicates_and_a_lost_link_clears_them() {
    let mut vm = connected();
    vm.apply(
        ev(
            "permission_request",
            json!({"request": request("r1", 30.0)}),
        ),
        0,
    );
    vm.apply(
        Input::Response {
            tag: Tag::PermissionList,
            result: Ok(
                json!({"pending": [request("r1", 12.0), request("r2", 5.0)], "approvals": {}}),
            ),
        },
        10_000,
    );
    assert_eq!(vm.permissions.len(), 2);
    assert_eq!(vm.permissions[0].seconds_left(10_000), 12);
    vm.apply(
        Input::Link(LinkState::Reconnecting {
            attempt: 1,
            retry_in_ms: 250,
            reason: "closed".into(),
        }),
        0,
    );
    assert!(vm.permissions.is_empty());
    assert!(!vm.busy);
    assert_eq!(vm.orb, OrbState::Idle);
}

#[test]
fn malformed_permission_requests_open_no_card_and_say_the_daemon_differs() {
    let mut vm = connected();
    vm.apply(
        wire("permission_request", json!({"request": {"resource": "ls"}})),
        0,
    );
    vm.apply(wire("permission_request", json!({})), 0);
    assert!(vm.permissions.is_empty());
    assert_eq!(vm.notices.len(), 2);
    assert!(
        vm.notices[0].error && vm.notices[0].text.contains("update both"),
        "{:?}",
        vm.notices
    );
    // A request that fits its type but has no id opens nothing; a negative expiry counts as
    // expired.
    vm.apply(
        ev("permission_request", json!({"request": request("", 60.0)})),
        0,
    );
    assert!(vm.permissions.is_empty());
    let mut r = request("x", -5.0);
    r["segments"] = json!([]);
    vm.apply(ev("permission_request", json!({"request": r})), 0);
    assert_eq!(vm.permissions[0].seconds_left(0), 0);
    assert!(vm.permissions[0].segments.is_empty());
}

#[test]
fn hints_replace_each_other_and_errors_pile_up_to_a_limit() {
    let mut vm = connected();
    vm.apply(ev("hint", json!({"text": "Listening…"})), 0);
    vm.apply(ev("hint", json!({"text": "Transcribing…"})), 0);
    assert_eq!(vm.hint.as_deref(), Some("Transcribing…"));
    vm.apply(ev("hint", json!({"text": ""})), 0);
    assert_eq!(vm.hint, None);
    for i in 0..6 {
        vm.apply(ev("error", json!({"error": format!("e{i}")})), 0);
    }
    assert_eq!(vm.notices.len(), MAX_NOTICES);
    assert_eq!(vm.notices[0].text, "e2");
    vm.apply(Input::Action(Action::DismissNotice(0)), 0);
    assert_eq!(vm.notices[0].text, "e3");
    vm.apply(Input::Action(Action::DismissNotice(99)), 0);
    assert_eq!(vm.notices.len(), MAX_NOTICES - 1);
}

#[test]
fn talk_trims_and_ignores_empty_text() {
    let mut vm = connected();
    assert!(
        vm.apply(Input::Action(Action::Talk("   ".into())), 0)
            .is_empty()
    );
    let r = vm.apply(Input::Action(Action::Talk("  hello  ".into())), 0);
    assert_eq!(r[0].command(), "talk");
    assert_eq!(r[0].params["text"], "hello");
}

#[test]
fn voice_not_available_is_a_hint_not_an_error() {
    let mut vm = connected();
    let r = vm.apply(Input::Action(Action::ToggleListening), 0);
    assert_eq!(r[0].command(), "toggle_listening");
    vm.apply(
        Input::Response {
            tag: Tag::ToggleListening,
            result: Err(ProtocolError::new(ErrorCode::NotImplemented, "later")),
        },
        0,
    );
    assert!(vm.notices.is_empty());
    assert!(
        vm.hint
            .as_deref()
            .unwrap()
            .contains("Voice is not available")
    );
}

#[test]
fn sessions_list_switch_rename_and_delete() {
    let mut vm = connected();
    vm.apply(
        Input::Response {
            tag: Tag::SessionsList,
            result: sent(&vec![
                session("s2", "Disk \u{1b}[31mspace", 4, 20.0),
                session("s1", "", 2, 10.0),
            ]),
        },
        0,
    );
    assert_eq!(vm.sessions.len(), 2);
    assert_eq!(vm.sessions[0].title, "Disk \\x1b[31mspace");
    assert_eq!(vm.sessions[1].title, "(untitled)");
    let r = vm.apply(Input::Action(Action::SwitchSession("s2".into())), 0);
    assert_eq!(r[0].command(), "switch_session");
    vm.apply(ev("user", json!({"text": "old"})), 0);
    let r = vm.apply(
        Input::Response {
            tag: Tag::SwitchSession,
            result: Ok(json!({"session_id": "s2"})),
        },
        0,
    );
    assert_eq!(vm.session_id.as_deref(), Some("s2"));
    assert!(vm.turns.is_empty(), "the old conversation is cleared");
    assert_eq!(r[0].command(), "session_get");
    assert!(
        vm.apply(
            Input::Action(Action::RenameSession {
                id: "s2".into(),
                title: "  ".into()
            }),
            0
        )
        .is_empty()
    );
    assert_eq!(vm.notices.len(), 1);
    let r = vm.apply(
        Input::Action(Action::RenameSession {
            id: "s2".into(),
            title: " Disk ".into(),
        }),
        0,
    );
    assert_eq!(r[0].params["title"], "Disk");
    let r = vm.apply(
        Input::Response {
            tag: Tag::RenameSession,
            result: Ok(json!({"session_id": "s2", "title": "Disk"})),
        },
        0,
    );
    assert_eq!(r[0].command(), "sessions_list");
    let r = vm.apply(Input::Action(Action::DeleteSession("s1".into())), 0);
    assert_eq!(r[0].command(), "session_delete");
}

#[test]
fn session_transcript_loads_turns_with_their_steps() {
    let mut vm = connected();
    vm.apply(
        Input::Response {
            tag: Tag::SessionGet,
            result: sent(&transcript(
                "s1",
                &[
                    ("user", "list files", None),
                    ("assistant", "Running ls.\n```bash\nls\n```", None),
                    ("tool", "[Command ls]", Some(("ls", "a\nb"))),
                    ("assistant", "Two files.", None),
                ],
            )),
        },
        0,
    );
    assert_eq!(vm.turns.len(), 1);
    let t = &vm.turns[0];
    assert_eq!(t.user.as_deref(), Some("list files"));
    assert_eq!(t.steps().count(), 1);
    assert!(t.answer_text().ends_with("Two files."));
    // A transcript of another session (switched meanwhile) is ignored.
    vm.apply(
        Input::Response {
            tag: Tag::SessionGet,
            result: sent(&transcript("other", &[("user", "x", None)])),
        },
        0,
    );
    assert_eq!(vm.turns[0].user.as_deref(), Some("list files"));
}

/// One stored message: its role, its content and, for a step, its command and output.
type Stored<'a> = (&'a str, &'a str, Option<(&'a str, &'a str)>);

/// A `session_get` reply of `id` with these messages.
fn transcript(id: &str, messages: &[Stored]) -> SessionGetReply {
    SessionGetReply {
        id: id.into(),
        title: "t".into(),
        agent_id: "default".into(),
        created_at: 1.0,
        updated_at: 2.0,
        parent_id: None,
        messages: messages
            .iter()
            .zip(1..)
            .map(|((role, content, step), n)| Message {
                id: n,
                session_id: id.into(),
                role: (*role).into(),
                content: (*content).into(),
                tool_call: step.map(|(command, output)| ToolCall {
                    command: command.into(),
                    exit_code: Some(0),
                    status: "success".into(),
                    output: output.into(),
                    duration_ms: 3.0,
                    delegated: None,
                }),
                usage: None,
                reasoning: None,
                timestamp: 1.0,
            })
            .collect(),
        sub_sessions: Vec::new(),
        usage: SessionUsage::default(),
    }
}

#[test]
fn a_reply_that_is_not_its_type_changes_nothing_and_says_the_daemon_differs() {
    let mut vm = connected();
    vm.apply(
        Input::Response {
            tag: Tag::SessionsList,
            result: Ok(json!([{"title": "no id"}])),
        },
        0,
    );
    assert!(vm.sessions.is_empty());
    assert_eq!(vm.notices.len(), 1);
    assert!(
        vm.notices[0].text.contains("sessions_list"),
        "{:?}",
        vm.notices
    );
}

#[test]
fn new_conversation_from_any_client_clears_the_card() {
    let mut vm = connected();
    vm.apply(ev("user", json!({"text": "hi"})), 0);
    let r = vm.apply(ev("conversation_started", json!({"session_id": "s9"})), 0);
    assert!(vm.turns.is_empty());
    assert_eq!(vm.session_id.as_deref(), Some("s9"));
    assert_eq!(r[0].command(), "sessions_list");
}

#[test]
fn agents_badge_and_switch() {
    let mut vm = connected();
    assert_eq!(vm.agent_name().as_deref(), Some("default"));
    vm.apply(
        Input::Response {
            tag: Tag::AgentsList,
            result: sent(&vec![
                agent("default", "Sayri"),
                agent("builder", "Builder"),
            ]),
        },
        0,
    );
    assert_eq!(vm.agent_name().as_deref(), Some("Sayri"));
    let r = vm.apply(Input::Action(Action::SwitchAgent("builder".into())), 0);
    assert_eq!(r[0].command(), "agent_switch");
    vm.apply(
        Input::Response {
            tag: Tag::AgentSwitch,
            result: Ok(json!({"agent_id": "builder", "name": "Builder"})),
        },
        0,
    );
    assert_eq!(vm.agent_name().as_deref(), Some("Builder"));
}

#[test]
fn remember_this_sends_the_said_line_to_memory_and_says_which_fact_it_became() {
    let mut vm = connected();
    assert!(
        vm.apply(Input::Action(Action::Remember("  ".into())), 0)
            .is_empty()
    );
    let r = vm.apply(
        Input::Action(Action::Remember("My backup disk is /mnt/tank".into())),
        0,
    );
    assert_eq!(r[0].command(), "memory_add");
    assert_eq!(r[0].params["text"], "My backup disk is /mnt/tank");
    assert!(r[0].params.get("agent").is_none(), "a fact for every agent");
    vm.apply(
        Input::Response {
            tag: Tag::Remember,
            result: Ok(
                json!({"id": 7, "text": "My backup disk is /mnt/tank", "agent": null,
                "source": "person", "created_at": 1.0, "updated_at": 1.0,
                "recalled_count": 0, "last_recalled_at": null}),
            ),
        },
        0,
    );
    let last = vm.notices.last().expect("a notice");
    assert!(
        last.text.starts_with("Remembered as fact 7"),
        "{}",
        last.text
    );
    assert!(!last.error);
}

fn config_rows() -> Value {
    json!([
        {"group": "ui", "key": "orb_size", "value": 140, "is_secret": false, "type": "int", "doc": "Orb diameter, pixels."},
        {"group": "ui", "key": "orb_position", "value": "top-right", "is_secret": false, "type": "string", "doc": ""},
        {"group": "ui", "key": "always_on_top", "value": true, "is_secret": false, "type": "bool", "doc": ""},
        {"group": "provider", "key": "api_key", "value": "sk-...xyz", "is_secret": true, "type": "string", "doc": ""},
        {"group": "provider", "key": "strip_patterns", "value": ["<a>", "<b>"], "is_secret": false, "type": "list", "doc": ""}
    ])
}

#[test]
fn settings_rows_validation_errors_beside_the_field_and_changes_from_elsewhere() {
    let mut vm = connected();
    vm.apply(
        Input::Response {
            tag: Tag::ConfigList,
            result: Ok(config_rows()),
        },
        0,
    );
    assert_eq!(vm.settings.len(), 5);
    assert_eq!(vm.settings[4].display_value(), "<a>, <b>");
    assert_eq!(vm.ui(), UiPrefs::default());
    let r = vm.apply(
        Input::Action(Action::SetConfig {
            key: "ui.orb_size".into(),
            value: json!("9999"),
        }),
        0,
    );
    assert_eq!(r[0].command(), "config_set");
    assert!(vm.settings[0].pending);
    vm.apply(
        Input::Response {
            tag: Tag::SetConfig {
                key: "ui.orb_size".into(),
            },
            result: Err(ProtocolError::new(
                ErrorCode::InvalidParams,
                "ui.orb_size must be pixels, from 40 to 1000",
            )),
        },
        0,
    );
    assert_eq!(
        vm.settings[0].error.as_deref(),
        Some("ui.orb_size must be pixels, from 40 to 1000")
    );
    assert!(
        vm.notices.is_empty(),
        "the error shows beside the field only"
    );
    vm.take_changes();
    vm.apply(
        ev(
            "settings_changed",
            json!({"keys": ["ui.orb_position", "ui.orb_size"], "values": {"ui.orb_position": "bottom-left", "ui.orb_size": 200}}),
        ),
        0,
    );
    let ch = vm.take_changes();
    assert!(ch.layout && ch.settings);
    assert_eq!(vm.ui().corner, OrbCorner::BottomLeft);
    assert_eq!(vm.ui().orb_size, 200);
    assert_eq!(
        vm.settings[0].error, None,
        "a stored value clears the old error"
    );
}

#[test]
fn a_stored_secret_keeps_its_mask() {
    let mut vm = connected();
    vm.apply(
        Input::Response {
            tag: Tag::ConfigList,
            result: Ok(config_rows()),
        },
        0,
    );
    vm.apply(
        Input::Response {
            tag: Tag::SetConfig {
                key: "provider.api_key".into(),
            },
            result: Ok(json!({"group": "provider", "key": "api_key", "value": "sk-secret-value"})),
        },
        0,
    );
    assert_eq!(vm.settings[3].value, json!("sk-...xyz"));
}

#[test]
fn show_hide_and_toggle_events_set_visibility() {
    let mut vm = connected();
    vm.apply(ev("hide", json!({})), 0);
    assert!(!vm.visible);
    vm.apply(ev("toggle", json!({})), 0);
    assert!(vm.visible);
    vm.apply(ev("toggle", json!({})), 0);
    vm.apply(ev("show", json!({})), 0);
    assert!(vm.visible);
    assert!(vm.take_changes().visibility);
}

#[test]
fn unknown_events_and_fields_change_nothing() {
    let mut vm = connected();
    let before = format!("{vm:?}");
    let r = vm.apply(
        ev(
            "asset_progress",
            json!({"token": "t", "kind": "wake_word", "name": "w", "percent": 5}),
        ),
        0,
    );
    assert!(r.is_empty());
    vm.apply(ev("brand_new_event", json!({"x": 1})), 0);
    assert_eq!(format!("{vm:?}"), before);
}

#[test]
fn corner_parsing_and_size_limits() {
    assert_eq!(OrbCorner::parse("bottom-right"), OrbCorner::BottomRight);
    assert_eq!(OrbCorner::parse("middle"), OrbCorner::TopRight);
    assert!(OrbCorner::TopLeft.is_left() && !OrbCorner::TopLeft.is_bottom());
    let rows = vec![SettingRow {
        key: "ui.orb_size".into(),
        value: json!(5),
        is_secret: false,
        ty: "int".into(),
        doc: String::new(),
        error: None,
        pending: false,
    }];
    assert_eq!(UiPrefs::from_rows(&rows).orb_size, 40);
}
