//! The real daemon's session database when the host misbehaves: a reader in another process
//! holding the log (the log is back within its limit once it ends, without another turn), a
//! corrupt file (told once, turns refused without a model call, `sayri db recover` rebuilds it
//! without a restart), and a full disk (the turn fails naming the directory, the daemon stays
//! up, the next turn works once there is room).

use super::scripted_turns::{Model, write_config};
use super::support::*;
use sayri_testkit::{RecordedRequest, Reply, Script, sse, turns::is_title_request};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The WAL limit the daemon documents (`sayri_store::WAL_LIMIT_BYTES`).
const WAL_LIMIT: u64 = sayri_store::WAL_LIMIT_BYTES;

/// A model answering every turn with `bytes` of text.
fn model_answering(bytes: usize) -> Model {
    Model::scripted(Script::from_fn(move |req: &RecordedRequest| {
        if req.json().is_some_and(|v| is_title_request(&v)) {
            return Reply::sse(sse::content_stream(&["A title"]));
        }
        let text = "All fine here. ".repeat(bytes / 15);
        Reply::sse(sse::content_stream(&[&text]))
    }))
}

fn chat_requests(model: &Model) -> usize {
    model
        .llm
        .requests()
        .iter()
        .filter(|r| r.json().is_some_and(|v| !is_title_request(&v)))
        .count()
}

fn ask(env: &Env, text: &str) -> std::process::Output {
    env.run(&["ask", "--json", text])
}

fn status(env: &Env) -> Value {
    let mut c = RawClient::connect(&env.socket());
    c.call("status", json!({}), 1)["result"].clone()
}

/// A Python `sqlite3` process (another SQLite build, as a backup tool would be) holding a read
/// transaction on `db` until dropped.
struct Reader(Child);

impl Reader {
    fn hold(db: &Path) -> Reader {
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import sqlite3,sys,time\n\
                 c=sqlite3.connect(sys.argv[1],isolation_level=None)\n\
                 c.execute('BEGIN'); c.execute('SELECT count(*) FROM messages').fetchone()\n\
                 print('holding',flush=True); time.sleep(600)",
            ])
            .arg(db)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "holding");
        Reader(child)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wal_bytes(db: &Path) -> u64 {
    let mut p = db.as_os_str().to_owned();
    p.push("-wal");
    std::fs::metadata(p).map_or(0, |m| m.len())
}

#[test]
fn after_a_twenty_turn_chat_under_a_foreign_reader_the_wal_is_within_its_limit_once_it_ends() {
    let env = Env::new();
    let model = model_answering(300 * 1024);
    write_config(&env, &model, 30, "default");
    let _d = env.start_daemon();
    assert!(ask(&env, "turn 0").status.success());
    let db = env.state_dir().join("sessions.db");
    let reader = Reader::hold(&db);
    for n in 1..=20 {
        let out = ask(&env, &format!("turn {n}"));
        assert!(out.status.success(), "turn {n}: {}", stderr(&out));
    }
    let held = wal_bytes(&db);
    assert!(
        held > WAL_LIMIT,
        "the reader should have held the log: {held}"
    );
    let st = status(&env)["database"].clone();
    assert_eq!(st["readers"], json!([reader.0.id()]), "{st}");

    // `sayri doctor` names the reader and the held-back checkpoint.
    let doctor: Value = serde_json::from_slice(&env.run(&["doctor", "--json"]).stdout).unwrap();
    let finding = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "database")
        .cloned()
        .unwrap();
    let detail = finding["detail"].as_str().unwrap();
    assert!(
        detail.contains("held back") && detail.contains(&reader.0.id().to_string()),
        "{finding}"
    );

    drop(reader);
    // No further turn: the daemon's maintenance notices the reader is gone.
    let back = eventually(Duration::from_secs(20), || wal_bytes(&db) <= WAL_LIMIT);
    let after = wal_bytes(&db);
    assert!(
        back,
        "{after} bytes of log 20 s after the reader ended (limit {WAL_LIMIT})"
    );
    eprintln!("log while held: {held} bytes; after the reader ended: {after} bytes");
    assert_eq!(chat_requests(&model), 21);
}

/// Overwrites two pages in the middle of `db` with noise, as `dd conv=notrunc` would.
fn scribble(db: &Path) {
    let len = std::fs::metadata(db).unwrap().len();
    let mut f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let noise: Vec<u8> = (0..8192)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    f.seek(SeekFrom::Start((len / 4096 / 2) * 4096)).unwrap();
    f.write_all(&noise).unwrap();
    f.sync_all().unwrap();
}

fn quick_check(db: &Path) -> String {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0))
        .unwrap_or_else(|e| e.to_string())
}

fn corrupt_copies(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("sessions.db.corrupt-"))
        .collect()
}

#[test]
fn a_corrupt_database_is_told_once_refuses_turns_without_a_model_call_and_recovers_live() {
    let env = Env::new();
    let model = model_answering(8 * 1024);
    write_config(&env, &model, 30, "default");
    let mut d = env.start_daemon();
    for n in 0..30 {
        let out = ask(&env, &format!("turn {n}"));
        assert!(out.status.success(), "{}", stderr(&out));
    }
    d.terminate(Duration::from_secs(10));
    let db = env.state_dir().join("sessions.db");
    scribble(&db);
    assert_ne!(quick_check(&db), "ok", "the noise did not damage the file");

    let _d = env.start_daemon();
    assert_eq!(
        RawClient::connect(&env.socket()).call("ping", json!({}), 1)["result"],
        "pong"
    );
    let st = status(&env)["database"].clone();
    assert_eq!(st["state"], "corrupt", "{st}");
    let said = st["error"].as_str().unwrap().to_string();
    assert!(
        said.contains(&db.display().to_string()) && said.contains("sayri db recover"),
        "{said}"
    );

    let before = chat_requests(&model);
    for n in 0..5 {
        let out = ask(&env, &format!("refused {n}"));
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            text.contains("corrupt") && text.contains("sayri db recover"),
            "{text}"
        );
    }
    assert_eq!(
        chat_requests(&model),
        before,
        "a refused turn reached the model"
    );
    let log = std::fs::read_to_string(env.daemon_log()).unwrap();
    let told = log.lines().filter(|l| l.contains("is corrupt")).count();
    assert!(told <= 2, "the corruption was logged {told} times:\n{log}");
    assert!(!log.contains("panicked"), "{log}");

    let out = env.run(&["db", "recover"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = stdout(&out);
    assert!(
        summary.contains("sessions.db.corrupt-") && summary.contains("kept"),
        "{summary}"
    );
    assert!(!corrupt_copies(&env.state_dir()).is_empty());
    assert_eq!(status(&env)["database"]["state"], "ok");
    let out = ask(&env, "after the rebuild");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(chat_requests(&model), before + 1);
    eprintln!("{summary}");
}

/// A tmpfs of `mib` MiB over `dir`, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn over(dir: &Path, mib: u64) -> Option<SmallDisk> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m,mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallDisk(dir.to_path_buf()))
    }

    fn fill_leaving(&self, leave: u64) -> PathBuf {
        let s = nix::sys::statvfs::statvfs(&self.0).unwrap();
        let free = s.blocks_available() * s.fragment_size();
        let filler = self.0.join("filler");
        assert!(
            Command::new("fallocate")
                .args(["-l", &free.saturating_sub(leave).to_string()])
                .arg(&filler)
                .status()
                .unwrap()
                .success()
        );
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_fails_the_turn_naming_the_directory_and_the_next_turn_works_once_there_is_room() {
    let env = Env::new();
    let Some(disk) = SmallDisk::over(&env.state_dir(), 8) else {
        eprintln!("cannot mount a tmpfs here (needs root): this test cannot run");
        return;
    };
    let model = model_answering(64 * 1024);
    write_config(&env, &model, 30, "default");
    let mut d = env.start_daemon();
    assert!(ask(&env, "first").status.success());
    let filler = disk.fill_leaving(256 * 1024);
    let db = env.state_dir().join("sessions.db");
    let mut failure = None;
    for n in 0..40 {
        let out = ask(&env, &format!("turn {n}"));
        let text = format!("{}{}", stdout(&out), stderr(&out));
        if text.contains("full") {
            failure = Some(text);
            break;
        }
    }
    let failure = failure.expect("no turn failed on a full disk");
    assert!(
        failure.contains(&env.state_dir().display().to_string()),
        "{failure}"
    );
    let log_before = std::fs::metadata(env.daemon_log()).unwrap().len();
    for n in 0..20 {
        ask(&env, &format!("failing {n}"));
    }
    let grown = std::fs::metadata(env.daemon_log()).unwrap().len() - log_before;
    assert!(
        grown < 10 * 1024,
        "the log grew {grown} bytes over 20 failed turns"
    );
    assert_eq!(
        RawClient::connect(&env.socket()).call("ping", json!({}), 1)["result"],
        "pong"
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(c);

    std::fs::remove_file(filler).unwrap();
    let out = ask(&env, "room again");
    assert!(out.status.success(), "{}", stderr(&out));
    let doctor: Value = serde_json::from_slice(&env.run(&["doctor", "--json"]).stdout).unwrap();
    let finding = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "database")
        .cloned()
        .unwrap();
    assert_eq!(finding["status"], "ok", "{finding}");
    d.terminate(Duration::from_secs(10));
    eprintln!("the failing turn said: {failure}; log growth over 20 failed turns: {grown} bytes");
}
