//! Blocking work off the daemon's async worker threads.
//!
//! The rule: every SQLite call and every file read the daemon makes while serving clients runs
//! through [`blocking`] (or, for the core, through [`OffloadedStore`], which does the same for
//! every port call). The runtime has two worker threads; a query or a disk that takes seconds
//! on one of them would otherwise hold up every task queued behind it — `ping` of every client
//! included.
//!
//! [`blocking`] uses `tokio::task::block_in_place`: before `f` runs, the worker's queued tasks
//! are handed to a fresh worker taken from the runtime's blocking pool, so the rest of the
//! daemon keeps being served while this thread waits on SQLite or the disk. It is the one way
//! to take a *synchronous* call off a worker without an `await`: the core's ports
//! (`SessionStore`, `ApprovalStore`, `AgentDirectory`, `SkillLibrary`) are synchronous by
//! design (domain code never touches threads), and the routines keep their state behind a
//! plain mutex. Outside a multi-thread runtime (the CLI, a current-thread test runtime, a
//! thread of the blocking pool) `f` simply runs.

use sayri_core::ports::{
    ApprovalStore, NewMessage, OpenTurn, Preference, PreferenceUpdate, SearchHit, SessionInfo,
    SessionSeed, SessionStore, StoreError, StoredMessage,
};
use sayri_permissions::Approval;
use sayri_store::Store;
use std::sync::Arc;
use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `f` — which may wait on SQLite or the disk — without holding up the runtime's other
/// tasks (see the module's rule). Returns what `f` returns.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Runs `f` with the store, off the async worker threads ([`blocking`]). The one way the
/// daemon's handlers and services call the store: `offload::store(&brain.store, |s|
/// s.routines())`.
pub fn store<T>(store: &Store, f: impl FnOnce(&Store) -> T) -> T {
    blocking(|| f(store))
}

/// The store as the core sees it: every port call runs off the async worker threads
/// ([`blocking`]). The engine's turn persistence, history search, the sessions commands and the
/// permission broker's approvals all go through it.
pub struct OffloadedStore(pub Arc<Store>);

impl OffloadedStore {
    /// Runs one call of the store (with the slow-query test hook, see [`slow_hook`]).
    fn call<T>(&self, what: &'static str, f: impl FnOnce(&Store) -> T) -> T {
        blocking(|| {
            slow_hook(what);
            f(&self.0)
        })
    }
}

/// The slow-query test hook: in a build with the `test-slow-store` feature (which only the
/// `sayri` package's tests turn on, never a release build), `SAYRI_TEST_SLOW_STORE=<call>:<ms>`
/// makes every `<call>` of [`OffloadedStore`] (e.g. `list_sessions`) sleep `<ms>` milliseconds
/// first, where a slow query would wait. Without the feature this is nothing and the variable
/// is never read.
fn slow_hook(what: &'static str) {
    #[cfg(feature = "test-slow-store")]
    if let Ok(spec) = std::env::var("SAYRI_TEST_SLOW_STORE")
        && let Some((call, ms)) = spec.split_once(':')
        && call == what
        && let Ok(ms) = ms.parse::<u64>()
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    #[cfg(not(feature = "test-slow-store"))]
    let _ = what;
}

impl SessionStore for OffloadedStore {
    fn append_message(
        &self,
        seed: &SessionSeed<'_>,
        message: &NewMessage,
    ) -> Result<i64, StoreError> {
        self.call("append_message", |s| s.append_message(seed, message))
    }

    fn session(&self, id: &str) -> Result<Option<SessionInfo>, StoreError> {
        self.call("session", |s| s.session(id))
    }

    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.call("session_ids_with_prefix", |s| {
            s.session_ids_with_prefix(prefix, limit)
        })
    }

    fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, StoreError> {
        self.call("list_sessions", |s| s.list_sessions(limit))
    }

    fn sub_sessions(&self, parent_id: &str) -> Result<Vec<SessionInfo>, StoreError> {
        self.call("sub_sessions", |s| s.sub_sessions(parent_id))
    }

    fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.call("messages", |s| s.messages(session_id))
    }

    fn rename_session(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        self.call("rename_session", |s| s.rename_session(id, title))
    }

    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        self.call("delete_session", |s| s.delete_session(id))
    }

    fn search_messages(
        &self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        self.call("search_messages", |s| {
            s.search_messages(query, session_id, limit)
        })
    }

    fn record_preference(&self, update: &PreferenceUpdate) -> Result<Preference, StoreError> {
        self.call("record_preference", |s| s.record_preference(update))
    }

    fn query_preferences(
        &self,
        text: &str,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        self.call("query_preferences", |s| {
            s.query_preferences(text, agent_id, limit)
        })
    }

    fn list_preferences(
        &self,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        self.call("list_preferences", |s| s.list_preferences(agent_id, limit))
    }

    fn clear_preferences(&self, agent_id: Option<&str>) -> Result<usize, StoreError> {
        self.call("clear_preferences", |s| s.clear_preferences(agent_id))
    }

    fn token_rate(&self, model: &str) -> Result<Option<f64>, StoreError> {
        self.call("token_rate", |s| s.token_rate(model))
    }

    fn set_token_rate(
        &self,
        model: &str,
        bytes_per_token: f64,
        now: f64,
    ) -> Result<(), StoreError> {
        self.call("set_token_rate", |s| {
            s.set_token_rate(model, bytes_per_token, now)
        })
    }

    fn turn_started(
        &self,
        session_id: &str,
        request_message_id: i64,
        now: f64,
    ) -> Result<i64, StoreError> {
        self.call("turn_started", |s| {
            s.turn_started(session_id, request_message_id, now)
        })
    }

    fn turn_ended(&self, id: i64) -> Result<(), StoreError> {
        self.call("turn_ended", |s| s.turn_ended(id))
    }

    fn open_turns(&self) -> Result<Vec<OpenTurn>, StoreError> {
        self.call("open_turns", |s| s.open_turns())
    }

    fn close_interrupted_turn(
        &self,
        turn: &OpenTurn,
        notes: &[NewMessage],
    ) -> Result<(), StoreError> {
        self.call("close_interrupted_turn", |s| {
            s.close_interrupted_turn(turn, notes)
        })
    }
}

impl ApprovalStore for OffloadedStore {
    fn approvals_for(&self, agent_id: &str) -> Result<Vec<Approval>, StoreError> {
        self.call("approvals_for", |s| s.approvals_for(agent_id))
    }

    fn all_approvals(&self) -> Result<Vec<Approval>, StoreError> {
        self.call("all_approvals", |s| s.all_approvals())
    }

    fn add_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        self.call("add_approval", |s| s.add_approval(approval))
    }

    fn forget_approvals(&self, action: Option<&str>, agent_id: &str) -> Result<usize, StoreError> {
        self.call("forget_approvals", |s| s.forget_approvals(action, agent_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_blocking_call_on_the_only_worker_leaves_the_other_tasks_running() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let slow = tokio::spawn(async {
                blocking(|| std::thread::sleep(Duration::from_millis(1500)));
            });
            // Let the slow task take the only worker first.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let start = Instant::now();
            let quick = tokio::spawn(async { Instant::now() }).await.unwrap();
            let waited = quick - start;
            assert!(
                waited < Duration::from_millis(1000),
                "a task waited {waited:?} behind the blocking call"
            );
            slow.await.unwrap();
        });
    }

    #[test]
    fn outside_a_multi_thread_runtime_a_blocking_call_simply_runs() {
        assert_eq!(blocking(|| 7), 7);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(async { blocking(|| 8) }), 8);
    }
}
