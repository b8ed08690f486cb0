//! Delegation end to end: an agent hands a task to its sub-agent with a ```` ```delegate ````
//! block, and the sub-agent's turn runs with its own effective profile — its model endpoint,
//! model name, temperature and key; its creator's level, rules and secrets — against the real
//! daemon, two scripted model servers, the vault and the real sandbox. Its commands still go
//! through the gate, and a card names the sub-agent.

use super::permission_rig::{Peer, content, is_title_request, last_message};
use super::scripted_turns::Model;
use super::support::Env;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};

fn text(s: &str) -> Reply {
    Reply::sse(sse::content_stream(&[s]))
}

fn system_of(body: &Value) -> String {
    content(&body["messages"][0])
}

/// Commands observed so far in a request (observations start with `[Command`).
fn observations(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(content)
        .filter(|m| m.starts_with("[Command"))
        .collect()
}

fn write_config(env: &Env, provider: &Model, default_agent: &str) {
    let config = env.config_dir();
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"lead-model\"\nretries = 0\n\n\
             [permissions]\nask_timeout = 30\npolicy_files = []\n\n\
             [agent]\ndefault_agent = \"{default_agent}\"\n",
            provider.llm.base_url()
        ),
    )
    .unwrap();
}

fn write_agent(env: &Env, profile: Value) {
    let id = profile["id"].as_str().unwrap().to_string();
    std::fs::write(
        env.config_dir().join(format!("agents/{id}.json")),
        serde_json::to_string_pretty(&profile).unwrap(),
    )
    .unwrap();
}

/// The lead (level 2) delegates to `scout`, whose file asks for level 3, its own endpoint and
/// model, and a secret its creator does not have; the lead denies `rm`.
#[test]
fn a_delegated_turn_uses_the_sub_agents_model_level_rules_and_secrets() {
    let env = Env::new_in("/var/tmp");
    let marker = env.dir.path().join("written-at-level-3");
    let provider = Model::scripted(Script::from_fn(|req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title_request(&body) {
            return text("Delegation test");
        }
        if last_message(&body).starts_with("[Sub-agent scout") {
            return text("Lead done.");
        }
        text("I will ask my scout.\n```delegate\nscout\ncheck things\n```")
    }));
    let probe = format!(
        "touch {}; [ ${{#SCOUT_TOKEN}} = 11 ] && echo HAS_TOKEN; [ -n \"$OTHER_TOKEN\" ] && echo HAS_OTHER || echo NO_OTHER",
        marker.display()
    );
    let scout_llm = Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        match observations(&body).len() {
            0 => text(&format!("```bash\n{probe}\n```")),
            1 => text("```bash\nrm -f notes.txt\n```"),
            _ => text("Scout report: checked."),
        }
    }));
    write_config(&env, &provider, "lead");
    write_agent(
        &env,
        json!({"id": "lead", "name": "Lead", "allowed_secrets": ["SCOUT_TOKEN"],
               "sandbox": {"level": "LEVEL_2_ISOLATED_DEV", "ask_before_run": false,
                           "blocked_binaries": [],
                           "permission_rules": [
                               {"action": "shell", "resource": "*", "effect": "allow"},
                               {"action": "shell", "resource": "rm *", "effect": "deny"}]}}),
    );
    write_agent(
        &env,
        json!({"id": "scout", "name": "Scout", "parent": "lead",
               "description": "Looks around",
               "allowed_secrets": ["SCOUT_TOKEN", "OTHER_TOKEN"],
               "model": {"model_name": "scout-model", "temperature": 0.1,
                         "base_url": scout_llm.llm.base_url(), "api_key_secret": "SCOUT_KEY"},
               "sandbox": {"level": "LEVEL_3_HOST_USER", "blocked_binaries": [],
                           "permission_rules": [{"action": "shell", "resource": "*", "effect": "allow"}]}}),
    );
    let _daemon = env.start_daemon();
    let mut p = Peer::connect(&env, "user");
    for (key, value) in [
        ("PROVIDER_API_KEY", "sk-provider-aaa"),
        ("SCOUT_KEY", "sk-scout-123"),
        ("SCOUT_TOKEN", "tok-abc-123"),
        ("OTHER_TOKEN", "other-xyz-9"),
    ] {
        p.call("vault_set", json!({"key": key, "value": value}));
    }

    let id = p.send(
        "ask",
        json!({"text": "check things for me", "new": true, "timeout": 60}),
    );
    let result = p.response(id);
    assert_eq!(result["text"], "Lead done.", "{result}");

    // The sub-agent's requests went to its own endpoint, with its model, temperature and key.
    let scout_requests: Vec<RecordedRequest> = scout_llm
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(scout_requests.len(), 3, "{:?}", scout_llm.llm.chat_bodies());
    for r in &scout_requests {
        let body = r.json().unwrap();
        assert_eq!(body["model"], "scout-model");
        assert!((body["temperature"].as_f64().unwrap() - 0.1).abs() < 1e-6);
        assert_eq!(r.header("authorization"), Some("Bearer sk-scout-123"));
        assert!(system_of(&body).contains("id scout"));
    }
    let first = scout_requests[0].json().unwrap();
    assert_eq!(last_message(&first), "check things");
    // The provider saw only the lead, with the provider key; the scout's key never left for it.
    for r in provider.llm.requests() {
        assert_eq!(r.header("authorization"), Some("Bearer sk-provider-aaa"));
        // The model list (asked for the context window) has no body to check.
        if !r.path.ends_with("/chat/completions") {
            continue;
        }
        let body = r.json().unwrap_or(Value::Null);
        if !is_title_request(&body) {
            assert!(system_of(&body).contains("id lead"));
            assert_eq!(body["model"], "lead-model");
        }
    }

    // Level: the creator's (2), not the file's (3): nothing outside the workspace is writable.
    let bodies: Vec<Value> = scout_requests.iter().filter_map(|r| r.json()).collect();
    let probe_obs = last_message(&bodies[1]);
    assert!(
        !marker.exists(),
        "the sub-agent wrote outside its sandbox: {probe_obs}"
    );
    assert!(probe_obs.contains("touch:"), "{probe_obs}");
    // Secrets: its own that its creator also has, not the other.
    assert!(
        probe_obs.contains("HAS_TOKEN") && probe_obs.contains("NO_OTHER"),
        "{probe_obs}"
    );
    // Rules: the creator's deny applies over its own allow.
    let rm_obs = last_message(&bodies[2]);
    assert!(
        rm_obs.contains("NOT RUN") && rm_obs.contains("creator lead rule #1"),
        "{rm_obs}"
    );
    // The lead got the sub-agent's answer as its observation.
    let lead_bodies: Vec<Value> = provider
        .llm
        .chat_bodies()
        .into_iter()
        .filter(|b| !is_title_request(b))
        .collect();
    assert_eq!(lead_bodies.len(), 2);
    assert!(
        last_message(&lead_bodies[1])
            .starts_with("[Sub-agent scout answered]\nScout report: checked."),
        "{}",
        last_message(&lead_bodies[1])
    );
    assert!(system_of(&lead_bodies[0]).contains("Sub-agents: scout (Looks around)."));

    // Talking to the sub-agent directly runs it the same way: its endpoint and model, its
    // creator's level and secrets.
    let before = scout_llm.llm.chat_bodies().len();
    let id = p.send(
        "ask",
        json!({"text": "direct question", "agent_id": "scout", "new": true, "timeout": 60}),
    );
    assert_eq!(p.response(id)["text"], "Scout report: checked.");
    let direct: Vec<Value> = scout_llm.llm.chat_bodies().split_off(before);
    let direct: Vec<&Value> = direct.iter().filter(|b| !is_title_request(b)).collect();
    assert_eq!(last_message(direct[0]), "direct question");
    assert_eq!(direct[0]["model"], "scout-model");
    let obs = last_message(direct[1]);
    assert!(
        obs.contains("HAS_TOKEN") && obs.contains("NO_OTHER"),
        "{obs}"
    );
    assert!(!marker.exists());
    // Even the session title is asked of the sub-agent's own model, never the provider.
    let titled = super::support::eventually(std::time::Duration::from_secs(10), || {
        scout_llm
            .llm
            .chat_bodies()
            .iter()
            .any(|b| is_title_request(b) && b.to_string().contains("direct question"))
    });
    assert!(titled, "no title request reached the sub-agent's endpoint");
    assert!(
        !provider
            .llm
            .chat_bodies()
            .iter()
            .any(|b| b.to_string().contains("direct question")),
        "the provider saw a request of the sub-agent"
    );
}

/// A sub-agent's command that its creator's rules ask about raises a card naming the
/// sub-agent; the person is the only approver.
#[test]
fn a_sub_agents_command_asks_the_person_on_a_card_naming_the_sub_agent() {
    let env = Env::new_in("/var/tmp");
    let marker = env.dir.path().join("touched");
    let m = marker.display().to_string();
    let model = Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title_request(&body) {
            return text("Card test");
        }
        let last = last_message(&body);
        if system_of(&body).contains("id scout") {
            return if last.starts_with("[Command") {
                text("Made it.")
            } else {
                text(&format!("```bash\ntouch {m}\n```"))
            };
        }
        if last.starts_with("[Sub-agent scout") {
            text("Lead done.")
        } else {
            text("```delegate\nscout: touch the marker\n```")
        }
    }));
    write_config(&env, &model, "lead");
    write_agent(
        &env,
        json!({"id": "lead", "name": "Lead",
               "sandbox": {"level": "LEVEL_3_HOST_USER", "ask_before_run": true,
                           "blocked_binaries": [],
                           "permission_rules": [{"action": "shell", "resource": "touch *", "effect": "ask"}]}}),
    );
    write_agent(
        &env,
        json!({"id": "scout", "name": "Scout", "parent": "lead",
               "sandbox": {"level": "LEVEL_3_HOST_USER", "ask_before_run": false,
                           "blocked_binaries": [],
                           "permission_rules": [{"action": "shell", "resource": "*", "effect": "allow"}]}}),
    );
    let _daemon = env.start_daemon();
    let mut p = Peer::connect(&env, "user");
    let id = p.send("ask", json!({"text": "go", "new": true, "timeout": 60}));
    let card = p.event("permission_request")["request"].clone();
    assert_eq!(
        (card["agent_id"].clone(), card["agent_name"].clone()),
        (json!("scout"), json!("Scout"))
    );
    assert_eq!(card["resource"], format!("touch {}", marker.display()));
    assert!(
        card["reason"]
            .as_str()
            .unwrap()
            .contains("creator lead rule #0"),
        "{card}"
    );
    assert!(!marker.exists(), "nothing runs before the answer");
    let rid = card["id"].as_str().unwrap().to_string();
    p.call(
        "permission_answer",
        json!({"request_id": rid, "allow": true}),
    );
    let result = p.response(id);
    assert_eq!(result["text"], "Lead done.", "{result}");
    assert!(marker.exists());
}
