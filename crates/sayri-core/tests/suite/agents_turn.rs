//! Agents inside a turn, over fake ports: natural-language creation (refused at levels 0–2
//! before any model call; at 3–4 proposed, bound by the creator, confirmed, then stored) and
//! delegation to sub-agents (only one's own, at most two deep, with the sub-agent's effective
//! profile).

use super::engine_rig::rig;
use sayri_core::SandboxLevel;
use sayri_core::assistant::StaticAgents;
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::{CoreEvent, TurnRequest};
use sayri_core::ports::{AgentDirectory, Role, SessionStore};
use sayri_permissions::RawRule;
use sayri_testkit::fakes::{ModelReply, RecordingSink, text};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn agent(id: &str, parent: Option<&str>, level: SandboxLevel) -> AgentProfile {
    AgentProfile {
        id: id.into(),
        name: id.to_uppercase(),
        description: format!("{id} helper"),
        parent: parent.map(String::from),
        sandbox: sayri_core::domain::profile::SandboxConfig {
            level,
            ..Default::default()
        },
        ..AgentProfile::default()
    }
}

fn turn(agent: &AgentProfile, text: &str) -> TurnRequest {
    TurnRequest {
        session_id: "s1".into(),
        title_if_new: None,
        agent: Arc::new(agent.clone()),
        level: agent.sandbox.level,
        text: text.into(),
        images: Vec::new(),
        approver_available: true,
        fresh_context: false,
        cancel: CancellationToken::new(),
    }
}

#[tokio::test]
async fn a_level_2_agent_asked_for_a_subagent_refuses_without_asking_the_model() {
    let researcher = agent("researcher", None, SandboxLevel::IsolatedDev);
    let r = rig(vec![text("should never be used")], false);
    let dir = Arc::new(StaticAgents::new([researcher.clone()]));
    r.engine.set_agents(dir.clone());
    let sink = RecordingSink::default();
    for request in [
        "create a subagent for release chores with root access",
        "crea un subagente para copias de seguridad",
        "install the skill weather-brief",
    ] {
        let out = r.engine.run_turn(turn(&researcher, request), &sink).await;
        let reply = out.text.unwrap_or_default();
        assert!(reply.contains("levels 0–2 cannot"), "{request}: {reply}");
        assert_eq!(out.model_calls, 0, "{request}");
    }
    assert!(r.model.requests().is_empty(), "the model was asked");
    assert_eq!(dir.ids(), ["default", "researcher"], "an agent was stored");
    assert!(r.gate.confirmed.lock().unwrap().is_empty());
    // The refusal is the answer: streamed once, stored, and done.
    let ev = sink.events();
    assert!(
        ev.iter()
            .any(|e| matches!(e, CoreEvent::AssistantDone(t) if t.contains("levels 0–2")))
    );
    let stored = r.store.messages("s1").unwrap();
    assert!(
        stored
            .iter()
            .any(|m| m.role == Role::Assistant && m.content.contains("levels 0–2"))
    );
}

#[tokio::test]
async fn a_created_subagent_is_bound_by_its_creator_confirmed_and_never_replaces_an_agent() {
    let mut builder = agent("builder", None, SandboxLevel::HostUser);
    builder.sandbox.ask_before_run = true;
    builder.sandbox.permission_rules = vec![RawRule {
        action: "shell".into(),
        resource: "*".into(),
        effect: "ask".into(),
    }];
    builder.allowed_secrets = vec!["GITHUB_TOKEN".into()];
    let existing = agent("disk", Some("builder"), SandboxLevel::ReadOnly);
    let r = rig(
        vec![text(
            r#"{"id": "disk", "name": "Disk", "level": "LEVEL_4_HOST_ROOT", "ask_before_run": false, "permission_rules": [{"action": "shell", "resource": "*", "effect": "allow"}], "allowed_secrets": ["GITHUB_TOKEN", "AWS_SECRET"]}"#,
        )],
        false,
    );
    let dir = Arc::new(StaticAgents::new([builder.clone(), existing.clone()]));
    r.engine.set_agents(dir.clone());
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(
            turn(
                &builder,
                "create a subagent with root access (level 4) for disk maintenance",
            ),
            &sink,
        )
        .await;
    let reply = out.text.unwrap();
    assert!(reply.contains("LEVEL_3_HOST_USER"), "{reply}");
    assert_eq!(out.model_calls, 1);

    // One model request, asking for JSON; the person's sentence is in it.
    let reqs = r.model.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].messages[0].content.contains("ONLY one JSON object"));
    assert!(reqs[0].messages[1].content.contains("disk maintenance"));

    // The card showed the bound result.
    let cards = r.gate.confirmed.lock().unwrap().clone();
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].subject, "disk-2");
    assert!(
        cards[0].resource.contains("LEVEL_3_HOST_USER"),
        "{}",
        cards[0].resource
    );
    assert!(
        cards[0].resource.contains("secrets: GITHUB_TOKEN"),
        "{}",
        cards[0].resource
    );
    assert!(
        cards[0]
            .lines
            .iter()
            .any(|(what, why)| what == "level LEVEL_3_HOST_USER"
                && why.contains("LEVEL_4_HOST_ROOT"))
    );

    // The existing `disk` is untouched; the new one is stored bound.
    assert_eq!(dir.stored("disk").unwrap().unwrap(), existing);
    let stored = dir.stored("disk-2").unwrap().unwrap();
    assert_eq!(stored.parent.as_deref(), Some("builder"));
    assert_eq!(stored.sandbox.level, SandboxLevel::HostUser);
    assert!(stored.sandbox.ask_before_run);
    assert_eq!(stored.allowed_secrets, ["GITHUB_TOKEN"]);
}

#[tokio::test]
async fn a_refused_card_or_a_broken_proposal_writes_nothing() {
    let builder = agent("builder", None, SandboxLevel::HostUser);
    for (reply, deny, expect) in [
        (
            r#"{"id": "x", "name": "X", "level": "LEVEL_3_HOST_USER"}"#,
            true,
            "was not created",
        ),
        (
            "Sure! I made the agent.",
            false,
            "did not propose a valid agent profile",
        ),
    ] {
        let r = rig(vec![text(reply)], deny);
        let dir = Arc::new(StaticAgents::new([builder.clone()]));
        r.engine.set_agents(dir.clone());
        let out = r
            .engine
            .run_turn(
                turn(&builder, "create an agent for backups"),
                &RecordingSink::default(),
            )
            .await;
        assert!(out.text.unwrap().contains(expect));
        assert_eq!(dir.ids(), ["default", "builder"]);
    }
}

const DELEGATE: &str = "Asking my helper.\n```delegate\nscout\nlist the big files\n```";

#[tokio::test]
async fn a_delegated_turn_runs_with_the_sub_agents_effective_profile_and_answers_back() {
    let mut lead = agent("lead", None, SandboxLevel::IsolatedDev);
    lead.allowed_secrets = vec!["TOKEN".into()];
    let mut scout = agent("scout", Some("lead"), SandboxLevel::HostRoot);
    scout.model.model_name = "scout-model".into();
    scout.model.temperature = 0.1;
    scout.allowed_secrets = vec!["TOKEN".into(), "OTHER".into()];
    let r = rig(
        vec![
            text(DELEGATE),
            text("```bash\ndu -sh *\n```"),
            text("The biggest is a.iso."),
            text("Your helper says: a.iso."),
        ],
        false,
    );
    r.engine
        .set_agents(Arc::new(StaticAgents::new([lead.clone(), scout])));
    let sink = RecordingSink::default();
    let out = r
        .engine
        .run_turn(turn(&lead, "what is big here?"), &sink)
        .await;
    assert_eq!(out.text.as_deref(), Some("Your helper says: a.iso."));
    assert_eq!((out.model_calls, out.commands_run), (4, 1));

    let reqs = r.model.requests();
    // The lead's prompt offers its sub-agent in one line.
    assert!(
        reqs[0].messages[0]
            .content
            .contains("Sub-agents: scout (scout helper).")
    );
    // The sub-agent's requests use its model settings and carry only the task.
    assert_eq!(
        (reqs[1].model.as_str(), reqs[1].temperature),
        ("scout-model", Some(0.1))
    );
    assert_eq!(
        reqs[1].messages.last().unwrap().content,
        "list the big files"
    );
    assert!(reqs[1].messages[0].content.contains("id scout"));
    // Its answer is the lead's observation.
    let obs = &reqs[3].messages.last().unwrap().content;
    assert!(
        obs.starts_with("[Sub-agent scout answered]\n<data-")
            && obs.contains("\nThe biggest is a.iso.\n</data-"),
        "{obs}"
    );

    // Its command ran as the sub-agent, at the creator's level, through the gate.
    let runs = r.sandbox.runs.lock().unwrap().clone();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].agent_id.as_str(), runs[0].level),
        ("scout", SandboxLevel::IsolatedDev)
    );
    // The secrets it may hold travel in the request, from the profile the turn runs with.
    assert_eq!(runs[0].allowed_secrets, ["TOKEN"]);
    let asked = r.gate.asked.lock().unwrap().clone();
    assert_eq!(asked[0].agent.id, "scout");
    assert_eq!(asked[0].agent.allowed_secrets, ["TOKEN"]);
    assert_eq!(asked[0].agent.creator_rules[0].agent_id, "lead");

    // The person sees the sub-agent's command, not its prose.
    let ev = sink.events();
    assert!(
        ev.iter()
            .any(|e| matches!(e, CoreEvent::ToolStart(c) if c == "du -sh *"))
    );
    assert!(
        !ev.iter()
            .any(|e| matches!(e, CoreEvent::AssistantDone(t) if t.contains("biggest")))
    );
}

#[tokio::test]
async fn delegation_goes_only_to_ones_own_sub_agents_and_at_most_two_deep() {
    let lead = agent("lead", None, SandboxLevel::HostUser);
    let stranger = agent("stranger", None, SandboxLevel::HostUser);
    let a = agent("a", Some("lead"), SandboxLevel::HostUser);
    let b = agent("b", Some("a"), SandboxLevel::HostUser);
    let c = agent("c", Some("b"), SandboxLevel::HostUser);
    let r = rig(
        vec![
            text("```delegate\nstranger\ndo it\n```"),
            text("```delegate\na\nask b\n```"),
            text("```delegate\nb\nask c\n```"),
            text("```delegate\nc\ngo\n```"),
            text("b done"),
            text("a done"),
            text("lead done"),
        ],
        false,
    );
    r.engine.set_agents(Arc::new(StaticAgents::new([
        lead.clone(),
        stranger,
        a,
        b,
        c,
    ])));
    let out = r
        .engine
        .run_turn(turn(&lead, "go"), &RecordingSink::default())
        .await;
    assert_eq!(out.text.as_deref(), Some("lead done"));
    let reqs = r.model.requests();
    let last = |i: usize| reqs[i].messages.last().unwrap().content.clone();
    assert!(last(1).contains("not a sub-agent of lead"), "{}", last(1));
    // b (depth 2) is not offered delegation and its attempt is refused.
    assert!(!reqs[3].messages[0].content.contains("Sub-agents:"));
    assert!(last(4).contains("at most 2 levels deep"), "{}", last(4));
    assert!(
        last(6).starts_with("[Sub-agent a answered]\n<data-") && last(6).contains("\na done\n"),
        "{}",
        last(6)
    );
}

#[tokio::test]
async fn an_agent_without_sub_agents_pays_nothing_for_delegation() {
    let r = rig(vec![text("hi")], false);
    r.engine.set_agents(Arc::new(StaticAgents::new([])));
    let base = r
        .engine
        .system_prompt(&AgentProfile::builtin_default(), SandboxLevel::HostUser);
    r.engine
        .run_turn(
            turn(&AgentProfile::builtin_default(), "hello"),
            &RecordingSink::default(),
        )
        .await;
    assert_eq!(r.model.requests()[0].messages[0].content, base);
}

#[tokio::test]
async fn an_agent_with_its_own_endpoint_fails_closed_where_endpoints_are_unsupported() {
    let mut a = agent("local", None, SandboxLevel::HostUser);
    a.model.base_url = Some("http://127.0.0.1:9/v1".into());
    let r = rig(vec![ModelReply::Text(vec!["from the provider"])], false);
    let out = r
        .engine
        .run_turn(turn(&a, "hello"), &RecordingSink::default())
        .await;
    assert!(
        r.model.requests().is_empty(),
        "the provider's model answered"
    );
    assert!(out.error.unwrap().contains("model endpoint of its own"));
}

#[tokio::test]
async fn an_agent_whose_tools_leave_out_bash_runs_no_commands_nor_do_its_sub_agents() {
    let mut lead = agent("lead", None, SandboxLevel::HostUser);
    lead.allowed_tools = vec!["search_history".into()];
    let scout = agent("scout", Some("lead"), SandboxLevel::HostUser);
    let r = rig(
        vec![
            text("```bash\nls\n```"),
            text(DELEGATE),
            text("```bash\ndu -sh *\n```"),
            text("could not"),
            text("done"),
        ],
        false,
    );
    r.engine
        .set_agents(Arc::new(StaticAgents::new([lead.clone(), scout])));
    let out = r
        .engine
        .run_turn(turn(&lead, "look"), &RecordingSink::default())
        .await;
    assert_eq!(out.text.as_deref(), Some("done"));
    assert!(r.sandbox.runs.lock().unwrap().is_empty(), "a command ran");
    let reqs = r.model.requests();
    assert!(
        reqs[1]
            .messages
            .last()
            .unwrap()
            .content
            .contains("do not include bash")
    );
    assert!(
        reqs[3]
            .messages
            .last()
            .unwrap()
            .content
            .contains("do not include bash")
    );
}

#[tokio::test]
async fn a_remote_turn_cannot_create_an_agent_and_asks_no_model() {
    let builder = agent("builder", None, SandboxLevel::HostUser);
    let r = rig(vec![text("{}")], false);
    r.engine
        .set_agents(Arc::new(StaticAgents::new([builder.clone()])));
    let mut req = turn(&builder, "create an agent for backups");
    req.approver_available = false;
    let out = r.engine.run_turn(req, &RecordingSink::default()).await;
    assert!(out.text.unwrap().contains("nobody can approve it"));
    assert!(r.model.requests().is_empty());
    assert!(r.gate.confirmed.lock().unwrap().is_empty());
}
