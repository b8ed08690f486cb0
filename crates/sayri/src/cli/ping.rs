//! `sayri ping`: prints `pong` when the daemon answers.

use crate::cli::autostart::connect_or_start;
use crate::paths::Paths;
use sayri_protocol::names::cmd;
use serde_json::Map;

/// Runs `sayri ping`.
pub async fn run(paths: &Paths, allow_start: bool) -> anyhow::Result<()> {
    let mut client = connect_or_start(paths, allow_start).await?;
    let result = client.request(cmd::PING, Map::new()).await?;
    println!("{}", result.as_str().unwrap_or("pong"));
    Ok(())
}
