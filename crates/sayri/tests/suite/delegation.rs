//! Delegation end to end: an agent hands a task to its sub-agent with a ```` ```delegate ````
//! block, and the sub-agent's turn runs with its own effective profile — its model endpoint,
//! model name, temperature and key; its creator's level, rules and secrets — against the real
//! daemon, two scripted model servers, the vault and the real sandbox. Its commands still go
//! through the gate, and a card names the sub-agent.

use super::permission_rig::{Peer, content, is_title_request, last_message};
use super::scripted_turns::Model;
use super::support::{Env, stderr, stdout};
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
    let answered = last_message(&lead_bodies[1]);
    assert!(
        answered.starts_with("[Sub-agent scout answered]\n<data-")
            && answered.contains("\nScout report: checked.\n</data-"),
        "{answered}"
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

/// The three agents of the budget and interrupt tests: `lead` on the host, its sub-agent `a`,
/// and `a`'s sub-agent `b`; `[agent]` settings `extra` appended to `sayri.toml`.
fn write_tree(env: &Env, model: &Model, extra: &str) {
    write_config(env, model, "lead");
    let toml = env.config_dir().join("sayri.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str(extra);
    std::fs::write(&toml, text).unwrap();
    let level = json!({"level": "LEVEL_3_HOST_USER", "blocked_binaries": []});
    write_agent(env, json!({"id": "lead", "name": "Lead", "sandbox": level}));
    write_agent(
        env,
        json!({"id": "a", "name": "A", "parent": "lead", "description": "Helps", "sandbox": level}),
    );
    write_agent(
        env,
        json!({"id": "b", "name": "B", "parent": "a", "description": "Helps more", "sandbox": level}),
    );
}

/// Which agent a request is for, by its system prompt.
fn agent_of(body: &Value) -> &'static str {
    let system = system_of(body);
    ["lead", "a", "b"]
        .into_iter()
        .find(|id| system.contains(&format!("id {id})")))
        .unwrap_or("?")
}

#[test]
fn a_request_that_delegates_forever_stops_at_its_budget_and_says_so() {
    let env = Env::new_in("/var/tmp");
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = counter.clone();
    // Every agent hands its work down at every step, each time a new task.
    let model = Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title_request(&body) {
            return text("Budget test");
        }
        let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let to = match agent_of(&body) {
            "lead" => "a",
            _ => "b",
        };
        text(&format!(
            "More to do.\n```delegate\n{to}\npart {i} of the job\n```"
        ))
    }));
    write_tree(
        &env,
        &model,
        "auto_title = false\ndelegation_budget_calls = 7\n",
    );
    let _daemon = env.start_daemon();
    let mut p = Peer::connect(&env, "person");
    let id = p.send(
        "ask",
        json!({"text": "do the whole job", "new": true, "timeout": 60}),
    );
    let result = p.response(id);
    let answer = result["text"].as_str().unwrap_or_default();
    assert!(
        answer.contains("budget of 7 model calls") && answer.contains("delegation_budget_calls"),
        "{result}"
    );
    let requests: Vec<Value> = model
        .llm
        .chat_bodies()
        .into_iter()
        .filter(|b| !is_title_request(b))
        .collect();
    assert_eq!(
        requests.len(),
        7,
        "model requests: {:?}",
        requests.iter().map(agent_of).collect::<Vec<_>>()
    );
    // The sub-agents' sessions hang under the request's session, and what they spent is the
    // request's: the lead's own calls and its delegations' add up to the budget.
    let root = result["session_id"].as_str().unwrap().to_string();
    let session = p.call("session_get", json!({"session_id": root}));
    let subs = session["sub_sessions"].as_array().unwrap();
    assert_eq!(subs.len(), 1, "{session}");
    assert_eq!(subs[0]["id"], format!("{root}~a"));
    assert_eq!(subs[0]["parent_id"], root);
    let delegated: u64 = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_call"]["delegated"]["model_calls"].as_u64())
        .sum();
    let lead_calls = requests.iter().filter(|b| agent_of(b) == "lead").count() as u64;
    assert_eq!(lead_calls + delegated, 7, "{session}");
    assert_eq!(
        session["usage"]["delegated"]["model_calls"], delegated,
        "{}",
        session["usage"]
    );
    let a_session = p.call("session_get", json!({"session_id": format!("{root}~a")}));
    assert_eq!(
        a_session["sub_sessions"][0]["id"],
        format!("{root}~a~b"),
        "{a_session}"
    );
    // `sessions show` prints each delegation with its sub-agent's session and spending, and
    // `sessions list` nests the sub-agents' sessions under the request's.
    let shown = env.run(&["sessions", "show", &root]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains(&format!("↳ sub-agent a, session {root}~a: ")),
        "{}",
        stdout(&shown)
    );
    let listed = stdout(&env.run(&["sessions", "list"]));
    let lines: Vec<&str> = listed.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(&root))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        lines[at + 1].starts_with(&format!("  ↳ {root}~a ")),
        "{listed}"
    );
}

#[test]
fn an_interrupt_stops_every_sub_agent_and_records_each_open_sub_turn() {
    let env = Env::new_in("/var/tmp");
    let model = Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title_request(&body) {
            return text("Interrupt test");
        }
        match agent_of(&body) {
            "lead" => text("```delegate\na\nlook around\n```"),
            "a" => text("```delegate\nb\nlook closer\n```"),
            // `b` starts answering and then goes silent.
            _ => Reply::sse(sayri_testkit::sse::content_stream(&[
                "Looking",
                " closer and closer",
            ]))
            .stall_after(40, std::time::Duration::from_secs(60)),
        }
    }));
    write_tree(&env, &model, "auto_title = false\n");
    let _daemon = env.start_daemon();
    let mut watcher = Peer::connect(&env, "watcher");
    watcher.sync();
    let mut p = Peer::connect(&env, "person");
    let id = p.send(
        "ask",
        json!({"text": "investigate", "new": true, "timeout": 60}),
    );
    let reached_b = super::support::eventually(std::time::Duration::from_secs(20), || {
        model.llm.chat_bodies().iter().any(|b| agent_of(b) == "b")
    });
    assert!(reached_b, "the tree never reached b");
    let mut other = Peer::connect(&env, "interrupter");
    assert_eq!(other.call("interrupt", json!({}))["interrupted"], true);
    let r = p.wait_for("the ask's end", |v| {
        v.get("event").is_none() && v["id"] == id
    });
    assert!(r.to_string().contains("interrupted"), "{r}");
    // The person is told of each open sub-turn, and each is recorded in its session.
    let mut told = Vec::new();
    while told.len() < 2 {
        let e = watcher.event("error");
        told.push(e["error"].as_str().unwrap_or_default().to_string());
    }
    assert!(told.iter().any(|t| t.contains("sub-agent a")), "{told:?}");
    assert!(told.iter().any(|t| t.contains("sub-agent b")), "{told:?}");
    let root = p
        .call("sessions_list", json!({}))
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["parent_id"].is_null())
        .map(|s| s["id"].as_str().unwrap().to_string())
        .unwrap();
    for sub in [format!("{root}~a"), format!("{root}~a~b")] {
        let s = p.call("session_get", json!({"session_id": sub}));
        let last = s["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "error", "{sub}: {s}");
        assert!(
            last["content"]
                .as_str()
                .unwrap()
                .contains("was interrupted"),
            "{last}"
        );
    }
    // Nothing more was asked of the model.
    let asked = model.llm.chat_bodies().len();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(model.llm.chat_bodies().len(), asked);
}
