//! The legacy socket `sayri.sock` with a plain Unix-socket client, against the real daemon,
//! the real sandbox and the scripted model: requests far longer than one 8 KiB read, a level
//! asked for by a message that can only lower the instance's cap, agents that must exist and
//! be allowed, remote turns where nobody can approve, and a turn of three minutes streamed to
//! its end.

use super::gateway_rig::*;
use super::permission_rig::{is_title_request, last_message};
use super::scripted_turns::{Model, start_model};
use super::support::*;
use sayri_testkit::{Reply, Script, sse};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

/// Instance `id` (telegram, agent `helper`, not started) capped at `cap`, with sender 1001
/// paired at the desktop.
fn instance_with_peer(env: &Env, id: &str, cap: &str) {
    save_instance(
        env,
        json!({"id": id, "plugin": "telegram", "agent": "helper", "level_cap": cap,
               "auto_start": false}),
    );
    let r = ipc(
        env,
        "gateway_peer_add",
        json!({"instance_id": id, "peer_id": "1001"}),
    );
    assert_eq!(r["result"]["added"], true, "{r}");
}

/// Chat requests of turns (title requests left out).
fn turn_bodies(model: &Model) -> Vec<Value> {
    model
        .llm
        .chat_bodies()
        .into_iter()
        .filter(|b| !is_title_request(b))
        .collect()
}

#[test]
fn plain_ping_answers_daemon_and_the_socket_is_private() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    let mode = std::fs::metadata(legacy_socket(&env))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "sayri.sock mode {mode:o}");
    let mut c = Legacy::send(&env, "sayri-gui-ping");
    assert_eq!(c.line().as_deref(), Some("DAEMON"));
    assert_eq!(c.line(), None, "one answer per connection");
}

#[test]
fn a_20_kib_message_reaches_the_model_whole_and_its_answer_streams_back() {
    let env = Env::new();
    let model = start_model(vec![Reply::sse(sse::content_stream(&["Read ", "it all."]))]);
    setup(&env, &model, "LEVEL_1_READONLY");
    // 20 KiB of text is about 8 000 tokens: a model with a larger context than the 4 096 assumed
    // when the server does not say.
    let set = env.run(&[
        "--no-start",
        "config",
        "set",
        "provider.context_tokens",
        "32768",
    ]);
    assert!(set.status.success(), "{}", stderr(&set));
    let _d = env.start_daemon();
    instance_with_peer(&env, "desk", "1");

    let mut text = String::new();
    let mut n = 0;
    while text.len() < 20 * 1024 {
        n += 1;
        text.push_str(&format!("line {n:05} of a long report, ünïcödé and all\n"));
    }
    text.push_str("END-OF-THE-LONG-MESSAGE");
    let request = private_msg("desk", 1001, &text);
    assert!(request.to_string().len() > 20 * 1024);

    let events = Legacy::json(&env, &request).events();
    assert_eq!(events[0]["event"], "start", "{events:?}");
    let deltas: String = events
        .iter()
        .filter(|e| e["event"] == "delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Read it all.", "{events:?}");
    assert_eq!(last(&events)["event"], "done", "{events:?}");
    assert_eq!(last(&events)["text"], "Read it all.");

    let bodies = turn_bodies(&model);
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let asked = last_message(&bodies[0]);
    assert!(
        asked.contains(text.trim()),
        "the model did not get the whole message ({} of {} bytes)",
        asked.len(),
        text.len()
    );
}

/// Whether the command of `events` ran in a pid namespace of its own (sandbox levels 1 and
/// 2), from the `readlink /proc/self/ns/pid` line of its output.
fn own_pid_namespace(events: &[Value]) -> bool {
    let finish = events
        .iter()
        .find(|e| e["event"] == "tool_finish")
        .unwrap_or_else(|| panic!("no command ran: {events:?}"));
    let output = finish["output"].as_str().unwrap();
    let theirs = output
        .lines()
        .find(|l| l.starts_with("pid:["))
        .unwrap_or_else(|| panic!("no pid namespace in {finish}"));
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    theirs != ours.to_str().unwrap()
}

#[test]
fn a_message_asking_for_root_runs_at_the_instance_cap() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, "LEVEL_3_HOST_USER");
    let d = env.start_daemon();
    instance_with_peer(&env, "capped", "LEVEL_2_ISOLATED_DEV");
    instance_with_peer(&env, "host", "3");
    let probe = "<cmd>readlink /proc/self/ns/pid; pwd</cmd>";

    let mut msg = private_msg("capped", 1001, probe);
    msg["sandbox_level"] = json!("LEVEL_4_HOST_ROOT");
    let events = Legacy::json(&env, &msg).events();
    assert_eq!(last(&events)["event"], "done", "{events:?}");
    assert!(
        own_pid_namespace(&events),
        "a level-2 command runs in its own pid namespace: {events:?}"
    );
    let workspace = env.state_dir().join("sandboxes/helper");
    let finish = events.iter().find(|e| e["event"] == "tool_finish").unwrap();
    assert!(
        finish["output"]
            .as_str()
            .unwrap()
            .contains(workspace.to_str().unwrap()),
        "a level-2 command runs in the agent's workspace: {finish}"
    );
    assert!(
        d.log_text()
            .contains("with agent helper at LEVEL_2_ISOLATED_DEV"),
        "{}",
        d.log_text()
    );

    // The same probe on an instance capped at level 3 runs on the host: the probe tells the
    // levels apart, and a message asking for root still gets no more than the cap.
    let mut msg = private_msg("host", 1001, probe);
    msg["sandbox_level"] = json!("LEVEL_4_HOST_ROOT");
    let events = Legacy::json(&env, &msg).events();
    assert_eq!(last(&events)["event"], "done", "{events:?}");
    assert!(!own_pid_namespace(&events), "{events:?}");
    assert!(
        d.log_text()
            .contains("with agent helper at LEVEL_3_HOST_USER")
            && !d.log_text().contains("at LEVEL_4_HOST_ROOT"),
        "no turn ran as root: {}",
        d.log_text()
    );
}

#[test]
fn a_message_can_lower_the_level_but_a_level_that_names_nothing_is_refused() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, "LEVEL_3_HOST_USER");
    let _d = env.start_daemon();
    instance_with_peer(&env, "host", "3");

    let mut msg = private_msg("host", 1001, "<cmd>readlink /proc/self/ns/pid</cmd>");
    msg["sandbox_level"] = json!("LEVEL_1_READONLY");
    let events = Legacy::json(&env, &msg).events();
    assert!(own_pid_namespace(&events), "lowered to level 1: {events:?}");

    msg["sandbox_level"] = json!("LEVEL_9_GOD_MODE");
    let events = Legacy::json(&env, &msg).events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "error");
    assert!(
        events[0]["error"]
            .as_str()
            .unwrap()
            .contains("LEVEL_9_GOD_MODE"),
        "{events:?}"
    );
}

#[test]
fn an_agent_the_instance_does_not_allow_or_that_does_not_exist_is_an_error_not_a_fallback() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    write_agent(&env, "other", "LEVEL_1_READONLY", json!([]));
    let _d = env.start_daemon();
    instance_with_peer(&env, "desk", "1");

    for (agent, says) in [("other", "not allowed"), ("ghost", "not allowed")] {
        let mut msg = private_msg("desk", 1001, "hello");
        msg["target_agent"] = json!(agent);
        let events = Legacy::json(&env, &msg).events();
        assert_eq!(events.len(), 1, "{events:?}");
        let error = events[0]["error"].as_str().unwrap_or_default();
        assert!(error.contains(agent) && error.contains(says), "{events:?}");
    }
    assert!(turn_bodies(&model).is_empty(), "no model request");
}

#[test]
fn a_remote_turn_turns_a_question_for_the_person_into_a_clear_refusal() {
    let env = Env::new();
    let model = Model::start();
    setup(&env, &model, "LEVEL_3_HOST_USER");
    // An agent that asks before running what its rules do not allow.
    let profile = json!({"id": "helper", "name": "Helper", "sandbox": {
        "level": "LEVEL_3_HOST_USER", "ask_before_run": true, "timeout_seconds": 30,
        "blocked_binaries": [],
        "permission_rules": [{"action": "shell", "resource": "touch *", "effect": "ask"}]}});
    std::fs::write(
        env.config_dir().join("agents/helper.json"),
        profile.to_string(),
    )
    .unwrap();
    let _d = env.start_daemon();
    instance_with_peer(&env, "desk", "3");
    let target = env.dir.path().join("asked-for");
    let mut watcher = RawClient::connect(&env.socket());
    watcher
        .writer
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();

    let text = format!("<cmd>touch {}</cmd>", target.display());
    let events = Legacy::json(&env, &private_msg("desk", 1001, &text)).events();
    assert_eq!(last(&events)["event"], "done", "{events:?}");
    assert!(
        !target.exists(),
        "the command ran without approval: {events:?}"
    );
    let observation = model
        .observation_containing("touch")
        .expect("the model was told what happened");
    assert!(
        observation.contains("nobody can") && observation.contains("Sayri app"),
        "{observation}"
    );
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut watcher.reader, &mut line).is_ok_and(|n| n > 0) {
        assert!(
            !line.contains("permission_request"),
            "a card was shown: {line}"
        );
        line.clear();
    }
}

#[test]
fn a_turn_of_three_minutes_streams_to_its_end() {
    let env = Env::new();
    let parts: Vec<String> = (1..=19).map(|i| format!("tick {i:02}. ")).collect();
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let slow = Reply::sse(sse::content_stream(&refs))
        .with_event_writes()
        .with_write_delay(Duration::from_secs(10));
    let model = Model::scripted(Script::from_fn(move |req| {
        let body = req.json().unwrap_or(Value::Null);
        if is_title_request(&body) {
            Reply::sse(sse::content_stream(&["Slow"]))
        } else {
            slow.clone()
        }
    }));
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    instance_with_peer(&env, "desk", "1");

    let started = Instant::now();
    let mut c = Legacy::json(&env, &private_msg("desk", 1001, "count slowly"));
    let mut deltas = Vec::new();
    let mut fin = None;
    while let Some(ev) = c.event() {
        match ev["event"].as_str() {
            Some("delta") => deltas.push((started.elapsed(), ev["delta"].clone())),
            Some("done" | "error") => fin = Some(ev),
            _ => {}
        }
    }
    let took = started.elapsed();
    let fin = fin.expect("no final event");
    assert_eq!(fin["event"], "done", "{fin}");
    assert_eq!(fin["text"].as_str().unwrap(), parts.concat().trim_end());
    assert!(took >= Duration::from_secs(180), "took only {took:?}");
    let first = deltas.first().expect("no delta").0;
    assert!(
        first < Duration::from_secs(30),
        "deltas stream as they come, the first after {first:?}"
    );
    assert!(deltas.iter().any(|(at, _)| *at > Duration::from_secs(170)));
}

/// A group message from `sender` in `group`.
fn group_msg(id: &str, group: i64, sender: i64, text: &str) -> Value {
    json!({"type": "INCOMING_MSG", "instance_id": id, "text": text, "author": "Ada",
           "sender_id": sender, "chat_id": group, "chat_type": "supergroup"})
}

#[test]
fn group_chats_answer_only_paired_members_of_named_groups_and_never_pair() {
    let env = Env::new();
    let model = start_model(vec![Reply::sse(sse::content_stream(&["Hi group."]))]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    instance_with_peer(&env, "grp", "1");
    save_instance(&env, json!({"id": "grp", "allowed_groups": ["-100500"]}));
    let r = ipc(&env, "gateway_pin", json!({"instance_id": "grp"}));
    let pin = r["result"]["pin"].as_str().unwrap().to_string();

    let ev = Legacy::json(&env, &group_msg("grp", -100_600, 1001, "other group")).events();
    assert_eq!(last(&ev)["event"], "ignored", "a group not named: {ev:?}");
    let ev = Legacy::json(&env, &group_msg("grp", -100_500, 3003, "member")).events();
    assert_eq!(last(&ev)["event"], "ignored", "an unpaired member: {ev:?}");
    let ev = Legacy::json(
        &env,
        &group_msg("grp", -100_500, 3003, &format!("/pair {pin}")),
    )
    .events();
    assert_eq!(last(&ev)["event"], "done", "{ev:?}");
    assert!(
        last(&ev)["text"]
            .as_str()
            .unwrap()
            .contains("only in a private chat")
    );
    assert!(model.llm.requests().is_empty());
    let peers = ipc(&env, "gateway_peers", json!({"instance_id": "grp"}));
    assert_eq!(peers["result"].as_array().unwrap().len(), 1, "{peers}");

    let ev = Legacy::json(&env, &group_msg("grp", -100_500, 1001, "hello group")).events();
    assert_eq!(last(&ev)["event"], "done", "{ev:?}");
    assert_eq!(last(&ev)["text"], "Hi group.");
}

#[test]
fn wrong_pins_lock_the_sender_out_and_the_right_one_pairs_only_once() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    save_instance(
        &env,
        json!({"id": "tg", "plugin": "telegram", "agent": "helper", "auto_start": false}),
    );
    let r = ipc(&env, "gateway_pin", json!({"instance_id": "tg"}));
    let pin = r["result"]["pin"].as_str().unwrap().to_string();
    let wrong = if pin == "000000" { "111111" } else { "000000" };

    let say = |sender: i64, text: &str| {
        let ev = Legacy::json(&env, &private_msg("tg", sender, text)).events();
        last(&ev).clone()
    };
    for left in (0..5).rev() {
        let r = say(3003, &format!("/pair {wrong}"));
        assert!(r["text"].as_str().unwrap().contains("not right"), "{r}");
        if left > 0 {
            assert!(
                r["text"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("{left} tries left")),
                "{r}"
            );
        }
    }
    // Locked out: even the right PIN does not pair this sender now.
    let r = say(3003, &format!("/pair {pin}"));
    assert!(
        r["text"].as_str().unwrap().contains("Too many wrong PINs"),
        "{r}"
    );
    // Another sender with the right PIN pairs; the PIN then is used up.
    let r = say(1001, &format!("/pair {pin}"));
    assert!(r["text"].as_str().unwrap().starts_with("Paired."), "{r}");
    let r = say(4004, &format!("/pair {pin}"));
    assert!(
        r["text"].as_str().unwrap().contains("no valid pairing PIN"),
        "{r}"
    );
    let peers = ipc(&env, "gateway_peers", json!({"instance_id": "tg"}));
    let ids: Vec<&str> = peers["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["peer_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["1001"]);
    assert!(model.llm.requests().is_empty());
}

#[test]
fn new_and_agent_commands_switch_the_chat_session_and_agent() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    write_agent(&env, "other", "LEVEL_1_READONLY", json!([]));
    let d = env.start_daemon();
    instance_with_peer(&env, "desk", "1");
    save_instance(&env, json!({"id": "desk", "agents": ["other"]}));

    let session = |text: &str| {
        let ev = Legacy::json(&env, &private_msg("desk", 1001, text)).events();
        assert_eq!(last(&ev)["event"], "done", "{ev:?}");
        ev[0]["session_id"].as_str().unwrap().to_string()
    };
    let first = session("one");
    assert_eq!(session("two"), first, "one session per chat");
    let ev = Legacy::json(&env, &private_msg("desk", 1001, "/new")).events();
    assert_eq!(last(&ev)["command"], "new", "{ev:?}");
    let second = session("three");
    assert_ne!(second, first);

    let ev = Legacy::json(&env, &private_msg("desk", 1001, "/agent")).events();
    let list = last(&ev)["text"].as_str().unwrap().to_string();
    assert!(list.contains("helper") && list.contains("other"), "{list}");
    let ev = Legacy::json(&env, &private_msg("desk", 1001, "/agent ghost")).events();
    assert!(
        last(&ev)["text"]
            .as_str()
            .unwrap()
            .contains("not available"),
        "{ev:?}"
    );
    let ev = Legacy::json(&env, &private_msg("desk", 1001, "/agent other")).events();
    assert!(
        last(&ev)["text"]
            .as_str()
            .unwrap()
            .contains("Now talking to agent other")
    );
    let third = session("four");
    assert_ne!(third, second);
    assert!(
        d.log_text()
            .contains(&format!("in {third} with agent other")),
        "{}",
        d.log_text()
    );
}

/// Sends each of its arguments after the first two as one request on its own connection to
/// the legacy socket (the first argument) and writes the first line of every answer to the
/// file named by the second.
const LEGACY_PROBE: &str = r#"import socket, sys
out = open(sys.argv[2], "w")
for req in sys.argv[3:]:
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall((req + "\n").encode())
    out.write(s.makefile("rb").readline().decode().rstrip("\n") + "\n")
    s.close()
"#;

#[test]
fn a_command_of_a_turn_is_refused_management_requests_and_gateway_messages_on_the_legacy_socket() {
    let env = Env::new();
    let probe = env.dir.path().join("probe.py");
    std::fs::write(&probe, LEGACY_PROBE).unwrap();
    let out = env.dir.path().join("answers");
    // An original-wire message from an author instance `default` accepts: a command may not
    // send it (it would run a turn above the command's own level).
    let message = r#"'{"type": "INCOMING_MSG", "text": "hi", "author": "Ada"}'"#;
    let model = start_model(vec![Reply::sse(sse::content_stream(&[&format!(
        "```bash\npython3 {} {} {} quit sayri-gui-ping {message}\n```\n",
        probe.display(),
        legacy_socket(&env).display(),
        out.display()
    )]))]);
    super::scripted_turns::setup(&env, &model, false, 30);
    let mut d = env.start_daemon();
    let r = ipc(
        &env,
        "gateway_save",
        json!({"instance": {"id": "default", "legacy": true, "legacy_authors": ["Ada"]}}),
    );
    assert_eq!(r["ok"], true, "{r}");
    let mut c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok();
    let r = c.call("ask", json!({"text": "go", "timeout": 30}), 1);
    assert_eq!(r["ok"], true, "{r}");
    let answers = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("the probe wrote nothing ({e}): {}", d.log_text()));
    let lines: Vec<&str> = answers.lines().collect();
    assert_eq!(lines.len(), 3, "{answers}");
    assert!(
        lines[0].starts_with("ERROR this is a management request"),
        "{answers}"
    );
    assert_eq!(lines[1], "DAEMON");
    let refused: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(refused["event"], "error", "{answers}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("cannot send gateway messages"),
        "{answers}"
    );
    assert!(
        !d.log_text().contains("gateway default: turn for"),
        "no gateway turn ran: {}",
        d.log_text()
    );
    assert!(
        d.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the daemon quit"
    );
    assert_eq!(c.call("ping", json!({}), 2)["result"], "pong");
}

#[test]
fn a_request_over_1_mib_is_refused_with_a_sentence_and_one_without_newline_is_read_at_eof() {
    let env = Env::new();
    let model = start_model(vec![]);
    setup(&env, &model, "LEVEL_1_READONLY");
    let _d = env.start_daemon();
    instance_with_peer(&env, "desk", "1");

    let huge = private_msg("desk", 1001, &"x".repeat(1024 * 1024 + 1));
    let events = Legacy::json(&env, &huge).events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "error");
    assert!(
        events[0]["error"].as_str().unwrap().contains("1 MiB"),
        "{events:?}"
    );

    // The original clients end a request by closing their write side instead of a newline.
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(legacy_socket(&env)).unwrap();
    s.write_all(b"sayri-gui-ping").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert_eq!(answer, "DAEMON\n");
    assert!(model.llm.requests().is_empty());
}

/// A gateway instance whose agent is a sub-agent runs each message as the sub-agent's creator
/// is *now*: the instance allows up to root and the message asks for root, the sub-agent's own
/// file asks for root, allows everything and never asks — yet each tightening of the creator
/// by the person (`sayri agents edit`: a lower level, a deny rule, its ask switch) binds the
/// next message's turn. Real commands in the real sandbox.
#[test]
fn a_gateway_turn_of_a_sub_agent_runs_under_its_creators_current_level_rules_and_ask_switch() {
    use super::scripted_turns::write_config;
    use super::sub_agent_rig::{self as sub, edit_lead, probe, scout_file, scout_workspace};
    let env = Env::new_in("/var/tmp");
    let model = Model::start();
    write_config(&env, &model, 30, "lead");
    sub::write_lead_and_scout(&env);
    let scout_as_written = scout_file(&env);
    let d = env.start_daemon();
    save_instance(
        &env,
        json!({"id": "desk", "plugin": "telegram", "agent": "scout",
               "level_cap": "LEVEL_4_HOST_ROOT", "auto_start": false}),
    );
    let r = ipc(
        &env,
        "gateway_peer_add",
        json!({"instance_id": "desk", "peer_id": "1001"}),
    );
    assert_eq!(r["result"]["added"], true, "{r}");
    let marker = env.dir.path().join("written-on-the-host");
    let mut watcher = RawClient::connect(&env.socket());
    watcher
        .writer
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    // Sends the probe asking for root; returns the command's output as the turn streamed it.
    let message = || -> String {
        let mut msg = private_msg("desk", 1001, &format!("<cmd>{}</cmd>", probe(&marker)));
        msg["sandbox_level"] = json!("LEVEL_4_HOST_ROOT");
        let events = Legacy::json(&env, &msg).events();
        assert_eq!(last(&events)["event"], "done", "{events:?}");
        let finish = events
            .iter()
            .find(|e| e["event"] == "tool_finish")
            .unwrap_or_else(|| panic!("no command: {events:?}"));
        finish["output"].as_str().unwrap().to_string()
    };
    let turns_at = |level: &str| count(&d.log_text(), &format!("with agent scout at {level}"));

    // The creator at level 3: the turn is on the host, not at root's level 4.
    let out = message();
    assert_eq!(turns_at("LEVEL_3_HOST_USER"), 1, "{}", d.log_text());
    assert!(!sub::own_pid_namespace(&out), "{out}");
    assert!(
        marker.exists(),
        "the level-3 probe writes on the host: {out}"
    );
    std::fs::remove_file(&marker).unwrap();

    // The creator lowered to level 2: sandboxed in the sub-agent's workspace.
    edit_lead(&env, &["--level", "2"]);
    let out = message();
    assert_eq!(turns_at("LEVEL_2_ISOLATED_DEV"), 1, "{}", d.log_text());
    assert!(sub::own_pid_namespace(&out), "{out}");
    assert!(out.contains(&scout_workspace(&env)), "{out}");
    assert!(!marker.exists(), "{out}");

    // The creator denies `touch`: refused before it runs, naming the creator's rule.
    edit_lead(
        &env,
        &["--rule", "shell:*:allow", "--rule", "shell:touch *:deny"],
    );
    let out = message();
    assert!(out.contains("creator lead rule #1"), "{out}");
    assert!(!marker.exists());

    // Back on the host with `touch` an ask and the creator's ask switch on: nobody can approve
    // on a gateway, so it is refused — no card is shown, nothing runs.
    edit_lead(
        &env,
        &[
            "--level",
            "3",
            "--rule",
            "shell:*:allow",
            "--rule",
            "shell:touch *:ask",
            "--ask-before-run",
            "yes",
        ],
    );
    let out = message();
    assert_eq!(turns_at("LEVEL_3_HOST_USER"), 2, "{}", d.log_text());
    assert!(out.contains("creator lead rule #1"), "{out}");
    assert!(!marker.exists(), "the command ran without approval: {out}");
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut watcher.reader, &mut line).is_ok_and(|n| n > 0) {
        assert!(
            !line.contains("permission_request"),
            "a card was shown: {line}"
        );
        line.clear();
    }

    // Nothing escalated: no turn at level 4, and the sub-agent's file is unchanged.
    assert_eq!(turns_at("LEVEL_4_HOST_ROOT"), 0, "{}", d.log_text());
    assert_eq!(scout_file(&env), scout_as_written);
}
