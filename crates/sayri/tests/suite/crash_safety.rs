//! Crash safety of the real daemon: `kill -9` mid-command at levels 1, 2 and 3 leaves no process
//! of the command and no late write; a supervised child dies with its daemon; leftovers recorded
//! by a crashed daemon are killed at the next start (never a recycled pid); an interrupted turn is
//! closed honestly, its permission card cannot be answered, and the conversation goes on.

use super::scripted_turns::{Model, marker_dir, send_ask, start_model, wait_event, write_config};
use super::support::*;
use super::test_child;
use sayri_sandbox::child_registry::{
    ChildKind, ChildRecord, ChildRegistry, ProcessIdentity, boot_id,
};
use sayri_testkit::procs::{COMMAND_SHAPES, EndMark, shape_command};
use sayri_testkit::{Reply, sse};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A reply proposing `command` in a bash block.
fn propose(command: &str) -> Reply {
    Reply::sse(sse::content_stream(&[
        "On it.\n```bash\n",
        command,
        "\n```\n",
    ]))
}

fn say(text: &str) -> Reply {
    Reply::sse(sse::content_stream(&[text]))
}

/// `sayri.toml` for `model` and agent `crash` at `level` (network allowed, no questions, or a
/// question for every `touch` when `ask_touch`).
fn configure(env: &Env, model: &Model, level: &str, workspace: Option<&Path>, ask_touch: bool) {
    write_config(env, model, 60, "crash");
    let rules = if ask_touch {
        json!([{"action": "shell", "resource": "touch *", "effect": "ask"}])
    } else {
        json!([{"action": "shell", "resource": "*", "effect": "allow"}])
    };
    let mut sandbox = json!({
        "level": level,
        "ask_before_run": ask_touch,
        "timeout_seconds": 60,
        "allow_network": true,
        "blocked_binaries": [],
        "permission_rules": rules,
    });
    if let Some(ws) = workspace {
        sandbox["isolated_dir"] = json!(ws);
    }
    let profile = json!({"id": "crash", "name": "Crash", "sandbox": sandbox});
    std::fs::write(
        env.config_dir().join("agents/crash.json"),
        profile.to_string(),
    )
    .unwrap();
}

/// Sends `kill -9` to the daemon and reaps it.
fn kill_9(daemon: &mut Daemon) {
    let mut child = daemon.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Waits until a process whose command line starts with `prefix` and holds `token` runs.
fn wait_started(token: &str, prefix: &str) -> bool {
    eventually(Duration::from_secs(15), || {
        processes_with(token)
            .iter()
            .any(|(_, c)| c.starts_with(prefix))
    })
}

/// Waits until a process whose command line starts with `prefix` and holds `token` runs, answering
/// Allow, as the person at the terminal would, to every permission card the `ask` client reports on
/// its stderr (`… sayri permissions answer ID --allow`): at levels 3–4 the built-in baseline asks
/// before a command backgrounds work or calls `setsid`, whatever the agent's rules. The answer
/// goes through the real CLI, as `user`.
fn wait_started_approving(
    env: &Env,
    user: User,
    ask: &mut std::process::Child,
    token: &str,
    prefix: &str,
) -> bool {
    use std::io::BufRead;
    let stderr = ask.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.split("sayri permissions answer ").nth(1) {
                let id = rest.split_whitespace().next().unwrap_or_default();
                if tx.send(id.to_string()).is_err() {
                    return;
                }
            }
        }
    });
    eventually(Duration::from_secs(15), || {
        while let Ok(id) = rx.try_recv() {
            let _ = command_as(env, user, &["permissions", "answer", &id, "--allow"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        processes_with(token)
            .iter()
            .any(|(_, c)| c.starts_with(prefix))
    })
}

/// How long until no process holds `token` (at most `limit`; `None` if some still do).
fn time_until_gone(token: &str, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    eventually(limit, || processes_with(token).is_empty()).then(|| t.elapsed())
}

/// Who runs the daemon and its client.
#[derive(Debug, Clone, Copy, PartialEq)]
enum User {
    Root,
    /// uid 65534 through `setpriv`: no cgroups, no privileges.
    Nobody,
}

/// `program` run as `user` with `env`'s directories.
fn command_as(env: &Env, user: User, args: &[&str]) -> std::process::Command {
    match user {
        User::Root => {
            let mut c = env.cmd();
            c.args(args);
            c
        }
        User::Nobody => {
            let mut c = env.cmd_for(Path::new("setpriv"));
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
                .args(args);
            c
        }
    }
}

fn chown_nobody(p: &Path) {
    let st = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

/// Starts `sayri daemon` as `user` in the foreground and waits until it listens.
fn start_daemon_as(env: &Env, user: User) -> Daemon {
    let log = std::fs::File::create(env.daemon_log()).unwrap();
    let child = command_as(env, user, &["daemon"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let d = Daemon {
        child: Some(child),
        log: env.daemon_log(),
    };
    assert!(
        eventually(Duration::from_secs(15), || d
            .log_text()
            .contains("listening on")),
        "daemon did not start: {}",
        d.log_text()
    );
    d
}

/// For each shape: `sayri ask` has the real daemon, running as `user`, run the command at
/// `level`; once the command runs the daemon gets `kill -9`. Every process of the command must be
/// gone within 1 s, and its end action never happen.
fn kill_9_mid_command(level: &str, user: User) {
    let env = Env::new_in("/var/tmp");
    let marks = marker_dir();
    // Level 1 writes nothing that persists: its command's end is a loopback connection.
    let (mark, workspace) = match level {
        "LEVEL_1_READONLY" => (EndMark::connection(), None),
        "LEVEL_2_ISOLATED_DEV" => (EndMark::Dir(marks.path().to_path_buf()), Some(marks.path())),
        _ => (EndMark::Dir(marks.path().to_path_buf()), None),
    };
    let unique = format!("{}{}{}", std::process::id(), &level[6..7], user as u8);
    let commands: Vec<(String, String)> = COMMAND_SHAPES
        .iter()
        .enumerate()
        .map(|(i, (shape, t))| {
            let s = format!("{unique}{i}");
            let cmd = shape_command(t, &s, &mark.end_action(shape));
            (s, cmd)
        })
        .collect();
    let model = start_model(commands.iter().map(|(_, c)| propose(c)).collect());
    configure(&env, &model, level, workspace, false);
    if user == User::Nobody {
        chown_nobody(env.dir.path());
        chown_nobody(marks.path());
    }
    let mut slowest = Duration::ZERO;
    for ((shape, _), (s, _)) in COMMAND_SHAPES.iter().zip(&commands) {
        let mut daemon = start_daemon_as(&env, user);
        let mut ask = command_as(&env, user, &["ask", "Run it."])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(
            wait_started_approving(&env, user, &mut ask, &format!("3.{s}"), "sleep 3."),
            "{level} {shape} ({user:?}): the command never ran\n{}",
            daemon.log_text()
        );
        kill_9(&mut daemon);
        let took = time_until_gone(s, Duration::from_secs(3));
        assert!(
            took.is_some_and(|t| t <= Duration::from_secs(1)),
            "{level} {shape} ({user:?}): processes left {took:?} after kill -9: {:?}",
            processes_with(s)
        );
        slowest = slowest.max(took.unwrap_or_default());
        let _ = ask.kill();
        let _ = ask.wait();
    }
    eprintln!("{level} ({user:?}): slowest clean-up after kill -9 of the daemon: {slowest:?}");
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(
        mark.written(),
        Vec::<String>::new(),
        "{level} ({user:?}): a command finished its work after the daemon died"
    );
}

#[test]
fn kill_9_of_the_daemon_mid_command_leaves_nothing_running_at_level_1() {
    kill_9_mid_command("LEVEL_1_READONLY", User::Root);
}

#[test]
fn kill_9_of_the_daemon_mid_command_leaves_nothing_running_at_level_2() {
    kill_9_mid_command("LEVEL_2_ISOLATED_DEV", User::Root);
}

#[test]
fn kill_9_of_the_daemon_mid_command_leaves_nothing_running_at_level_3() {
    kill_9_mid_command("LEVEL_3_HOST_USER", User::Root);
}

#[test]
fn kill_9_of_an_unprivileged_daemon_mid_command_leaves_nothing_running_at_level_1() {
    kill_9_mid_command("LEVEL_1_READONLY", User::Nobody);
}

#[test]
fn kill_9_of_an_unprivileged_daemon_mid_command_leaves_nothing_running_at_level_3() {
    kill_9_mid_command("LEVEL_3_HOST_USER", User::Nobody);
}

/// Every row of the session, as `(id, role, content, tool_call_json)`.
fn rows(db: &Path, sid: &str) -> Vec<(i64, String, String, Option<String>)> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    let mut st = conn
        .prepare(
            "SELECT id, role, content, tool_call_json FROM messages WHERE session_id = ?1 ORDER BY id",
        )
        .unwrap();
    st.query_map([sid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_crash_mid_command_is_closed_as_interrupted_and_never_rerun() {
    let env = Env::new_in("/var/tmp");
    let marks = marker_dir();
    let started = marks.path().join("started");
    let done = marks.path().join("done");
    let token = format!("3.{}5", std::process::id());
    let command = format!(
        "echo run >> {}; sleep {token}; touch {}",
        started.display(),
        done.display()
    );
    let model = start_model(vec![
        say("First answer."),
        propose(&command),
        say("Third answer."),
    ]);
    configure(&env, &model, "LEVEL_3_HOST_USER", None, false);
    let mut daemon = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let first = c.call("ask", json!({"text": "First question?", "timeout": 30}), 1);
    assert_eq!(first["result"]["text"], "First answer.", "{first}");
    let sid = first["result"]["session_id"].as_str().unwrap().to_string();
    send_ask(&mut c, "Second question?", 2);
    assert!(wait_started(&token, "sleep "), "{}", daemon.log_text());
    let before = rows(&env.state_dir().join("sessions.db"), &sid);
    kill_9(&mut daemon);
    assert!(time_until_gone(&token, Duration::from_secs(1)).is_some());

    let daemon = env.start_daemon();
    let db = env.state_dir().join("sessions.db");
    assert_eq!(integrity(&db), "ok");
    let after = rows(&db, &sid);
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "rows committed before the crash changed"
    );
    let roles: Vec<&str> = before.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant"],
        "{before:?}"
    );
    // The pending command, recorded as not completed, then the note.
    let added = &after[before.len()..];
    assert_eq!(added.len(), 2, "{added:?}");
    let tool: Value = serde_json::from_str(added[0].3.as_deref().unwrap()).unwrap();
    assert_eq!(added[0].1, "tool");
    assert_eq!(tool["command"], command.as_str());
    assert_eq!(tool["status"], "interrupted");
    assert_eq!(tool["exit_code"], Value::Null);
    assert_eq!(
        added[1].1, "error",
        "the note is an error record: {added:?}"
    );
    assert!(
        added[1].2.starts_with("This request was interrupted"),
        "{added:?}"
    );

    let shown = env.run(&["sessions", "show", &sid]);
    let text = stdout(&shown);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(
        text.contains("→ interrupted (not completed, not run again)"),
        "{text}"
    );
    assert!(
        text.contains("[error] ✗ This request was interrupted"),
        "{text}"
    );

    let next = env.run(&["ask", "--session", &sid, "Third question?"]);
    assert!(next.status.success(), "{}", stderr(&next));
    assert_eq!(stdout(&next).trim(), "Third answer.");
    // The model heard that the command did not complete; nothing asked to run it again.
    let bodies = model.llm.chat_bodies();
    let last = bodies
        .iter()
        .rev()
        .find(|b| b["max_tokens"] != 15)
        .unwrap()
        .to_string();
    assert!(last.contains("Command NOT COMPLETED"), "{last}");
    assert!(
        !last.contains("This request was interrupted"),
        "notes are not replayed"
    );
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(
        std::fs::read_to_string(&started).unwrap(),
        "run\n",
        "the command ran again"
    );
    assert!(
        !done.exists(),
        "the interrupted command finished after the crash"
    );
    drop(daemon);
}

#[test]
fn a_permission_card_from_before_a_crash_cannot_be_answered() {
    let env = Env::new_in("/var/tmp");
    let marks = marker_dir();
    let marker = marks.path().join("approved");
    let model = start_model(vec![propose(&format!("touch {}", marker.display()))]);
    configure(&env, &model, "LEVEL_3_HOST_USER", None, true);
    let mut daemon = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    send_ask(&mut c, "Create the marker.", 1);
    let card = wait_event(&mut c, "permission_request", Duration::from_secs(20))
        .unwrap_or_else(|| panic!("no card\n{}", daemon.log_text()));
    let id = card["request"]["id"].as_str().unwrap().to_string();
    let sid = card["request"]["session_id"].as_str().unwrap().to_string();
    kill_9(&mut daemon);

    let _daemon = env.start_daemon();
    let mut c = RawClient::connect(&env.socket());
    let r = c.call(
        "permission_answer",
        json!({"request_id": id, "allow": true, "remember": true}),
        1,
    );
    assert_eq!(r["result"]["delivered"], false, "{r}");
    let cli = env.run(&["permissions", "answer", &id, "--allow"]);
    assert!(!cli.status.success());
    assert!(
        stderr(&cli).contains("asked before Sayri restarted"),
        "{}",
        stderr(&cli)
    );
    let list = c.call("permission_list", json!({}), 2);
    assert_eq!(list["result"]["pending"], json!([]), "{list}");
    assert_eq!(
        list["result"]["approvals"],
        json!({}),
        "nothing was remembered: {list}"
    );
    let detail = c.call("session_get", json!({"session_id": sid}), 3);
    let msgs = detail["result"]["messages"].as_array().unwrap();
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call"]["status"], "interrupted", "{detail}");
    assert!(
        msgs.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("waiting for permission or running"),
        "{detail}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "an expired card's command ran");
}

/// Environment variable that turns `daemon_host_with_a_supervised_child` into a daemon.
const HOST_ENV: &str = "SAYRI_TEST_DAEMON_HOST";

/// Runs only as the child of `kill_9_of_the_daemon_ends_its_supervised_children`: the real
/// daemon (the library's `Daemon`) with one supervised child, the stubborn test child program.
#[test]
#[ignore = "the daemon process of the supervised-child crash test"]
fn daemon_host_with_a_supervised_child() {
    let Ok(token) = std::env::var(HOST_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // A test binary does not live next to `sayri-exec`: name the one cargo built.
    sayri_daemon::brain::settings::use_helper_program(
        sayri_daemon::brain::settings::HelperProgram {
            program: exec_bin(),
            args: Vec::new(),
        },
    );
    rt.block_on(async move {
        let paths = sayri_client::paths::Paths::from_env().unwrap();
        let daemon =
            sayri_daemon::daemon::Daemon::bind(paths, sayri_daemon::daemon::default_dispatcher())
                .unwrap();
        let mut spec = test_child::spec("stubborn", &format!("stubborn:{token}"));
        spec.stop_grace = std::time::Duration::from_millis(500);
        daemon.state().supervisor.start(spec).unwrap();
        daemon.run().await;
    });
}

/// Starts the daemon host with its stubborn supervised child (marked by `token`) and waits
/// until the child and its three descendants run and `status` lists it. Returns the host and
/// the pids of the program and its keeper.
pub fn start_host(env: &Env, token: &str) -> (Daemon, i32, i32) {
    let log = std::fs::File::create(env.daemon_log()).unwrap();
    let host = Daemon {
        child: Some(
            env.cmd_for(&std::env::current_exe().unwrap())
                .args([
                    "suite::crash_safety::daemon_host_with_a_supervised_child",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(HOST_ENV, token)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        ),
        log: env.daemon_log(),
    };
    assert!(
        eventually(Duration::from_secs(15), || {
            processes_with(&format!("1000.{token}")).len() == 3
        }),
        "{}",
        host.log_text()
    );
    let mut c = RawClient::connect(&env.socket());
    let status = c.call("status", json!({}), 1);
    let child = &status["result"]["supervised"][0];
    assert_eq!(child["name"], "stubborn", "{status}");
    assert_eq!(child["state"], "running", "{status}");
    let program = child["pid"].as_i64().unwrap() as i32;
    let keeper = child["keeper_pid"].as_i64().unwrap() as i32;
    assert!(alive(program) && alive(keeper));
    (host, program, keeper)
}

#[test]
fn quit_stops_the_supervised_children_before_the_daemon_exits() {
    let env = Env::new_in("/var/tmp");
    let token = format!("{}3", std::process::id());
    let (mut host, program, keeper) = start_host(&env, &token);
    let mut c = RawClient::connect(&env.socket());
    assert_eq!(c.call("quit", json!({}), 1)["result"]["ok"], true);
    let mut child = host.child.take().unwrap();
    assert!(
        eventually(Duration::from_secs(10), || child
            .try_wait()
            .unwrap()
            .is_some()),
        "the daemon did not exit"
    );
    // By the time the daemon is gone, its children are too (stopped, not orphaned).
    assert!(!alive(program) && !alive(keeper));
    assert_eq!(processes_with(&format!("1000.{token}")), vec![]);
    let log = std::fs::read_to_string(env.state_dir().join("logs/stubborn.log")).unwrap();
    assert!(log.contains("stopped on request"), "{log}");
}

#[test]
fn kill_9_of_the_daemon_ends_its_supervised_children() {
    let env = Env::new_in("/var/tmp");
    let token = format!("{}6", std::process::id());
    let (mut host, program, keeper) = start_host(&env, &token);
    kill_9(&mut host);
    let t = Instant::now();
    let gone = eventually(Duration::from_secs(3), || {
        !alive(program) && !alive(keeper) && processes_with(&format!("1000.{token}")).is_empty()
    });
    let took = t.elapsed();
    assert!(
        gone && took <= Duration::from_secs(1),
        "supervised child still running {took:?} after kill -9: {:?}",
        processes_with(&format!("1000.{token}"))
    );
    eprintln!("supervised child and its descendants gone {took:?} after kill -9 of the daemon");
}

/// Start time of `pid` in clock ticks, from `/proc/PID/stat`.
fn start_ticks(pid: i32) -> u64 {
    ProcessIdentity::of(pid).unwrap().start_ticks
}

#[test]
fn leftovers_of_a_crashed_daemon_are_killed_at_start_but_a_recycled_pid_is_left_alone() {
    let env = Env::new_in("/var/tmp");
    let token = format!("{}4", std::process::id());
    // Two processes started outside any daemon's tree.
    let mut leftover = std::process::Command::new("sleep")
        .arg(format!("1000.{token}1"))
        .spawn()
        .unwrap();
    let mut unrelated = std::process::Command::new("sleep")
        .arg(format!("1000.{token}2"))
        .spawn()
        .unwrap();
    let registry = ChildRegistry::new(env.state_dir().join("children"));
    // The daemon that wrote the records is gone (no process has this start time).
    let dead_owner = ProcessIdentity {
        pid: std::process::id() as i32,
        start_ticks: 1,
    };
    let record = |kind, name: &str, process: ProcessIdentity| ChildRecord {
        kind,
        name: name.into(),
        process,
        session: process.pid,
        boot_id: boot_id(),
        owner: dead_owner,
    };
    let l = leftover.id() as i32;
    let u = unrelated.id() as i32;
    std::mem::forget(registry.write(&record(
        ChildKind::Supervised,
        "leftover-model-server",
        ProcessIdentity {
            pid: l,
            start_ticks: start_ticks(l),
        },
    )));
    // A stale record whose pid now belongs to another program: other start time.
    std::mem::forget(registry.write(&record(
        ChildKind::ExecHelper,
        "command",
        ProcessIdentity {
            pid: u,
            start_ticks: start_ticks(u).saturating_sub(100),
        },
    )));
    assert_eq!(registry.records().len(), 2);

    let daemon = env.start_daemon();
    let t = Instant::now();
    let killed = eventually(Duration::from_secs(1), || {
        leftover.try_wait().unwrap().is_some()
    });
    assert!(killed, "the recorded leftover survived the start");
    eprintln!(
        "leftover killed {:?} after the daemon answered",
        t.elapsed()
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        unrelated.try_wait().unwrap().is_none(),
        "an unrelated process with a recorded pid was killed"
    );
    assert!(registry.records().is_empty(), "stale records were kept");
    let log = daemon.log_text();
    assert!(
        log.contains(&format!("killed pid {l} (leftover-model-server)")),
        "{log}"
    );
    assert!(!log.contains(&format!("killed pid {u}")), "{log}");
    let _ = unrelated.kill();
    let _ = unrelated.wait();
}
