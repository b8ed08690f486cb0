//! `sayri quit`: stops the daemon (never starts one) and waits until it has closed.

use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_client::paths::Paths;
use sayri_protocol::params::QuitParams;
use std::time::Duration;

/// Runs `sayri quit`.
pub(crate) async fn run(paths: &Paths) -> anyhow::Result<()> {
    let mut client = match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => c,
        Err(ClientError::NotRunning { .. }) => {
            println!("Sayri daemon is not running.");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    client.request_with(&QuitParams {}).await?;
    if !client.wait_closed(Duration::from_secs(5)).await {
        anyhow::bail!(
            "the daemon acknowledged quit but did not stop within 5 s; see {}",
            paths.log_file().display()
        );
    }
    println!("Sayri daemon stopped.");
    Ok(())
}
