//! Crash safety: a child process appends messages in a loop and is killed with SIGKILL
//! mid-way; the file must then be valid and hold every message the child reported committed.

use sayri_core::ports::{NewMessage, Role, SessionSeed, SessionStore, ToolCallRecord};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const DB_ENV: &str = "SAYRI_STORE_CRASH_DB";

/// Runs only as the child of `kill_9_mid_write_keeps_every_committed_message`.
#[test]
#[ignore = "child process of the crash test"]
fn crash_child_writer() {
    let Ok(path) = std::env::var(DB_ENV) else {
        return;
    };
    let store = sayri_store::Store::open(path).unwrap();
    let seed = SessionSeed {
        id: "crash",
        agent_id: "default",
        title: "crash",
        parent: None,
    };
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let mut m = NewMessage::new(
            if i % 2 == 0 { Role::User } else { Role::Tool },
            format!("message {i} {}", "x".repeat((i % 50) as usize * 40)),
            i as f64,
        );
        if i % 2 == 1 {
            m.tool_call = Some(ToolCallRecord {
                command: format!("echo {i}"),
                exit_code: Some(0),
                status: "success".into(),
                output: i.to_string(),
                duration_ms: 1.0,
                delegated: None,
            });
        }
        store.append_message(&seed, &m).unwrap();
        // Reported only after the commit returned.
        writeln!(out, "committed {i}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn kill_9_mid_write_keeps_every_committed_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "suite::crash::crash_child_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DB_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut last = None;
    while let Some(Ok(line)) = lines.next() {
        if let Some(n) = line.strip_prefix("committed ") {
            last = Some(n.parse::<u64>().unwrap());
            if last >= Some(300) {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Lines already in the pipe were committed before the kill, too.
    for line in lines.map_while(Result::ok) {
        if let Some(n) = line.strip_prefix("committed ") {
            last = Some(n.parse().unwrap());
        }
    }
    let last = last.expect("the child committed nothing");
    assert!(last >= 300);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let store = sayri_store::Store::open(&path).unwrap();
    let msgs = store.messages("crash").unwrap();
    assert!(
        msgs.len() as u64 > last,
        "{} rows, child reported {last} committed",
        msgs.len()
    );
    for (i, m) in msgs.iter().enumerate() {
        assert!(
            m.content.starts_with(&format!("message {i} ")),
            "row {i}: {}",
            m.content
        );
        if i % 2 == 1 {
            assert_eq!(m.tool_call.as_ref().unwrap().command, format!("echo {i}"));
        }
    }
    eprintln!(
        "child killed after {last} reported commits; {} rows present",
        msgs.len()
    );
}
