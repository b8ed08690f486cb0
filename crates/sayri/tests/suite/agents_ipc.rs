//! Agent profiles over IPC and the CLI: `agent_save` keeps omitted fields and reports what a
//! creator takes away, tightening a creator reaches its children at once (also in `sayri
//! permissions check --agent`), a creator cannot be swapped or dropped except by `detach`,
//! `default` is never written or deleted, broken files are listed with their error, and
//! `sayri agents …` drives all of it.

use super::permission_rig::Peer;
use super::support::{Env, stderr, stdout};
use serde_json::{Value, json};

fn setup(env: &Env) {
    let config = env.config_dir();
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("sayri.toml"),
        "[provider]\nbase_url = \"http://127.0.0.1:9/v1\"\nretries = 0\n\n[permissions]\npolicy_files = []\n",
    )
    .unwrap();
}

fn file(env: &Env, id: &str) -> Value {
    let path = env.config_dir().join(format!("agents/{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Sends a request expected to fail; returns `(code, error)`.
fn refused(p: &mut Peer, cmd: &str, params: Value) -> (String, String) {
    let id = p.send(cmd, params);
    let r = p.wait_for("response", |v| v.get("event").is_none() && v["id"] == id);
    assert_eq!(r["ok"], false, "{cmd} was accepted: {r}");
    (
        r["code"].as_str().unwrap().to_string(),
        r["error"].as_str().unwrap().to_string(),
    )
}

fn check(env: &Env, agent: &str, command: &str) -> (Option<i32>, String) {
    let o = env.run(&[
        "permissions",
        "check",
        "--agent",
        agent,
        "--resource",
        command,
    ]);
    (o.status.code(), stdout(&o))
}

fn listed(p: &mut Peer, id: &str) -> Value {
    let list = p.call("agents_list", json!({}));
    list.as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed: {list}"))
}

#[test]
fn agent_save_keeps_omitted_fields_and_a_child_never_exceeds_its_creator_live() {
    let env = Env::new();
    setup(&env);
    let _daemon = env.start_daemon();
    let mut p = Peer::connect(&env, "user");

    let r = p.call(
        "agent_save",
        json!({"id": "builder", "name": "Builder", "description": "builds",
               "system_prompt": "You build.", "sandbox_level": "3", "ask_before_run": "yes",
               "permission_rules": [{"action": "shell", "resource": "*", "effect": "ask"}],
               "allowed_secrets": "GITHUB_TOKEN", "allowed_tools": ["bash"]}),
    );
    assert_eq!(r["created"], true, "{r}");
    // A later save of one field keeps the others (the original emptied them).
    let r = p.call("agent_save", json!({"id": "builder", "name": "Builder 2"}));
    assert_eq!(r["created"], false);
    let f = file(&env, "builder");
    assert_eq!(f["name"], "Builder 2");
    assert_eq!(f["description"], "builds");
    assert_eq!(f["system_prompt"], "You build.");
    assert_eq!(f["sandbox"]["permission_rules"][0]["effect"], "ask");
    assert_eq!(f["sandbox"]["ask_before_run"], true);
    assert_eq!(f["allowed_secrets"], json!(["GITHUB_TOKEN"]));

    // A child asking for more than its creator gets its creator's limits, and is told so.
    let r = p.call(
        "agent_save",
        json!({"id": "kid", "parent": "builder", "sandbox_level": "LEVEL_4_HOST_ROOT",
               "ask_before_run": false, "allowed_tools": "bash, web",
               "permission_rules": [{"action": "shell", "resource": "*", "effect": "allow"}],
               "allowed_secrets": ["GITHUB_TOKEN", "AWS_SECRET"], "mode": "create"}),
    );
    let e = &r["effective"];
    assert_eq!(e["sandbox"]["level"], "LEVEL_3_HOST_USER", "{r}");
    assert_eq!(e["sandbox"]["ask_before_run"], true);
    assert_eq!(e["allowed_secrets"], json!(["GITHUB_TOKEN"]));
    assert_eq!(e["allowed_tools"], json!(["bash"]));
    let fields: Vec<&str> = r["narrowed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["field"].as_str())
        .collect();
    for f in [
        "sandbox.level",
        "sandbox.ask_before_run",
        "allowed_secrets",
        "allowed_tools",
    ] {
        assert!(fields.contains(&f), "{f} not reported: {r}");
    }
    // The file keeps what was asked; the creator decides what applies.
    assert_eq!(file(&env, "kid")["sandbox"]["level"], "LEVEL_4_HOST_ROOT");
    let (code, out) = check(&env, "kid", "git push");
    assert_eq!(code, Some(3), "the creator's ask applies: {out}");
    assert!(out.contains("creator builder rule #0"), "{out}");

    // Tightening the creator reaches the existing child at once.
    p.call(
        "agent_save",
        json!({"id": "builder", "sandbox_level": "LEVEL_2_ISOLATED_DEV"}),
    );
    assert_eq!(
        listed(&mut p, "kid")["sandbox"]["level"],
        "LEVEL_2_ISOLATED_DEV"
    );
    let (code, out) = check(&env, "kid", "git push");
    assert_eq!(code, Some(4), "at level 2 nobody can be asked: {out}");

    // The creator cannot be swapped, `default` cannot be written, modes are honoured.
    p.call("agent_save", json!({"id": "wide", "sandbox_level": "4"}));
    let (code, e) = refused(&mut p, "agent_save", json!({"id": "kid", "parent": "wide"}));
    assert_eq!(code, "denied");
    assert!(e.contains("detach"), "{e}");
    let (code, e) = refused(
        &mut p,
        "agent_save",
        json!({"id": "default", "sandbox_level": "4"}),
    );
    assert_eq!(code, "denied", "{e}");
    assert!(!env.config_dir().join("agents/default.json").exists());
    let (code, _) = refused(&mut p, "agent_save", json!({"id": "kid", "mode": "create"}));
    assert_eq!(code, "invalid_params");
    let (code, _) = refused(
        &mut p,
        "agent_save",
        json!({"id": "nobody", "mode": "update"}),
    );
    assert_eq!(code, "not_found");
    let (_, e) = refused(
        &mut p,
        "agent_save",
        json!({"id": "x", "sandbox_level": "LEVEL_9"}),
    );
    assert!(e.contains("unknown isolation level"), "{e}");
    let (_, e) = refused(&mut p, "agent_save", json!({"id": "x", "parent": "ghost"}));
    assert!(e.contains("ghost does not exist"), "{e}");
    let (_, e) = refused(
        &mut p,
        "agent_save",
        json!({"id": "x", "permission_rules": [{"action": "shell", "effect": "maybe"}]}),
    );
    assert!(e.contains("maybe"), "{e}");
    assert!(!env.config_dir().join("agents/x.json").exists());

    // A creator with children stays; `default` stays.
    let (code, e) = refused(&mut p, "agent_delete", json!({"agent_id": "builder"}));
    assert_eq!(code, "denied");
    assert!(e.contains("kid"), "{e}");
    let (_, e) = refused(&mut p, "agent_delete", json!({"agent_id": "default"}));
    assert!(e.contains("built-in"), "{e}");

    // Detaching (a person's decision) lets the child's own file apply.
    let r = p.call("agent_detach", json!({"agent_id": "kid"}));
    assert_eq!(r["parent"], "builder");
    assert!(r["widened"].to_string().contains("sandbox.level"), "{r}");
    assert_eq!(
        listed(&mut p, "kid")["sandbox"]["level"],
        "LEVEL_4_HOST_ROOT"
    );
    assert!(file(&env, "kid").get("parent").is_none());
    assert_eq!(
        p.call("agent_delete", json!({"agent_id": "kid"}))["deleted"],
        true
    );
    assert_eq!(
        p.call("agent_delete", json!({"agent_id": "builder"}))["deleted"],
        true
    );
}

#[test]
fn agents_cli_creates_lists_shows_uses_detaches_and_deletes() {
    let env = Env::new();
    setup(&env);
    std::fs::write(
        env.config_dir().join("agents/typo.json"),
        include_str!("../fixtures/agents/typo-level.json"),
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let ok = |args: &[&str]| {
        let o = env.run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    ok(&[
        "agents",
        "create",
        "boss",
        "--level",
        "3",
        "--ask-before-run",
        "yes",
        "--rule",
        "shell:rm *:deny",
    ]);
    let out = ok(&[
        "agents",
        "create",
        "kid",
        "--parent",
        "boss",
        "--level",
        "root",
        "--rule",
        "shell:*:allow",
        "--description",
        "Little helper",
    ]);
    assert!(out.contains("effective level LEVEL_3_HOST_USER"), "{out}");
    assert!(
        out.contains("sandbox.level: LEVEL_4_HOST_ROOT → LEVEL_3_HOST_USER"),
        "{out}"
    );

    let list = ok(&["agents", "list"]);
    assert!(
        list.contains("kid") && list.contains("created by boss"),
        "{list}"
    );
    assert!(
        list.lines().any(|l| l.starts_with("typo")
            && l.contains("ERROR")
            && l.contains("LEVEL_1_READ_ONLY")),
        "a broken profile is listed with its error: {list}"
    );
    let show = ok(&["agents", "show", "kid"]);
    assert!(show.contains("creators:  boss"), "{show}");
    assert!(show.contains("[creator boss] shell rm * → deny"), "{show}");
    let json: Value = serde_json::from_str(&ok(&["agents", "show", "kid", "--json"])).unwrap();
    assert_eq!(json["effective"]["sandbox"]["level"], "LEVEL_3_HOST_USER");
    assert_eq!(json["written"]["sandbox"]["level"], "LEVEL_4_HOST_ROOT");

    ok(&["agents", "edit", "kid", "--name", "Kiddo"]);
    let o = env.run(&["agents", "edit", "nobody", "--level", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("agent not found: nobody"),
        "{}",
        stderr(&o)
    );
    let o = env.run(&["agents", "create", "kid"]);
    assert!(stderr(&o).contains("exists already"), "{}", stderr(&o));

    ok(&["agents", "use", "kid"]);
    let status: Value = serde_json::from_str(&ok(&["status", "--json"])).unwrap();
    assert_eq!(status["agent"], "kid");

    // Detaching needs a confirmation; without a terminal, --yes.
    let o = env.run(&["agents", "detach", "kid"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--yes"), "{}", stderr(&o));
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&["agents", "show", "kid", "--json"])).unwrap()["written"]
            ["parent"],
        "boss"
    );
    ok(&["agents", "detach", "kid", "--yes"]);
    let show = ok(&["agents", "show", "kid"]);
    assert!(
        show.contains("LEVEL_4_HOST_ROOT") && !show.contains("creators:"),
        "{show}"
    );

    ok(&["agents", "delete", "kid"]);
    let status: Value = serde_json::from_str(&ok(&["status", "--json"])).unwrap();
    assert_eq!(
        status["agent"], "default",
        "deleting the active agent activates default"
    );
    let o = env.run(&["agents", "delete", "default"]);
    assert_eq!(o.status.code(), Some(1));
}

/// `sayri agents create --from SENTENCE --agent CREATOR`: the model proposes, the person
/// approves the card from another client, and the CLI prints the result.
#[test]
fn agents_create_from_a_sentence_goes_through_the_card() {
    use super::scripted_turns::Model;
    use sayri_testkit::{RecordedRequest, Reply, Script, sse};
    let env = Env::new();
    let model = Model::scripted(Script::from_fn(|req: &RecordedRequest| {
        let body = req.json().unwrap_or(Value::Null);
        let proposal = json!({"id": "release-chores", "name": "Release chores",
                              "level": "LEVEL_4_HOST_ROOT", "ask_before_run": false});
        if body["messages"][0]["content"]
            .as_str()
            .is_some_and(|s| s.contains("ONLY one JSON object"))
        {
            Reply::sse(sse::content_stream(&[&proposal.to_string()]))
        } else {
            Reply::sse(sse::content_stream(&["Title"]))
        }
    }));
    setup(&env);
    std::fs::write(
        env.config_dir().join("sayri.toml"),
        format!(
            "[provider]\nbase_url = \"{}\"\nretries = 0\n\n[permissions]\npolicy_files = []\n",
            model.llm.base_url()
        ),
    )
    .unwrap();
    std::fs::write(
        env.config_dir().join("agents/builder.json"),
        include_str!("../fixtures/agents/builder.json"),
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let mut p = Peer::connect(&env, "approver");
    let cli = env
        .cmd()
        .args([
            "agents",
            "create",
            "--from",
            "release chores helper with root access",
            "--agent",
            "builder",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let card = p.event("permission_request")["request"].clone();
    assert_eq!(card["action"], "subagent");
    assert!(!env.config_dir().join("agents/release-chores.json").exists());
    let rid = card["id"].as_str().unwrap().to_string();
    p.call(
        "permission_answer",
        json!({"request_id": rid, "allow": true}),
    );
    let o = cli.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Created the sub-agent release-chores") && out.contains("LEVEL_3_HOST_USER"),
        "{out}"
    );
    assert!(stderr(&o).contains("permission needed"), "{}", stderr(&o));
    let f = file(&env, "release-chores");
    assert_eq!(
        (f["parent"].clone(), f["sandbox"]["level"].clone()),
        (json!("builder"), json!("LEVEL_3_HOST_USER"))
    );
}
