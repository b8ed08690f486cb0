//! Permission cards end to end over IPC: a question reaching two clients, allow once, "Allow
//! always" across a restart (exact, never widened), forget, deny, timeout, and shutdown with an
//! open question — plus `sayri permissions list|check|forget|answer` on a stored approval.

use super::permission_rig::*;
use super::support::{Daemon, Env, stderr, stdout};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[test]
fn ask_reaches_two_clients_and_one_allow_runs_the_command_exactly_once() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, 30);
    let marker = env.dir.path().join("marker-allow");
    let _daemon = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");

    let command = format!("echo out-7f3a | tee -a {}", marker.display());
    let ask_id = start_ask(&mut a, &command);

    let ev_a = a.event("permission_request");
    let ev_b = b.event("permission_request");
    assert_eq!(ev_a, ev_b, "both clients get the same question");
    let req = &ev_a["request"];
    let rid = req["id"].as_str().expect("request id").to_string();
    assert!(is_hex12(&rid), "id is 12 hex characters: {rid:?}");
    assert_eq!(req["action"], "shell");
    assert_eq!(req["resource"], command.as_str());
    let reason = req["reason"].as_str().unwrap();
    assert!(
        reason.contains("agent rule #0") && reason.contains("echo *"),
        "the reason names the rule and its source: {reason:?}"
    );
    assert_eq!(req["agent_id"], AGENT);
    assert_eq!(req["agent_name"], AGENT_NAME);
    let session = req["session_id"].as_str().unwrap().to_string();
    assert!(!session.is_empty());
    assert_eq!(req["policy"], false);
    let expires = req["expires_in"].as_f64().expect("expires_in is a number");
    assert!(expires > 0.0 && expires <= 30.0, "expires_in {expires}");

    // The question is open and listed; nothing ran yet.
    let list = b.call("permission_list", json!({}));
    assert_eq!(list["pending"][0]["id"], rid.as_str(), "{list}");
    assert!(!marker.exists(), "nothing runs before the answer");

    let answer = b.call(
        "permission_answer",
        json!({"request_id": rid, "allow": true}),
    );
    assert_eq!(
        answer,
        json!({"delivered": true, "request_id": rid, "allow": true})
    );
    for p in [&mut a, &mut b] {
        assert_eq!(p.event("permission_resolved")["request_id"], rid.as_str());
    }
    // The other client's answer comes too late.
    let late = a.call(
        "permission_answer",
        json!({"request_id": rid, "allow": false}),
    );
    assert_eq!(late["delivered"], false, "{late}");

    let result = a.response(ask_id);
    assert_eq!(result["text"], "Finished.", "{result}");
    assert_eq!(result["session_id"], session.as_str());
    assert_eq!(
        lines_of(&marker),
        ["out-7f3a"],
        "the command ran exactly once"
    );

    let obs = model
        .observation_containing("out-7f3a")
        .expect("the command's output reaches the next model request");
    assert!(obs.starts_with("[Command result: exit code 0]"), "{obs}");

    // The turn is over and no second run happens later.
    let list = b.call("permission_list", json!({}));
    assert_eq!(list["pending"], json!([]), "{list}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(lines_of(&marker), ["out-7f3a"]);
}

#[test]
fn allow_always_survives_a_restart_is_exact_and_can_be_forgotten() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, 30);
    let work = env.dir.path().join("work");
    let target = work.join("x-test");
    let keep = work.join("keep");
    let recreate = || {
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("f"), "x").unwrap();
    };
    std::fs::create_dir_all(&keep).unwrap();
    recreate();
    let exact = format!("rm -rf {}", target.display());
    let broader = format!("rm -rf {}", work.display());

    let mut daemon = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");

    // Allow always.
    let (req, result) = run_with_answer(&mut a, &mut b, &exact, true, true);
    assert_eq!(req["policy"], false);
    assert_eq!(result["text"], "Finished.", "{result}");
    assert!(!target.exists(), "the approved command ran");

    // The identical command runs again without a card.
    recreate();
    run_without_card(&mut a, &mut b, &exact);
    assert!(
        !target.exists(),
        "the remembered command ran without a card"
    );

    // Listed over IPC, exactly as approved (never widened).
    let list = b.call("permission_list", json!({}));
    assert_eq!(
        list["approvals"]["shell"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x["agent_id"].clone(), x["resource"].clone()))
            .collect::<Vec<_>>(),
        vec![(json!(AGENT), json!(exact))],
        "{list}"
    );

    // A restart keeps it (SQLite).
    drop((a, b));
    assert!(daemon.terminate(Duration::from_secs(10)).is_some());
    drop(daemon);
    let daemon = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");
    recreate();
    run_without_card(&mut a, &mut b, &exact);
    assert!(!target.exists(), "the approval survived the restart");

    // Broader commands still ask; deny them.
    recreate();
    for cmd in [
        broader.clone(),
        format!("{exact} {}", keep.display()),
        format!("rm -rf {}/x-test2", work.display()),
    ] {
        let (req, _) = run_with_answer(&mut a, &mut b, &cmd, false, false);
        assert_eq!(req["resource"], cmd.as_str());
    }
    assert!(target.exists() && keep.exists(), "nothing broader ran");

    // The CLI sees the same stored approval.
    let out = env.run(&["permissions", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["agent_id"], AGENT);
    assert_eq!(listed[0]["action"], "shell");
    assert_eq!(listed[0]["resource"], exact.as_str());
    let out = env.run(&["permissions", "list", "--agent", "someone-else", "--json"]);
    assert_eq!(stdout(&out).trim(), "[]");
    let check = |cmd: &str| {
        let out = env.run(&[
            "permissions",
            "check",
            "--agent",
            AGENT,
            "--resource",
            cmd,
            "--json",
        ]);
        let v: Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
        (out.status.code(), v["effect"].as_str().unwrap().to_string())
    };
    assert_eq!(check(&exact), (Some(0), "allow".into()));
    assert_eq!(check(&broader), (Some(3), "ask".into()));

    // Forget over IPC: the card comes back.
    let forgot = b.call(
        "permission_forget",
        json!({"action": "shell", "agent_id": AGENT}),
    );
    assert_eq!(forgot, json!({"removed": 1}));
    assert_eq!(check(&exact), (Some(3), "ask".into()));
    let (_, result) = run_with_answer(&mut a, &mut b, &exact, false, false);
    assert!(target.exists(), "a denied command did not run: {result}");
    let obs = model
        .observation_containing(&format!("`{exact}` matches"))
        .expect("the model is told it was not approved");
    assert!(obs.starts_with("[Command NOT RUN: refused]"), "{obs}");
    assert!(obs.contains("a person denied it"), "{obs}");

    // `sayri permissions answer ID --allow --always` stores it again …
    let id = start_ask(&mut a, &exact);
    let rid = a.event("permission_request")["request"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.run(&["permissions", "answer", &rid, "--allow", "--always"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("remembered"), "{}", stdout(&out));
    assert_eq!(a.event("permission_resolved")["request_id"], rid.as_str());
    a.response(id);
    b.event("permission_request");
    b.event("permission_resolved");
    a.inbox.clear();
    b.inbox.clear();
    assert!(!target.exists());
    assert_eq!(check(&exact), (Some(0), "allow".into()));
    // … a second answer to the same id is refused with exit 1 and a message …
    let out = env.run(&["permissions", "answer", &rid, "--deny"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no open permission question"),
        "{}",
        stderr(&out)
    );
    // … and `sayri permissions forget` removes it.
    let out = env.run(&[
        "permissions",
        "forget",
        "--action",
        "shell",
        "--agent",
        AGENT,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "removed 1 approval(s)");
    assert_eq!(check(&exact), (Some(3), "ask".into()));
    let out = env.run(&["permissions", "list"]);
    assert_eq!(stdout(&out).trim(), "no saved approvals");
    recreate();
    let (_, _) = run_with_answer(&mut a, &mut b, &exact, false, false);
    assert!(target.exists(), "after forget the card is back");
    drop(daemon);
}

#[test]
fn deny_runs_nothing_and_tells_the_model() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, 30);
    let marker = env.dir.path().join("marker-deny");
    let _daemon = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");

    let command = format!("echo denied-51c | tee -a {}", marker.display());
    let (_, result) = run_with_answer(&mut a, &mut b, &command, false, false);
    assert_eq!(result["text"], "Finished.", "{result}");
    assert!(!marker.exists(), "a denied command never runs");
    let obs = model
        .observation_containing("denied-51c")
        .expect("an observation for the denied command");
    assert!(obs.starts_with("[Command NOT RUN: refused]"), "{obs}");
    assert!(obs.contains("a person denied it"), "{obs}");
    assert!(obs.contains("agent rule #0: echo *"), "{obs}");
}

#[test]
fn unanswered_question_times_out_runs_nothing_and_is_resolved() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, 1);
    let marker = env.dir.path().join("marker-timeout");
    let _daemon = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");

    let command = format!("echo late-9d | tee -a {}", marker.display());
    let ask_id = start_ask(&mut a, &command);
    let req = a.event("permission_request")["request"].clone();
    let opened = Instant::now();
    assert_eq!(req["expires_in"], 1.0);
    let rid = req["id"].as_str().unwrap().to_string();
    assert_eq!(b.event("permission_request")["request"], req);
    for p in [&mut a, &mut b] {
        assert_eq!(p.event("permission_resolved")["request_id"], rid.as_str());
    }
    assert!(
        opened.elapsed() >= Duration::from_millis(700),
        "resolved only when the timeout passed ({:?})",
        opened.elapsed()
    );
    let late = b.call(
        "permission_answer",
        json!({"request_id": rid, "allow": true, "remember": true}),
    );
    assert_eq!(late["delivered"], false, "{late}");
    let result = a.response(ask_id);
    assert_eq!(result["text"], "Finished.", "{result}");
    assert!(!marker.exists(), "nothing runs after a timeout");
    let obs = model.observation_containing("late-9d").unwrap();
    assert!(obs.starts_with("[Command NOT RUN: refused]"), "{obs}");
    assert!(obs.contains("nobody answered within 1 s"), "{obs}");
    let list = a.call("permission_list", json!({}));
    assert_eq!(list["pending"], json!([]));
    assert_eq!(
        list["approvals"],
        json!({}),
        "a late 'always' stores nothing"
    );
}

#[test]
fn shutdown_ends_an_open_question_and_runs_nothing() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, 30);
    let marker = env.dir.path().join("marker-shutdown");
    let mut daemon: Daemon = env.start_daemon();
    let mut a = Peer::connect(&env, "asker");
    let mut b = Peer::connect(&env, "watcher");

    let command = format!("echo never-2e | tee -a {}", marker.display());
    start_ask(&mut a, &command);
    let rid = a.event("permission_request")["request"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    b.event("permission_request");

    let status = daemon.terminate(Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "daemon stops cleanly: {status:?} {}",
        daemon.log_text()
    );
    for p in [&mut a, &mut b] {
        p.drain_to_eof();
        let resolved = p.kept_events("permission_resolved");
        assert_eq!(
            resolved.len(),
            1,
            "{}: exactly one permission_resolved before the connection closed: {:#?}",
            p.name,
            p.inbox
        );
        assert_eq!(resolved[0]["request_id"], rid.as_str());
        let pos = |name: &str| p.inbox.iter().position(|v| v["event"] == name);
        assert!(
            pos("permission_resolved") < pos("shutdown"),
            "{}: the question ends before `shutdown`: {:#?}",
            p.name,
            p.inbox
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "nothing ran");
}
