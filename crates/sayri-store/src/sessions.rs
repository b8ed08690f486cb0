//! Sessions and messages: the `SessionStore` half about conversations.

use crate::{Store, like_escape, sql_err};
use rusqlite::{OptionalExtension, Row, params};
use sayri_core::domain::text::cut_chars;
use sayri_core::ports::{
    NewMessage, Role, SearchHit, SessionInfo, SessionSeed, StoreError, StoredMessage,
    ToolCallRecord, Usage,
};

pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::Error => "error",
    }
}

/// Unknown roles (e.g. from a hand-edited file) read as `user`, the least trusted author.
pub(crate) fn parse_role(s: &str) -> Role {
    match s {
        "system" => Role::System,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        "error" => Role::Error,
        _ => Role::User,
    }
}

const SESSION_COLS: &str = "s.id, s.title, s.agent_id, s.created_at, s.updated_at,
    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id), s.parent_id";

fn session_row(r: &Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: r.get(0)?,
        title: r.get(1)?,
        agent_id: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
        messages: r.get(5)?,
        parent_id: r.get(6)?,
    })
}

fn message_row(r: &Row<'_>) -> rusqlite::Result<StoredMessage> {
    let role: String = r.get(2)?;
    let tool_json: Option<String> = r.get(4)?;
    let prompt: Option<u32> = r.get(5)?;
    let completion: Option<u32> = r.get(6)?;
    let usage = match (prompt, completion) {
        (None, None) => None,
        (p, c) => {
            let (p, c) = (p.unwrap_or(0), c.unwrap_or(0));
            Some(Usage {
                prompt_tokens: p,
                completion_tokens: c,
                total_tokens: p + c,
            })
        }
    };
    Ok(StoredMessage {
        id: r.get(0)?,
        session_id: r.get(1)?,
        role: parse_role(&role),
        content: r.get(3)?,
        // A malformed tool-call column (hand-edited file) is dropped, not fatal.
        tool_call: tool_json.and_then(|j| serde_json::from_str::<ToolCallRecord>(&j).ok()),
        usage,
        reasoning: r.get(7)?,
        timestamp: r.get(8)?,
    })
}

/// Appends `m` to session `seed.id` inside `tx`, creating the session row if needed and
/// bumping its `updated_at`. Returns the message's row id.
pub(crate) fn insert_message(
    tx: &rusqlite::Transaction<'_>,
    seed: &SessionSeed<'_>,
    m: &NewMessage,
) -> Result<i64, StoreError> {
    tx.execute(
        "INSERT INTO sessions (id, title, agent_id, created_at, updated_at, parent_id)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5)
         ON CONFLICT(id) DO UPDATE SET updated_at = MAX(updated_at, excluded.updated_at)",
        params![seed.id, seed.title, seed.agent_id, m.timestamp, seed.parent],
    )
    .map_err(sql_err)?;
    let tool_json = match &m.tool_call {
        Some(t) => Some(serde_json::to_string(t).map_err(|e| StoreError(e.to_string()))?),
        None => None,
    };
    tx.execute(
        "INSERT INTO messages (session_id, role, content, tool_call_json, prompt_tokens,
                               completion_tokens, reasoning, timestamp)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            seed.id,
            role_name(m.role),
            m.content,
            tool_json,
            m.usage.map(|u| u.prompt_tokens),
            m.usage.map(|u| u.completion_tokens),
            m.reasoning,
            m.timestamp
        ],
    )
    .map_err(sql_err)?;
    let id = tx.last_insert_rowid();
    for (position, image) in m.images.iter().enumerate() {
        tx.execute(
            "INSERT INTO message_images (message_id, position, mime, data_base64)
             VALUES (?1, ?2, ?3, ?4)",
            params![id, position as i64, image.mime, image.base64],
        )
        .map_err(sql_err)?;
    }
    Ok(id)
}

impl Store {
    /// `m` with every text it stores redacted: content, reasoning, and the command and output of
    /// its tool call.
    pub(crate) fn clean_message(&self, m: &NewMessage) -> NewMessage {
        NewMessage {
            content: self.clean(&m.content),
            reasoning: self.clean_opt(m.reasoning.as_deref()),
            tool_call: m.tool_call.as_ref().map(|t| ToolCallRecord {
                command: self.clean(&t.command),
                output: self.clean(&t.output),
                ..t.clone()
            }),
            ..m.clone()
        }
    }

    pub(crate) fn append_message_impl(
        &self,
        seed: &SessionSeed<'_>,
        m: &NewMessage,
    ) -> Result<i64, StoreError> {
        let title = self.clean_cut(seed.title);
        let seed = SessionSeed {
            title: &title,
            ..*seed
        };
        let m = self.clean_message(m);
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(sql_err)?;
        let id = insert_message(&tx, &seed, &m)?;
        tx.commit().map_err(sql_err)?;
        Ok(id)
    }

    pub(crate) fn session_impl(&self, id: &str) -> Result<Option<SessionInfo>, StoreError> {
        let conn = self.lock();
        conn.query_row(
            &format!("SELECT {SESSION_COLS} FROM sessions s WHERE s.id = ?1"),
            [id],
            session_row,
        )
        .optional()
        .map_err(sql_err)
    }

    pub(crate) fn ids_with_prefix_impl(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        // substr() compares the prefix literally (LIKE would treat `%` and `_` as patterns).
        let mut st = conn
            .prepare(
                "SELECT id FROM sessions WHERE substr(id, 1, length(?1)) = ?1
                 ORDER BY id LIMIT ?2",
            )
            .map_err(sql_err)?;
        let rows = st
            .query_map(rusqlite::params![prefix, limit as i64], |r| r.get(0))
            .map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }

    pub(crate) fn list_sessions_impl(&self, limit: usize) -> Result<Vec<SessionInfo>, StoreError> {
        let conn = self.lock();
        // Rows left empty by the original Python Sayri (one per start) are never listed.
        let mut st = conn
            .prepare(&format!(
                "SELECT {SESSION_COLS} FROM sessions s
                 WHERE EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)
                 ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?1"
            ))
            .map_err(sql_err)?;
        let rows = st.query_map([limit as i64], session_row).map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }

    pub(crate) fn sub_sessions_impl(
        &self,
        parent_id: &str,
    ) -> Result<Vec<SessionInfo>, StoreError> {
        let conn = self.lock();
        let mut st = conn
            .prepare(&format!(
                "SELECT {SESSION_COLS} FROM sessions s WHERE s.parent_id = ?1
                 ORDER BY s.created_at, s.rowid"
            ))
            .map_err(sql_err)?;
        let rows = st.query_map([parent_id], session_row).map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }

    pub(crate) fn messages_impl(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let conn = self.lock();
        let mut st = conn
            .prepare(
                "SELECT id, session_id, role, content, tool_call_json, prompt_tokens,
                        completion_tokens, reasoning, timestamp
                 FROM messages WHERE session_id = ?1 ORDER BY id",
            )
            .map_err(sql_err)?;
        let rows = st.query_map([session_id], message_row).map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }

    pub(crate) fn rename_impl(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        let title = self.clean_cut(title);
        let conn = self.lock();
        let n = conn
            .execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                params![id, title],
            )
            .map_err(sql_err)?;
        Ok(n > 0)
    }

    pub(crate) fn delete_impl(&self, id: &str) -> Result<bool, StoreError> {
        let conn = self.lock();
        // Messages go with it through ON DELETE CASCADE (foreign_keys=ON).
        let n = conn
            .execute("DELETE FROM sessions WHERE id = ?1", [id])
            .map_err(sql_err)?;
        Ok(n > 0)
    }

    /// Matches are decided on the text as the redactor shows it: SQLite's `LIKE` only
    /// preselects rows, and a row is a hit when its *redacted* content (or title) contains the
    /// query. So a row that still holds a secret (stored before the value became one and not
    /// rewritten yet) cannot reveal, by being a hit or not, whether the secret contains the query.
    pub(crate) fn search_impl(
        &self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let query = query.trim();
        let needle = query.to_ascii_lowercase();
        let conn = self.lock();
        let pattern = format!("%{}%", like_escape(query));
        let sql = "SELECT m.session_id, s.title, m.role, m.content, m.timestamp
             FROM messages m JOIN sessions s ON s.id = m.session_id
             WHERE (?1 IS NULL OR m.session_id = ?1)
               AND (m.content LIKE ?2 ESCAPE '\\'
                    OR (?1 IS NULL AND s.title LIKE ?2 ESCAPE '\\'))
             ORDER BY m.id DESC";
        let mut st = conn.prepare(sql).map_err(sql_err)?;
        let mut rows = st.query(params![session_id, pattern]).map_err(sql_err)?;
        let mut hits = Vec::new();
        while hits.len() < limit {
            let Some(r) = rows.next().map_err(sql_err)? else {
                break;
            };
            let title = self.clean(&r.get::<_, String>(1).map_err(sql_err)?);
            let content = self.clean(&r.get::<_, String>(3).map_err(sql_err)?);
            let found = |text: &str| text.to_ascii_lowercase().contains(&needle);
            if !(found(&content) || (session_id.is_none() && found(&title))) {
                continue;
            }
            let role: String = r.get(2).map_err(sql_err)?;
            hits.push(SearchHit {
                session_id: r.get(0).map_err(sql_err)?,
                session_title: title,
                role: parse_role(&role),
                content: cut_chars(&content, 400),
                timestamp: r.get(4).map_err(sql_err)?,
            });
        }
        hits.reverse();
        Ok(hits)
    }
}
