//! Start-up after a crash: the new daemon, holding the singleton lock and before it starts
//! anything, cleans up what the previous one left.
//!
//! 1. [`kill_leftovers`]: every child the previous daemon recorded in `$STATE/children/` that is
//!    somehow still running is killed with its tree; a recorded pid now used by another program
//!    (other start time) is left alone (see `sayri_sandbox::child_registry`).
//! 2. [`close_interrupted_turns`]: a turn that was running is marked interrupted in its
//!    conversation (its pending command recorded as not completed), never re-run (see
//!    `sayri_core::engine::interrupted`).
//!
//! Open permission questions lived only in the previous daemon's memory: their ids are unknown
//! to this one, so an answer to them is refused (`delivered: false`) and runs nothing.

use sayri_client::paths::Paths;
use sayri_core::engine::interrupted;
use sayri_core::ports::Clock;
use sayri_sandbox::child_registry::ChildRegistry;
use sayri_store::Store;

/// Kills what the records of a dead daemon still name and removes the records. Logs what it did.
pub fn kill_leftovers(paths: &Paths) {
    let report = ChildRegistry::new(paths.children_dir()).sweep();
    for (what, pid) in &report.killed {
        tracing::warn!("killed pid {pid} ({what}) left running by a daemon that crashed");
    }
    if report.foreign > 0 {
        tracing::warn!(
            "{} child record(s) in {} belong to another running daemon; left alone",
            report.foreign,
            paths.children_dir().display()
        );
    }
}

/// Closes the turns a crash cut short. A store error is logged: start-up goes on, and the turns
/// are closed at the next start.
pub fn close_interrupted_turns(store: &Store, clock: &dyn Clock) {
    match interrupted::close_interrupted_turns(store, clock.now_unix()) {
        Ok(closed) => {
            for t in closed.iter().filter(|t| t.noted) {
                match &t.pending_command {
                    Some(c) => tracing::warn!(
                        "session {}: a turn was interrupted by a crash at the command `{c}`; marked as not completed",
                        t.session_id
                    ),
                    None => tracing::warn!(
                        "session {}: a turn was interrupted by a crash; marked as interrupted",
                        t.session_id
                    ),
                }
            }
        }
        Err(e) => crate::store_health::log_store_error(
            store,
            "could not close the turns a crash interrupted",
            &e,
        ),
    }
}
