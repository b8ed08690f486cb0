//! The ReAct loop over fake ports: steps, blocks, caps, refusals, errors, history.

use super::engine_rig::rig;
use sayri_core::SandboxLevel;
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::{CoreEvent, TurnRequest};
use sayri_core::ports::{ChatError, ChatEvent, FinishReason, Role, SessionStore, Usage};
use sayri_testkit::fakes::{ModelReply, RecordingSink, text};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn turn(agent: AgentProfile, text: &str) -> TurnRequest {
    let level = agent.sandbox.level;
    TurnRequest {
        session_id: "s1".into(),
        title_if_new: None,
        agent: Arc::new(agent),
        level,
        text: text.into(),
        images: Vec::new(),
        approver_available: true,
        fresh_context: false,
        cancel: CancellationToken::new(),
    }
}

const STEP: &str = "Let me check.\n```bash\ndf -h\n```";

#[tokio::test]
async fn multi_step_turn_runs_the_block_and_feeds_the_observation_back() {
    let r = rig(
        vec![
            ModelReply::Text(vec!["Let me ", "check.\n```ba", "sh\ndf -h\n```"]),
            text("You have 40G free."),
        ],
        false,
    );
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(
            turn(AgentProfile::builtin_default(), "How much disk is free?"),
            &sink,
        )
        .await;
    assert_eq!(out.text.as_deref(), Some("You have 40G free."));
    assert_eq!(out.error, None);
    assert_eq!((out.model_calls, out.commands_run), (2, 1));
    assert_eq!(
        out.usage,
        Usage {
            prompt_tokens: 200,
            completion_tokens: 20,
            total_tokens: 220
        }
    );

    let runs = r.sandbox.runs.lock().unwrap().clone();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].command, "df -h");
    assert_eq!(runs[0].level, SandboxLevel::HostUser);
    assert_eq!(runs[0].timeout.as_secs(), 10);

    let reqs = r.model.requests();
    assert_eq!(reqs[0].model, "test-model");
    assert_eq!(reqs[0].messages.len(), 2);
    assert_eq!(reqs[0].messages[0].role, Role::System);
    assert_eq!(reqs[0].messages[1].content, "How much disk is free?");
    let m = &reqs[1].messages;
    assert_eq!(m.len(), 4);
    assert_eq!((m[2].role, m[2].content.as_str()), (Role::Assistant, STEP));
    assert_eq!(m[3].role, Role::User);
    // The output stands inside the turn's boundary (the rig's entropy counts from 0x5eed0000),
    // under a header naming the command.
    assert_eq!(
        m[3].content,
        "[Command result: exit code 0] `df -h` printed:\n<data-00005eed0000>\nFilesystem Size Avail\n/dev/sda1 100G 40G\n</data-00005eed0000>\nAnswer the user from this result, or run the next command.",
    );

    // Clients: the bash block is never streamed as text; it appears as tool_start.
    let ev = sink.events();
    let deltas: String = ev
        .iter()
        .filter_map(|e| match e {
            CoreEvent::AssistantDelta(d) => Some(d.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "Let me check.\n\n\nYou have 40G free.");
    assert!(ev.contains(&CoreEvent::ToolStart("df -h".into())));
    assert!(ev.iter().any(|e| matches!(e, CoreEvent::ToolFinish { command, exit_code: Some(0), output } if command == "df -h" && output.contains("40G"))));
    assert_eq!(
        ev.last(),
        Some(&CoreEvent::AssistantDone("You have 40G free.".into()))
    );

    // Storage: user, assistant step (with usage), tool row, final answer.
    let msgs = r.store.messages("s1").unwrap();
    let roles: Vec<_> = msgs.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(msgs[1].usage.unwrap().prompt_tokens, 100);
    let tc = msgs[2].tool_call.as_ref().unwrap();
    assert_eq!(
        (tc.command.as_str(), tc.exit_code, tc.status.as_str()),
        ("df -h", Some(0), "success")
    );
    assert_eq!(
        msgs[2].content, m[3].content,
        "the tool row stores the observation the model saw"
    );
    assert_eq!(
        r.store.session("s1").unwrap().unwrap().title,
        "How much disk is free?"
    );
}

#[tokio::test]
async fn only_the_first_of_several_blocks_runs_and_the_model_is_told() {
    let r = rig(
        vec![
            text("```bash\necho one\n```\n```sh\necho two\n```"),
            text("Done."),
        ],
        false,
    );
    let out = r
        .engine
        .run_turn(
            turn(AgentProfile::builtin_default(), "x"),
            &RecordingSink::default(),
        )
        .await;
    assert_eq!(out.text.as_deref(), Some("Done."));
    assert_eq!(r.sandbox.commands(), ["echo one"]);
    let reqs = r.model.requests();
    let obs = &reqs[1].messages[3].content;
    assert!(
        obs.contains("other 1 block(s) of your reply were NOT run"),
        "{obs}"
    );
}

#[tokio::test]
async fn step_cap_is_six_model_calls_and_the_last_block_is_not_run() {
    // Different commands each step: the repetition guard does not interfere.
    let step = |i: usize| {
        let reply: &'static str =
            Box::leak(format!("Trying.\n```bash\nls /nope{i}\n```").into_boxed_str());
        text(reply)
    };
    let replies = (0..12).map(step).collect();
    let r = rig(replies, false);
    let out = r
        .engine
        .run_turn(
            turn(AgentProfile::builtin_default(), "x"),
            &RecordingSink::default(),
        )
        .await;
    assert_eq!((out.model_calls, out.commands_run), (6, 5));
    assert_eq!(r.sandbox.commands().len(), 5);
    let answer = out.text.unwrap();
    assert!(answer.starts_with("Trying."), "{answer}");
    assert!(
        answer.contains("step limit")
            && answer.contains("`ls /nope5`")
            && answer.contains("not run"),
        "{answer}"
    );

    let replies = (0..12).map(step).collect();
    let r = rig(replies, false);
    let mut agent = AgentProfile::builtin_default();
    agent.investigation_loop = true;
    let out = r
        .engine
        .run_turn(turn(agent, "x"), &RecordingSink::default())
        .await;
    assert_eq!((out.model_calls, out.commands_run), (10, 9));
}

#[tokio::test]
async fn blocks_in_reasoning_and_untagged_fences_are_never_executed() {
    let r = rig(
        vec![ModelReply::Events(vec![
            Ok(ChatEvent::Reasoning(
                "Old habit would be:\n```bash\nrm -rf ~/sayri-cache\n```\nbut listing is enough."
                    .into(),
            )),
            Ok(ChatEvent::Content(
                "Here is an example:\n```\nrm -rf /\n```\nNothing to run.".into(),
            )),
            Ok(ChatEvent::Finish(FinishReason::Stop)),
        ])],
        false,
    );
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(turn(AgentProfile::builtin_default(), "list"), &sink)
        .await;
    assert!(r.sandbox.commands().is_empty());
    assert!(
        r.gate.asked.lock().unwrap().is_empty(),
        "never even proposed to the gate"
    );
    assert!(out.text.unwrap().contains("Nothing to run."));
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, CoreEvent::ReasoningDelta(d) if d.contains("rm -rf")))
    );
    let stored = r.store.messages("s1").unwrap();
    assert!(
        stored[1]
            .reasoning
            .as_deref()
            .unwrap()
            .contains("Old habit")
    );
    assert!(
        !stored[1].content.contains("Old habit"),
        "reasoning kept apart"
    );
}

#[tokio::test]
async fn refused_commands_do_not_run_and_the_model_is_told_not_to_retry() {
    let r = rig(
        vec![text(STEP), text("I was not allowed to run df -h.")],
        true,
    );
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(turn(AgentProfile::builtin_default(), "disk?"), &sink)
        .await;
    assert!(r.sandbox.commands().is_empty());
    assert_eq!(out.commands_run, 0);
    let reqs = r.model.requests();
    let obs = &reqs[1].messages[3].content;
    assert!(
        obs.starts_with("[Command NOT RUN: refused]\nDenied by agent rule"),
        "{obs}"
    );
    assert!(obs.contains("Do not retry"));
    let tool = r.store.messages("s1").unwrap()[2]
        .tool_call
        .clone()
        .unwrap();
    assert_eq!(
        (tool.status.as_str(), tool.exit_code),
        ("denied", Some(126))
    );
    assert!(sink.events().iter().any(|e| matches!(
        e,
        CoreEvent::ToolFinish {
            exit_code: Some(126),
            ..
        }
    )));
}

#[tokio::test]
async fn level_zero_never_asks_the_gate_nor_runs() {
    let r = rig(vec![text(STEP), text("I cannot run commands.")], false);
    let mut agent = AgentProfile::builtin_default();
    agent.sandbox.level = SandboxLevel::NoExec;
    let out = r
        .engine
        .run_turn(turn(agent, "disk?"), &RecordingSink::default())
        .await;
    assert!(r.sandbox.commands().is_empty());
    assert!(r.gate.asked.lock().unwrap().is_empty());
    assert!(
        r.model.requests()[1].messages[3]
            .content
            .contains("LEVEL_0_NO_EXEC")
    );
    assert_eq!(out.text.as_deref(), Some("I cannot run commands."));
}

#[tokio::test]
async fn finish_length_runs_nothing_and_reports_a_clear_error() {
    let r = rig(
        vec![ModelReply::Events(vec![
            Ok(ChatEvent::Content(
                "Sure:\n```bash\nrm -rf /tmp/x && echo".into(),
            )),
            Ok(ChatEvent::Finish(FinishReason::Length)),
        ])],
        false,
    );
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(turn(AgentProfile::builtin_default(), "x"), &sink)
        .await;
    assert!(r.sandbox.commands().is_empty());
    let err = out.error.unwrap();
    assert!(
        err.contains("finish_reason: length") && err.contains("max_tokens"),
        "{err}"
    );
    assert!(sink.events().contains(&CoreEvent::Error(err.clone())));
    assert!(
        err.contains("sayri config set provider.max_tokens"),
        "{err}"
    );
    let last = r.store.messages("s1").unwrap().last().unwrap().clone();
    assert_eq!(last.role, Role::Error, "a failure is an error record");
    assert!(!last.content.starts_with("⚠️"));
}

#[tokio::test]
async fn finish_length_on_plain_text_keeps_the_answer_and_says_it_was_cut_off() {
    let r = rig(
        vec![ModelReply::Events(vec![
            Ok(ChatEvent::Content(
                "Paris is the capital of France, and its".into(),
            )),
            Ok(ChatEvent::Finish(FinishReason::Length)),
        ])],
        false,
    );
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(turn(AgentProfile::builtin_default(), "x"), &sink)
        .await;
    assert!(r.sandbox.commands().is_empty());
    assert!(out.error.is_none(), "{:?}", out.error);
    let text = out.text.unwrap();
    assert!(
        text.starts_with("Paris is the capital") && text.contains("cut off at the token limit"),
        "{text}"
    );
    let last = r.store.messages("s1").unwrap().last().unwrap().clone();
    assert_eq!(last.content, text);
}

#[tokio::test]
async fn stream_errors_and_cut_off_streams_become_error_rows_and_events() {
    let r = rig(
        vec![ModelReply::Events(vec![Err(ChatError::Unreachable {
            url: "http://127.0.0.1:9".into(),
        })])],
        false,
    );
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(turn(AgentProfile::builtin_default(), "x"), &sink)
        .await;
    let err = out.error.unwrap();
    assert!(
        err.starts_with("Provider error: no model server at http://127.0.0.1:9"),
        "{err}"
    );
    assert_eq!(sink.events().last(), Some(&CoreEvent::Error(err)));
    let row = &r.store.messages("s1").unwrap()[1];
    assert_eq!(row.role, Role::Error, "a failed request is an error record");
    assert!(
        row.content.starts_with("Provider error: no model server"),
        "{}",
        row.content
    );
    assert!(
        row.content.contains("sayri config set provider.base_url"),
        "the error names the fix: {}",
        row.content
    );

    // No Finish at all: the connection was cut.
    let r = rig(
        vec![ModelReply::Events(vec![Ok(ChatEvent::Content(
            "```bash\nls\n```".into(),
        ))])],
        false,
    );
    let out = r
        .engine
        .run_turn(
            turn(AgentProfile::builtin_default(), "x"),
            &RecordingSink::default(),
        )
        .await;
    assert!(out.error.unwrap().contains("cut off"));
    assert!(r.sandbox.commands().is_empty());
}

#[tokio::test]
async fn strip_patterns_clean_the_final_answer() {
    let r = rig(vec![text("<think>hmm</think>Paris. [[debug]]")], false);
    let mut s = r.engine.settings();
    s.strip_patterns = r"\[\[.*?\]\]".into();
    r.engine.set_settings(s);
    let out = r
        .engine
        .run_turn(
            turn(AgentProfile::builtin_default(), "capital?"),
            &RecordingSink::default(),
        )
        .await;
    assert_eq!(out.text.as_deref(), Some("Paris."));
    assert_eq!(r.store.messages("s1").unwrap()[1].content, "Paris.");
}

#[tokio::test]
async fn the_next_turn_replays_the_tool_result_but_never_reasoning() {
    let r = rig(
        vec![
            ModelReply::Events(vec![
                Ok(ChatEvent::Reasoning("PRIVATE THOUGHT".into())),
                Ok(ChatEvent::Content(STEP.into())),
                Ok(ChatEvent::Finish(FinishReason::Stop)),
            ]),
            text("40G free."),
            text("Still 40G."),
        ],
        false,
    );
    let sink = RecordingSink::default();
    r.engine
        .run_turn(turn(AgentProfile::builtin_default(), "disk?"), &sink)
        .await;
    r.engine
        .run_turn(turn(AgentProfile::builtin_default(), "and now?"), &sink)
        .await;
    let m = &r.model.requests()[2].messages;
    let roles: Vec<_> = m.iter().map(|x| x.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
    assert!(
        m[3].content.contains("/dev/sda1 100G 40G"),
        "tool observation replayed"
    );
    assert_eq!(m[5].content, "and now?");
    assert!(m.iter().all(|x| !x.content.contains("PRIVATE THOUGHT")));
}

#[tokio::test]
async fn history_search_is_answered_from_the_store() {
    let r = rig(
        vec![
            text("the printer is HP-4400"),
            text("```search_history\nprinter\n```"),
            text("It is an HP-4400."),
        ],
        false,
    );
    let sink = RecordingSink::default();
    r.engine
        .run_turn(
            turn(AgentProfile::builtin_default(), "remember my printer"),
            &sink,
        )
        .await;
    let out = r
        .engine
        .run_turn(
            turn(AgentProfile::builtin_default(), "which printer?"),
            &sink,
        )
        .await;
    assert_eq!(out.text.as_deref(), Some("It is an HP-4400."));
    assert!(
        sink.events()
            .contains(&CoreEvent::ToolStart("search_history: printer".into()))
    );
    let reqs = r.model.requests();
    let obs = &reqs[2].messages.last().unwrap().content;
    assert!(obs.contains("HP-4400"), "{obs}");
    assert!(r.sandbox.commands().is_empty());
}

#[tokio::test]
async fn preferences_record_the_current_request_as_intent() {
    let r = rig(
        vec![
            text("ok"),
            text("```bash\nrhythmbox &\n```"),
            text("Started."),
        ],
        false,
    );
    let mut agent = AgentProfile::builtin_default();
    agent.reinforcement_learning = true;
    let sink = RecordingSink::default();
    r.engine
        .run_turn(turn(agent.clone(), "hello there"), &sink)
        .await;
    r.engine
        .run_turn(turn(agent, "play some music"), &sink)
        .await;
    let prefs = r.store.list_preferences(None, 10).unwrap();
    assert_eq!(prefs.len(), 1);
    assert_eq!(
        (prefs[0].intent.as_str(), prefs[0].command.as_str()),
        ("play some music", "rhythmbox &")
    );
}

/// Figure: prompt tokens per request over a scripted 20-turn chat
/// with one command per turn (counted with o200k_base over the request messages). The bound
/// checked is the history budget, not a timing.
#[tokio::test]
async fn twenty_turn_chat_prompt_tokens_stay_within_the_budget() {
    use sayri_core::domain::tokens::{MESSAGE_OVERHEAD, exact::ExactTokenizer};
    let tokenizer = ExactTokenizer::load().unwrap();
    let mut replies = Vec::new();
    for _ in 0..20 {
        replies.push(text(
            "Checking the disk usage of your home directory now.\n```bash\ndu -sh ~\n```",
        ));
        replies.push(text(
            "Your home directory uses 40G; the largest part is in Downloads.",
        ));
    }
    let r = rig(replies, false);
    let sink = RecordingSink::default();
    for i in 0..20 {
        let out = r
            .engine
            .run_turn(
                turn(
                    AgentProfile::builtin_default(),
                    &format!("Turn {i}: how big is my home directory?"),
                ),
                &sink,
            )
            .await;
        assert!(out.error.is_none());
    }
    let sizes: Vec<usize> = r
        .model
        .requests()
        .iter()
        .map(|q| {
            q.messages
                .iter()
                .map(|m| tokenizer.count(&m.content) + MESSAGE_OVERHEAD)
                .sum()
        })
        .collect();
    println!("prompt tokens per request (40 requests, 20 turns): {sizes:?}");
    println!(
        "first {}, max {}, last {}",
        sizes[0],
        sizes.iter().max().unwrap(),
        sizes.last().unwrap()
    );
    let budget = r.engine.settings().history;
    let system = tokenizer.count(
        &r.engine
            .system_prompt(&AgentProfile::builtin_default(), SandboxLevel::HostUser),
    );
    // system + summary + verbatim + the current turn (request, one step, one observation).
    let bound = system + budget.summary_tokens + budget.verbatim_tokens + 200 + 40;
    assert!(
        *sizes.iter().max().unwrap() <= bound,
        "max {} > {bound}",
        sizes.iter().max().unwrap()
    );
    // Later requests do not keep growing: the history is compacted.
    assert!(
        sizes[39] < sizes[39 - 10] + 60,
        "{} vs {}",
        sizes[39],
        sizes[29]
    );
}

/// A valid level-2 profile file loads; a misspelt level is refused with the file and field
/// named, never loaded as level 3.
#[test]
fn profile_files_load_or_fail_closed() {
    let ok = AgentProfile::from_json(
        include_str!("../fixtures/researcher.json"),
        "agents/researcher.json",
    )
    .unwrap();
    assert_eq!(ok.sandbox.level, SandboxLevel::IsolatedDev);
    assert_eq!(ok.sandbox.permission_rules[0].effect, "ask");
    let err = AgentProfile::from_json(
        include_str!("../fixtures/typo-level.json"),
        "agents/typo-level.json",
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("agents/typo-level.json")
            && msg.contains("sandbox.level")
            && msg.contains("LEVEL_1_READ_ONLY"),
        "{msg}"
    );
}

/// The repetition guard holds where nobody can press stop: a remote turn (no approver) runs a
/// command that keeps giving the same result twice, refuses the third proposal, and ends the
/// turn when the model insists; the refusal is stored as a `tool` row.
#[tokio::test]
async fn a_remote_turn_stops_a_command_repeated_with_the_same_result() {
    let replies = (0..6)
        .map(|_| text("Once more.\n```bash\nuptime\n```"))
        .collect();
    let r = rig(replies, false);
    let mut req = turn(AgentProfile::builtin_default(), "Is the box up?");
    req.approver_available = false;
    let out = r.engine.run_turn(req, &RecordingSink::default()).await;
    assert_eq!(r.sandbox.commands(), ["uptime", "uptime"]);
    assert_eq!((out.model_calls, out.commands_run), (4, 2));
    let answer = out.text.unwrap();
    assert!(answer.contains("kept repeating `uptime`"), "{answer}");
    let told = r.model.requests()[3]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(told.starts_with("[Command NOT RUN: repeated]"), "{told}");
    let stored = r.store.messages("s1").unwrap();
    let refusal = stored
        .iter()
        .find(|m| m.tool_call.as_ref().is_some_and(|t| t.status == "repeated"))
        .expect("the refusal is stored");
    assert_eq!(refusal.role, Role::Tool);
    assert_eq!(refusal.content, told);
}
