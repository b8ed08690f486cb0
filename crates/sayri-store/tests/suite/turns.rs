//! The journal of running turns on SQLite: a turn is open from its start to its end; an open
//! turn survives a restart (reopening the file) and is closed with its notes in one
//! transaction; deleting its session removes it.

use super::fresh;
use sayri_core::ports::{NewMessage, Role, SessionSeed, SessionStore};

fn seed() -> SessionSeed<'static> {
    SessionSeed {
        id: "s1",
        agent_id: "default",
        title: "Title",
        parent: None,
    }
}

#[test]
fn an_open_turn_survives_a_restart_and_is_closed_with_its_notes_once() {
    let (dir, store) = fresh();
    let request = store
        .append_message(&seed(), &NewMessage::new(Role::User, "Do it.", 10.0))
        .unwrap();
    let done = store.turn_started("s1", request, 10.0).unwrap();
    store.turn_ended(done).unwrap();
    let open = store.turn_started("s1", request, 11.0).unwrap();
    drop(store);

    let store = sayri_store::Store::open(dir.path().join("sessions.db")).unwrap();
    let turns = store.open_turns().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(
        (
            turns[0].id,
            turns[0].session_id.as_str(),
            turns[0].request_message_id
        ),
        (open, "s1", request)
    );
    let notes = [
        NewMessage::new(Role::Tool, "not completed", 20.0),
        NewMessage::new(Role::Assistant, "⚠️ interrupted", 20.0),
    ];
    store.close_interrupted_turn(&turns[0], &notes).unwrap();
    assert!(store.open_turns().unwrap().is_empty());
    let msgs = store.messages("s1").unwrap();
    let contents: Vec<&str> = msgs.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["Do it.", "not completed", "⚠️ interrupted"]);
    let s = store.session("s1").unwrap().unwrap();
    assert_eq!((s.title.as_str(), s.updated_at), ("Title", 20.0));
}

#[test]
fn deleting_a_session_forgets_its_open_turns() {
    let (_d, store) = fresh();
    let request = store
        .append_message(&seed(), &NewMessage::new(Role::User, "Do it.", 10.0))
        .unwrap();
    store.turn_started("s1", request, 10.0).unwrap();
    assert!(store.delete_session("s1").unwrap());
    assert!(store.open_turns().unwrap().is_empty());
}
