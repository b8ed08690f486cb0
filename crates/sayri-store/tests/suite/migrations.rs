use sayri_core::ports::{ApprovalStore, Role, SessionStore};
use sayri_store::{OpenError, Store, migrations};

/// The schema the original Python Sayri wrote: no version, no approvals table.
const ORIGINAL: &str = "
CREATE TABLE sessions (
  id TEXT PRIMARY KEY, title TEXT NOT NULL, agent_id TEXT NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL,
  token_usage INTEGER DEFAULT 0, metadata TEXT DEFAULT '{}');
CREATE TABLE messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
  content TEXT NOT NULL, tool_calls_json TEXT DEFAULT '[]', tool_call_id TEXT,
  timestamp REAL NOT NULL, metadata TEXT DEFAULT '{}',
  FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE);
CREATE TABLE gateway_peers (
  peer_id TEXT PRIMARY KEY, channel TEXT NOT NULL, agent_id TEXT NOT NULL,
  is_authorized INTEGER DEFAULT 0, authorized_at REAL, metadata TEXT DEFAULT '{}');
CREATE TABLE agent_preferences (
  id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL, intent TEXT NOT NULL,
  command TEXT NOT NULL, rejected_command TEXT DEFAULT '', success_count INTEGER DEFAULT 1,
  failure_count INTEGER DEFAULT 0, score REAL DEFAULT 1.0, notes TEXT DEFAULT '',
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
INSERT INTO sessions VALUES ('old', 'Old chat', 'default', 10, 20, 0, '{}');
INSERT INTO sessions VALUES ('empty', 'New Conversation', 'default', 30, 30, 0, '{}');
INSERT INTO messages (session_id, role, content, tool_calls_json, timestamp)
  VALUES ('old', 'user', 'how much disk?', '[]', 11);
INSERT INTO messages (session_id, role, content, tool_calls_json, timestamp)
  VALUES ('old', 'assistant', '```bash\ndf -h\n```',
          '[{\"id\":\"ab12cd34\",\"name\":\"bash\",\"status\":\"success\"}]', 12);
INSERT INTO agent_preferences (agent_id, intent, command, created_at, updated_at)
  VALUES ('default', 'play', 'vlc', 1, 1);
INSERT INTO agent_preferences (agent_id, intent, command, created_at, updated_at)
  VALUES ('default', 'play', 'vlc', 2, 2);
INSERT INTO gateway_peers (peer_id, channel, agent_id, is_authorized, authorized_at)
  VALUES ('@ada', 'matrix', 'default', 1, 7);
";

#[test]
fn an_original_python_database_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(ORIGINAL).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 0);
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), migrations::LATEST);
    let msgs = store.messages("old").unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0].content, "how much disk?");
    assert_eq!(msgs[1].role, Role::Assistant);
    assert_eq!(
        msgs[1].tool_call, None,
        "old list-shaped tool calls are left in their column"
    );
    // The empty row the original created at every start is never listed.
    let listed: Vec<_> = store
        .list_sessions(10)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, ["old"]);
    // Duplicate preference rows were merged so the new unique key holds.
    assert_eq!(store.list_preferences(None, 10).unwrap().len(), 1);
    // New tables exist.
    assert!(store.all_approvals().unwrap().is_empty());
    assert!(store.gateway_instances().unwrap().is_empty());
    // Peer rows survive the new (channel, peer) key.
    assert!(store.is_peer_authorized("@ada", "matrix").unwrap());
    drop(store);
    // Reopening is a no-op.
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), migrations::LATEST);
    assert_eq!(store.messages("old").unwrap().len(), 2);
}

#[test]
fn a_file_from_a_newer_sayri_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, OpenError::TooNew { found: 99, .. }), "{err}");
    assert!(err.to_string().contains("upgrade Sayri"), "{err}");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, 99);
}

#[test]
fn pragmas_are_wal_and_foreign_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let _store = Store::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal", "WAL is persistent in the file");
    assert!(dir.path().join("sessions.db-wal").exists());
}

/// Earlier versions (and the original Sayri) stored a failed request as an assistant row
/// starting with `⚠️`; the migration turns each into an error record, and nothing else.
#[test]
fn old_warning_rows_become_error_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(ORIGINAL).unwrap();
        conn.execute_batch(
            "INSERT INTO messages (session_id, role, content, timestamp)
               VALUES ('old', 'assistant', '⚠️ Sayri Error: no model server at http://x/v1', 13);
             INSERT INTO messages (session_id, role, content, timestamp)
               VALUES ('old', 'assistant', '⚠ This request was interrupted', 14);
             INSERT INTO messages (session_id, role, content, timestamp)
               VALUES ('old', 'assistant', 'Careful ⚠️ this is fine', 15);
             INSERT INTO messages (session_id, role, content, timestamp)
               VALUES ('old', 'user', '⚠️ my own words', 16);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let rows: Vec<(Role, String)> = store
        .messages("old")
        .unwrap()
        .into_iter()
        .map(|m| (m.role, m.content))
        .collect();
    assert_eq!(
        rows[2..],
        [
            (Role::Error, "no model server at http://x/v1".to_string()),
            (Role::Error, "This request was interrupted".to_string()),
            (Role::Assistant, "Careful ⚠️ this is fine".to_string()),
            (Role::User, "⚠️ my own words".to_string()),
        ]
    );
}

/// A session id prefix is compared literally: `%` and `_` are not patterns.
#[test]
fn session_ids_with_prefix_match_literally() {
    use sayri_core::ports::{NewMessage, SessionSeed};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("sessions.db")).unwrap();
    for id in ["ab%d-1", "abcd-2", "abcd-3"] {
        let seed = SessionSeed {
            id,
            agent_id: "default",
            title: "t",
            parent: None,
        };
        store
            .append_message(&seed, &NewMessage::new(Role::User, "hi", 1.0))
            .unwrap();
    }
    assert_eq!(
        store.session_ids_with_prefix("abcd", 10).unwrap(),
        ["abcd-2", "abcd-3"]
    );
    assert_eq!(
        store.session_ids_with_prefix("ab%d", 10).unwrap(),
        ["ab%d-1"]
    );
    assert_eq!(
        store.session_ids_with_prefix("abcd", 1).unwrap(),
        ["abcd-2"]
    );
}

/// Removes what versions after 11 added (long-term memory, its index and proposals).
const LATER_THAN_11: &str = "
DROP TRIGGER memory_fts_insert; DROP TRIGGER memory_fts_delete; DROP TRIGGER memory_fts_update;
DROP TABLE memory_fts; DROP TABLE memory; DROP TABLE memory_proposals;";

/// Turns a fresh database into what an older build left at version 10: `without` names the
/// table or column that build did not have.
fn version_10_file(dir: &std::path::Path, without: &str) -> std::path::PathBuf {
    let path = dir.join("sessions.db");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let undo = match without {
        "gateway_replies" => "DROP TABLE gateway_replies;",
        _ => "DROP INDEX sessions_by_parent; ALTER TABLE sessions DROP COLUMN parent_id;",
    };
    conn.execute_batch(undo).unwrap();
    // Nor the tables of later versions.
    conn.execute_batch(LATER_THAN_11).unwrap();
    conn.execute_batch(
        "INSERT INTO sessions (id, title, agent_id, created_at, updated_at)
           VALUES ('kept', 'Kept', 'default', 1, 2);
         INSERT INTO messages (session_id, role, content, timestamp)
           VALUES ('kept', 'user', 'still here', 1);
         PRAGMA user_version = 10;",
    )
    .unwrap();
    path
}

/// After the upgrade both additions work: a sub-agent session is linked to its parent and a
/// gateway answer is recorded and found again.
fn assert_both_additions_work(store: &Store) {
    use sayri_core::ports::{NewMessage, SessionSeed};
    assert_eq!(store.schema_version().unwrap(), migrations::LATEST);
    assert_eq!(store.messages("kept").unwrap().len(), 1);
    let child = SessionSeed {
        id: "child",
        agent_id: "helper",
        title: "Delegated",
        parent: Some("kept"),
    };
    store
        .append_message(&child, &NewMessage::new(Role::User, "sub task", 3.0))
        .unwrap();
    let subs = store.sub_sessions("kept").unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].parent_id.as_deref(), Some("kept"));
    store
        .save_gateway_reply("tg", "77", "chat", "{\"answer\":1}", 4.0)
        .unwrap();
    assert_eq!(
        store.gateway_reply("tg", "77").unwrap().as_deref(),
        Some("{\"answer\":1}")
    );
}

#[test]
fn a_version_10_file_with_sub_agent_sessions_gains_the_gateway_replies_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = version_10_file(dir.path(), "gateway_replies");
    assert_both_additions_work(&Store::open(&path).unwrap());
}

#[test]
fn a_version_10_file_with_gateway_replies_gains_the_parent_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = version_10_file(dir.path(), "parent_id");
    // The recorded answers of that build are kept through the upgrade.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO gateway_replies VALUES ('tg', '5', 'chat', 'old answer', 1)",
            [],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.gateway_reply("tg", "5").unwrap().as_deref(),
        Some("old answer")
    );
    assert_both_additions_work(&store);
}
