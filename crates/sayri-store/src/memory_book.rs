//! The store as the engine's [`MemoryBook`]: searches limited to a turn's [`MemoryScope`] in
//! SQL (so the limit counts only readable facts), recall counters, and a model's facts.
//!
//! * A search reads the facts of the scope's agents, and those for every agent only when the
//!   scope says so; the same quoted-word query as `memory_search`, ranked by `bm25`.
//! * Remembering a fact already stored for the same agent stores nothing new and answers the
//!   existing id (`memory_add`'s rule): duplicates are merged, not repeated.

use crate::Store;
use crate::memory::MemoryError;
use rusqlite::params;
use sayri_core::domain::memory::{MemoryScope, MemorySource};
use sayri_core::ports::{MemoryBook, Proposed, RecalledFact, StoreError};

impl MemoryBook for Store {
    fn search(
        &self,
        query: &str,
        scope: &MemoryScope,
        limit: usize,
    ) -> Result<Vec<RecalledFact>, StoreError> {
        let Some(q) = crate::memory::fts_query(query) else {
            return Ok(Vec::new());
        };
        let readable = serde_json::to_string(&scope.readable)
            .map_err(|e| StoreError(format!("cannot write the memory scope: {e}")))?;
        let conn = self.lock()?;
        let mut st = conn
            .prepare(
                "SELECT m.id, m.text, m.agent FROM memory_fts JOIN memory m ON m.id = memory_fts.rowid
                 WHERE memory_fts MATCH ?1
                   AND ((m.agent IS NULL AND ?2) OR m.agent IN (SELECT value FROM json_each(?3)))
                 ORDER BY bm25(memory_fts), m.id LIMIT ?4",
            )
            .map_err(|e| self.fail(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = st
            .query_map(params![q, scope.every_agent, readable, limit], |r| {
                Ok(RecalledFact {
                    id: r.get(0)?,
                    text: r.get(1)?,
                    agent: r.get(2)?,
                })
            })
            .map_err(|e| self.fail(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.fail(e))
    }

    fn mark_recalled(&self, ids: &[i64], now: f64) -> Result<(), StoreError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        for id in ids {
            tx.execute(
                "UPDATE memory SET recalled_count = recalled_count + 1, last_recalled_at = ?2
                 WHERE id = ?1",
                params![id, now],
            )
            .map_err(|e| self.fail(e))?;
        }
        tx.commit().map_err(|e| self.fail(e))
    }

    fn remember(
        &self,
        text: &str,
        agent: Option<&str>,
        source: MemorySource,
        now: f64,
    ) -> Result<i64, String> {
        self.memory_add(text, agent, source, now)
            .map(|f| f.id)
            .map_err(|e: MemoryError| e.to_string())
    }

    fn propose(
        &self,
        text: &str,
        agent: &str,
        session_id: &str,
        now: f64,
    ) -> Result<Proposed, String> {
        self.memory_propose(text, agent, session_id, now)
            .map_err(|e| e.to_string())
    }
}
