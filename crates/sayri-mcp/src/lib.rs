//! Sayri's MCP client: the servers the user added ([`servers`]), how a stdio server is started
//! inside the sandbox ([`launch`], [`env`]), and connections through the official Rust SDK
//! `rmcp` ([`client`]).
//!
//! Nothing a server offers reaches the model in this version: tools are listed and called only
//! for the user (`sayri mcp test`), never offered to an agent. Approval, pinning and the prompt
//! line come later and sit on [`client::Connection::tools`].

pub mod client;
pub mod env;
pub mod launch;
pub mod servers;

pub use client::{CallResult, Connection, Lifecycle, McpError, ToolInfo};
pub use launch::Launch;
pub use servers::{ServerDef, ServersFile, ServersFileError, Transport};
