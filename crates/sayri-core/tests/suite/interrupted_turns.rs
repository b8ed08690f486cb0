//! The turn journal and the closing of turns a crash cut short, over the port fakes: a turn is
//! in the journal exactly while it runs; a turn whose future is dropped mid-command (the daemon
//! died) stays there and is closed at the next start with its command recorded as not
//! completed — and nothing runs again.

use super::engine_rig::rig;
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::TurnRequest;
use sayri_core::engine::interrupted::close_interrupted_turns;
use sayri_core::ports::{Role, SessionStore};
use sayri_testkit::fakes::{RecordingSink, text};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn turn(text: &str, cancel: CancellationToken) -> TurnRequest {
    let agent = AgentProfile::builtin_default();
    TurnRequest {
        session_id: "s1".into(),
        title_if_new: None,
        level: agent.sandbox.level,
        agent: Arc::new(agent),
        text: text.into(),
        images: Vec::new(),
        approver_available: true,
        fresh_context: false,
        cancel,
    }
}

#[tokio::test]
async fn a_turn_is_in_the_journal_only_while_it_runs_however_it_ends() {
    let r = rig(
        vec![
            text("Let me check.\n```bash\ndf -h\n```"),
            text("40G free."),
        ],
        false,
    );
    r.sandbox.hang.store(true, Ordering::SeqCst);
    let cancel = CancellationToken::new();
    let engine = r.engine.clone();
    let c2 = cancel.clone();
    let running = tokio::spawn(async move {
        engine
            .run_turn(turn("Disk?", c2), &RecordingSink::default())
            .await
    });
    // While the command runs the turn is open …
    while r.sandbox.runs.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(r.store.open_turns().unwrap().len(), 1);
    // … and an interrupt by a person ends it honestly (killed command stored), so it is closed.
    cancel.cancel();
    let out = running.await.unwrap();
    assert!(out.cancelled);
    assert!(r.store.open_turns().unwrap().is_empty());
    assert!(
        close_interrupted_turns(r.store.as_ref(), 2000.0)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_turn_dropped_mid_command_is_closed_as_interrupted_and_never_rerun() {
    let r = rig(
        vec![
            text("Let me check.\n```bash\nsleep 5; touch done\n```"),
            text("unused"),
        ],
        false,
    );
    r.sandbox.hang.store(true, Ordering::SeqCst);
    let engine = r.engine.clone();
    let running = tokio::spawn(async move {
        engine
            .run_turn(
                turn("Do it.", CancellationToken::new()),
                &RecordingSink::default(),
            )
            .await
    });
    while r.sandbox.runs.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The daemon dies: the turn's future simply stops.
    running.abort();
    let _ = running.await;
    let before = r.store.messages("s1").unwrap();
    assert_eq!(before.len(), 2, "request and the reply with the block");

    let closed = close_interrupted_turns(r.store.as_ref(), 2000.0).unwrap();
    assert_eq!(closed.len(), 1);
    assert_eq!(
        closed[0].pending_command.as_deref(),
        Some("sleep 5; touch done")
    );
    let after = r.store.messages("s1").unwrap();
    assert_eq!(&after[..2], &before[..]);
    let tool = after[2].tool_call.as_ref().unwrap();
    assert_eq!(
        (after[2].role, tool.status.as_str()),
        (Role::Tool, "interrupted")
    );
    assert_eq!(tool.exit_code, None);
    assert!(
        after[3].role == Role::Error
            && after[3].content.starts_with("This request was interrupted")
    );
    // Closed once: a second start finds nothing, and the command was handed to the sandbox once.
    assert!(r.store.open_turns().unwrap().is_empty());
    assert!(
        close_interrupted_turns(r.store.as_ref(), 3000.0)
            .unwrap()
            .is_empty()
    );
    assert_eq!(r.sandbox.runs.lock().unwrap().len(), 1);
}
