//! `sayri quit`: stops the daemon (never starts one) and waits until it has closed.
//! `sayri restart`: the same, then starts it again the way any client does (through
//! `systemctl --user start sayri.service` when installed as a user service).

use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_client::paths::Paths;
use sayri_protocol::params::{QuitParams, StatusParams};
use std::time::Duration;

/// Runs `sayri quit`.
pub(crate) async fn run(paths: &Paths) -> anyhow::Result<()> {
    if stop(paths).await? {
        println!("Sayri daemon stopped.");
    } else {
        println!("Sayri daemon is not running.");
    }
    Ok(())
}

/// Runs `sayri restart`.
pub(crate) async fn restart(paths: &Paths) -> anyhow::Result<()> {
    let was_running = stop(paths).await?;
    let mut client = sayri_client::autostart::connect_or_start(paths, true).await?;
    let status = client.request_with(&StatusParams {}).await?;
    let pid = format!(" (pid {})", status.pid);
    if was_running {
        println!("Sayri daemon restarted{pid}.");
    } else {
        println!("Sayri daemon was not running; started it{pid}.");
    }
    Ok(())
}

/// Stops the daemon and waits until it has closed; `false` when none was running.
async fn stop(paths: &Paths) -> anyhow::Result<bool> {
    let mut client = match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => c,
        Err(ClientError::NotRunning { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    client.request_with(&QuitParams {}).await?;
    if !client.wait_closed(Duration::from_secs(5)).await {
        anyhow::bail!(
            "the daemon acknowledged quit but did not stop within 5 s; see {}",
            paths.log_file().display()
        );
    }
    Ok(true)
}
