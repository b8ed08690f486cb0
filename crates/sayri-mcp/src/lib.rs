//! Sayri's MCP client: the servers the user added ([`servers`]), how a stdio server is started
//! inside the sandbox ([`launch`], [`env`]), and connections through the official Rust SDK
//! `rmcp` ([`client`]).
//!
//! What the user approved of each server is pinned by hash ([`pins`]): a tool reaches a model
//! or a call only as it was approved. Tools are reviewed and approved by the user (`sayri mcp
//! test`, `sayri mcp approve`); the daemon offers the approved ones to agents (one prompt line
//! per server, from [`pins::Review::approved`]) and calls them through
//! [`calls::call_approved`], which refuses a tool that is not approved as the server offers it
//! at that moment and arguments that do not satisfy its schema.
//!
//! [`serve`] is the other direction: Sayri as an MCP server for other clients.

pub mod calls;
pub mod client;
pub mod env;
pub mod launch;
pub mod pins;
pub mod serve;
pub mod servers;

pub use client::{CallResult, Connection, Lifecycle, McpError, ToolInfo};
pub use launch::Launch;
pub use servers::{ServerDef, ServersFile, ServersFileError, Transport};
