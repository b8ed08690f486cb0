//! The doctor's `database` check: the session database's state, sizes, the free space beside
//! it, and another process holding a checkpoint back (by pid, from `/proc/locks`).
//!
//! From the running daemon's `status` when there is one (it has checked the file); otherwise
//! from the files themselves (the doctor opens nothing).

use super::doctor::{Finding, Status};
use sayri_client::paths::Paths;
use sayri_protocol::reply::database::{DatabaseState, DatabaseStatus};
use sayri_protocol::reply::runtime::StatusReply;
use sayri_store::{LockKind, WAL_LIMIT_BYTES, lock_holders};

/// Free space below which the database check fails: the room the write-ahead log may take.
pub const MIN_DB_FREE_BYTES: u64 = WAL_LIMIT_BYTES;

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

/// What can be said of the files when no daemon answers.
fn from_files(paths: &Paths) -> Option<DatabaseStatus> {
    let path = paths.database();
    let size = |suffix: &str| {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        std::fs::metadata(p).map_or(0, |m| m.len())
    };
    if !path.exists() {
        return None;
    }
    let holders = lock_holders(&path);
    let of = |k| {
        holders
            .iter()
            .filter(|h| h.kind == k)
            .map(|h| h.pid)
            .collect()
    };
    let free = nix::sys::statvfs::statvfs(&paths.state_dir)
        .ok()
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()));
    Some(DatabaseStatus {
        size_bytes: size(""),
        wal_bytes: size("-wal"),
        wal_limit_bytes: WAL_LIMIT_BYTES,
        free_bytes: free,
        readers: of(LockKind::Reader),
        writers: of(LockKind::Writer),
        state: DatabaseState::Ok,
        error: None,
        fix: None,
        last_checkpoint: None,
        path,
    })
}

/// The check (see the module notes).
pub fn check(paths: &Paths, daemon_status: Option<&StatusReply>) -> Finding {
    let reported = daemon_status.and_then(|s| s.database.clone());
    let title = "session database";
    let Some(db) = reported.or_else(|| from_files(paths)) else {
        return super::doctor::finding(
            "database",
            title,
            Status::Ok,
            format!(
                "{} does not exist yet (it is made at the first start)",
                paths.database().display()
            ),
            None,
        );
    };
    if db.state == DatabaseState::Corrupt {
        return super::doctor::finding(
            "database",
            title,
            Status::Fail,
            db.error.unwrap_or_else(|| "corrupt".into()),
            Some("sayri db recover".into()),
        );
    }
    let mut detail = format!(
        "{}: {}, write-ahead log {} (brought back under {} once no reader holds it)",
        db.path.display(),
        mib(db.size_bytes),
        mib(db.wal_bytes),
        mib(db.wal_limit_bytes)
    );
    let mut fix = None;
    let mut status = Status::Ok;
    if let Some(free) = db.free_bytes {
        detail.push_str(&format!(", {} free beside it", mib(free)));
        if free < MIN_DB_FREE_BYTES {
            status = Status::Fail;
            fix = Some(format!(
                "free some space on the file system of {} (writes fail once it is full; stored data stays intact)",
                paths.state_dir.display()
            ));
        }
    }
    let me = std::process::id();
    let readers: Vec<String> = db
        .readers
        .iter()
        .filter(|p| **p != me)
        .map(u32::to_string)
        .collect();
    if !readers.is_empty() {
        detail.push_str(&format!(
            "; a checkpoint is held back by a reader in process {} (an open read transaction: a backup, a `sqlite3` shell)",
            readers.join(", ")
        ));
        fix.get_or_insert_with(|| {
            "end that program's transaction or close it; the log shrinks by itself within seconds after".into()
        });
    }
    if !db.writers.is_empty() {
        detail.push_str(&format!(
            "; write-locked by process {}",
            db.writers
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    super::doctor::finding("database", title, status, detail, fix)
}
