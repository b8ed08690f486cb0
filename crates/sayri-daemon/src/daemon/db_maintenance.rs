//! The session database while the daemon runs: its log kept small, its damage told.
//!
//! * A checkpoint runs right after start (a log left large by another program or an earlier
//!   crash is brought back at once) and then every [`EVERY`] while the log is not empty, on a
//!   blocking thread, never on the IPC path. The store also checkpoints after every turn;
//!   this task is what catches the moment a foreign reader lets go.
//! * When the file is (or becomes) corrupt, an `error` event {`error`, `source`: `database`,
//!   `name`: the file} goes to every client, once per change — the log line is written where
//!   the damage is found, never once per refused write.

use crate::daemon::state::DaemonState;
use sayri_protocol::event::turns;
use std::sync::Arc;
use std::time::Duration;

/// How often the log is looked at (a `stat` of the `-wal` file; a checkpoint only when it is
/// not empty).
pub const EVERY: Duration = Duration::from_secs(5);

/// Runs until shutdown (see the module rules).
pub async fn run(state: Arc<DaemonState>) {
    let Some(brain) = state.brain.get().cloned() else {
        return;
    };
    let mut told: Option<String> = None;
    loop {
        let corrupt = brain.store.corruption();
        if corrupt != told {
            if let Some(why) = &corrupt {
                state.broadcaster.emit(&turns::Error {
                    error: why.clone(),
                    source: Some("database".into()),
                    name: Some(brain.store.path().display().to_string()),
                });
            } else if told.is_some() {
                tracing::info!("the session database is usable again");
            }
            told = corrupt;
        }
        if told.is_none() && brain.db(|s| s.wal_bytes()) > 0 {
            let store = brain.store.clone();
            let _ = tokio::task::spawn_blocking(move || store.maintain()).await;
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            () = tokio::time::sleep(EVERY) => {}
        }
    }
}
