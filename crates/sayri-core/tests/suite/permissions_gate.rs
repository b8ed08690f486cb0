//! The rules gate: the one evaluation point between a proposed command and the sandbox,
//! asking a person through the broker when the rules say `ask`.

use super::permissions_broker_rig::{NOW, Rig, next_request, next_resolved, rig};
use sayri_core::SandboxLevel;
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::broker::{PermissionBroker, PermissionRequest};
use sayri_core::engine::gate::{GateRequest, GateVerdict, PermissionGate, RefusalKind};
use sayri_core::engine::rules_gate::RulesGate;
use sayri_core::ports::ApprovalStore;
use sayri_permissions::{Action, PolicySet};
use sayri_permissions::{DefaultEffect, RawRule};
use sayri_testkit::fakes::{FixedClock, PermissionEvent};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// An agent whose `rules` decide (what they do not match is allowed).
fn agent(rules: &str) -> Arc<AgentProfile> {
    let mut p = AgentProfile::builtin_default();
    p.sandbox.default_effect = DefaultEffect::Allow;
    p.sandbox.ask_before_run = true;
    p.sandbox.permission_rules = serde_json::from_str::<Vec<RawRule>>(rules).unwrap();
    Arc::new(p)
}

fn gate_request(agent: &Arc<AgentProfile>, command: &str, approver_available: bool) -> GateRequest {
    GateRequest {
        agent: agent.clone(),
        level: SandboxLevel::HostUser,
        session_id: "s1".into(),
        action: Action::Shell,
        resource: command.into(),
        approver_available,
        outside: None,
    }
}

fn gate(r: &Rig, policies: PolicySet) -> Arc<RulesGate> {
    Arc::new(RulesGate::new(
        policies,
        r.store.clone(),
        r.broker.clone(),
        Arc::new(FixedClock::at(NOW)),
    ))
}

/// Authorises `command` while a "person" answers the first card with (allow, remember).
async fn authorize_answering(
    g: &Arc<RulesGate>,
    rx: &mut mpsc::UnboundedReceiver<PermissionEvent>,
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
