//! The permission broker and the rules gate, with real tokio tasks and an in-memory approval
//! store (the SQLite adapter lives in `sayri-store`).

use sayri_core::SandboxLevel;
use sayri_core::domain::permissions::PolicySet;
use sayri_core::domain::profile::{AgentProfile, RawRule};
use sayri_core::engine::broker::{
    AskOutcome, PermissionBroker, PermissionRequest, PermissionSink, Question,
};
use sayri_core::engine::gate::{GateRequest, GateVerdict, PermissionGate, RefusalKind};
use sayri_core::engine::rules_gate::RulesGate;
use sayri_core::ports::{Approval, ApprovalStore, Clock, StoreError};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct MemoryStore(Mutex<Vec<Approval>>);

impl ApprovalStore for MemoryStore {
    fn approvals_for(&self, agent_id: &str) -> Result<Vec<Approval>, StoreError> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.agent_id == agent_id)
            .cloned()
            .collect())
    }
    fn all_approvals(&self) -> Result<Vec<Approval>, StoreError> {
        Ok(self.0.lock().unwrap().clone())
    }
    fn add_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        let mut v = self.0.lock().unwrap();
        v.retain(|a| {
            !(a.agent_id == approval.agent_id
                && a.action == approval.action
                && a.resource == approval.resource)
        });
        v.push(approval.clone());
        Ok(())
    }
    fn forget_approvals(&self, action: Option<&str>, agent_id: &str) -> Result<usize, StoreError> {
        let mut v = self.0.lock().unwrap();
        let before = v.len();
        match action {
            None => v.clear(),
            Some(act) => v.retain(|a| !(a.action == act && a.agent_id == agent_id)),
        }
        Ok(before - v.len())
    }
}

struct FixedClock;
impl Clock for FixedClock {
    fn now_unix(&self) -> f64 {
        1_800_000_000.0
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Request(PermissionRequest),
    Resolved(String),
}

/// Broadcasts every event to each subscribed "client" channel, like the daemon does.
#[derive(Default)]
struct Fanout(Mutex<Vec<mpsc::UnboundedSender<Event>>>);

impl Fanout {
    fn subscribe(&self) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.0.lock().unwrap().push(tx);
        rx
    }
    fn send(&self, e: Event) {
        for tx in self.0.lock().unwrap().iter() {
            let _ = tx.send(e.clone());
        }
    }
}

impl PermissionSink for Fanout {
    fn permission_request(&self, request: &PermissionRequest) {
        self.send(Event::Request(request.clone()));
    }
    fn permission_resolved(&self, request_id: &str) {
        self.send(Event::Resolved(request_id.to_string()));
    }
}

struct Rig {
    sink: Arc<Fanout>,
    store: Arc<MemoryStore>,
    broker: Arc<PermissionBroker>,
}

fn rig(timeout: Duration) -> Rig {
    let sink = Arc::new(Fanout::default());
    let store = Arc::new(MemoryStore::default());
    let broker = Arc::new(
        PermissionBroker::new(sink.clone(), store.clone(), Arc::new(FixedClock))
            .with_timeout(timeout),
    );
    Rig {
        sink,
        store,
        broker,
    }
}

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
    }
}

async fn next_request(rx: &mut mpsc::UnboundedReceiver<Event>) -> PermissionRequest {
    match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Some(Event::Request(r))) => r,
        other => panic!("expected a permission_request, got {other:?}"),
    }
}

async fn next_resolved(rx: &mut mpsc::UnboundedReceiver<Event>) -> String {
    match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Some(Event::Resolved(id))) => id,
        other => panic!("expected permission_resolved, got {other:?}"),
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
    assert_eq!(rx.try_recv(), Ok(Event::Resolved(q1.id.clone())));
    assert_eq!(t1.await.unwrap(), AskOutcome::Cancelled);
    let b = r.broker.clone();
    let t2 = tokio::spawn(async move { b.ask(question("s2"), CancellationToken::new()).await });
    let q2 = next_request(&mut rx).await;
    assert_eq!(r.broker.shutdown(), 1);
    assert_eq!(rx.try_recv(), Ok(Event::Resolved(q2.id.clone())));
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

// ---- the gate ----

fn agent(rules: &str) -> Arc<AgentProfile> {
    let mut p = AgentProfile::builtin_default();
    p.sandbox.ask_before_run = true;
    p.sandbox.permission_rules = serde_json::from_str::<Vec<RawRule>>(rules).unwrap();
    Arc::new(p)
}

fn gate_request(agent: &Arc<AgentProfile>, command: &str, approvable: bool) -> GateRequest {
    GateRequest {
        agent: agent.clone(),
        level: SandboxLevel::HostUser,
        session_id: "s1".into(),
        action: "shell".into(),
        resource: command.into(),
        approvable,
    }
}

fn gate(r: &Rig, policies: PolicySet) -> Arc<RulesGate> {
    Arc::new(RulesGate::new(
        policies,
        r.store.clone(),
        r.broker.clone(),
        Arc::new(FixedClock),
    ))
}

/// Authorises `command` while a "person" answers the first card with (allow, remember).
async fn authorize_answering(
    g: &Arc<RulesGate>,
    rx: &mut mpsc::UnboundedReceiver<Event>,
    broker: &Arc<PermissionBroker>,
    req: GateRequest,
    allow: bool,
    remember: bool,
) -> (GateVerdict, PermissionRequest) {
    let g2 = g.clone();
    let task = tokio::spawn(async move { g2.authorize(req, CancellationToken::new()).await });
    let card = next_request(rx).await;
    assert!(broker.answer(&card.id, allow, remember));
    let verdict = task.await.unwrap();
    assert_eq!(next_resolved(rx).await, card.id);
    (verdict, card)
}

#[tokio::test]
async fn gate_ask_allow_always_then_runs_without_a_card_and_stays_narrow() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    let g = gate(&r, PolicySet::baseline());
    let a = agent(r#"[{"action":"shell","resource":"rm *","effect":"ask"}]"#);

    let (verdict, card) = authorize_answering(
        &g,
        &mut rx,
        &r.broker,
        gate_request(&a, "rm -rf /tmp/sayri-x", true),
        true,
        true,
    )
    .await;
    assert!(matches!(verdict, GateVerdict::Allow { .. }), "{verdict:?}");
    assert_eq!(card.resource, "rm -rf /tmp/sayri-x");
    assert!(
        card.reason.contains("agent rule #0: rm *"),
        "{}",
        card.reason
    );
    let stored = r.store.all_approvals().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].resource, "rm -rf /tmp/sayri-x");

    // The identical command now runs without a card.
    let v = g
        .authorize(
            gate_request(&a, "rm -rf /tmp/sayri-x", true),
            CancellationToken::new(),
        )
        .await;
    assert!(matches!(v, GateVerdict::Allow { .. }), "{v:?}");
    assert!(rx.try_recv().is_err(), "no card for an approved command");

    // A broader command still asks (here: nobody can answer → refusal).
    let root = g
        .authorize(gate_request(&a, "rm -rf /", true), CancellationToken::new())
        .await;
    assert!(
        matches!(
            root,
            GateVerdict::Refuse {
                kind: RefusalKind::Denied,
                ..
            }
        ),
        "{root:?}"
    );
    for other in [
        "rm -rf /tmp",
        "rm -rf /tmp/sayri-x /home/u/notes",
        "rm -rf /tmp/sayri-x; rm -rf /home/u",
        "rm -rf /tmp/sayri-*",
        "rm -rf /tmp/sayri-xy",
        "rm -r /tmp/sayri-x",
    ] {
        let v = g
            .authorize(gate_request(&a, other, false), CancellationToken::new())
            .await;
        match v {
            GateVerdict::Refuse {
                kind: RefusalKind::NoApprover,
                message,
            } => {
                assert!(
                    message.contains("needs approval in the Sayri app"),
                    "{message}"
                )
            }
            other_verdict => panic!("`{other}` must not be approved: {other_verdict:?}"),
        }
    }
}

#[tokio::test]
async fn gate_policy_ask_is_a_real_card_and_never_remembered() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    let policies = PolicySet::load([(
        "/etc/sayri/policies.json",
        r#"{"//":"site policy","policies":[{"action":"shell","resource":"git push*","effect":"ask"}]}"#,
    )])
    .unwrap();
    let g = gate(&r, policies);
    let a = agent(r#"[{"action":"shell","resource":"*","effect":"allow"}]"#);
    for round in 0..2 {
        let (verdict, card) = authorize_answering(
            &g,
            &mut rx,
            &r.broker,
            gate_request(&a, "git push origin main", true),
            true,
            true,
        )
        .await;
        assert!(
            matches!(verdict, GateVerdict::Allow { .. }),
            "round {round}: {verdict:?}"
        );
        assert!(card.policy, "the card says the policy asked");
        assert!(
            card.reason.contains("/etc/sayri/policies.json"),
            "{}",
            card.reason
        );
    }
    assert!(r.store.all_approvals().unwrap().is_empty());
}

#[tokio::test]
async fn gate_deny_emits_nothing_and_names_the_rule() {
    let r = rig(Duration::from_secs(120));
    let mut rx = r.sink.subscribe();
    let g = gate(&r, PolicySet::baseline());
    let a = agent(r#"[{"action":"shell","resource":"*","effect":"allow"}]"#);
    let v = g
        .authorize(
            gate_request(&a, "ls; mkfs.ext4 /dev/sdz1", true),
            CancellationToken::new(),
        )
        .await;
    match v {
        GateVerdict::Refuse {
            kind: RefusalKind::Denied,
            message,
        } => {
            assert!(message.starts_with("Blocked: "), "{message}");
            assert!(message.contains("baseline: mkfs*"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(rx.try_recv().is_err());
}

#[tokio::test]
async fn gate_answer_no_and_timeout_refuse() {
    let r = rig(Duration::from_millis(300));
    let mut rx = r.sink.subscribe();
    let g = gate(&r, PolicySet::baseline());
    let a = agent(r#"[{"action":"shell","resource":"*","effect":"ask"}]"#);
    let (verdict, _) = authorize_answering(
        &g,
        &mut rx,
        &r.broker,
        gate_request(&a, "make", true),
        false,
        false,
    )
    .await;
    assert!(
        matches!(
            verdict,
            GateVerdict::Refuse {
                kind: RefusalKind::NotApproved,
                ..
            }
        ),
        "{verdict:?}"
    );
    let v = g
        .authorize(gate_request(&a, "make", true), CancellationToken::new())
        .await;
    assert!(
        matches!(v, GateVerdict::Refuse { kind: RefusalKind::NotApproved, ref message } if message.contains("nobody answered")),
        "{v:?}"
    );
    let _card = next_request(&mut rx).await;
    let _ = next_resolved(&mut rx).await;
}

#[tokio::test]
async fn gate_malformed_rule_fails_closed() {
    let r = rig(Duration::from_secs(1));
    let g = gate(&r, PolicySet::baseline());
    let a = agent(r#"[{"action":"shell","resource":"*","effect":"alow"}]"#);
    match g
        .authorize(gate_request(&a, "ls", true), CancellationToken::new())
        .await
    {
        GateVerdict::Refuse {
            kind: RefusalKind::Denied,
            message,
        } => {
            assert!(
                message.contains("#0") && message.contains("alow"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
}
