//! Replies of the MCP server commands: `mcp_list`, `mcp_show`, `mcp_add`, `mcp_remove`,
//! `mcp_enable`, `mcp_disable`, `mcp_test`.

use crate::level::SandboxLevel;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// An MCP server the user added, as the commands show it (no secret values: a vault variable
/// names its key only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// Its name.
    pub name: String,
    /// `stdio` (a program Sayri starts inside the sandbox) or `http` (Streamable HTTP).
    pub transport: String,
    /// stdio: the program.
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// http: the endpoint.
    pub url: Option<String>,
    /// Whether Sayri may connect to it.
    pub enabled: bool,
    /// stdio: the sandbox level it runs at.
    pub level: SandboxLevel,
    /// Levels 1–2: whether it keeps the network.
    pub network: bool,
    /// Extra paths it is meant to read.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// The variables it gets besides the base set, and where each value comes from.
    #[serde(default)]
    pub env: Vec<McpEnvVar>,
    /// stdio: its workspace (level 2: its only writable place and its `HOME`).
    pub workspace: Option<PathBuf>,
}

/// One declared variable of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpEnvVar {
    /// The variable's name.
    pub name: String,
    /// `literal` (a value in the servers file) or `vault` (the vault key `vault_key`).
    pub from: String,
    /// For `vault`: the key whose value it gets.
    pub vault_key: Option<String>,
}

/// `mcp_list` → every server.
pub type McpListReply = Vec<McpServer>;

/// `mcp_show` → the server.
pub type McpShowReply = McpServer;

/// `mcp_add` → the server as saved.
pub type McpAddReply = McpServer;

/// `mcp_enable` / `mcp_disable` → the server as saved.
pub type McpEnableReply = McpServer;

/// `mcp_remove` → whether it was there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpRemoveReply {
    /// The server's name.
    pub name: String,
    /// `false` when no server had that name.
    pub removed: bool,
}

/// `mcp_test` → what the server said when Sayri connected. Shown to the user only: nothing of
/// it reaches a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTestReply {
    /// The server's name.
    pub name: String,
    /// The protocol revision the connection settled on.
    pub protocol_version: Option<String>,
    /// The name the server gave itself.
    pub server_name: Option<String>,
    /// The version the server gave.
    pub server_version: Option<String>,
    /// Every tool it offers.
    pub tools: Vec<McpTool>,
}

/// A tool as the server describes it (outside text, verbatim).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTool {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its input schema.
    pub input_schema: serde_json::Value,
}
