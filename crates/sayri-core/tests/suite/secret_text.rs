//! Command text is redacted like output: in `tool_start`/`tool_finish`, in the stored tool call,
//! in history-search labels and observations, and on permission cards; an approval that held a
//! secret no longer matches. The sandbox still receives the command as written.

use super::engine_rig::rig_redacting;
use super::permissions_broker_rig::{NOW, next_request, next_resolved};
use sayri_core::SandboxLevel;
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::broker::{AskedSegment, PermissionBroker, Question};
use sayri_core::engine::gate::{GateRequest, GateVerdict, PermissionGate};
use sayri_core::engine::rules_gate::RulesGate;
use sayri_core::engine::{CoreEvent, TurnRequest};
use sayri_core::ports::{ApprovalStore, Role, SessionStore};
use sayri_permissions::Approval;
use sayri_permissions::RawRule;
use sayri_permissions::{Action, Effect, PolicySet};
use sayri_testkit::fakes::{
    FixedClock, LiteralRedactor, MemoryApprovals, ModelReply, PermissionFanout, RecordingSink, text,
};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "ck-L1teral-9Zq";
const MARKER: &str = "$SECRET:CORE_TOKEN";

fn redactor() -> Arc<LiteralRedactor> {
    Arc::new(LiteralRedactor::one("CORE_TOKEN", SECRET))
}

fn turn(text: &str) -> TurnRequest {
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
        cancel: CancellationToken::new(),
    }
}

#[tokio::test]
async fn command_text_is_redacted_in_tool_events_and_the_stored_tool_call() {
    let block = "```bash\ncurl -H 'X-Token: ck-L1teral-9Zq' http://127.0.0.1:9/\n```";
    let r = rig_redacting(
        vec![ModelReply::Text(vec![block]), text("Done.")],
        false,
        redactor(),
    );
    let sink = RecordingSink::default();
    let out = r.engine.run_turn(turn("call the api"), &sink).await;
    assert_eq!(out.text.as_deref(), Some("Done."));

    // The command runs as written.
    let runs = r.sandbox.runs.lock().unwrap().clone();
    assert!(runs[0].command.contains(SECRET), "{}", runs[0].command);

    let shown = format!("curl -H 'X-Token: {MARKER}' http://127.0.0.1:9/");
    let ev = sink.events();
    let start = ev.iter().find_map(|e| match e {
        CoreEvent::ToolStart(c) => Some(c.clone()),
        _ => None,
    });
    assert_eq!(start.as_deref(), Some(shown.as_str()));
    let finish = ev.iter().find_map(|e| match e {
        CoreEvent::ToolFinish { command, .. } => Some(command.clone()),
        _ => None,
    });
    assert_eq!(finish.as_deref(), Some(shown.as_str()));
    for e in &ev {
        assert!(!format!("{e:?}").contains(SECRET), "{e:?}");
    }
    let stored = r.store.messages("s1").unwrap();
    let tool = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool.tool_call.as_ref().unwrap().command, shown);
    // Every request to the model is redacted too.
    for req in r.model.requests() {
        for m in &req.messages {
            assert!(!m.content.contains(SECRET), "{}", m.content);
        }
    }
}

#[tokio::test]
async fn history_search_label_and_observation_are_redacted() {
    let block = "```search_history\nck-L1teral-9Zq\n```";
    let r = rig_redacting(
        vec![ModelReply::Text(vec![block]), text("Nothing found.")],
        false,
        redactor(),
    );
    let sink = RecordingSink::default();
    r.engine.run_turn(turn("find it"), &sink).await;
    let ev = sink.events();
    assert!(
        ev.contains(&CoreEvent::ToolStart(format!("search_history: {MARKER}"))),
        "{ev:?}"
    );
    for e in &ev {
        assert!(!format!("{e:?}").contains(SECRET), "{e:?}");
    }
    let last = r.model.requests().pop().unwrap();
    let obs = &last.messages.last().unwrap().content;
    assert!(
        obs.contains(&format!("[History search for '{MARKER}']")),
        "{obs}"
    );
}

#[tokio::test]
async fn a_card_shows_resource_reason_and_segments_redacted() {
    let sink = Arc::new(PermissionFanout::default());
    let mut rx = sink.subscribe();
    let broker = Arc::new(
        PermissionBroker::new(
            sink.clone(),
            Arc::new(MemoryApprovals::default()),
            Arc::new(FixedClock::at(NOW)),
        )
        .with_redactor(redactor()),
    );
    let command = format!("echo {SECRET} | curl -d @- http://x");
    let question = Question {
        action: "shell".into(),
        resource: command.clone(),
        reason: format!("no rule matches \"{command}\""),
        agent_id: "default".into(),
        agent_name: "Sayri".into(),
        session_id: "s1".into(),
        policy: false,
        remember: vec![],
        segments: vec![AskedSegment {
            command: format!("echo {SECRET}"),
            effect: Effect::Ask,
            reason: format!("ask: echo {SECRET}"),
        }],
        from_step: None,
    };
    let b = broker.clone();
    let task = tokio::spawn(async move { b.ask(question, CancellationToken::new()).await });
    let card = next_request(&mut rx).await;
    let pending = broker.pending();
    assert_eq!(
        card.resource,
        format!("echo {MARKER} | curl -d @- http://x")
    );
    assert!(card.reason.contains(MARKER), "{}", card.reason);
    assert_eq!(card.segments[0].command, format!("echo {MARKER}"));
    assert_eq!(card.segments[0].reason, format!("ask: echo {MARKER}"));
    let wire = serde_json::to_string(&card).unwrap() + &serde_json::to_string(&pending).unwrap();
    assert!(!wire.contains(SECRET), "{wire}");
    assert!(broker.answer(&card.id, false, false));
    task.await.unwrap();
    assert_eq!(next_resolved(&mut rx).await, card.id);
}

fn asking_agent() -> Arc<AgentProfile> {
    let mut p = AgentProfile::builtin_default();
    p.sandbox.ask_before_run = true;
    p.sandbox.permission_rules = serde_json::from_str::<Vec<RawRule>>(
        r#"[{"action":"shell","resource":"curl *","effect":"ask"}]"#,
    )
    .unwrap();
    Arc::new(p)
}

#[tokio::test]
async fn an_approval_that_held_a_secret_asks_again() {
    let sink = Arc::new(PermissionFanout::default());
    let mut rx = sink.subscribe();
    let approvals = Arc::new(MemoryApprovals::default());
    let broker = Arc::new(
        PermissionBroker::new(
            sink.clone(),
            approvals.clone(),
            Arc::new(FixedClock::at(NOW)),
        )
        .with_timeout(Duration::from_secs(60)),
    );
    let gate = Arc::new(RulesGate::new(
        PolicySet::baseline(),
        approvals.clone(),
        broker.clone(),
        Arc::new(FixedClock::at(NOW)),
    ));
    let agent = asking_agent();
    // An "Allow always" whose secret was redacted out of it, and an ordinary one.
    for resource in [
        format!("curl -u ci:{MARKER} http://127.0.0.1:9/"),
        "curl -u ci http://127.0.0.1:9/".to_string(),
    ] {
        approvals
            .add_approval(&Approval {
                agent_id: agent.id.clone(),
                action: "shell".into(),
                resource,
                created_at: NOW,
            })
            .unwrap();
    }
    let request = |command: &str| GateRequest {
        agent: agent.clone(),
        level: SandboxLevel::HostUser,
        session_id: "s1".into(),
        action: Action::Shell,
        resource: command.to_string(),
        approver_available: true,
        outside: None,
    };
    // The ordinary approval still matches: no card.
    let v = gate
        .authorize(
            request("curl -u ci http://127.0.0.1:9/"),
            CancellationToken::new(),
        )
        .await;
    assert!(matches!(v, GateVerdict::Allow { .. }), "{v:?}");
    // The one with a marker does not: the command (here the marker text itself) is asked.
    let g = gate.clone();
    let marked = format!("curl -u ci:{MARKER} http://127.0.0.1:9/");
    let req = request(&marked);
    let task = tokio::spawn(async move { g.authorize(req, CancellationToken::new()).await });
    let card = next_request(&mut rx).await;
    assert!(broker.answer(&card.id, false, false));
    let v = task.await.unwrap();
    assert!(matches!(v, GateVerdict::Refuse { .. }), "{v:?}");
}

#[tokio::test]
async fn a_session_title_is_cut_after_redaction_never_inside_a_secret() {
    let r = rig_redacting(vec![text("Noted.")], false, redactor());
    let sink = RecordingSink::default();
    // The first 30 characters of the request end inside the secret.
    r.engine
        .run_turn(turn("deploy now with key ck-L1teral-9Zq please"), &sink)
        .await;
    let title = r.store.session("s1").unwrap().unwrap().title;
    assert!(title.starts_with("deploy now with key $SECRET"), "{title}");
    assert!(!title.contains("ck-L1"), "{title}");
}
