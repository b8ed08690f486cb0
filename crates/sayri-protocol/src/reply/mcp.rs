//! Replies of the MCP server commands: `mcp_list`, `mcp_show`, `mcp_add`, `mcp_remove`,
//! `mcp_enable`, `mcp_disable`, `mcp_test`, `mcp_approve`.

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

/// `mcp_test` → what the server said when Sayri connected, each tool judged against what the
/// user approved. Shown to the user only: nothing of it reaches a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTestReply {
    /// The server's name.
    pub name: String,
    /// `sha256:<hex>` of what identifies the server's definition (program, arguments or
    /// address, variables); approvals belong to it (`mcp_approve` takes it back).
    #[serde(default)]
    pub definition: String,
    /// The protocol revision the connection settled on.
    pub protocol_version: Option<String>,
    /// The name the server gave itself.
    pub server_name: Option<String>,
    /// The version the server gave.
    pub server_version: Option<String>,
    /// Every tool it offers.
    pub tools: Vec<McpTool>,
    /// Tools approved once that it no longer offers (they disappear).
    #[serde(default)]
    pub removed: Vec<String>,
    /// Tools refused outright (a name outside MCP's tool-name rule, a name offered twice, too
    /// many tools, a description or schema too large): never shown for approval, never called.
    #[serde(default)]
    pub refused: Vec<McpRefusedTool>,
    /// Why the approvals could not be read, when they could not: every tool is then withheld.
    #[serde(default)]
    pub pins_error: Option<String>,
}

/// A tool refused outright.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpRefusedTool {
    /// The name as the server sent it (untrusted: show it escaped).
    pub name: String,
    /// Why, in words for the person.
    pub reason: String,
}

/// Where a tool stands against what the user approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpApproval {
    /// Offered exactly as approved.
    Approved,
    /// Approved once, offered now under another definition: withheld until approved again.
    Changed,
    /// Never approved: withheld.
    New,
    /// The approvals cannot be read: withheld.
    Unknown,
}

/// One finding on a tool's text (the skills scanner's rules, and `names_other_tool`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpFinding {
    /// The rule's wire name.
    pub kind: String,
    /// What it means.
    pub detail: String,
    /// The text it is about, hidden characters shown as `<U+XXXX>`.
    pub excerpt: String,
}

/// `mcp_approve` → what was pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpApproveReply {
    /// The server's name.
    pub name: String,
    /// Tools approved as shown.
    pub approved: Vec<String>,
    /// Tools whose definition changed after the user was shown it: not approved.
    pub changed_since_shown: Vec<String>,
    /// Tools named that the server does not offer.
    pub not_offered: Vec<String>,
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
    /// SHA-256 of its canonical definition (what `mcp_approve` pins).
    pub sha256: String,
    /// Approved, changed, new, or unknown (approvals unreadable).
    pub approval: McpApproval,
    /// What the scanner found in its text.
    #[serde(default)]
    pub findings: Vec<McpFinding>,
}
