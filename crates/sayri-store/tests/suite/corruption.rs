//! A damaged database: found by `Store::open_checked` (`quick_check`), refused with one message
//! naming the file and `sayri db recover` for every call, and rebuilt by `Store::recover`,
//! which keeps the damaged file untouched as `sessions.db.corrupt-<time>` (with its `-wal` and
//! `-shm`) and says what was lost.

use sayri_core::ports::{NewMessage, Role, SessionSeed, SessionStore};
use sayri_store::{Health, Store};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const PAGE: u64 = 4096;

fn seed(id: &str) -> SessionSeed<'_> {
    SessionSeed {
        id,
        agent_id: "default",
        title: id,
        parent: None,
    }
}

/// A database with 40 sessions of 10 messages (about 2 KiB each), closed.
fn populated() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).unwrap();
    for s in 0..40 {
        let id = format!("s{s:02}");
        for m in 0..10 {
            let text = format!("session {s} message {m} ").repeat(80);
            store
                .append_message(&seed(&id), &NewMessage::new(Role::User, text, m as f64))
                .unwrap();
        }
    }
    drop(store);
    (dir, path)
}

/// Overwrites `pages` pages from page `first` with noise (as `dd conv=notrunc` would).
fn scribble(path: &Path, first: u64, pages: u64) {
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ first;
    let mut noise = vec![0u8; (pages * PAGE) as usize];
    for b in noise.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    f.seek(SeekFrom::Start(first * PAGE)).unwrap();
    f.write_all(&noise).unwrap();
    f.sync_all().unwrap();
}

fn quick_check(path: &Path) -> String {
    let c = rusqlite::Connection::open(path).unwrap();
    let mut st = c.prepare("PRAGMA quick_check").unwrap();
    let rows: Vec<String> = st
        .query_map([], |r| r.get(0))
        .map(|r| r.filter_map(Result::ok).collect())
        .unwrap_or_else(|e| vec![e.to_string()]);
    rows.join("; ")
}

fn corrupt_copy(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.starts_with("sessions.db.corrupt-") && !n.ends_with("-wal") && !n.ends_with("-shm")
        })
        .expect("the damaged copy is kept")
}

#[test]
fn a_corrupt_file_is_refused_with_its_name_until_recovered_and_the_damage_is_kept() {
    let (dir, path) = populated();
    let pages = std::fs::metadata(&path).unwrap().len() / PAGE;
    scribble(&path, pages / 2, 2);
    assert_ne!(
        quick_check(&path),
        "ok",
        "the scribble did not damage the file"
    );
    let damaged_bytes = std::fs::read(&path).unwrap();

    let store = Store::open_checked(&path).unwrap();
    assert!(matches!(store.health(), Health::Corrupt { .. }));
    let refusal = store
        .append_message(&seed("new"), &NewMessage::new(Role::User, "hello", 1.0))
        .unwrap_err()
        .0;
    assert!(refusal.contains(&path.display().to_string()), "{refusal}");
    assert!(
        refusal.contains("corrupt") && refusal.contains("sayri db recover"),
        "{refusal}"
    );
    // Reads are refused too: nothing pretends the damaged file is fine.
    assert_eq!(store.list_sessions(100).unwrap_err().0, refusal);
    assert_eq!(store.status().state, sayri_store::DatabaseState::Corrupt);

    let report = store.recover(false).unwrap();
    let copy = report.damaged_copy.clone().unwrap();
    assert_eq!(copy, corrupt_copy(dir.path()));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        damaged_bytes,
        "the damaged copy changed"
    );
    let messages = report
        .tables
        .iter()
        .find(|t| t.table == "messages")
        .unwrap();
    assert!(
        messages.rows_kept > 0 && messages.rows_kept < 400,
        "{messages:?}"
    );
    let summary = report.summary();
    assert!(
        summary.contains("lost") && summary.contains(&copy.display().to_string()),
        "{summary}"
    );
    eprintln!("{summary}");

    // The store goes on with the rebuilt file: reads, writes, a clean check.
    assert_eq!(store.health(), Health::Ok);
    store
        .append_message(&seed("new"), &NewMessage::new(Role::User, "hello", 1.0))
        .unwrap();
    assert_eq!(store.messages("new").unwrap().len(), 1);
    let kept: usize = store
        .list_sessions(100)
        .unwrap()
        .iter()
        .map(|s| store.messages(&s.id).unwrap().len())
        .sum();
    assert_eq!(kept as u64, messages.rows_kept + 1);
    drop(store);
    assert_eq!(quick_check(&path), "ok");
}

#[test]
fn recovery_with_the_daemon_connection_open_keeps_the_log_and_its_index_beside_the_copy() {
    let (dir, path) = populated();
    let store = Store::open_checked(&path).unwrap();
    assert_eq!(store.health(), Health::Ok);
    store
        .append_message(
            &seed("late"),
            &NewMessage::new(Role::User, "in the log", 2.0),
        )
        .unwrap();
    assert!(store.wal_bytes() > 0);
    let report = store.recover(true).unwrap();
    let copy = report.damaged_copy.clone().unwrap();
    for suffix in ["-wal", "-shm"] {
        let mut p = copy.clone().into_os_string();
        p.push(suffix);
        assert!(
            Path::new(&p).exists(),
            "{} missing",
            Path::new(&p).display()
        );
    }
    // Nothing was damaged, so nothing is lost — including the row only the log held.
    assert!(
        report.tables.iter().all(|t| !t.lost_anything()),
        "{report:?}"
    );
    assert_eq!(store.messages("late").unwrap().len(), 1);
    assert_eq!(store.list_sessions(100).unwrap().len(), 41);
    drop(dir);
}

#[test]
fn a_file_that_passes_its_check_is_left_alone_unless_forced() {
    let (dir, path) = populated();
    let store = Store::open_checked(&path).unwrap();
    let report = store.recover(false).unwrap();
    assert!(report.damaged_copy.is_none());
    assert!(report.summary().contains("nothing was changed"));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("corrupt"))
    );
}

#[test]
fn a_file_whose_first_page_is_noise_still_lets_the_store_start_refused_and_rebuild_empty() {
    let (dir, path) = populated();
    scribble(&path, 0, 1);
    let store = Store::open_checked(&path).unwrap();
    let refusal = store.corruption().expect("refused");
    assert!(refusal.contains("sessions.db"), "{refusal}");
    let report = store.recover(false).unwrap();
    assert!(
        report.tables.iter().any(|t| t.lost_anything()),
        "{report:?}"
    );
    store
        .append_message(&seed("after"), &NewMessage::new(Role::User, "works", 1.0))
        .unwrap();
    assert!(corrupt_copy(dir.path()).exists());
}

#[test]
fn recovery_finishes_and_accounts_for_the_rows_wherever_the_damage_lies() {
    let (dir, path) = populated();
    let pristine = std::fs::read(&path).unwrap();
    let pages = pristine.len() as u64 / PAGE;
    for first in (1..pages - 2).step_by(7) {
        std::fs::write(&path, &pristine).unwrap();
        scribble(&path, first, 2);
        let store = Store::open_checked(&path).unwrap();
        let started = std::time::Instant::now();
        let report = store
            .recover(true)
            .unwrap_or_else(|e| panic!("damage at page {first}: {e}"));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "page {first}"
        );
        let messages = report
            .tables
            .iter()
            .find(|t| t.table == "messages")
            .unwrap();
        assert!(messages.rows_kept <= 400, "page {first}: {messages:?}");
        if messages.rows_kept < 400 {
            assert!(
                messages.lost_anything(),
                "page {first}: rows vanished unreported"
            );
        }
        drop(store);
        assert_eq!(quick_check(&path), "ok", "page {first}");
        for f in std::fs::read_dir(dir.path()).unwrap() {
            let p = f.unwrap().path();
            if p != path {
                std::fs::remove_file(p).unwrap();
            }
        }
    }
}
