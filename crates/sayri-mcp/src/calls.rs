//! A call to a tool, made only as the user approved it.
//!
//! # Rules
//! - Before every call the server's tools are listed again and judged against the pins
//!   ([`crate::pins::review`]): a tool that is not offered, or is offered under a definition
//!   other than the approved one, is refused here and nothing is sent to the server. Listing at
//!   call time (not trusting a list from earlier on the same connection) catches a server that
//!   changes a tool mid-session whether or not it says so.
//! - Approvals that cannot be read refuse every call.
//! - The arguments are checked against the approved tool's input schema before the call
//!   (JSON Schema, no remote references fetched); arguments that do not satisfy it are
//!   refused with the first few problems and nothing is sent.

use crate::ToolInfo;
use crate::client::{CallResult, Connection, McpError};
use crate::pins::{self, Pins, PinsError, Withheld};
use crate::servers::ServerDef;
use serde_json::Value;

/// At most this many schema problems are reported for one call.
const MAX_PROBLEMS: usize = 3;

/// Why a call did not happen or failed.
#[derive(Debug, thiserror::Error)]
pub enum CallRefused {
    /// The approvals cannot be read: nothing is called.
    #[error(transparent)]
    PinsUnreadable(#[from] PinsError),
    /// The tool is not offered or not approved as offered: nothing was sent to the server.
    #[error(transparent)]
    Withheld(#[from] Withheld),
    /// The arguments do not satisfy the tool's input schema: nothing was sent.
    #[error("the arguments do not match the input schema of {tool}: {problems}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// The first problems, `; `-separated, each naming where in the arguments.
        problems: String,
        /// The tool's (approved) input schema.
        schema: Value,
    },
    /// Listing or calling failed.
    #[error(transparent)]
    Mcp(#[from] McpError),
}

/// The names of every server in `servers` other than `def` and of their approved tools in
/// `all`: what the review's "names another tool or server" finding looks for.
pub fn others_of(def: &ServerDef, servers: &[ServerDef], all: &Pins) -> Vec<String> {
    let mut others: Vec<String> = servers
        .iter()
        .filter(|s| s.name != def.name)
        .map(|s| s.name.clone())
        .collect();
    for (server, pinned) in &all.servers {
        if server != &def.name {
            others.extend(pinned.tools.keys().cloned());
        }
    }
    others
}

/// The tool `tool` of `def` as the server offers it now over `conn`, when the user approved
/// it as offered.
///
/// # Errors
/// [`CallRefused`]: approvals unreadable, the tool withheld, or listing failed.
pub async fn approved_tool(
    conn: &Connection,
    def: &ServerDef,
    pins: &Result<Pins, PinsError>,
    others: &[String],
    tool: &str,
) -> Result<ToolInfo, CallRefused> {
    let pins = pins
        .as_ref()
        .map_err(|e| CallRefused::PinsUnreadable(e.clone()))?;
    let offered = conn.tools().await?;
    let review = pins::review(offered, pins.of(&def.name, &pins::source_of(def)), others);
    Ok(review.callable(&def.name, tool)?.clone())
}

/// Checks `arguments` against `tool`'s input schema.
///
/// # Errors
/// [`CallRefused::InvalidArguments`] with the first problems; a schema the checker cannot
/// compile refuses the call too (the tool's arguments cannot be checked).
pub fn check_arguments(tool: &ToolInfo, arguments: &Value) -> Result<(), CallRefused> {
    let invalid = |problems: String| CallRefused::InvalidArguments {
        tool: tool.name.clone(),
        problems,
        schema: tool.input_schema.clone(),
    };
    let validator = jsonschema::options()
        .should_validate_formats(false)
        .build(&tool.input_schema)
        .map_err(|e| {
            invalid(format!(
                "its input schema cannot be checked ({})",
                e.masked()
            ))
        })?;
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(MAX_PROBLEMS)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            format!("at {at}: {}", e.masked())
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(invalid(problems.join("; ")))
    }
}

/// Calls `tool` of the server `def` over `conn` with `arguments`, when `pins` (the approvals
/// as loaded) approve it as the server offers it now and the arguments satisfy its input
/// schema. `others` are the other servers' names and tools (for the review's findings).
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
    let approved = approved_tool(conn, def, pins, others, tool).await?;
    check_arguments(&approved, &arguments)?;
    Ok(conn.call(tool, arguments).await?)
}
