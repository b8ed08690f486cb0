//! Sayri's MCP client: the servers the user added ([`servers`]), how a stdio server is started
//! inside the sandbox ([`launch`], [`env`]), and connections through the official Rust SDK
//! `rmcp` ([`client`]).
//!
//! What the user approved of each server is pinned by hash ([`pins`]): a tool reaches a model
//! or a call only as it was approved. Nothing a server offers reaches the model in this
//! version: tools are listed, reviewed and approved by the user (`sayri mcp test`, `sayri mcp
//! approve`), never offered to an agent yet; the prompt line comes later and sits on
//! [`pins::Review::approved`]. A call goes through [`calls::call_approved`], which refuses a
//! tool that is not approved as the server offers it at that moment.

pub mod calls;
pub mod client;
pub mod env;
pub mod launch;
pub mod pins;
pub mod servers;

pub use client::{CallResult, Connection, Lifecycle, McpError, ToolInfo};
pub use launch::Launch;
pub use servers::{ServerDef, ServersFile, ServersFileError, Transport};
