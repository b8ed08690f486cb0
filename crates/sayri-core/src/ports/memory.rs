//! The `MemoryBook` port: the long-term memory a turn searches (a model's ```` ```recall ````
//! block) and writes to (an approved ```` ```remember ```` block). The SQLite store implements
//! it; the rules of what a turn may read and write are the domain's
//! ([`crate::domain::memory::MemoryScope`]).

use super::approvals::StoreError;
use crate::domain::memory::{MemoryScope, MemorySource};

/// One fact returned by a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecalledFact {
    /// Its id (`sayri memory show ID`).
    pub id: i64,
    /// The fact.
    pub text: String,
    /// The agent it belongs to; `None` for every agent.
    pub agent: Option<String>,
}

/// What became of a proposed fact ([`MemoryBook::propose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proposed {
    /// Memory already holds the same fact for that agent: its fact id; nothing was kept.
    Known(i64),
    /// It waits for the person, under this proposal id (an equal proposal already waiting
    /// keeps its id).
    Waiting(i64),
}

/// Long-term memory as a turn sees it.
pub trait MemoryBook: Send + Sync {
    /// The facts `scope` may read that hold a word of `query`, best first, at most `limit`.
    /// Their recall counters are not touched (see [`MemoryBook::mark_recalled`]).
    fn search(
        &self,
        query: &str,
        scope: &MemoryScope,
        limit: usize,
    ) -> Result<Vec<RecalledFact>, StoreError>;

    /// Counts one recall at `now` for each fact of `ids` (those that reached the model).
    fn mark_recalled(&self, ids: &[i64], now: f64) -> Result<(), StoreError>;

    /// Stores `text` for `agent` (`None`: every agent) from `source` at `now`; returns its id.
    /// `Err` holds why not, fit for the model and the person (a secret is never repeated).
    fn remember(
        &self,
        text: &str,
        agent: Option<&str>,
        source: MemorySource,
        now: f64,
    ) -> Result<i64, String>;

    /// Keeps `text`, proposed by a turn of `session_id` that nobody could be asked in, for the
    /// person to accept into `agent`'s memory or reject; it is not recalled meanwhile. `Err`
    /// holds why not, as for [`MemoryBook::remember`].
    fn propose(
        &self,
        text: &str,
        agent: &str,
        session_id: &str,
        now: f64,
    ) -> Result<Proposed, String>;
}
