//! The permission broker with real tokio tasks: questions reach every client, one answer
//! settles them, and however a question ends `permission_resolved` is emitted exactly once.

use super::permissions_broker_rig::{next_request, next_resolved, rig};
use sayri_core::engine::broker::{AskOutcome, Question};
use sayri_core::ports::ApprovalStore;
use sayri_permissions::Approval;
use sayri_testkit::fakes::PermissionEvent;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn question(session: &str) -> Question {
    Question {
        action: "shell".into(),
        resource: "git push".into(),
        reason: "`git push` matches agent rule #0: git push* (ask)".into(),
        agent_id: "default".into(),
        agent_name: "Main Sayri".into(),
        session_id: session.into(),
        policy: false,
        remember: vec![Approval {
            agent_id: "default".into(),
            action: "shell".into(),
            resource: "git push".into(),
            created_at: 1.0,
        }],
        segments: Vec::new(),
        from_step: None,
    }
}

#[tokio::test]
async fn request_reaches_two_clients_and_one_answer_settles_it() {
    let r = rig(Duration::from_secs(120));
    let (mut a, mut b) = (r.sink.subscribe(), r.sink.subscribe());
    let broker = r.broker.clone();
    let task =
        tokio::spawn(async move { broker.ask(question("s1"), CancellationToken::new()).await });
    let req_a = next_request(&mut a).await;
    let req_b = next_request(&mut b).await;
    assert_eq!(req_a, req_b);
    assert_eq!(req_a.id.len(), 12);
    assert!(
        req_a
            .id
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert_eq!(req_a.expires_in, 120.0);
    assert_eq!(
        (
            req_a.agent_name.as_str(),
            req_a.session_id.as_str(),
            req_a.policy
        ),
        ("Main Sayri", "s1", false)
    );
    let json = serde_json::to_value(&req_a).unwrap();
    for key in [
        "id",
        "action",
        "resource",
        "reason",
        "agent_id",
        "agent_name",
        "session_id",
        "policy",
        "expires_in",
    ] {
        assert!(json.get(key).is_some(), "payload lacks {key}");
    }
    let listed = r.broker.pending();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].expires_in <= 120.0 && listed[0].expires_in > 100.0);

    assert!(r.broker.answer(&req_a.id, true, false));
    assert!(
        !r.broker.answer(&req_a.id, true, false),
        "a second answer is not delivered"
    );
    assert_eq!(
        task.await.unwrap(),
        AskOutcome::Allowed {
            remembered: 0,
            store_error: None
        }
    );
    assert_eq!(next_resolved(&mut a).await, req_a.id);
    assert_eq!(next_resolved(&mut b).await, req_a.id);
    assert!(r.broker.pending().is_empty());
    assert!(
        r.store.all_approvals().unwrap().is_empty(),
        "plain Allow stores nothing"
    );
    assert!(a.try_recv().is_err(), "resolved is emitted once");
}

#[tokio::test]
async fn allow_always_stores_the_planned_approval() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    let broker = r.broker.clone();
    let task =
        tokio::spawn(async move { broker.ask(question("s1"), CancellationToken::new()).await });
    let req = next_request(&mut rx).await;
    assert!(r.broker.answer(&req.id, true, true));
    assert_eq!(
        task.await.unwrap(),
        AskOutcome::Allowed {
            remembered: 1,
            store_error: None
        }
    );
    let stored = r.store.all_approvals().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].resource, "git push");
    assert_eq!(r.broker.approvals_by_action().unwrap()["shell"].len(), 1);
    assert_eq!(r.broker.forget(Some("shell"), "default").unwrap(), 1);
}

#[tokio::test]
async fn deny_answer_and_unknown_ids() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    assert!(!r.broker.answer("000000000000", true, true));
    let broker = r.broker.clone();
    let task =
        tokio::spawn(async move { broker.ask(question("s1"), CancellationToken::new()).await });
    let req = next_request(&mut rx).await;
    assert!(r.broker.answer(&req.id, false, true));
    assert_eq!(task.await.unwrap(), AskOutcome::Denied);
    assert_eq!(next_resolved(&mut rx).await, req.id);
    assert!(
        r.store.all_approvals().unwrap().is_empty(),
        "deny + remember stores nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn timeout_counts_as_no_and_resolves() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    let broker = r.broker.clone();
    let task =
        tokio::spawn(async move { broker.ask(question("s1"), CancellationToken::new()).await });
    let req = next_request(&mut rx).await;
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(r.broker.pending()[0].expires_in, 60.0);
    assert_eq!(task.await.unwrap(), AskOutcome::TimedOut);
    assert_eq!(next_resolved(&mut rx).await, req.id);
    assert!(
        !r.broker.answer(&req.id, true, false),
        "late answers are not delivered"
    );
    assert!(r.broker.pending().is_empty());
}

#[tokio::test]
async fn cancellation_token_session_cancel_and_shutdown() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    // Token.
    let token = CancellationToken::new();
    let (broker, t) = (r.broker.clone(), token.clone());
    let task = tokio::spawn(async move { broker.ask(question("s1"), t).await });
    let req = next_request(&mut rx).await;
    token.cancel();
    assert_eq!(task.await.unwrap(), AskOutcome::Cancelled);
    assert_eq!(next_resolved(&mut rx).await, req.id);
    // Session: only that session's question ends.
    let (b1, b2) = (r.broker.clone(), r.broker.clone());
    let t1 = tokio::spawn(async move { b1.ask(question("s1"), CancellationToken::new()).await });
    let q1 = next_request(&mut rx).await;
    let t2 = tokio::spawn(async move { b2.ask(question("s2"), CancellationToken::new()).await });
    let q2 = next_request(&mut rx).await;
    assert_eq!(r.broker.cancel_session("s1"), 1);
    assert_eq!(t1.await.unwrap(), AskOutcome::Cancelled);
    assert_eq!(next_resolved(&mut rx).await, q1.id);
    assert_eq!(r.broker.pending().len(), 1);
    // Shutdown ends the rest and refuses new questions without emitting anything.
    assert_eq!(r.broker.shutdown(), 1);
    assert_eq!(t2.await.unwrap(), AskOutcome::Shutdown);
    assert_eq!(next_resolved(&mut rx).await, q2.id);
    assert_eq!(
        r.broker.ask(question("s3"), CancellationToken::new()).await,
        AskOutcome::Shutdown
    );
    assert!(rx.try_recv().is_err());
}

/// The daemon closes every client right after `shutdown()`/`cancel_*()`: the question must be
/// announced before those calls return, not later when the waiting task wakes — and only once.
#[tokio::test]
async fn shutdown_and_cancel_announce_before_returning_and_only_once() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    let b = r.broker.clone();
    let t1 = tokio::spawn(async move { b.ask(question("s1"), CancellationToken::new()).await });
    let q1 = next_request(&mut rx).await;
    assert_eq!(r.broker.cancel_session("s1"), 1);
    // Single-threaded runtime: the asking task has not run since; the event is already out.
    assert_eq!(rx.try_recv(), Ok(PermissionEvent::Resolved(q1.id.clone())));
    assert_eq!(t1.await.unwrap(), AskOutcome::Cancelled);
    let b = r.broker.clone();
    let t2 = tokio::spawn(async move { b.ask(question("s2"), CancellationToken::new()).await });
    let q2 = next_request(&mut rx).await;
    assert_eq!(r.broker.shutdown(), 1);
    assert_eq!(rx.try_recv(), Ok(PermissionEvent::Resolved(q2.id.clone())));
    assert_eq!(t2.await.unwrap(), AskOutcome::Shutdown);
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "resolved is emitted exactly once");
}

#[tokio::test]
async fn dropping_the_waiting_future_still_resolves() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    let broker = r.broker.clone();
    let task =
        tokio::spawn(async move { broker.ask(question("s1"), CancellationToken::new()).await });
    let req = next_request(&mut rx).await;
    task.abort();
    assert_eq!(next_resolved(&mut rx).await, req.id);
    assert!(r.broker.pending().is_empty());
}
