//! Replies of the long-term memory commands: `memory_add`, `memory_list`, `memory_get`,
//! `memory_edit`, `memory_forget`, `memory_search`, `memory_export`, `memory_import`,
//! `memory_review`, `memory_accept`, `memory_reject`.

use serde::{Deserialize, Serialize};

/// One fact of long-term memory, as every memory command shows it (and as one line of
/// `memory_export` writes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryFact {
    /// Its id (never reused after it is forgotten).
    pub id: i64,
    /// The fact (trimmed, 1–500 characters).
    pub text: String,
    /// The agent it is for; `null` = every agent.
    pub agent: Option<String>,
    /// Its provenance: `person`, `model` or `import`.
    pub source: String,
    /// When it was added, Unix seconds.
    pub created_at: f64,
    /// When its text last changed, Unix seconds.
    pub updated_at: f64,
    /// How many times it was recalled into a turn.
    pub recalled_count: u64,
    /// When it was last recalled, Unix seconds; `null` = never.
    pub last_recalled_at: Option<f64>,
}

/// `memory_add` → the fact as stored.
pub type MemoryAddReply = MemoryFact;

/// `memory_list` → the facts, oldest first.
pub type MemoryListReply = Vec<MemoryFact>;

/// `memory_get` → the fact.
pub type MemoryGetReply = MemoryFact;

/// `memory_edit` → the fact with its new text.
pub type MemoryEditReply = MemoryFact;

/// `memory_search` → the matching facts, best first.
pub type MemorySearchReply = Vec<MemoryFact>;

/// `memory_forget` → `{id, forgotten}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryForgetReply {
    /// The fact's id.
    pub id: i64,
    /// `false` when no fact had that id.
    pub forgotten: bool,
}

/// `memory_export` → `{count, lines}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryExportReply {
    /// How many facts.
    pub count: u64,
    /// Every fact as one JSON object per line (each ending in `\n`), oldest first: what
    /// `memory_import` reads.
    pub lines: String,
}

/// `memory_import` → `{imported, skipped}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryImportReply {
    /// Facts added.
    pub imported: u64,
    /// Lines whose fact was already stored for the same agent (differing only in case,
    /// spacing or a final full stop), or repeated an earlier line.
    pub skipped: u64,
}

/// Two facts of one agent that state different values for the same subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryConflict {
    /// The subject both state (lower case), e.g. `my backup disk`.
    pub subject: String,
    /// The newer fact.
    pub newer: MemoryFact,
    /// The older fact it contradicts.
    pub older: MemoryFact,
}

/// A fact a model proposed in a turn nobody could answer a card in (a routine's or a
/// gateway's): not in memory (never recalled) until the person accepts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryProposal {
    /// Its id among proposals (`memory_accept` / `memory_reject` take it; not a fact id).
    pub id: i64,
    /// The proposed fact (checked like any fact: no secret, 1–500 characters).
    pub text: String,
    /// The agent it would be for (the proposing turn's own agent).
    pub agent: String,
    /// The session of the turn that proposed it (a routine's or a gateway chat's).
    pub session_id: String,
    /// When it was proposed, Unix seconds.
    pub created_at: f64,
}

/// `memory_accept` → the fact as stored in memory (source `model`).
pub type MemoryAcceptReply = MemoryFact;

/// `memory_reject` → `{id, rejected}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRejectReply {
    /// The proposal's id.
    pub id: i64,
    /// `false` when no proposal had that id.
    pub rejected: bool,
}

/// `memory_review` → `{ttl_days, conflicts, stale, proposed}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryReviewReply {
    /// `memory.ttl_days` as used.
    pub ttl_days: u32,
    /// Facts contradicting an older one of the same agent, newest first.
    pub conflicts: Vec<MemoryConflict>,
    /// Facts not recalled (nor added) within `ttl_days`, oldest first.
    pub stale: Vec<MemoryFact>,
    /// Facts proposed where nobody could be asked, waiting for the person, oldest first.
    pub proposed: Vec<MemoryProposal>,
}
