//! What `sayri vault set|delete` does after the vault changed: rows already stored in the
//! session database that hold a new secret are rewritten redacted, and a running daemon is told
//! to re-read the vault (so it redacts the new value from now on, and rewrites rows it stored
//! in between).

use sayri_client::client::Client;
use sayri_client::paths::Paths;
use sayri_daemon::stored_secrets;
use sayri_protocol::params::VaultListParams;
use sayri_store::Store;
use sayri_vault::Vault;
use std::time::Duration;

/// How long to wait for a running daemon to answer.
const DAEMON_WAIT: Duration = Duration::from_secs(5);

/// Runs both follow-ups; problems are reported on stderr, never fail the command (the value is
/// stored either way, and a daemon start rewrites what is still due).
pub(crate) fn after_change(paths: &Paths, vault: &Vault) {
    rewrite_local(paths, vault);
    tell_daemon(paths);
}

/// Rewrites the stored rows with every vault secret, if the database exists.
fn rewrite_local(paths: &Paths, vault: &Vault) {
    let db = paths.database();
    if !db.exists() {
        return;
    }
    let result = Store::open(&db)
        .map_err(|e| e.to_string())
        .and_then(|store| {
            stored_secrets::rewrite(&store, &vault.redactor(), &stored_secrets::stamps(vault))
                .map_err(|e| e.to_string())
        });
    match result {
        Ok(r) if r.total() > 0 => println!(
            "redacted {} stored row(s) of the session database that held a secret",
            r.total()
        ),
        Ok(_) => {}
        Err(e) => eprintln!(
            "sayri: note: stored rows were not rewritten ({e}); the daemon rewrites them when it next starts"
        ),
    }
}

/// Asks a running daemon to re-read the vault (`vault_list` does); nothing when none runs.
fn tell_daemon(paths: &Paths) {
    let socket = paths.socket();
    if !socket.exists() {
        return;
    }
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let told = rt.block_on(async {
        let mut c = Client::connect(&socket, DAEMON_WAIT).await.ok()?;
        c.request_with(&VaultListParams {}).await.ok()
    });
    if told.is_none() {
        eprintln!(
            "sayri: note: the running daemon could not be told about the change; it re-reads the vault before its next command"
        );
    }
}
