//! Learned preferences: which command served which intent, scored by outcome.
//!
//! Scoring: a new row starts at success 1/0 or failure 0/1 with score `1.0` or `-1.5`; each
//! further observation of the same (agent, intent, command) bumps a counter and sets
//! `score = round(success − 1.5 × failure, 2)`. Queries return only rows with `score ≥ 0`.

use crate::{Store, like_escape};
use rusqlite::{Row, params};
use sayri_core::ports::{Preference, PreferenceUpdate, StoreError, redacted_prefix};

const COLS: &str = "id, agent_id, intent, command, rejected_command, success_count,
    failure_count, score, notes, updated_at";

fn pref_row(r: &Row<'_>) -> rusqlite::Result<Preference> {
    Ok(Preference {
        id: r.get(0)?,
        agent_id: r.get(1)?,
        intent: r.get(2)?,
        command: r.get(3)?,
        rejected_command: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
        success_count: r.get(5)?,
        failure_count: r.get(6)?,
        score: r.get(7)?,
        notes: r.get::<_, Option<String>>(8)?.unwrap_or_default(),
        updated_at: r.get(9)?,
    })
}

/// `success − 1.5 × failure`, rounded to 2 decimals.
pub fn score(success: u32, failure: u32) -> f64 {
    ((f64::from(success) - 1.5 * f64::from(failure)) * 100.0).round() / 100.0
}

impl Store {
    pub(crate) fn record_preference_impl(
        &self,
        u: &PreferenceUpdate,
    ) -> Result<Preference, StoreError> {
        let intent = redacted_prefix(self.redactor.as_ref(), u.intent.trim(), 120);
        let command = self.clean(&u.command);
        let rejected = self.clean_opt(u.rejected_command.as_deref());
        let notes = self.clean_opt(u.notes.as_deref());
        let (s, f) = if u.success { (1u32, 0u32) } else { (0, 1) };
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        tx.execute(
            "INSERT INTO agent_preferences (agent_id, intent, command, rejected_command,
                 success_count, failure_count, score, notes, created_at, updated_at)
             VALUES (?1, ?2, ?3, COALESCE(?4, ''), ?5, ?6, ?7, COALESCE(?8, ''), ?9, ?9)
             ON CONFLICT(agent_id, intent, command) DO UPDATE SET
                 success_count = success_count + excluded.success_count,
                 failure_count = failure_count + excluded.failure_count,
                 score = ROUND((success_count + excluded.success_count)
                        - 1.5 * (failure_count + excluded.failure_count), 2),
                 rejected_command = COALESCE(?4, rejected_command),
                 notes = COALESCE(?8, notes),
                 updated_at = excluded.updated_at",
            params![
                u.agent_id,
                intent,
                command,
                rejected,
                s,
                f,
                score(s, f),
                notes,
                u.now
            ],
        )
        .map_err(|e| self.fail(e))?;
        let row = tx
            .query_row(
                &format!(
                    "SELECT {COLS} FROM agent_preferences
                     WHERE agent_id = ?1 AND intent = ?2 AND command = ?3"
                ),
                params![u.agent_id, intent, command],
                pref_row,
            )
            .map_err(|e| self.fail(e))?;
        tx.commit().map_err(|e| self.fail(e))?;
        Ok(row)
    }

    pub(crate) fn query_preferences_impl(
        &self,
        text: &str,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        let tokens: Vec<String> = text
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_' && c != '.')
            .filter(|t| t.chars().count() > 1)
            .map(|t| format!("%{}%", like_escape(t)))
            .collect();
        if tokens.is_empty() {
            return Ok(Vec::new());
        }
        let mut clauses = Vec::new();
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        for t in &tokens {
            let n = args.len() + 1;
            clauses.push(format!(
                "lower(intent) LIKE ?{n} ESCAPE '\\' OR lower(command) LIKE ?{n} ESCAPE '\\'
                 OR lower(notes) LIKE ?{n} ESCAPE '\\'"
            ));
            args.push(t.clone().into());
        }
        let mut sql = format!(
            "SELECT {COLS} FROM agent_preferences WHERE score >= 0 AND ({})",
            clauses.join(" OR ")
        );
        if let Some(a) = agent_id {
            args.push(a.to_string().into());
            sql.push_str(&format!(" AND agent_id = ?{}", args.len()));
        }
        args.push((limit as i64).into());
        sql.push_str(&format!(
            " ORDER BY score DESC, updated_at DESC LIMIT ?{}",
            args.len()
        ));
        let conn = self.lock()?;
        let mut st = conn.prepare(&sql).map_err(|e| self.fail(e))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args), pref_row)
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.fail(e))
    }

    pub(crate) fn list_preferences_impl(
        &self,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        let conn = self.lock()?;
        let mut st = conn
            .prepare(&format!(
                "SELECT {COLS} FROM agent_preferences WHERE (?1 IS NULL OR agent_id = ?1)
                 ORDER BY score DESC, updated_at DESC LIMIT ?2"
            ))
            .map_err(|e| self.fail(e))?;
        let rows = st
            .query_map(params![agent_id, limit as i64], pref_row)
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.fail(e))
    }

    pub(crate) fn clear_preferences_impl(
        &self,
        agent_id: Option<&str>,
    ) -> Result<usize, StoreError> {
        let conn = self.lock()?;
        conn.execute(
            "DELETE FROM agent_preferences WHERE (?1 IS NULL OR agent_id = ?1)",
            params![agent_id],
        )
        .map_err(|e| self.fail(e))
    }
}
