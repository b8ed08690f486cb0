//! Versioned schema migrations, tracked in SQLite's `PRAGMA user_version`.
//!
//! * Version 0 — an empty file, or a database written by the original Python Sayri (same
//!   tables, created with `CREATE TABLE IF NOT EXISTS`, no version).
//! * Version 1 — the original tables (`sessions`, `messages`, `gateway_peers`,
//!   `agent_preferences`); creating them "if not exists" adopts an original file unchanged.
//! * Version 2 — Sayri's additions: per-message tool call (`tool_call_json`), token usage
//!   (`prompt_tokens`, `completion_tokens`), `reasoning` kept apart, the
//!   `security_authorizations` table (approvals) and indexes.
//! * Version 3 — the journal of running turns (`open_turns`): a row lives from a turn's start to
//!   its end, so a row found at start-up is a turn a crash cut short.
//! * Version 4 — `redacted_secrets`: per secret name, the version of its value (vault
//!   `updated_at`) the stored rows were last rewritten for (no value, hash or length).
//! * Version 5 — `token_rates`: the calibrated bytes-per-token estimate of each model, learnt
//!   from the provider's usage reports.
//! * Version 6 — routines (`routines`: definition, the scheduler's timing, the last run's
//!   outcome), the scheduler's state of schedule triggers (`trigger_state`), and its small facts
//!   (`scheduler_meta`).
//! * Version 7 — `message_images`: the images a person attached to a request, kept with its
//!   message (media type and base64 data, in the order they were sent).
//! * Version 8 — gateways: `gateway_instances` (one row per instance, its settings as JSON),
//!   `gateway_peers` keyed by `(channel, peer_id)` so one person can pair with several
//!   instances (rows of the original table are kept), and `gateway_chats` (the session and
//!   agent of each chat of an instance).
//! * Version 9 — error records: assistant rows that were errors (their text starts with `⚠️`,
//!   as earlier versions and the original Sayri stored them) become role `error` rows, without
//!   the sign and without the `Sayri Error: ` prefix.
//! * Version 10 — `sessions.parent_id`: a sub-agent's session names the session of the request
//!   that delegated to it (`NULL` for a person's own conversations; sessions of earlier
//!   versions keep `NULL`).
//! * Version 11 — `gateway_replies`: the final answer given to each update a gateway passed on
//!   (by instance and the channel's update id), so an update sent again after a gateway
//!   restart gets the same answer without a second turn. A development build numbered this
//!   table version 10; a file it wrote (version 10, the table present, no
//!   `sessions.parent_id`) gets the column before this step, and the table is created only
//!   where it is missing.
//! * Version 12 — long-term memory: `memory` (one short fact per row: its text, the agent it
//!   is for or `NULL` for every agent, its source `person`/`model`/`import`, when it was added
//!   and changed, how often and when it was last recalled) and `memory_fts`, an FTS5 index of
//!   the text (external content, kept in step by triggers; the `unicode61` tokenizer folds case
//!   and removes diacritics, so `Cafe` finds `café`). The index runs with FTS5's
//!   `secure-delete`, so a forgotten fact's words leave the index at once instead of waiting
//!   for a merge.
//! * Version 13 — `memory_proposals`: facts a model proposed in a turn nobody could answer a
//!   card in (a routine's or a gateway's), kept apart from `memory` (never searched, never
//!   recalled) until the person accepts one into memory or rejects it; each names the agent it
//!   would be for and the session that proposed it.
//!
//! Each step runs in its own transaction together with the version bump, so a crash during a
//! migration leaves the file at the previous version. A file newer than [`LATEST`] is refused.

use rusqlite::Connection;

/// The latest schema version this build writes.
pub const LATEST: i64 = 13;

/// Why a migration failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The file's version is newer than [`LATEST`].
    #[error("schema version {found} is newer than {supported}")]
    TooNew {
        /// Version in the file.
        found: i64,
        /// [`LATEST`].
        supported: i64,
    },
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

const V1: &str = "
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, title TEXT NOT NULL, agent_id TEXT NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL,
  token_usage INTEGER DEFAULT 0, metadata TEXT DEFAULT '{}');
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
  content TEXT NOT NULL, tool_calls_json TEXT DEFAULT '[]', tool_call_id TEXT,
  timestamp REAL NOT NULL, metadata TEXT DEFAULT '{}',
  FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS gateway_peers (
  peer_id TEXT PRIMARY KEY, channel TEXT NOT NULL, agent_id TEXT NOT NULL,
  is_authorized INTEGER DEFAULT 0, authorized_at REAL, metadata TEXT DEFAULT '{}');
CREATE TABLE IF NOT EXISTS agent_preferences (
  id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL, intent TEXT NOT NULL,
  command TEXT NOT NULL, rejected_command TEXT DEFAULT '', success_count INTEGER DEFAULT 1,
  failure_count INTEGER DEFAULT 0, score REAL DEFAULT 1.0, notes TEXT DEFAULT '',
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
";

const V2: &str = "
ALTER TABLE messages ADD COLUMN tool_call_json TEXT;
ALTER TABLE messages ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE messages ADD COLUMN completion_tokens INTEGER;
ALTER TABLE messages ADD COLUMN reasoning TEXT;
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, id);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions(updated_at);
CREATE UNIQUE INDEX IF NOT EXISTS preferences_key ON agent_preferences(agent_id, intent, command);
CREATE TABLE security_authorizations (
  id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL, action TEXT NOT NULL,
  resource TEXT NOT NULL, created_at REAL NOT NULL,
  UNIQUE (agent_id, action, resource));
";

const V3: &str = "
CREATE TABLE open_turns (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  request_message_id INTEGER NOT NULL,
  started_at REAL NOT NULL);
";

const V4: &str = "
CREATE TABLE redacted_secrets (
  key TEXT PRIMARY KEY, value_updated_at INTEGER NOT NULL, rewritten_at REAL NOT NULL);
";

const V5: &str = "
CREATE TABLE token_rates (
  model TEXT PRIMARY KEY, bytes_per_token REAL NOT NULL, updated_at REAL NOT NULL);
";

const V6: &str = "
CREATE TABLE routines (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
  trigger TEXT NOT NULL, time_spec TEXT NOT NULL DEFAULT '', zone TEXT,
  prompt TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT 'default',
  speak_tts INTEGER NOT NULL DEFAULT 1, notify_desktop INTEGER NOT NULL DEFAULT 1,
  enabled INTEGER NOT NULL DEFAULT 1,
  catch_up TEXT NOT NULL DEFAULT 'run_once', grace_minutes INTEGER NOT NULL DEFAULT 720,
  created_at REAL NOT NULL, updated_at REAL NOT NULL,
  armed_at REAL NOT NULL, last_slot REAL, last_run REAL, next_run REAL,
  last_status TEXT, last_summary TEXT, last_finished_at REAL, last_session TEXT);
CREATE TABLE trigger_state (
  id TEXT PRIMARY KEY, armed_at REAL NOT NULL, last_slot REAL, last_run REAL, next_run REAL,
  last_status TEXT, last_summary TEXT, last_finished_at REAL, last_session TEXT);
CREATE TABLE scheduler_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

const V7: &str = "
CREATE TABLE message_images (
  message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  mime TEXT NOT NULL,
  data_base64 TEXT NOT NULL,
  PRIMARY KEY (message_id, position));
";

const V8: &str = "
CREATE TABLE gateway_instances (
  id TEXT PRIMARY KEY, plugin TEXT NOT NULL, settings TEXT NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE gateway_peers_new (
  channel TEXT NOT NULL, peer_id TEXT NOT NULL, agent_id TEXT NOT NULL,
  is_authorized INTEGER DEFAULT 0, authorized_at REAL, metadata TEXT DEFAULT '{}',
  PRIMARY KEY (channel, peer_id));
INSERT INTO gateway_peers_new (channel, peer_id, agent_id, is_authorized, authorized_at, metadata)
  SELECT channel, peer_id, agent_id, is_authorized, authorized_at, metadata FROM gateway_peers;
DROP TABLE gateway_peers;
ALTER TABLE gateway_peers_new RENAME TO gateway_peers;
CREATE TABLE gateway_chats (
  instance_id TEXT NOT NULL, chat_id TEXT NOT NULL, session_id TEXT NOT NULL,
  agent_id TEXT NOT NULL, updated_at REAL NOT NULL,
  PRIMARY KEY (instance_id, chat_id));
";

const V9_ERROR_RECORDS: &str = "
UPDATE messages SET role = 'error',
  content = CASE
    WHEN substr(ltrim(substr(content, 2), char(65039)), 1, 1) = ' '
      THEN ltrim(substr(ltrim(substr(content, 2), char(65039)), 2))
    ELSE ltrim(substr(content, 2), char(65039))
  END
WHERE role = 'assistant' AND substr(content, 1, 1) = char(9888);
UPDATE messages SET content = substr(content, 14)
WHERE role = 'error' AND substr(content, 1, 13) = 'Sayri Error: ';
";

const V10_PARENT_SESSIONS: &str = "
ALTER TABLE sessions ADD COLUMN parent_id TEXT;
CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions(parent_id);
";

const V11_GATEWAY_REPLIES: &str = "
CREATE TABLE IF NOT EXISTS gateway_replies (
  instance_id TEXT NOT NULL, update_id TEXT NOT NULL, chat_id TEXT NOT NULL,
  reply TEXT NOT NULL, created_at REAL NOT NULL,
  PRIMARY KEY (instance_id, update_id));
CREATE INDEX IF NOT EXISTS gateway_replies_by_age ON gateway_replies(created_at);
";

const V12_MEMORY: &str = "
CREATE TABLE memory (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  text TEXT NOT NULL CHECK (length(trim(text)) BETWEEN 1 AND 500),
  agent TEXT,
  source TEXT NOT NULL CHECK (source IN ('person', 'model', 'import')),
  created_at REAL NOT NULL, updated_at REAL NOT NULL,
  recalled_count INTEGER NOT NULL DEFAULT 0, last_recalled_at REAL);
CREATE INDEX memory_by_agent ON memory(agent, id);
CREATE VIRTUAL TABLE memory_fts USING fts5(
  text, content = 'memory', content_rowid = 'id',
  tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO memory_fts(memory_fts, rank) VALUES ('secure-delete', 1);
CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory BEGIN
  INSERT INTO memory_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory BEGIN
  INSERT INTO memory_fts(memory_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER memory_fts_update AFTER UPDATE OF text ON memory BEGIN
  INSERT INTO memory_fts(memory_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO memory_fts(rowid, text) VALUES (new.id, new.text);
END;
";

const V13_MEMORY_PROPOSALS: &str = "
CREATE TABLE memory_proposals (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  text TEXT NOT NULL CHECK (length(trim(text)) BETWEEN 1 AND 500),
  agent TEXT NOT NULL,
  session_id TEXT NOT NULL,
  created_at REAL NOT NULL);
";

/// The migration steps; index `i` upgrades version `i` to `i + 1`.
const STEPS: [&str; LATEST as usize] = [
    V1,
    V2,
    V3,
    V4,
    V5,
    V6,
    V7,
    V8,
    V9_ERROR_RECORDS,
    V10_PARENT_SESSIONS,
    V11_GATEWAY_REPLIES,
    V12_MEMORY,
    V13_MEMORY_PROPOSALS,
];

/// Brings `conn` to [`LATEST`], one transaction per step.
pub fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    let mut version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > LATEST {
        return Err(MigrateError::TooNew {
            found: version,
            supported: LATEST,
        });
    }
    while version < LATEST {
        let tx = conn.transaction()?;
        let step = STEPS[usize::try_from(version).unwrap_or(0)];
        if version == 1 {
            dedupe_preferences(&tx)?;
        }
        if version == 10 && !has_column(&tx, "sessions", "parent_id")? {
            tx.execute_batch(V10_PARENT_SESSIONS)?;
        }
        tx.execute_batch(step)?;
        version += 1;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
    }
    Ok(())
}

/// The original never had a unique key on preferences; merge duplicates before adding one.
fn dedupe_preferences(tx: &rusqlite::Transaction<'_>) -> Result<(), rusqlite::Error> {
    tx.execute_batch(
        "DELETE FROM agent_preferences WHERE id NOT IN (
           SELECT MAX(id) FROM agent_preferences GROUP BY agent_id, intent, command);",
    )
}

/// Whether `table` has a column named `column`.
fn has_column(
    tx: &rusqlite::Transaction<'_>,
    table: &str,
    column: &str,
) -> Result<bool, rusqlite::Error> {
    let n: i64 = tx.query_row(
        "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |r| r.get(0),
    )?;
    Ok(n > 0)
}
