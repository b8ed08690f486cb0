//! Events of the scheduler: `routine_started`, `routine_finished`.

use serde::{Deserialize, Serialize};

/// `routine_started` → `{kind, id, name, session_id, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutineStarted {
    /// `routine` or `trigger`.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The session the run is stored in.
    pub session_id: String,
    /// `schedule`, `catch_up`, `manual`, `login` or `event`.
    pub reason: String,
}

/// `routine_finished` → `{kind, id, name, session_id, status, summary}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutineFinished {
    /// `routine` or `trigger`.
    pub kind: String,
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The session the run is stored in.
    pub session_id: String,
    /// `ok`, `error` or `refused`.
    pub status: String,
    /// What it said (or why it failed), redacted.
    pub summary: String,
}
