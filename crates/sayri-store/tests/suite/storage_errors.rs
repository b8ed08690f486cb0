//! Every storage error names the file and its kind: a full disk (with the directory and the
//! space left), a read-only file system, a write lock another process holds past the busy
//! timeout (with that process's pid). None of them damages the file or loses what was stored.

use super::holder::{Hold, Holder, SmallDisk};
use sayri_core::ports::{NewMessage, Role, SessionSeed, SessionStore};
use sayri_store::Store;

fn seed() -> SessionSeed<'static> {
    SessionSeed {
        id: "s",
        agent_id: "default",
        title: "s",
        parent: None,
    }
}

fn integrity(path: &std::path::Path) -> String {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_full_disk_names_the_directory_keeps_the_file_intact_and_recovers_once_there_is_room() {
    let Some(disk) = SmallDisk::mount(8) else {
        return;
    };
    let path = disk.dir.join("sessions.db");
    let store = Store::open(&path).unwrap();
    store
        .append_message(&seed(), &NewMessage::new(Role::User, "before", 0.0))
        .unwrap();
    let filler = disk.fill_leaving(256 * 1024);
    let answer = "x".repeat(64 * 1024);
    let mut stored = 1;
    let error = loop {
        match store.append_message(
            &seed(),
            &NewMessage::new(Role::Assistant, answer.clone(), 1.0),
        ) {
            Ok(_) => stored += 1,
            Err(e) => break e.0,
        }
        assert!(stored < 100, "the disk never filled");
    };
    assert!(error.contains("full"), "{error}");
    assert!(error.contains(&disk.dir.display().to_string()), "{error}");
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert_eq!(
        store.messages("s").unwrap().len(),
        stored,
        "a failed write left a row"
    );
    assert_eq!(integrity(&path), "ok");

    std::fs::remove_file(filler).unwrap();
    store
        .append_message(&seed(), &NewMessage::new(Role::Assistant, answer, 2.0))
        .unwrap();
    assert_eq!(store.messages("s").unwrap().len(), stored + 1);
    drop(store);
    assert_eq!(integrity(&path), "ok");
}

#[test]
fn a_read_only_file_system_is_named_as_such() {
    let Some(disk) = SmallDisk::mount(8) else {
        return;
    };
    let path = disk.dir.join("sessions.db");
    drop(Store::open(&path).unwrap());
    disk.set_read_only(true);
    let outcome = Store::open(&path).map(|store| {
        store
            .append_message(&seed(), &NewMessage::new(Role::User, "hi", 0.0))
            .unwrap_err()
            .0
    });
    let message = match outcome {
        Ok(m) => m,
        Err(e) => e.to_string(),
    };
    disk.set_read_only(false);
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("read-only") || message.contains("readonly"),
        "{message}"
    );
}

#[test]
fn a_foreign_write_lock_fails_after_the_busy_timeout_naming_the_process_that_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Store::open(&path).unwrap();
    store
        .append_message(&seed(), &NewMessage::new(Role::User, "before", 0.0))
        .unwrap();
    let writer = Holder::start(&path, Hold::WriteLock);
    let started = std::time::Instant::now();
    let error = store
        .append_message(&seed(), &NewMessage::new(Role::User, "blocked", 1.0))
        .unwrap_err()
        .0;
    let waited = started.elapsed();
    assert!(
        waited >= sayri_store::BUSY_TIMEOUT - std::time::Duration::from_millis(200),
        "{waited:?}"
    );
    assert!(error.contains("locked by another process"), "{error}");
    assert!(error.contains(&writer.pid().to_string()), "{error}");
    drop(writer);
    store
        .append_message(&seed(), &NewMessage::new(Role::User, "after", 2.0))
        .unwrap();
    assert_eq!(store.messages("s").unwrap().len(), 2);
}
