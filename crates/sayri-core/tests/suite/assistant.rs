//! SayriCore: busy rule, ask, interrupt (no stale events, no further calls), remote turns.

use super::engine_rig::rig;
use sayri_core::SandboxLevel;
use sayri_core::assistant::{CoreError, RemoteRequest};
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::{CoreEvent, CoreState};
use sayri_core::ports::SessionStore;
use sayri_testkit::fakes::{ModelReply, RecordingSink, text};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

async fn wait_for(sink: &RecordingSink, pred: impl Fn(&CoreEvent) -> bool) {
    for _ in 0..500 {
        if sink.events().iter().any(&pred) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("event never came: {:?}", sink.events());
}

#[tokio::test]
async fn ask_resolves_with_text_error_and_session_and_events_are_ordered() {
    let r = rig(vec![text("Paris.")], false);
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    let res = core.ask("What is the capital of France?").await.unwrap();
    assert_eq!((res.text.as_str(), res.error.as_deref()), ("Paris.", None));
    assert_eq!(res.session_id, core.status().session_id);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        sink.names(),
        [
            "busy",
            "state",
            "user",
            "assistant_delta",
            "assistant_done",
            "busy",
            "state"
        ]
    );
    assert!(!core.status().busy);
    assert_eq!(core.sessions_list(10).unwrap().len(), 1);
    assert!(matches!(core.ask("  ").await, Err(CoreError::EmptyText)));
}

#[tokio::test]
async fn a_second_talk_while_busy_is_refused_clearly() {
    let r = rig(vec![ModelReply::Hang("thinking")], false);
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    core.talk("first").unwrap();
    assert!(core.status().busy);
    let err = core.talk("second").unwrap_err();
    assert_eq!(err, CoreError::Busy);
    assert!(err.to_string().contains("interrupt"));
    assert!(sink.events().contains(&CoreEvent::Hint(
        "Please wait for the response to finish.".into()
    )));
    core.interrupt();
}

#[tokio::test]
async fn interrupt_mid_command_kills_it_and_nothing_follows() {
    let r = rig(
        vec![text("```bash\nsleep 100\n```"), text("never asked")],
        false,
    );
    r.sandbox.hang.store(true, Ordering::SeqCst);
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    core.talk("wait a while").unwrap();
    wait_for(&sink, |e| matches!(e, CoreEvent::ToolStart(_))).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(core.interrupt());
    let at_interrupt = sink.events().len();
    assert_eq!(
        &sink.events()[at_interrupt - 2..],
        [CoreEvent::Busy(false), CoreEvent::State(CoreState::Idle)]
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        r.sandbox.killed.load(Ordering::SeqCst),
        "the sandbox saw the cancellation"
    );
    assert_eq!(
        r.model.requests().len(),
        1,
        "no model call after the interrupt"
    );
    assert_eq!(
        sink.events().len(),
        at_interrupt,
        "stale events leaked: {:?}",
        &sink.events()[at_interrupt..]
    );
    assert!(!core.status().busy);
    // The next turn works normally.
    r.sandbox.hang.store(false, Ordering::SeqCst);
    r.model.script.lock().unwrap().clear();
    r.model.script.lock().unwrap().push_back(text("Back."));
    assert_eq!(core.ask("again").await.unwrap().text, "Back.");
}

#[tokio::test]
async fn interrupt_mid_stream_drops_the_model_stream_at_once() {
    let r = rig(vec![ModelReply::Hang("The answer is")], false);
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    let core = Arc::new(core);
    let c2 = core.clone();
    let ask = tokio::spawn(async move { c2.ask("long question").await });
    wait_for(&sink, |e| matches!(e, CoreEvent::AssistantDelta(_))).await;
    core.interrupt();
    let res = tokio::time::timeout(Duration::from_secs(2), ask)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(res.error.as_deref(), Some("The request was interrupted."));
    assert!(
        r.model.dropped.load(Ordering::SeqCst),
        "the HTTP stream would be closed"
    );
    assert!(
        !sink
            .events()
            .iter()
            .any(|e| matches!(e, CoreEvent::AssistantDone(_) | CoreEvent::Error(_)))
    );
}

#[tokio::test]
async fn new_conversation_switch_and_agent_switch() {
    let r = rig(vec![text("one"), text("two")], false);
    let sink = Arc::new(RecordingSink::default());
    let mut helper = AgentProfile::builtin_default();
    helper.id = "helper".into();
    helper.name = "Helper".into();
    let core = r.core(vec![helper], sink.clone());
    let first = core.ask("hi").await.unwrap().session_id;
    let second = core.new_conversation();
    assert_ne!(first, second);
    assert!(
        sink.events()
            .contains(&CoreEvent::ConversationStarted(second.clone()))
    );
    assert!(
        r.store.session(&second).unwrap().is_none(),
        "no row before the first message"
    );
    assert_eq!(core.agent_switch("helper").unwrap().name, "Helper");
    assert!(matches!(
        core.agent_switch("nope"),
        Err(CoreError::UnknownAgent(_))
    ));
    core.ask("hello helper").await.unwrap();
    assert_eq!(
        r.store.session(&second).unwrap().unwrap().agent_id,
        "helper"
    );
    assert_eq!(core.switch_session(&first).unwrap(), first);
    assert_eq!(
        core.status().agent_id,
        "default",
        "switching a session switches to its agent"
    );
    assert_eq!(
        core.switch_session("unknown").unwrap(),
        first,
        "unknown ids change nothing"
    );
    core.session_rename(&first, "Greetings").unwrap();
    assert_eq!(core.session_get(&first).unwrap().info.title, "Greetings");
    assert!(core.session_delete(&first).unwrap());
    assert_ne!(core.status().session_id, first);
    assert!(matches!(
        core.session_get(&first),
        Err(CoreError::UnknownSession(_))
    ));
}

#[tokio::test]
async fn remote_turns_never_approve_and_never_raise_the_level() {
    let r = rig(
        vec![
            text("```bash\nls\n```"),
            text("```bash\npwd\n```"),
            text("done"),
            text("```bash\nid\n```"),
            text("ok"),
        ],
        false,
    );
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    let remote_sink = RecordingSink::default();
    let req = |level| RemoteRequest {
        text: "list files".into(),
        author: "@bob".into(),
        target_agent_id: None,
        sandbox_level: Some(level),
        instance_id: "sayri-gateway-matrix".into(),
        session_id: None,
        cancel: CancellationToken::new(),
    };
    let out = core
        .process_remote_message(req(SandboxLevel::ReadOnly), &remote_sink)
        .await
        .unwrap();
    assert_eq!(out.text.as_deref(), Some("done"));
    assert_eq!(out.session_id, "remote-sayri-gateway-matrix-default-bob");
    assert_eq!(
        r.store.session(&out.session_id).unwrap().unwrap().title,
        "@bob (Matrix)"
    );
    let asked = r.gate.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert!(
        asked.iter().all(|q| !q.approver_available),
        "approver_available=false at every step"
    );
    assert!(
        r.sandbox
            .runs
            .lock()
            .unwrap()
            .iter()
            .all(|x| x.level == SandboxLevel::ReadOnly)
    );
    // Asking for level 4 on a level-3 agent runs at level 3.
    core.process_remote_message(req(SandboxLevel::HostRoot), &remote_sink)
        .await
        .unwrap();
    assert_eq!(
        r.sandbox.runs.lock().unwrap().last().unwrap().level,
        SandboxLevel::HostUser
    );
    // Remote events go to the caller's sink only.
    assert!(sink.events().is_empty());
    assert!(
        remote_sink
            .events()
            .contains(&CoreEvent::AssistantDone("done".into()))
    );
}

#[tokio::test]
async fn titles_are_generated_after_the_first_exchange() {
    let r = rig(vec![text("Paris."), text("\"Capital of France.\"")], false);
    let mut s = r.engine.settings();
    s.generate_titles = true;
    r.engine.set_settings(s);
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink);
    let sid = core
        .ask("What is the capital of France?")
        .await
        .unwrap()
        .session_id;
    for _ in 0..200 {
        if r.store.session(&sid).unwrap().unwrap().title == "Capital of France" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        r.store.session(&sid).unwrap().unwrap().title,
        "Capital of France"
    );
    let title_req = &r.model.requests()[1];
    assert_eq!(
        (title_req.max_tokens, title_req.temperature),
        (Some(15), Some(0.3))
    );
}

/// Waits until the title-generation task has asked the model (or 1 s passed), then a little.
async fn settle_titles(r: &super::engine_rig::Rig, requests: usize) {
    for _ in 0..200 {
        if r.model.requests().len() >= requests {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn a_model_title_that_is_an_answer_keeps_the_first_words_of_the_question() {
    let r = rig(
        vec![text("Paris."), text("I'm ready to help. What can I help y")],
        false,
    );
    let mut s = r.engine.settings();
    s.generate_titles = true;
    r.engine.set_settings(s);
    let core = r.core(vec![], Arc::new(RecordingSink::default()));
    let sid = core
        .ask("Could you please tell me the capital city of France today?")
        .await
        .unwrap()
        .session_id;
    settle_titles(&r, 2).await;
    assert_eq!(r.model.requests().len(), 2, "a title was asked for");
    assert_eq!(
        r.store.session(&sid).unwrap().unwrap().title,
        "Could you please tell me the capital"
    );
}

#[tokio::test]
async fn with_auto_title_off_no_title_request_is_made() {
    let r = rig(vec![text("Paris."), text("Capital of France")], false);
    let mut s = r.engine.settings();
    s.generate_titles = false;
    r.engine.set_settings(s);
    let core = r.core(vec![], Arc::new(RecordingSink::default()));
    let sid = core
        .ask("What is the capital of France?")
        .await
        .unwrap()
        .session_id;
    settle_titles(&r, 2).await;
    assert_eq!(r.model.requests().len(), 1);
    assert_eq!(
        r.store.session(&sid).unwrap().unwrap().title,
        "What is the capital of France?"
    );
}

#[tokio::test]
async fn a_unique_session_id_prefix_of_four_characters_names_the_session() {
    let r = rig(vec![text("a"), text("b"), text("c")], false);
    let core = r.core(vec![], Arc::new(RecordingSink::default()));
    core.ask("one").await.unwrap();
    let first = core.status().session_id;
    let full = core.resolve_session_id(&first).unwrap();
    assert_eq!(full, first);
    assert_eq!(core.resolve_session_id(&first[..4]).unwrap(), first);
    assert!(matches!(
        core.resolve_session_id(&first[..3]),
        Err(CoreError::UnknownSession(_))
    ));
    assert!(matches!(
        core.resolve_session_id("zzzz-none"),
        Err(CoreError::UnknownSession(_))
    ));
}

#[tokio::test]
async fn an_ambiguous_session_prefix_lists_the_matches() {
    use sayri_core::ports::{NewMessage, Role, SessionSeed};
    let r = rig(vec![], false);
    for id in ["abcd-one", "abcd-two", "abce-three"] {
        let seed = SessionSeed {
            id,
            agent_id: "default",
            title: "t",
            parent: None,
        };
        r.store
            .append_message(&seed, &NewMessage::new(Role::User, "hi", 1.0))
            .unwrap();
    }
    let core = r.core(vec![], Arc::new(RecordingSink::default()));
    match core.resolve_session_id("abcd") {
        Err(e @ CoreError::AmbiguousSession { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("abcd-one") && msg.contains("abcd-two"),
                "{msg}"
            );
            assert!(!msg.contains("abce-three"), "{msg}");
        }
        other => panic!("expected an ambiguous prefix, got {other:?}"),
    }
    assert_eq!(core.resolve_session_id("abce").unwrap(), "abce-three");
}

#[tokio::test]
async fn a_spoken_turn_leaves_its_announcement_to_the_voice_side_and_feeds_an_observer() {
    use sayri_core::assistant::TurnOptions;
    let r = rig(vec![text("Paris is the capital.")], false);
    let sink = Arc::new(RecordingSink::default());
    let observer = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    let turn = core
        .start_local_turn(
            "What is the capital of France?",
            TurnOptions {
                announce: false,
                observer: Some(observer.clone()),
            },
        )
        .unwrap();
    assert!(core.status().busy, "a spoken turn holds the one local slot");
    assert_eq!(core.talk("typed meanwhile"), Err(CoreError::Busy));
    let out = turn.outcome().await.unwrap();
    assert_eq!(out.text.as_deref(), Some("Paris is the capital."));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        sink.names(),
        ["hint", "assistant_delta", "assistant_done"],
        "only the refused typed turn's hint, then the answer"
    );
    assert_eq!(observer.names(), ["assistant_delta", "assistant_done"]);
    assert!(!core.status().busy);
    assert_eq!(core.status().state, CoreState::Idle);
}

#[tokio::test]
async fn interrupting_a_spoken_turn_by_generation_spares_the_next_turn() {
    use sayri_core::assistant::TurnOptions;
    let r = rig(vec![ModelReply::Hang("Once upon"), text("Later.")], false);
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    let spoken = core
        .start_local_turn("tell a story", TurnOptions::default())
        .unwrap();
    let generation = spoken.generation;
    wait_for(&sink, |e| matches!(e, CoreEvent::AssistantDelta(_))).await;
    assert!(core.interrupt_turn(generation));
    assert!(!core.status().busy);
    assert!(
        !sink
            .events()
            .iter()
            .any(|e| matches!(e, CoreEvent::Busy(_))),
        "a spoken turn's interrupt announces nothing: {:?}",
        sink.events()
    );
    let res = tokio::time::timeout(Duration::from_secs(2), spoken.outcome())
        .await
        .unwrap()
        .unwrap();
    assert!(res.cancelled);
    r.model.script.lock().unwrap().clear();
    r.model.script.lock().unwrap().push_back(text("Later."));
    core.talk("next").unwrap();
    assert!(
        !core.interrupt_turn(generation),
        "a stale generation leaves the new turn alone"
    );
    assert!(core.status().busy);
    core.interrupt();
}

#[tokio::test]
async fn a_typed_turn_returns_to_the_rest_state_the_voice_side_names() {
    let r = rig(vec![text("Hi.")], false);
    let sink = Arc::new(RecordingSink::default());
    let core = r.core(vec![], sink.clone());
    core.set_rest_state(Arc::new(|| CoreState::Listening));
    core.ask("hello").await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        sink.events().last(),
        Some(&CoreEvent::State(CoreState::Listening))
    );
}
