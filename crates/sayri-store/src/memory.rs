//! Long-term memory: the `memory` table and its FTS5 index `memory_fts` (schema version 12).
//!
//! * Every write checks the fact with the core's rules ([`sayri_core::domain::memory`]): trimmed,
//!   1–500 characters, a valid agent id or none, and no secret the store's redactor knows (the
//!   vault's, in every encoding it recognises). A fact with a secret is refused whole: nothing is
//!   written, not even redacted.
//! * The index follows the table through triggers, inside the same transaction as the write.
//! * Forgetting deletes the row and its index entry (FTS5 `secure-delete` removes the words
//!   from the index at once), then checkpoints the write-ahead log, so the text is left neither
//!   in the file nor in old frames of the log.
//! * A search takes the query's words only ([`search_words`]), each quoted as a plain FTS5
//!   term and joined with `OR`, ranked by `bm25`: no character a person types is query syntax.
//! * An import checks every line before it writes any; one bad line refuses the whole text,
//!   naming its line number.

use crate::Store;
use rusqlite::{OptionalExtension, Row, Transaction, params};
use sayri_core::domain::memory::{
    FactError, MemorySource, fact_agent, fact_text, same_fact, search_words,
};
use sayri_core::ports::StoreError;
use sayri_protocol::reply::memory::MemoryFact;
use serde::Deserialize;

/// Why a memory write was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MemoryError {
    /// The fact breaks a rule (empty, too long, holds a secret, a bad agent id).
    #[error(transparent)]
    Fact(#[from] FactError),
    /// No fact has this id.
    #[error("no fact of memory has id {0}; `sayri memory list` shows the ids")]
    NotFound(i64),
    /// As many proposals as may wait are waiting already; nothing was kept.
    #[error(
        "{0} proposed facts already wait for review; nothing more is kept until the person accepts or rejects some (`sayri memory review`)"
    )]
    TooManyProposals(usize),
    /// No proposed fact has this id.
    #[error("no proposed fact has id {0}; `sayri memory review` lists the proposals")]
    NoProposal(i64),
    /// A line of an import is not a fact; nothing was imported.
    #[error(
        "line {line}: {reason}; nothing was imported — fix that line and import the file again"
    )]
    BadLine {
        /// Its number, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

const COLS: &str =
    "id, text, agent, source, created_at, updated_at, recalled_count, last_recalled_at";

fn fact_row(r: &Row<'_>) -> rusqlite::Result<MemoryFact> {
    Ok(MemoryFact {
        id: r.get(0)?,
        text: r.get(1)?,
        agent: r.get(2)?,
        source: r.get(3)?,
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
        recalled_count: u64::try_from(r.get::<_, i64>(6)?).unwrap_or(0),
        last_recalled_at: r.get(7)?,
    })
}

/// One line of an import: the members `memory_export` writes. The id, source and recall
/// counters of the file are not taken over (the fact gets a new id, source `import`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportLine {
    text: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    created_at: Option<f64>,
    #[serde(default)]
    updated_at: Option<f64>,
    #[serde(default, rename = "id")]
    _id: Option<serde_json::Value>,
    #[serde(default, rename = "source")]
    _source: Option<serde_json::Value>,
    #[serde(default, rename = "recalled_count")]
    _recalled_count: Option<serde_json::Value>,
    #[serde(default, rename = "last_recalled_at")]
    _last_recalled_at: Option<serde_json::Value>,
}

/// A fact checked and ready to insert.
pub(crate) struct NewFact {
    pub(crate) text: String,
    pub(crate) agent: Option<String>,
    pub(crate) created_at: f64,
    pub(crate) updated_at: f64,
}

/// The FTS5 query for `query`: each word quoted as a plain term (no word holds a quote), joined
/// with `OR`; `None` when the query has no word.
pub(crate) fn fts_query(query: &str) -> Option<String> {
    let words: Vec<String> = search_words(query)
        .into_iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

impl Store {
    /// Adds a fact from `source` at `now` (Unix seconds); returns it as stored. A fact already
    /// stored for the same agent ([`same_fact`]: differing only in case, spacing or a final
    /// full stop) is not stored again: the stored one is returned.
    ///
    /// # Errors
    /// [`MemoryError::Fact`] when it breaks a rule (nothing is written), else the store's error.
    pub fn memory_add(
        &self,
        text: &str,
        agent: Option<&str>,
        source: MemorySource,
        now: f64,
    ) -> Result<MemoryFact, MemoryError> {
        let fact = NewFact {
            text: fact_text(text, self.redactor.as_ref())?,
            agent: fact_agent(agent)?,
            created_at: now,
            updated_at: now,
        };
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        let id = add_new(&tx, &fact, source).map_err(|e| self.fail(e))?;
        let row = get(&tx, id).map_err(|e| self.fail(e))?;
        tx.commit().map_err(|e| self.fail(e))?;
        row.ok_or(MemoryError::NotFound(id))
    }

    /// Every fact, oldest first; with `agent`, those it sees (its own and those for every
    /// agent).
    ///
    /// # Errors
    /// The store's error.
    pub fn memory_list(&self, agent: Option<&str>) -> Result<Vec<MemoryFact>, StoreError> {
        let conn = self.lock()?;
        let sql = format!(
            "SELECT {COLS} FROM memory
             WHERE ?1 IS NULL OR agent IS NULL OR agent = ?1 ORDER BY id"
        );
        let mut st = conn.prepare(&sql).map_err(|e| self.fail(e))?;
        let rows = st.query_map([agent], fact_row).map_err(|e| self.fail(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.fail(e))
    }

    /// The fact with `id`, if any.
    ///
    /// # Errors
    /// The store's error.
    pub fn memory_get(&self, id: i64) -> Result<Option<MemoryFact>, StoreError> {
        let conn = self.lock()?;
        get(&conn, id).map_err(|e| self.fail(e))
    }

    /// Replaces the text of fact `id` at `now`; returns the fact as stored.
    ///
    /// # Errors
    /// [`MemoryError::Fact`] (nothing changes), [`MemoryError::NotFound`], or the store's error.
    pub fn memory_edit(&self, id: i64, text: &str, now: f64) -> Result<MemoryFact, MemoryError> {
        let text = fact_text(text, self.redactor.as_ref())?;
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        let changed = tx
            .execute(
                "UPDATE memory SET text = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, text, now],
            )
            .map_err(|e| self.fail(e))?;
        if changed == 0 {
            return Err(MemoryError::NotFound(id));
        }
        let row = get(&tx, id).map_err(|e| self.fail(e))?;
        tx.commit().map_err(|e| self.fail(e))?;
        row.ok_or(MemoryError::NotFound(id))
    }

    /// Deletes fact `id` and its index entry, then empties the write-ahead log (best effort: a
    /// reader holding it only delays that to a later checkpoint). Returns whether it existed.
    ///
    /// # Errors
    /// The store's error.
    pub fn memory_forget(&self, id: i64) -> Result<bool, StoreError> {
        self.delete_leaving_no_trace("DELETE FROM memory WHERE id = ?1", id)
    }

    /// Runs the `DELETE` statement `sql` for `id`; when a row went, empties the write-ahead
    /// log (best effort) so its text is left in no old frame. Returns whether a row went.
    pub(crate) fn delete_leaving_no_trace(&self, sql: &str, id: i64) -> Result<bool, StoreError> {
        let conn = self.lock()?;
        let gone = conn.execute(sql, [id]).map_err(|e| self.fail(e))?;
        if gone > 0 {
            // The row is (busy, frames in the log, frames checkpointed).
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            });
        }
        Ok(gone > 0)
    }

    /// The facts holding any word of `query`, best first (`bm25`), at most `limit`. A query
    /// without a word finds nothing.
    ///
    /// # Errors
    /// The store's error.
    pub fn memory_search(&self, query: &str, limit: usize) -> Result<Vec<MemoryFact>, StoreError> {
        let Some(q) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let conn = self.lock()?;
        let cols = COLS
            .split(", ")
            .map(|c| format!("m.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {cols} FROM memory_fts JOIN memory m ON m.id = memory_fts.rowid
             WHERE memory_fts MATCH ?1 ORDER BY bm25(memory_fts), m.id LIMIT ?2"
        );
        let mut st = conn.prepare(&sql).map_err(|e| self.fail(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = st
            .query_map(params![q, limit], fact_row)
            .map_err(|e| self.fail(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.fail(e))
    }

    /// Every fact as JSON lines (one object per line, each ending in `\n`), oldest first, and
    /// how many there are.
    ///
    /// # Errors
    /// The store's error.
    pub fn memory_export(&self) -> Result<(usize, String), StoreError> {
        let facts = self.memory_list(None)?;
        let mut out = String::new();
        for f in &facts {
            let line = serde_json::to_string(f)
                .map_err(|e| StoreError(format!("cannot write fact {}: {e}", f.id)))?;
            out.push_str(&line);
            out.push('\n');
        }
        Ok((facts.len(), out))
    }

    /// Imports JSON lines (as [`Store::memory_export`] writes them) at `now`: every line is
    /// checked first, then all facts are written in one transaction. A fact already stored
    /// for the same agent (differing only in case, spacing or a final full stop), or repeated
    /// within the text, is skipped. Returns `(imported,
    /// skipped)`.
    ///
    /// # Errors
    /// [`MemoryError::BadLine`] for the first line that is not a valid fact (nothing is
    /// written), or the store's error.
    pub fn memory_import(&self, lines: &str, now: f64) -> Result<(usize, usize), MemoryError> {
        let facts = self.parse_import(lines, now)?;
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        let (mut imported, mut skipped) = (0, 0);
        for fact in &facts {
            if same_stored(&tx, fact).map_err(|e| self.fail(e))?.is_some() {
                skipped += 1;
                continue;
            }
            insert(&tx, fact, MemorySource::Import).map_err(|e| self.fail(e))?;
            imported += 1;
        }
        tx.commit().map_err(|e| self.fail(e))?;
        Ok((imported, skipped))
    }

    /// Every non-blank line of `lines` as a checked fact.
    fn parse_import(&self, lines: &str, now: f64) -> Result<Vec<NewFact>, MemoryError> {
        let mut out = Vec::new();
        for (i, raw) in lines.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let bad = |reason: String| MemoryError::BadLine {
                line: i + 1,
                reason,
            };
            let line: ImportLine = serde_json::from_str(raw).map_err(|e| {
                bad(format!(
                    "not a fact as `sayri memory export` writes it ({}): each line is one JSON object with at least \"text\"",
                    serde_error(&e)
                ))
            })?;
            let text =
                fact_text(&line.text, self.redactor.as_ref()).map_err(|e| bad(e.to_string()))?;
            let agent = fact_agent(line.agent.as_deref()).map_err(|e| bad(e.to_string()))?;
            let created_at = line.created_at.unwrap_or(now);
            let updated_at = line.updated_at.unwrap_or(created_at);
            if !(created_at.is_finite() && updated_at.is_finite()) {
                return Err(bad("created_at and updated_at must be Unix seconds".into()));
            }
            out.push(NewFact {
                text,
                agent,
                created_at,
                updated_at,
            });
        }
        Ok(out)
    }
}

/// serde_json's complaint about a line, without any value of the line (it may hold a secret):
/// where the JSON breaks, or which member is missing or unknown.
fn serde_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    if matches!(e.classify(), Category::Syntax | Category::Eof) {
        return format!("invalid JSON at column {}", e.column());
    }
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or_default();
    if msg.starts_with("missing field") || msg.starts_with("unknown field") {
        // Names only the member (and, for an unknown one, the members expected).
        return msg.to_string();
    }
    "a member has the wrong type: \"text\" and \"agent\" are strings, \"created_at\" and \"updated_at\" numbers".into()
}

/// Stores `f` unless the same fact is stored for its agent; the id of the one kept.
pub(crate) fn add_new(
    tx: &Transaction<'_>,
    f: &NewFact,
    source: MemorySource,
) -> rusqlite::Result<i64> {
    match same_stored(tx, f)? {
        Some(id) => Ok(id),
        None => insert(tx, f, source),
    }
}

fn insert(tx: &Transaction<'_>, f: &NewFact, source: MemorySource) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO memory (text, agent, source, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![f.text, f.agent, source.as_str(), f.created_at, f.updated_at],
    )?;
    Ok(tx.last_insert_rowid())
}

/// The id of a stored fact of the same agent that says the same as `f` ([`same_fact`]).
pub(crate) fn same_stored(tx: &Transaction<'_>, f: &NewFact) -> rusqlite::Result<Option<i64>> {
    let mut st = tx.prepare("SELECT id, text FROM memory WHERE agent IS ?1 ORDER BY id")?;
    let rows = st.query_map([&f.agent], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })?;
    for row in rows {
        let (id, text) = row?;
        if same_fact(&text, &f.text) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

pub(crate) fn get(conn: &rusqlite::Connection, id: i64) -> rusqlite::Result<Option<MemoryFact>> {
    conn.query_row(
        &format!("SELECT {COLS} FROM memory WHERE id = ?1"),
        [id],
        fact_row,
    )
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_becomes_one_quoted_term() {
        assert_eq!(
            fts_query("\"dog\" NEAR(cat*) -fish").as_deref(),
            Some("\"dog\" OR \"NEAR\" OR \"cat\" OR \"fish\"")
        );
        assert_eq!(fts_query("*-\"()"), None);
    }
}
