//! Sub-agents never exceed their creator, on every creation path: the chat request at levels
//! 0–2 (refused before any model call), the chat request at level 3 (proposed by the model,
//! bound by the creator, shown on a `subagent` card), a command writing a profile file, a
//! command talking to the socket, a hand-written profile with a misspelt level, and a
//! sub-agent creating its own sub-agent. The real daemon, scripted model, real sandbox and real
//! files; the creators' profiles are the case fixtures `researcher` (level 2) and `builder`
//! (level 3, asks before everything).

use super::permission_rig::{Peer, is_title_request, last_message, reply_for};
use super::scripted_turns::Model;
use super::support::Env;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::{Value, json};
use std::path::Path;

const RESEARCHER: &str = include_str!("../fixtures/agents/researcher.json");
const BUILDER: &str = include_str!("../fixtures/agents/builder.json");
const TYPO: &str = include_str!("../fixtures/agents/typo-level.json");
const ROOTIE: &str = include_str!("../fixtures/agents/rootie.json");

/// The model: proposals for new agents (always asking for root), commands between `<cmd>` and
/// `</cmd>`, `Finished.` after an observation.
fn reply(req: &RecordedRequest) -> Reply {
    let body = req.json().unwrap_or(Value::Null);
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    if !is_title_request(&body) && system.contains("ONLY one JSON object") {
        let proposal = if last_message(&body).contains("disk maintenance") {
            json!({"id": "disk-care", "name": "Disk care", "description": "Keeps disks healthy",
                   "system_prompt": "You maintain disks.", "level": "LEVEL_4_HOST_ROOT",
                   "ask_before_run": false, "allow_network": true,
                   "permission_rules": [{"action": "shell", "resource": "*", "effect": "allow"}],
                   "allowed_secrets": [], "model_name": "default"})
        } else {
            json!({"id": "deep", "name": "Deep", "level": "LEVEL_4_HOST_ROOT",
                   "ask_before_run": false})
        };
        return Reply::sse(sse::content_stream(&[&proposal.to_string()]));
    }
    reply_for(req)
}

fn agent_files(config: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(config.join("agents"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

fn stored(config: &Path, id: &str) -> Value {
    let text = std::fs::read_to_string(config.join(format!("agents/{id}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn setup(env: &Env, model: &Model) {
    let config = env.config_dir();
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n\
             [permissions]\nask_timeout = 30\npolicy_files = []\n\n\
             [agent]\ndefault_agent = \"builder\"\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    for (name, text) in [
        ("researcher.json", RESEARCHER),
        ("builder.json", BUILDER),
        ("typo-level.json", TYPO),
    ] {
        std::fs::write(config.join("agents").join(name), text).unwrap();
    }
}

/// Starts `ask {text}` as `agent` in a new session; returns the request id.
fn ask_as(p: &mut Peer, agent: &str, text: &str) -> u64 {
    p.send(
        "ask",
        json!({"text": text, "agent_id": agent, "new": true, "timeout": 40}),
    )
}

/// Waits for the next permission card and answers it; returns the card.
fn answer_card(p: &mut Peer, allow: bool) -> Value {
    let card = p.event("permission_request")["request"].clone();
    let rid = card["id"].as_str().unwrap().to_string();
    let a = p.call(
        "permission_answer",
        json!({"request_id": rid, "allow": allow}),
    );
    assert_eq!(a["delivered"], true, "{a}");
    card
}

#[test]
fn case_32_every_path_that_tries_to_escalate_fails_with_an_explanation() {
    let env = Env::with_home_config("/var/tmp");
    let model = Model::scripted(Script::from_fn(reply));
    setup(&env, &model);
    let config = env.config_dir();
    let before = agent_files(&config);
    let _daemon = env.start_daemon();
    let mut p = Peer::connect(&env, "user");

    levels_0_to_2_refuse_before_any_model_call(&mut p, &model, &config, &before);
    a_level_2_command_cannot_install_a_skill(&mut p, &config);
    a_level_3_request_is_capped_and_shown_on_a_card(&mut p, &config);
    a_command_cannot_write_a_profile_file(&mut p, &env);
    a_command_cannot_save_an_agent_through_the_socket(&mut p, &env);
    a_misspelt_level_is_refused_naming_it(&mut p);
    a_sub_agents_sub_agent_is_capped_by_the_whole_chain(&mut p, &config);

    // Only the two approved agents are new, both at level ≤ 3.
    let mut expected = before.clone();
    expected.extend(["deep.json".to_string(), "disk-care.json".to_string()]);
    expected.sort();
    assert_eq!(agent_files(&config), expected);
    let list = p.call("agents_list", json!({}));
    for id in ["disk-care", "deep"] {
        let a = list
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .unwrap();
        assert_eq!(a["sandbox"]["level"], "LEVEL_3_HOST_USER", "{a}");
        assert_eq!(a["sandbox"]["ask_before_run"], true, "{a}");
    }
}

/// Rows 1–2: `researcher` (level 2) is asked for a sub-agent and for a skill.
fn levels_0_to_2_refuse_before_any_model_call(
    p: &mut Peer,
    model: &Model,
    config: &Path,
    before: &[String],
) {
    for text in [
        "create a subagent for nightly backups",
        "create a subagent for release chores with root access",
        "install the skill weather-brief",
    ] {
        let id = ask_as(p, "researcher", text);
        let r = p.response(id);
        let answer = r["text"].as_str().unwrap();
        assert!(
            answer.contains("LEVEL_2_ISOLATED_DEV") && answer.contains("levels 0–2 cannot"),
            "{text}: {r}"
        );
    }
    p.sync();
    // No chat request (the model list, asked once for the context window, carries no prompt).
    assert!(
        model.llm.chat_bodies().is_empty(),
        "the model was asked: {:?}",
        model.llm.chat_bodies()
    );
    assert_eq!(agent_files(config), before);
    assert!(!config.join("skills").exists());
}

/// Row 3: `researcher` runs an installer itself.
fn a_level_2_command_cannot_install_a_skill(p: &mut Peer, config: &Path) {
    let id = ask_as(
        p,
        "researcher",
        "Please run <cmd>python3 -m sayri.skills install weather-brief</cmd>",
    );
    p.response(id);
    let finish = p.event("tool_finish");
    let out = finish["output"].as_str().unwrap();
    assert!(
        out.contains("LEVEL_2_ISOLATED_DEV does not ask"),
        "not refused: {finish}"
    );
    assert!(!config.join("skills").exists());
    p.inbox.clear();
}

/// Row 4: `builder` (level 3) asks for a root sub-agent.
fn a_level_3_request_is_capped_and_shown_on_a_card(p: &mut Peer, config: &Path) {
    let id = ask_as(
        p,
        "builder",
        "create a subagent with root access (level 4) for disk maintenance",
    );
    let card = answer_card(p, true);
    assert_eq!(card["action"], "subagent", "{card}");
    assert_eq!(card["agent_id"], "builder");
    let resource = card["resource"].as_str().unwrap();
    assert!(
        resource.contains("disk-care") && resource.contains("LEVEL_3_HOST_USER"),
        "{resource}"
    );
    let segments = card["segments"].as_array().unwrap();
    let level = segments
        .iter()
        .find(|s| s["command"] == "level LEVEL_3_HOST_USER")
        .unwrap_or_else(|| panic!("no level line: {card}"));
    assert!(
        level["reason"]
            .as_str()
            .unwrap()
            .contains("asked LEVEL_4_HOST_ROOT")
    );
    assert!(
        segments
            .iter()
            .any(|s| s["command"] == "ask_before_run true")
    );
    let r = p.response(id);
    let answer = r["text"].as_str().unwrap();
    assert!(
        answer.contains("disk-care") && answer.contains("LEVEL_3_HOST_USER"),
        "the reply states the level: {answer}"
    );
    let file = stored(config, "disk-care");
    assert_eq!(file["parent"], "builder");
    assert_eq!(file["sandbox"]["level"], "LEVEL_3_HOST_USER");
    assert_eq!(file["sandbox"]["ask_before_run"], true);
    p.inbox.clear();
}

/// Row 5: `builder` copies a root profile into the agents directory.
fn a_command_cannot_write_a_profile_file(p: &mut Peer, env: &Env) {
    let src = env.dir.path().join("rootie.json");
    std::fs::write(&src, ROOTIE).unwrap();
    for command in [
        format!("cp {} ~/.config/sayri/agents/rootie.json", src.display()),
        format!(
            "cat > {}/agents/rootie.json <<'EOF'\n{ROOTIE}\nEOF",
            env.config_dir().display()
        ),
    ] {
        let id = ask_as(p, "builder", &format!("Please run <cmd>{command}</cmd>"));
        p.response(id);
        let finish = p.event("tool_finish");
        let out = finish["output"].as_str().unwrap();
        assert!(
            out.contains("write */.config/sayri/*"),
            "not denied before it ran: {finish}"
        );
        p.sync();
        assert!(
            p.kept_events("permission_request").is_empty(),
            "a denied write must not be put to the person"
        );
        assert!(!env.config_dir().join("agents/rootie.json").exists());
        p.inbox.clear();
    }
}

/// Row 6: `builder` (approved by the person) runs a client that sends `agent_save` for a root
/// agent to the daemon's socket.
fn a_command_cannot_save_an_agent_through_the_socket(p: &mut Peer, env: &Env) {
    let probe = env.dir.path().join("probe.py");
    let answers = env.dir.path().join("answers.json");
    std::fs::write(
        &probe,
        r#"import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rwb"); f.readline()
req = {"cmd": "agent_save", "params": {"id": "rootie", "sandbox_level": "LEVEL_4_HOST_ROOT", "ask_before_run": False}, "id": 1}
f.write((json.dumps(req) + "\n").encode()); f.flush()
while True:
    v = json.loads(f.readline())
    if "event" not in v: break
open(sys.argv[2], "w").write(json.dumps(v))
"#,
    )
    .unwrap();
    let command = format!(
        "python3 {} {} {}",
        probe.display(),
        env.socket().display(),
        answers.display()
    );
    let id = ask_as(p, "builder", &format!("Please run <cmd>{command}</cmd>"));
    let card = answer_card(p, true);
    assert_eq!(card["action"], "shell");
    p.response(id);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&answers).unwrap()).unwrap();
    assert_eq!(
        (v["ok"].clone(), v["code"].clone()),
        (json!(false), json!("denied")),
        "{v}"
    );
    let list = p.call("agents_list", json!({}));
    assert!(!list.to_string().contains("rootie"), "{list}");
    p.inbox.clear();
}

/// Row 7: a hand-written profile with `LEVEL_1_READ_ONLY`.
fn a_misspelt_level_is_refused_naming_it(p: &mut Peer) {
    let id = p.send("agent_switch", json!({"agent_id": "typo-level"}));
    let r = p.wait_for("agent_switch error", |v| v["id"] == id);
    assert_eq!(r["ok"], false, "{r}");
    let e = r["error"].as_str().unwrap();
    assert!(
        e.contains("typo-level.json")
            && e.contains("sandbox.level")
            && e.contains("LEVEL_1_READ_ONLY"),
        "{e}"
    );
    let list = p.call("agents_list", json!({}));
    let typo = list
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "typo-level")
        .unwrap_or_else(|| panic!("a broken profile is listed: {list}"));
    assert!(
        typo["error"]
            .as_str()
            .unwrap()
            .contains("LEVEL_1_READ_ONLY")
    );
    assert_ne!(p.call("status", json!({}))["agent"], "typo-level");
}

/// Row 8: the sub-agent from row 4 asks for a level-4 sub-agent of its own.
fn a_sub_agents_sub_agent_is_capped_by_the_whole_chain(p: &mut Peer, config: &Path) {
    let id = ask_as(p, "disk-care", "create a subagent with level 4");
    let card = answer_card(p, true);
    assert_eq!(card["agent_id"], "disk-care");
    assert!(
        card["resource"]
            .as_str()
            .unwrap()
            .contains("LEVEL_3_HOST_USER"),
        "{card}"
    );
    let r = p.response(id);
    assert!(
        r["text"].as_str().unwrap().contains("LEVEL_3_HOST_USER"),
        "{r}"
    );
    let file = stored(config, "deep");
    assert_eq!(file["parent"], "disk-care");
    assert_eq!(file["sandbox"]["level"], "LEVEL_3_HOST_USER");
    p.inbox.clear();
}
