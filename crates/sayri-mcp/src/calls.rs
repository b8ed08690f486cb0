//! A call to a tool, made only as the user approved it.
//!
//! # Rules
//! - Before every call the server's tools are listed again and judged against the pins
//!   ([`crate::pins::review`]): a tool that is not offered, or is offered under a definition
//!   other than the approved one, is refused here and nothing is sent to the server. Listing at
//!   call time (not trusting a list from earlier on the same connection) catches a server that
//!   changes a tool mid-session whether or not it says so.
//! - Approvals that cannot be read refuse every call.

use crate::client::{CallResult, Connection, McpError};
use crate::pins::{self, Pins, PinsError, Withheld};
use crate::servers::ServerDef;
use serde_json::Value;

/// Why a call did not happen or failed.
#[derive(Debug, thiserror::Error)]
pub enum CallRefused {
    /// The approvals cannot be read: nothing is called.
    #[error(transparent)]
    PinsUnreadable(#[from] PinsError),
    /// The tool is not offered or not approved as offered: nothing was sent to the server.
    #[error(transparent)]
    Withheld(#[from] Withheld),
    /// Listing or calling failed.
    #[error(transparent)]
    Mcp(#[from] McpError),
}

/// Calls `tool` of the server `def` over `conn` with `arguments`, when `pins` (the approvals
/// as loaded) approve it as the server offers it now. `others` are the other servers' names
/// and tools (for the review's findings).
///
/// # Errors
/// [`CallRefused`] (see the module rules).
pub async fn call_approved(
    conn: &Connection,
    def: &ServerDef,
    pins: &Result<Pins, PinsError>,
    others: &[String],
    tool: &str,
    arguments: Value,
) -> Result<CallResult, CallRefused> {
    let pins = pins
        .as_ref()
        .map_err(|e| CallRefused::PinsUnreadable(e.clone()))?;
    let offered = conn.tools().await?;
    let review = pins::review(offered, pins.of(&def.name, &pins::source_of(def)), others);
    review.callable(&def.name, tool)?;
    Ok(conn.call(tool, arguments).await?)
}
