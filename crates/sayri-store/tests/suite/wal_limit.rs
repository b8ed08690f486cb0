//! The write-ahead log stays bounded: it grows while another process holds a snapshot (SQLite
//! cannot checkpoint past it), is reported as held back by that process, and is back within
//! `WAL_LIMIT_BYTES` once the reader ends — by the checkpoint that follows a turn, or by the
//! daemon's maintenance (`Store::maintain`).

use super::fresh;
use super::holder::{Hold, Holder};
use sayri_core::ports::{NewMessage, Role, SessionSeed, SessionStore};
use sayri_store::{Store, WAL_LIMIT_BYTES};

fn seed() -> SessionSeed<'static> {
    SessionSeed {
        id: "chat",
        agent_id: "default",
        title: "chat",
        parent: None,
    }
}

/// One turn as the engine stores it: request, journal row, answer, journal end.
fn turn(store: &Store, n: usize, answer_bytes: usize) {
    let req = store
        .append_message(
            &seed(),
            &NewMessage::new(Role::User, format!("turn {n}"), n as f64),
        )
        .unwrap();
    let j = store.turn_started("chat", req, n as f64).unwrap();
    let answer = format!("{n} ").repeat(answer_bytes / 3);
    store
        .append_message(&seed(), &NewMessage::new(Role::Assistant, answer, n as f64))
        .unwrap();
    store.turn_ended(j).unwrap();
}

#[test]
fn after_twenty_turns_under_a_foreign_reader_the_wal_is_back_within_its_limit_once_it_ends() {
    let (_dir, store) = fresh();
    turn(&store, 0, 100);
    let reader = Holder::start(store.path(), Hold::Snapshot);
    // 20 turns with 300 KiB answers: about 6 MiB of log that nobody may checkpoint.
    for n in 1..=20 {
        turn(&store, n, 300 * 1024);
    }
    let held = store.wal_bytes();
    assert!(
        held > WAL_LIMIT_BYTES,
        "the reader should have kept the log from being reset: {held} bytes"
    );
    let status = store.status();
    assert_eq!(status.readers, vec![reader.pid()], "{status:?}");
    let last = status
        .last_checkpoint
        .expect("a checkpoint ran after the turns");
    assert!(last.held_back && !last.truncated, "{last:?}");

    drop(reader);
    let done = store
        .maintain()
        .expect("the log holds frames, so maintenance checkpoints");
    assert!(done.truncated && !done.held_back, "{done:?}");
    let after = store.wal_bytes();
    assert!(
        after <= WAL_LIMIT_BYTES,
        "{after} bytes of log left once the reader ended (limit {WAL_LIMIT_BYTES})"
    );
    assert!(store.status().readers.is_empty());
    assert_eq!(store.messages("chat").unwrap().len(), 42);
    eprintln!("log held back: {held} bytes; once the reader ended: {after} bytes");
}

#[test]
fn the_checkpoint_after_a_turn_empties_the_log_when_nobody_reads() {
    let (_dir, store) = fresh();
    for n in 0..5 {
        turn(&store, n, 64 * 1024);
        assert_eq!(store.wal_bytes(), 0, "turn {n} left a log behind");
    }
    let last = store.last_checkpoint().unwrap();
    assert!(last.truncated, "{last:?}");
}

#[test]
fn a_reader_on_the_newest_snapshot_keeps_only_the_truncation_back() {
    let (_dir, store) = fresh();
    turn(&store, 0, 1000);
    let _reader = Holder::start(store.path(), Hold::Snapshot);
    turn(&store, 1, 1000);
    let c = store.last_checkpoint().unwrap();
    assert!(c.held_back, "{c:?}");
    assert!(store.wal_bytes() > 0);
    // Nothing that committed is lost or waits on the reader.
    assert_eq!(store.messages("chat").unwrap().len(), 4);
}

#[test]
fn plain_writes_cut_a_grown_log_back_to_the_limit_without_a_truncating_checkpoint() {
    let (_dir, store) = fresh();
    turn(&store, 0, 100);
    let reader = Holder::start(store.path(), Hold::Snapshot);
    for n in 1..=20 {
        turn(&store, n, 300 * 1024);
    }
    assert!(store.wal_bytes() > WAL_LIMIT_BYTES);
    drop(reader);
    // Messages only (no turn end, no maintenance): SQLite's own checkpoint after a commit, then
    // the reset of the log by the next write, which `journal_size_limit` cuts to the limit.
    for n in 0..3 {
        store
            .append_message(
                &seed(),
                &NewMessage::new(Role::User, format!("more {n}"), 0.0),
            )
            .unwrap();
    }
    let after = store.wal_bytes();
    assert!(after <= WAL_LIMIT_BYTES, "{after} bytes");
}
