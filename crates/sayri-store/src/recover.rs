//! `sayri db recover`: sets a damaged database aside and rebuilds what can still be read.
//!
//! The bundled SQLite has no recovery extension, so the rebuild copies row by row:
//!
//! 1. The damaged file and its `-wal` and `-shm` are renamed, untouched, to
//!    `sessions.db.corrupt-<UTC time>` (`…-wal`, `…-shm`); nothing is deleted.
//! 2. A new file is made next to it (`sessions.db.rebuilding`) with the current schema.
//! 3. Every table of the current schema is read from the damaged copy in rowid order, with the
//!    columns both have. Where a page cannot be read, the copy probes forward for the next row
//!    that can (doubling the step, then halving back to the first readable rowid), and records
//!    the rowids it had to skip.
//! 4. Rows whose parent was lost (a message of a session that could not be read) are dropped
//!    and counted, so the new file passes `foreign_key_check`.
//! 5. The new file is checked, closed and renamed to `sessions.db`. If any step fails, the
//!    damaged file is put back in place and nothing else changes.
//!
//! The damaged copy is opened with checkpoint-on-close off and `query_only`, so reading it
//! never writes into it.

use crate::health::{CheckFailed, quick_check};
use crate::{Health, Store};
use rusqlite::config::DbConfig;
use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Rows read per query while copying.
const BATCH: i64 = 256;

/// What the rebuild did to one table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TableRecovery {
    /// The table.
    pub table: String,
    /// Rows copied into the new file.
    pub rows_kept: u64,
    /// Rowid ranges (inclusive) that could not be read; the rows there are lost.
    pub unreadable_rowids: Vec<(i64, i64)>,
    /// Rows dropped because what they belonged to was lost (or that repeated a unique key).
    pub rows_dropped: u64,
    /// Why the table could not be read at all.
    pub error: Option<String>,
}

impl TableRecovery {
    /// Whether anything of this table was lost.
    pub fn lost_anything(&self) -> bool {
        !self.unreadable_rowids.is_empty() || self.rows_dropped > 0 || self.error.is_some()
    }
}

/// What `sayri db recover` did.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryReport {
    /// The rebuilt database (the original path).
    pub database: PathBuf,
    /// Where the damaged file was kept (`None` when nothing was wrong and nothing was done).
    pub damaged_copy: Option<PathBuf>,
    /// Per table of the current schema.
    pub tables: Vec<TableRecovery>,
}

impl RecoveryReport {
    /// The report in words: what was kept, what was lost, where the damaged copy is.
    pub fn summary(&self) -> String {
        let Some(copy) = &self.damaged_copy else {
            return format!(
                "{} passed its check; nothing was changed",
                self.database.display()
            );
        };
        let mut out = format!(
            "rebuilt {} from what could be read; the damaged file is kept as {}\n",
            self.database.display(),
            copy.display()
        );
        for t in self
            .tables
            .iter()
            .filter(|t| t.rows_kept > 0 || t.lost_anything())
        {
            out.push_str(&format!("  {}: {} row(s) kept", t.table, t.rows_kept));
            if let Some(e) = &t.error {
                out.push_str(&format!(", the table could not be read ({e})"));
            }
            for (a, b) in &t.unreadable_rowids {
                if *b == i64::MAX {
                    out.push_str(&format!(", every row from {a} on lost"));
                } else if a == b {
                    out.push_str(&format!(", row {a} lost"));
                } else {
                    out.push_str(&format!(", rows {a}–{b} lost"));
                }
            }
            if t.rows_dropped > 0 {
                out.push_str(&format!(
                    ", {} row(s) dropped (their session or parent was lost)",
                    t.rows_dropped
                ));
            }
            out.push('\n');
        }
        if self.tables.iter().all(|t| !t.lost_anything()) {
            out.push_str("  nothing was lost\n");
        }
        out
    }
}

/// Why the rebuild could not be done (the damaged file is back in place).
#[derive(Debug, thiserror::Error)]
#[error("cannot recover {path}: {message}")]
pub struct RecoverError {
    /// The database.
    pub path: PathBuf,
    /// What failed and what to do.
    pub message: String,
}

/// `path` with `suffix` appended.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Renames the database and its `-wal`/`-shm` (those that exist) from `from` to `to`.
fn rename_set(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::rename(from, to)?;
    for s in ["-wal", "-shm"] {
        let f = with_suffix(from, s);
        if f.exists() {
            std::fs::rename(&f, with_suffix(to, s))?;
        }
    }
    Ok(())
}

fn remove_set(path: &Path) {
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(with_suffix(path, s));
    }
}

/// Whether the file at `path` passes `quick_check` (a file that cannot be opened does not).
pub fn is_intact(path: &Path) -> bool {
    Connection::open(path).is_ok_and(|c| quick_check(&c).is_ok())
}

/// Rebuilds the database at `path` (see the module rules). No connection to it may be open.
///
/// # Errors
/// The file could not be renamed, the new one could not be written (disk full, read-only), or
/// the rebuilt file failed its own check; the damaged file is then back at `path`.
pub fn recover_file(path: &Path) -> Result<RecoveryReport, RecoverError> {
    let err = |message: String| RecoverError {
        path: path.to_path_buf(),
        message,
    };
    if !path.exists() {
        return Err(err("there is no such file".into()));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let stamp = chrono::DateTime::<chrono::Utc>::from_timestamp(now, 0)
        .unwrap_or_default()
        .format("%Y%m%dT%H%M%SZ");
    let damaged = with_suffix(path, &format!(".corrupt-{stamp}"));
    let rebuilding = with_suffix(path, ".rebuilding");
    remove_set(&rebuilding);
    rename_set(path, &damaged)
        .map_err(|e| err(format!("cannot rename it to {}: {e}", damaged.display())))?;
    match rebuild(&damaged, &rebuilding) {
        Ok(tables) => {
            if let Err(e) = std::fs::rename(&rebuilding, path) {
                remove_set(&rebuilding);
                let _ = rename_set(&damaged, path);
                return Err(err(format!("cannot move the rebuilt file in place: {e}")));
            }
            Ok(RecoveryReport {
                database: path.to_path_buf(),
                damaged_copy: Some(damaged),
                tables,
            })
        }
        Err(e) => {
            remove_set(&rebuilding);
            let _ = rename_set(&damaged, path);
            Err(err(e.to_string()))
        }
    }
}

/// Why the rebuilt file could not be made (the damaged file is then put back).
#[derive(Debug, thiserror::Error)]
enum RebuildError {
    /// The new file cannot be created.
    #[error(transparent)]
    Open(#[from] crate::OpenError),
    /// The damaged copy cannot be opened.
    #[error("cannot open the damaged copy {}: {source}", path.display())]
    Damaged {
        /// The damaged copy.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A statement on the new file failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// A row could not be written to the new file.
    #[error("cannot write the rebuilt file: {0}")]
    Write(rusqlite::Error),
    /// The new file failed its own check.
    #[error("the rebuilt file failed its check: {0}")]
    Check(CheckFailed),
    /// The new file could not be closed cleanly.
    #[error("cannot finish the rebuilt file: {0}")]
    Finish(rusqlite::Error),
}

/// Copies what can be read of `damaged` into a new file at `fresh`, closed when this returns.
fn rebuild(damaged: &Path, fresh: &Path) -> Result<Vec<TableRecovery>, RebuildError> {
    let new = crate::open_connection(fresh)?;
    let old = Connection::open(damaged).map_err(|source| RebuildError::Damaged {
        path: damaged.to_path_buf(),
        source,
    })?;
    // Reading must not write: no checkpoint of its log into it when it closes.
    let _ = old.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    let _ = old.pragma_update(None, "query_only", true);
    new.pragma_update(None, "foreign_keys", false)?;
    let tables = table_names(&new)?;
    let mut out = Vec::new();
    for t in &tables {
        out.push(copy_table(&old, &new, t)?);
    }
    drop_orphans(&new, &mut out)?;
    new.pragma_update(None, "foreign_keys", true)?;
    quick_check(&new).map_err(RebuildError::Check)?;
    new.close().map_err(|(_, e)| RebuildError::Finish(e))?;
    Ok(out)
}

/// The tables of the current schema, in creation order. Full-text indexes (virtual tables and
/// their `<name>_…` shadow tables) are not copied: the triggers of their content table rebuild
/// them as its rows are copied.
fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT t.name FROM sqlite_master t
         WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite_%'
           AND t.sql NOT LIKE 'CREATE VIRTUAL TABLE%'
           AND NOT EXISTS (
             SELECT 1 FROM sqlite_master v
             WHERE v.type = 'table' AND v.sql LIKE 'CREATE VIRTUAL TABLE%'
               AND substr(t.name, 1, length(v.name) + 1) = v.name || '_')
         ORDER BY t.rowid",
    )?;
    st.query_map([], |r| r.get(0))?.collect()
}

/// Column names of `table` (a named `INTEGER PRIMARY KEY` among them keeps the row ids).
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    st.query_map([], |r| r.get(1))?.collect()
}

fn quoted(cols: &[String]) -> String {
    cols.iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads rows of `select` after rowid `after` until the batch ends or a row cannot be read.
/// Returns the rows read (rowid first) and the error that stopped it, if any.
fn read_rows(
    old: &Connection,
    select: &str,
    after: i64,
    width: usize,
) -> (Vec<Vec<Value>>, Option<rusqlite::Error>) {
    let mut got = Vec::new();
    let mut st = match old.prepare_cached(select) {
        Ok(st) => st,
        Err(e) => return (got, Some(e)),
    };
    let mut rows = match st.query([after, BATCH]) {
        Ok(r) => r,
        Err(e) => return (got, Some(e)),
    };
    loop {
        match rows.next() {
            Ok(Some(r)) => {
                let row: Result<Vec<Value>, _> = (0..width).map(|i| r.get::<_, Value>(i)).collect();
                match row {
                    Ok(v) => got.push(v),
                    Err(e) => return (got, Some(e)),
                }
            }
            Ok(None) => return (got, None),
            Err(e) => return (got, Some(e)),
        }
    }
}

/// The first rowid greater than `after` whose seek succeeds: `Ok(Some(rowid))`, `Ok(None)` when
/// the table ends there; `Err` when the probe itself failed.
fn first_after(old: &Connection, table: &str, after: i64) -> rusqlite::Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    old.query_row(
        &format!("SELECT rowid FROM \"{table}\" WHERE rowid > ?1 ORDER BY rowid LIMIT 1"),
        [after],
        |r| r.get(0),
    )
    .optional()
}

/// After a read failed just past rowid `after`: where reading can go on. Returns the rowid to
/// continue after (`None`: nothing readable is left) — everything in between is lost.
fn skip_damage(old: &Connection, table: &str, after: i64) -> Option<i64> {
    // Forward, doubling: the first probe point past the damage (rowids are positive, so the
    // probes start at 0 when nothing was read yet; they end at the largest rowid).
    let after = after.max(0);
    let mut step: i64 = 1;
    let (mut bad, mut good) = (after, None);
    while good.is_none() {
        let at = after.saturating_add(step);
        match first_after(old, table, at) {
            Ok(found) => good = Some((at, found)),
            Err(_) if at == i64::MAX => return None,
            Err(_) => bad = at,
        }
        step = step.saturating_mul(2);
    }
    let (mut hi, mut found) = good?;
    // Back, halving: the smallest probe point that still reads.
    while hi - bad > 1 {
        let mid = bad + (hi - bad) / 2;
        match first_after(old, table, mid) {
            Ok(f) => {
                hi = mid;
                found = f;
            }
            Err(_) => bad = mid,
        }
    }
    // Continue from just before the first readable row (or stop at the end).
    found.map(|f| f - 1)
}

/// Copies one table (see the module rules).
fn copy_table(
    old: &Connection,
    new: &Connection,
    table: &str,
) -> Result<TableRecovery, RebuildError> {
    let mut rec = TableRecovery {
        table: table.to_string(),
        rows_kept: 0,
        unreadable_rowids: Vec::new(),
        rows_dropped: 0,
        error: None,
    };
    let new_cols = columns(new, table)?;
    let old_cols = match columns(old, table) {
        Ok(c) if !c.is_empty() => c,
        Ok(_) => return Ok(rec), // not in the damaged file's schema (an older version)
        Err(e) => {
            rec.error = Some(e.to_string());
            return Ok(rec);
        }
    };
    let cols: Vec<String> = new_cols
        .into_iter()
        .filter(|c| old_cols.contains(c))
        .collect();
    let select = format!(
        "SELECT rowid, {} FROM \"{table}\" WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        quoted(&cols)
    );
    let marks = vec!["?"; cols.len()].join(", ");
    let insert = format!(
        "INSERT OR IGNORE INTO \"{table}\" ({}) VALUES ({marks})",
        quoted(&cols)
    );
    let mut after = i64::MIN;
    loop {
        let (rows, failed) = read_rows(old, &select, after, cols.len() + 1);
        for row in &rows {
            // The rowid read first is only the reading position.
            let changed = new
                .prepare_cached(&insert)
                .and_then(|mut st| st.execute(params_from_iter(row[1..].iter())))
                .map_err(RebuildError::Write)?;
            if changed == 1 {
                rec.rows_kept += 1;
            } else {
                rec.rows_dropped += 1;
            }
        }
        if let Some(Value::Integer(last)) = rows.last().map(|r| &r[0]) {
            after = *last;
        }
        let Some(e) = failed else {
            if (rows.len() as i64) < BATCH {
                return Ok(rec);
            }
            continue;
        };
        let from = after.saturating_add(1).max(1);
        match skip_damage(old, table, after) {
            // At least one rowid is given up, so the copy always moves on.
            Some(next) => {
                let next = next.max(from);
                rec.unreadable_rowids.push((from, next));
                after = next;
            }
            None if rec.rows_kept == 0 && rows.is_empty() && after == i64::MIN => {
                rec.error = Some(e.to_string());
                return Ok(rec);
            }
            None => {
                rec.unreadable_rowids.push((from, i64::MAX));
                return Ok(rec);
            }
        }
    }
}

/// Drops rows whose parent row was lost, counting them per table.
fn drop_orphans(new: &Connection, tables: &mut [TableRecovery]) -> rusqlite::Result<()> {
    loop {
        let orphans: Vec<(String, i64)> = {
            let mut st = new.prepare("PRAGMA foreign_key_check")?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        if orphans.is_empty() {
            return Ok(());
        }
        for (table, rowid) in orphans {
            new.execute(
                &format!("DELETE FROM \"{table}\" WHERE rowid = ?1"),
                [rowid],
            )?;
            if let Some(t) = tables.iter_mut().find(|t| t.table == table) {
                t.rows_dropped += 1;
                t.rows_kept = t.rows_kept.saturating_sub(1);
            }
        }
    }
}

impl Store {
    /// Rebuilds this store's file (see the module rules) and goes on with the new one. A file
    /// that passes its check is left alone unless `force`.
    ///
    /// # Errors
    /// As [`recover_file`]; the store then keeps its previous state.
    pub fn recover(&self, force: bool) -> Result<RecoveryReport, RecoverError> {
        let mut conn = self.raw_lock();
        if !force && self.corruption().is_none() && quick_check(&conn).is_ok() {
            return Ok(RecoveryReport {
                database: self.path.clone(),
                damaged_copy: None,
                tables: Vec::new(),
            });
        }
        let placeholder = Connection::open_in_memory().map_err(|e| RecoverError {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let old = std::mem::replace(&mut *conn, placeholder);
        // The damaged file is kept as it is: closing must not checkpoint its log into it.
        let _ = old.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
        drop(old);
        let report = recover_file(&self.path);
        // The rebuilt file, or the damaged one put back (then the store stays refused).
        match crate::open_connection(&self.path) {
            Ok(c) if report.is_ok() => {
                *conn = c;
                *self.health_lock() = Health::Ok;
            }
            Ok(c) => *conn = c,
            Err(e) if report.is_ok() => {
                return Err(RecoverError {
                    path: self.path.clone(),
                    message: format!("the rebuilt file cannot be opened: {e}"),
                });
            }
            Err(_) => {}
        }
        report
    }
}
