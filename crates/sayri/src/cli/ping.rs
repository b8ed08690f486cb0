//! `sayri ping`: prints `pong` when the daemon answers.

use sayri_client::autostart::connect_or_start;
use sayri_client::paths::Paths;
use sayri_protocol::params::PingParams;

/// Runs `sayri ping`.
pub(crate) async fn run(paths: &Paths, allow_start: bool) -> anyhow::Result<()> {
    let mut client = connect_or_start(paths, allow_start).await?;
    let result = client.request_with(&PingParams {}).await?;
    println!("{result}");
    Ok(())
}
