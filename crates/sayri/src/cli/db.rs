//! `sayri db status` and `sayri db recover`: the session database (`$STATE/sessions.db`).
//!
//! `recover` goes through the daemon when it runs (it swaps to the rebuilt file without a
//! restart); otherwise it works on the file itself. Either way the damaged file is kept as
//! `sessions.db.corrupt-<time>` with its `-wal` and `-shm`, and the report says what was lost.

use clap::Subcommand;
use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_client::paths::Paths;
use sayri_protocol::params::{DbRecoverParams, StatusParams};
use sayri_protocol::reply::database::{DatabaseState, DatabaseStatus};
use sayri_store::Store;

/// `sayri db …`
#[derive(Debug, Subcommand)]
pub enum DbAction {
    /// Show the database's state, size, write-ahead log and who else holds it.
    Status {
        /// Print the status object as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set a corrupt database aside (kept as sessions.db.corrupt-<time>) and rebuild what can
    /// be read into a new one; says what was lost.
    Recover {
        /// Rebuild even when the file passes its check.
        #[arg(long)]
        force: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `sayri db …`; never starts the daemon.
pub async fn run(paths: &Paths, action: DbAction) -> anyhow::Result<i32> {
    let daemon = match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => Some(c),
        Err(ClientError::NotRunning { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    match action {
        DbAction::Status { json } => status(paths, daemon, json).await,
        DbAction::Recover { force, json } => recover(paths, daemon, force, json).await,
    }
}

async fn status(paths: &Paths, daemon: Option<Client>, json: bool) -> anyhow::Result<i32> {
    let db = match daemon {
        Some(mut c) => c.request_with(&StatusParams {}).await?.database,
        None => Some(local_store(paths)?.status()),
    };
    let Some(db) = db else {
        anyhow::bail!("the daemon has not opened the session database yet; try again in a moment");
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&db)?);
    } else if let Some(line) = status_line(&db) {
        println!("{}", sayri_client::terminal_text::terminal_safe(&line));
    }
    Ok(if db.state == DatabaseState::Corrupt {
        1
    } else {
        0
    })
}

fn local_store(paths: &Paths) -> anyhow::Result<Store> {
    paths.ensure_dirs()?;
    Ok(Store::open_checked(paths.database())?)
}

async fn recover(
    paths: &Paths,
    daemon: Option<Client>,
    force: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let report = match daemon {
        Some(mut c) => c.request_with(&DbRecoverParams { force }).await?,
        None => {
            let store = local_store(paths)?;
            tokio::task::spawn_blocking(move || sayri_daemon::database::recover(&store, force))
                .await??
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!(
            "{}",
            sayri_client::terminal_text::terminal_safe(&report.summary)
        );
    }
    Ok(0)
}

/// One line for `sayri status` and `sayri db status` from the status object's `database`.
pub fn status_line(db: &DatabaseStatus) -> Option<String> {
    if let Some(e) = &db.error {
        return Some(e.clone());
    }
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0));
    let mut line = format!(
        "{} ({}; write-ahead log {}, kept under {} once no reader holds it)",
        db.path.display(),
        mib(db.size_bytes),
        mib(db.wal_bytes),
        mib(db.wal_limit_bytes)
    );
    if !db.readers.is_empty() {
        line.push_str(&format!(
            "; held back by a reader in process {}",
            pids(&db.readers)
        ));
    }
    if !db.writers.is_empty() {
        line.push_str(&format!("; write-locked by process {}", pids(&db.writers)));
    }
    Some(line)
}

fn pids(p: &[u32]) -> String {
    p.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}
