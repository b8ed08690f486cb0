//! The user's MCP servers, as the engine sees them: the prompt's one line per server and the
//! model's ```` ```mcp ```` step (see `domain::mcp_block`).
//!
//! # Rules
//! - [`McpTools::offered`] lists only tools the user approved, as each server offers them now
//!   (a tool whose definition changed since it was approved is not listed), of enabled servers.
//! - [`McpTools::call`] checks the approval again at call time and refuses a tool that is not
//!   approved as offered without sending anything to the server; it checks the arguments
//!   against the tool's input schema before the call.
//! - The engine judges every call with the permission gate (action `mcp`, resource
//!   `server.tool`) before it reaches the adapter; the adapter never asks anyone.
//! - Everything a server returns is outside text: the engine redacts it, cuts it to the
//!   observation budget and frames it.

use crate::domain::mcp_block::McpServerSummary;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// A tool's result as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpOutput {
    /// The result's content as text: text parts verbatim, images and resources summarised in
    /// one line each, structured content as JSON.
    pub text: String,
    /// Whether the server reported the call as failed (`isError`).
    pub is_error: bool,
}

/// Why a describe or call did not give a result; each message is a sentence for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpCallError {
    /// No such server or tool is approved as offered now (withheld, changed, disabled,
    /// unreadable approvals): nothing was sent to the server.
    #[error("{0}")]
    NotOffered(String),
    /// The arguments do not satisfy the tool's input schema: nothing was sent. `schema` is the
    /// schema as JSON, for the model to correct its call.
    #[error("{message}")]
    InvalidArguments {
        /// What is wrong, e.g. "`timezone` is required".
        message: String,
        /// The tool's input schema.
        schema: String,
    },
    /// The server could not be reached, or the call failed in transport or protocol.
    #[error("{0}")]
    Failed(String),
}

/// The MCP servers the user added and approved.
pub trait McpTools: Send + Sync {
    /// The enabled servers with their tools approved as offered now, in the user's order.
    /// A server that cannot be reached is left out (the adapter records why).
    fn offered(&self, cancel: CancellationToken) -> BoxFuture<'_, Vec<McpServerSummary>>;

    /// The input schema of `server`'s approved tool `tool`, as JSON text.
    ///
    /// # Errors
    /// [`McpCallError::NotOffered`] or [`McpCallError::Failed`].
    fn describe<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<String, McpCallError>>;

    /// Calls `server`'s approved tool `tool` with `arguments` (see the module rules).
    ///
    /// # Errors
    /// [`McpCallError`].
    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<McpOutput, McpCallError>>;
}
