//! A child's pid file ([`super::ChildSpec::pid_file`]): the program's pid, as decimal text,
//! written (atomically, 0600) each time a run starts and removed when that run ends — so
//! programs that find each other by pid file (the original tray and companions look for
//! `$STATE/<id>.pid`) see the supervised program, and never a pid of a run that is over.
//!
//! The file is removed only while it still names the run's own pid: a file someone replaced
//! meanwhile is left alone.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long a start waits for the keeper to have started the program.
const FIND_PROGRAM: Duration = Duration::from_secs(2);
/// How often it looks.
const STEP: Duration = Duration::from_millis(10);

/// Writes the pid of the program under `keeper` into `path` once the keeper has started it;
/// the pid written, or `None` when none was found in time or the file cannot be written (then
/// logged: a missing pid file never stops the program).
pub async fn write(path: &Path, keeper: u32) -> Option<u32> {
    let deadline = Instant::now() + FIND_PROGRAM;
    let pid = loop {
        if let Some(pid) = super::program_pid(keeper) {
            break pid;
        }
        if Instant::now() >= deadline {
            tracing::warn!(
                "pid file {} not written: the program under keeper {keeper} was not found",
                path.display()
            );
            return None;
        }
        tokio::time::sleep(STEP).await;
    };
    match sayri_vault::atomic_write::write_atomic(path, pid.to_string().as_bytes()) {
        Ok(()) => Some(pid),
        Err(e) => {
            tracing::warn!("pid file not written: {e}");
            None
        }
    }
}

/// Removes `path` when it still holds `pid`.
pub fn remove(path: &Path, pid: u32) {
    let ours = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        == Some(pid);
    if ours && let Err(e) = std::fs::remove_file(path) {
        tracing::warn!("pid file {} not removed: {e}", path.display());
    }
}
