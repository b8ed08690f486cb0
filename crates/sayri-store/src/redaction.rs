//! Secrets in the database: every text a write stores passes the store's redactor, and rows
//! stored before a value became a secret are rewritten when it does.
//!
//! * [`Store::with_redactor`] sets the redactor every write uses (messages, tool calls, reasoning,
//!   titles, preferences, approvals, routine run summaries). Without one, text is stored as given.
//! * [`Store::rewrite_secrets`] walks every column that can hold user, model or command text and
//!   rewrites the rows whose redaction differs. Rows that become equal to an existing one under a
//!   unique key merge into it (preference counters add up; a duplicate approval goes).
//! * The connection runs with `secure_delete` on and the rewrite ends with a `TRUNCATE`
//!   checkpoint, so the replaced text is left neither in freed pages of the file nor in old
//!   frames of the write-ahead log.
//! * [`Store::redaction_stamps`] / [`Store::set_redaction_stamps`] record, per secret name, which
//!   version of its value the rows were last rewritten for (its `updated_at` in the vault), so a
//!   start-up can tell whether a value set while the daemon was not running still needs a
//!   rewrite. No value, hash or length of a secret is stored.

use crate::Store;
use rusqlite::{Transaction, params};
use sayri_core::ports::{Redactor, StoreError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Rows per rewrite transaction: the store's lock is released between batches, so a long
/// rewrite does not stall the turns writing meanwhile.
const BATCH_ROWS: i64 = 256;

/// How many rows a rewrite changed, per table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewriteReport {
    /// `messages` rows (content, tool call, reasoning, metadata).
    pub messages: usize,
    /// `sessions` rows (title, metadata).
    pub sessions: usize,
    /// `agent_preferences` rows (intent, command, rejected command, notes), merged ones included.
    pub preferences: usize,
    /// `security_authorizations` rows (resource), removed duplicates included.
    pub approvals: usize,
    /// `gateway_peers` rows (metadata).
    pub peers: usize,
    /// `routines` and `trigger_state` rows (the last run's summary).
    pub routine_results: usize,
    /// False when rows changed but the write-ahead log could not be emptied (another process
    /// kept reading the database past the busy timeout): old page versions may stay in
    /// `sessions.db-wal` until a later checkpoint overwrites them.
    pub wal_cleared: bool,
}

impl RewriteReport {
    /// Rows changed in all tables.
    pub fn total(&self) -> usize {
        self.messages
            + self.sessions
            + self.preferences
            + self.approvals
            + self.peers
            + self.routine_results
    }
}

/// How a column's text is rewritten.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Plain text.
    Text,
    /// Text cut short (a title, an intent): a trailing start of a secret goes too.
    CutText,
    /// JSON: every string inside is redacted (text that does not parse is redacted as text).
    Json,
}

/// A table and the columns that can hold user, model or command text.
struct TextColumns {
    table: &'static str,
    columns: &'static [(&'static str, Kind)],
}

const MESSAGES: TextColumns = TextColumns {
    table: "messages",
    columns: &[
        ("content", Kind::Text),
        ("tool_call_json", Kind::Json),
        ("tool_calls_json", Kind::Json),
        ("reasoning", Kind::Text),
        ("metadata", Kind::Json),
    ],
};
const SESSIONS: TextColumns = TextColumns {
    table: "sessions",
    columns: &[("title", Kind::CutText), ("metadata", Kind::Json)],
};
const PREFERENCES: TextColumns = TextColumns {
    table: "agent_preferences",
    columns: &[
        ("intent", Kind::CutText),
        ("command", Kind::Text),
        ("rejected_command", Kind::Text),
        ("notes", Kind::Text),
    ],
};
const APPROVALS: TextColumns = TextColumns {
    table: "security_authorizations",
    columns: &[("resource", Kind::Text)],
};
const PEERS: TextColumns = TextColumns {
    table: "gateway_peers",
    columns: &[("metadata", Kind::Json)],
};
const ROUTINES: TextColumns = TextColumns {
    table: "routines",
    columns: &[("last_summary", Kind::Text)],
};
const TRIGGER_STATE: TextColumns = TextColumns {
    table: "trigger_state",
    columns: &[("last_summary", Kind::Text)],
};

impl Store {
    /// The same store with `redactor` applied to every text it writes from now on (share a
    /// swappable redactor to follow vault changes).
    #[must_use]
    pub fn with_redactor(mut self, redactor: Arc<dyn Redactor>) -> Store {
        self.redactor = redactor;
        self
    }

    /// `text` as it may be stored.
    pub(crate) fn clean(&self, text: &str) -> String {
        self.redactor.redact(text)
    }

    /// [`Self::clean`] for a text cut short (see [`Redactor::redact_cut`]).
    pub(crate) fn clean_cut(&self, text: &str) -> String {
        self.redactor.redact_cut(text)
    }

    /// [`Self::clean`] for an optional text.
    pub(crate) fn clean_opt(&self, text: Option<&str>) -> Option<String> {
        text.map(|t| self.clean(t))
    }

    /// Rewrites every stored row whose text `redactor` changes (see the module docs), then
    /// checkpoints the write-ahead log so no old page version stays in it.
    ///
    /// # Errors
    /// The store's error; rows rewritten before it stay rewritten (each batch commits on its own).
    pub fn rewrite_secrets(&self, redactor: &dyn Redactor) -> Result<RewriteReport, StoreError> {
        let mut report = RewriteReport {
            messages: self.rewrite_table(&MESSAGES, redactor, None)?,
            sessions: self.rewrite_table(&SESSIONS, redactor, None)?,
            preferences: self.rewrite_table(&PREFERENCES, redactor, Some(merge_preference))?,
            approvals: self.rewrite_table(&APPROVALS, redactor, Some(drop_duplicate))?,
            peers: self.rewrite_table(&PEERS, redactor, None)?,
            routine_results: self.rewrite_table(&ROUTINES, redactor, None)?
                + self.rewrite_table(&TRIGGER_STATE, redactor, None)?,
            wal_cleared: true,
        };
        if report.total() > 0 {
            let conn = self.lock()?;
            // The row is (busy, frames in the log, frames checkpointed); busy = 1 when a reader
            // kept the log from being emptied.
            let busy: i64 = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
                .map_err(|e| self.fail(e))?;
            report.wal_cleared = busy == 0;
        }
        Ok(report)
    }

    /// Rewrites one table in batches of [`BATCH_ROWS`]; `on_conflict` settles a row whose
    /// rewrite would duplicate a unique key (tables without one pass `None`). Returns the rows
    /// changed.
    fn rewrite_table(
        &self,
        t: &TextColumns,
        redactor: &dyn Redactor,
        on_conflict: Option<Settle>,
    ) -> Result<usize, StoreError> {
        let names: Vec<&str> = t.columns.iter().map(|(n, _)| *n).collect();
        let select = format!(
            "SELECT rowid, {} FROM {} WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            names.join(", "),
            t.table
        );
        let sets: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{n} = ?{}", i + 2))
            .collect();
        let update = format!(
            "UPDATE {} SET {} WHERE rowid = ?1",
            t.table,
            sets.join(", ")
        );
        let mut changed = 0;
        let mut after = 0i64;
        loop {
            let mut conn = self.lock()?;
            let tx = conn.transaction().map_err(|e| self.fail(e))?;
            let rows = read_batch(&tx, &select, after, names.len()).map_err(|e| self.fail(e))?;
            let Some((last, _)) = rows.last() else {
                return Ok(changed);
            };
            after = *last;
            for (rowid, values) in rows {
                let new: Vec<Option<String>> = values
                    .iter()
                    .zip(t.columns)
                    .map(|(v, (_, kind))| v.as_deref().map(|v| redact_as(*kind, v, redactor)))
                    .collect();
                if new == values {
                    continue;
                }
                changed += 1;
                let mut args: Vec<&dyn rusqlite::ToSql> = vec![&rowid];
                args.extend(new.iter().map(|v| v as &dyn rusqlite::ToSql));
                match (tx.execute(&update, args.as_slice()), on_conflict) {
                    (Ok(_), _) => {}
                    (Err(e), Some(settle)) if is_unique_violation(&e) => {
                        settle(&tx, t.table, rowid, &new).map_err(|e| self.fail(e))?
                    }
                    (Err(e), _) => return Err(self.fail(e)),
                }
            }
            tx.commit().map_err(|e| self.fail(e))?;
        }
    }

    /// Secret name → the value version (`updated_at` in the vault) the stored rows were last
    /// rewritten for.
    ///
    /// # Errors
    /// The store's error.
    pub fn redaction_stamps(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let conn = self.lock()?;
        let mut st = conn
            .prepare("SELECT key, value_updated_at FROM redacted_secrets")
            .map_err(|e| self.fail(e))?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(|e| self.fail(e))?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (k, v) = row.map_err(|e| self.fail(e))?;
            out.insert(k, u64::try_from(v).unwrap_or(0));
        }
        Ok(out)
    }

    /// Replaces the stamps with `stamps` (every secret the rows are now rewritten for), at `now`
    /// (Unix seconds).
    ///
    /// # Errors
    /// The store's error.
    pub fn set_redaction_stamps(
        &self,
        stamps: &[(String, u64)],
        now: f64,
    ) -> Result<(), StoreError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        tx.execute("DELETE FROM redacted_secrets", [])
            .map_err(|e| self.fail(e))?;
        for (key, version) in stamps {
            tx.execute(
                "INSERT INTO redacted_secrets (key, value_updated_at, rewritten_at)
                 VALUES (?1, ?2, ?3)",
                params![key, i64::try_from(*version).unwrap_or(i64::MAX), now],
            )
            .map_err(|e| self.fail(e))?;
        }
        tx.commit().map_err(|e| self.fail(e))
    }
}

/// Up to [`BATCH_ROWS`] rows after `after`: `(rowid, column values)`.
fn read_batch(
    tx: &Transaction<'_>,
    select: &str,
    after: i64,
    columns: usize,
) -> rusqlite::Result<Vec<(i64, Vec<Option<String>>)>> {
    let mut st = tx.prepare(select)?;
    let rows = st.query_map(params![after, BATCH_ROWS], |r| {
        let mut values = Vec::with_capacity(columns);
        for i in 0..columns {
            values.push(r.get::<_, Option<String>>(i + 1)?);
        }
        Ok((r.get::<_, i64>(0)?, values))
    })?;
    rows.collect()
}

/// `text` redacted as a column of `kind`. JSON that has nothing to redact is returned as it is
/// (not re-serialised, which could reorder its keys).
fn redact_as(kind: Kind, text: &str, redactor: &dyn Redactor) -> String {
    if kind == Kind::CutText {
        return redactor.redact_cut(text);
    }
    if kind == Kind::Json
        && let Ok(before) = serde_json::from_str::<Value>(text)
    {
        let mut after = before.clone();
        redact_json(&mut after, redactor);
        if after == before {
            return text.to_string();
        }
        if let Ok(s) = serde_json::to_string(&after) {
            return s;
        }
    }
    redactor.redact(text)
}

/// Redacts every string (and object key) inside `v`.
fn redact_json(v: &mut Value, redactor: &dyn Redactor) {
    match v {
        Value::String(s) => *s = redactor.redact(s),
        Value::Array(a) => a.iter_mut().for_each(|x| redact_json(x, redactor)),
        Value::Object(m) => {
            let old = std::mem::take(m);
            for (k, mut x) in old {
                redact_json(&mut x, redactor);
                m.insert(redactor.redact(&k), x);
            }
        }
        _ => {}
    }
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    )
}

/// Settles a rewritten row that would duplicate a unique key: `(transaction, table, rowid, the
/// row's new column values)`.
type Settle = fn(&Transaction<'_>, &str, i64, &[Option<String>]) -> rusqlite::Result<()>;

/// A preference that becomes equal to another (same agent, intent and command) adds its
/// counters to that one and goes; the score is recomputed.
fn merge_preference(
    tx: &Transaction<'_>,
    _: &str,
    rowid: i64,
    new: &[Option<String>],
) -> rusqlite::Result<()> {
    let (intent, command) = (&new[0], &new[1]);
    tx.execute(
        "UPDATE agent_preferences AS keep SET
             success_count = keep.success_count + gone.success_count,
             failure_count = keep.failure_count + gone.failure_count,
             score = ROUND((keep.success_count + gone.success_count)
                     - 1.5 * (keep.failure_count + gone.failure_count), 2),
             updated_at = MAX(keep.updated_at, gone.updated_at)
         FROM agent_preferences AS gone
         WHERE gone.rowid = ?1 AND keep.agent_id = gone.agent_id
           AND keep.intent = ?2 AND keep.command = ?3 AND keep.rowid != ?1",
        params![rowid, intent, command],
    )?;
    tx.execute("DELETE FROM agent_preferences WHERE rowid = ?1", [rowid])?;
    Ok(())
}

/// An approval that becomes equal to another is a duplicate: it goes.
fn drop_duplicate(
    tx: &Transaction<'_>,
    table: &str,
    rowid: i64,
    _: &[Option<String>],
) -> rusqlite::Result<()> {
    tx.execute(&format!("DELETE FROM {table} WHERE rowid = ?1"), [rowid])?;
    Ok(())
}
