//! Proposed facts: `memory_proposals` (schema version 13), the facts a model proposed in a turn
//! nobody could answer a card in (a routine's, a gateway's).
//!
//! * A proposal is checked like any fact before it is kept (1–500 characters, a valid agent id,
//!   no vault secret); a fact holding a secret is refused and nothing is written.
//! * It is never searched or recalled: it lives in its own table, outside `memory` and its
//!   index, until the person accepts it.
//! * Proposing what memory already holds for that agent keeps nothing and names the stored
//!   fact; proposing what is already waiting keeps nothing and names the waiting proposal
//!   ([`same_fact`] decides both).
//! * At most [`MAX_WAITING`] proposals wait at once: past that a new one is refused (a chat
//!   that keeps a model proposing cannot grow the file without bound).
//! * Accepting checks the text again (a secret added to the vault since is caught), stores it
//!   as a fact of source `model` for the proposal's agent, dated when it was proposed, and
//!   deletes the proposal, in one transaction. Rejecting deletes it and empties the
//!   write-ahead log, as forgetting a fact does.

use crate::Store;
use crate::memory::{MemoryError, NewFact, add_new, get, same_stored};
use rusqlite::{OptionalExtension, Row, Transaction, params};
use sayri_core::domain::memory::{FactError, MemorySource, fact_agent, fact_text, same_fact};
use sayri_core::ports::{Proposed, StoreError};
use sayri_protocol::reply::memory::{MemoryFact, MemoryProposal};

const COLS: &str = "id, text, agent, session_id, created_at";

/// The most proposals that wait for the person at once.
pub const MAX_WAITING: usize = 100;

fn proposal_row(r: &Row<'_>) -> rusqlite::Result<MemoryProposal> {
    Ok(MemoryProposal {
        id: r.get(0)?,
        text: r.get(1)?,
        agent: r.get(2)?,
        session_id: r.get(3)?,
        created_at: r.get(4)?,
    })
}

impl Store {
    /// Keeps `text`, proposed by a turn of `session_id` for `agent` at `now`, for the person to
    /// accept or reject.
    ///
    /// # Errors
    /// [`MemoryError::Fact`] when it breaks a rule of facts (nothing is written), else the
    /// store's error.
    pub fn memory_propose(
        &self,
        text: &str,
        agent: &str,
        session_id: &str,
        now: f64,
    ) -> Result<Proposed, MemoryError> {
        let fact = NewFact {
            text: fact_text(text, self.redactor.as_ref())?,
            agent: fact_agent(Some(agent))?,
            created_at: now,
            updated_at: now,
        };
        let Some(agent) = fact.agent.clone() else {
            return Err(MemoryError::Fact(FactError::BadAgent(agent.to_string())));
        };
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        if let Some(id) = same_stored(&tx, &fact).map_err(|e| self.fail(e))? {
            return Ok(Proposed::Known(id));
        }
        if let Some(id) = same_waiting(&tx, &fact.text, &agent).map_err(|e| self.fail(e))? {
            return Ok(Proposed::Waiting(id));
        }
        let waiting: i64 = tx
            .query_row("SELECT count(*) FROM memory_proposals", [], |r| r.get(0))
            .map_err(|e| self.fail(e))?;
        if usize::try_from(waiting).unwrap_or(usize::MAX) >= MAX_WAITING {
            return Err(MemoryError::TooManyProposals(MAX_WAITING));
        }
        tx.execute(
            "INSERT INTO memory_proposals (text, agent, session_id, created_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![fact.text, agent, session_id, now],
        )
        .map_err(|e| self.fail(e))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| self.fail(e))?;
        Ok(Proposed::Waiting(id))
    }

    /// Every waiting proposal, oldest first.
    ///
    /// # Errors
    /// The store's error.
    pub fn memory_proposals(&self) -> Result<Vec<MemoryProposal>, StoreError> {
        let conn = self.lock()?;
        let mut st = conn
            .prepare(&format!("SELECT {COLS} FROM memory_proposals ORDER BY id"))
            .map_err(|e| self.fail(e))?;
        let rows = st.query_map([], proposal_row).map_err(|e| self.fail(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.fail(e))
    }

    /// Moves proposal `id` into memory at `now`; returns the fact as stored (an equal fact
    /// already stored for the agent is returned instead of a second one).
    ///
    /// # Errors
    /// [`MemoryError::NoProposal`], [`MemoryError::Fact`] when its text now breaks a rule (the
    /// proposal stays, so the person can read and reject it), or the store's error.
    pub fn memory_accept(&self, id: i64, now: f64) -> Result<MemoryFact, MemoryError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        let waiting = tx
            .query_row(
                &format!("SELECT {COLS} FROM memory_proposals WHERE id = ?1"),
                [id],
                proposal_row,
            )
            .optional()
            .map_err(|e| self.fail(e))?
            .ok_or(MemoryError::NoProposal(id))?;
        let fact = NewFact {
            text: fact_text(&waiting.text, self.redactor.as_ref())?,
            agent: fact_agent(Some(&waiting.agent))?,
            created_at: waiting.created_at,
            updated_at: now,
        };
        let fact_id = add_new(&tx, &fact, MemorySource::Model).map_err(|e| self.fail(e))?;
        tx.execute("DELETE FROM memory_proposals WHERE id = ?1", [id])
            .map_err(|e| self.fail(e))?;
        let row = get(&tx, fact_id).map_err(|e| self.fail(e))?;
        tx.commit().map_err(|e| self.fail(e))?;
        row.ok_or(MemoryError::NotFound(fact_id))
    }

    /// Deletes proposal `id`, then empties the write-ahead log (best effort); memory is not
    /// touched. Returns whether it existed.
    ///
    /// # Errors
    /// The store's error.
    pub fn memory_reject(&self, id: i64) -> Result<bool, StoreError> {
        self.delete_leaving_no_trace("DELETE FROM memory_proposals WHERE id = ?1", id)
    }
}

/// The id of a waiting proposal for `agent` that says the same as `text`.
fn same_waiting(tx: &Transaction<'_>, text: &str, agent: &str) -> rusqlite::Result<Option<i64>> {
    let mut st =
        tx.prepare("SELECT id, text FROM memory_proposals WHERE agent = ?1 ORDER BY id")?;
    let rows = st.query_map([agent], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })?;
    for row in rows {
        let (id, waiting) = row?;
        if same_fact(&waiting, text) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}
