//! `mcp_list`, `mcp_show`, `mcp_add`, `mcp_remove`, `mcp_enable`, `mcp_disable`, `mcp_test`:
//! the MCP servers the user added (`$CONFIG/mcp-servers.toml`, see `sayri_mcp::servers`).
//!
//! Nothing a server offers reaches a model: `mcp_test` shows its tools to the user only. No
//! reply carries a secret value (a vault variable names its key).

use crate::daemon::dispatch::Ctx;
use sayri_mcp::launch::{self, Launch};
use sayri_mcp::{Connection, Lifecycle, McpError, ServerDef, ServersFile, Transport};
use sayri_protocol::params::{
    McpAddParams, McpDisableParams, McpEnableParams, McpListParams, McpRemoveParams, McpShowParams,
    McpTestParams,
};
use sayri_protocol::reply::mcp::{
    McpAddReply, McpEnableReply, McpEnvVar, McpListReply, McpRemoveReply, McpServer, McpShowReply,
    McpTestReply, McpTool,
};
use sayri_protocol::{ErrorCode, ProtocolError, SandboxLevel};
use std::path::Path;
use std::sync::Mutex;

/// One change of the servers file at a time (read, change, write).
static FILE_LOCK: Mutex<()> = Mutex::new(());

fn file(ctx: &Ctx) -> ServersFile {
    ServersFile::in_config_dir(&ctx.daemon.paths.config_dir)
}

fn load(ctx: &Ctx) -> Result<Vec<ServerDef>, ProtocolError> {
    file(ctx)
        .load()
        .map_err(|e| ProtocolError::internal(e.to_string()))
}

fn not_found(name: &str) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::NotFound,
        format!("no MCP server is named {name:?}; see `sayri mcp list`"),
    )
}

fn find(servers: &[ServerDef], name: &str) -> Result<ServerDef, ProtocolError> {
    servers
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .ok_or_else(|| not_found(name))
}

/// The protocol form of a definition (variables by name and source only).
pub fn server_reply(def: &ServerDef, state_dir: &Path) -> McpServer {
    let (transport, command, args, url, workspace) = match &def.transport {
        Transport::Stdio { command, args } => (
            "stdio",
            Some(command.clone()),
            args.clone(),
            None,
            Some(launch::workspace_for(state_dir, &def.name)),
        ),
        Transport::Http { url } => ("http", None, Vec::new(), Some(url.clone()), None),
    };
    let mut env: Vec<McpEnvVar> = def
        .env
        .keys()
        .map(|n| McpEnvVar {
            name: n.clone(),
            from: "literal".into(),
            vault_key: None,
        })
        .collect();
    env.extend(def.secrets.iter().map(|(n, k)| McpEnvVar {
        name: n.clone(),
        from: "vault".into(),
        vault_key: Some(k.clone()),
    }));
    McpServer {
        name: def.name.clone(),
        transport: transport.into(),
        command,
        args,
        url,
        enabled: def.enabled,
        level: launch::level_of(def.level).unwrap_or(SandboxLevel::IsolatedDev),
        network: def.network,
        read: def.read.clone(),
        env,
        workspace,
    }
}

/// `mcp_list` → every server.
pub async fn mcp_list(_: McpListParams, ctx: Ctx) -> Result<McpListReply, ProtocolError> {
    let state = ctx.daemon.paths.state_dir.clone();
    Ok(load(&ctx)?
        .iter()
        .map(|d| server_reply(d, &state))
        .collect())
}

/// `mcp_show {name}` → the server.
pub async fn mcp_show(p: McpShowParams, ctx: Ctx) -> Result<McpShowReply, ProtocolError> {
    let def = find(&load(&ctx)?, &p.name)?;
    Ok(server_reply(&def, &ctx.daemon.paths.state_dir))
}

/// The definition `mcp_add` describes.
fn def_of(p: &McpAddParams) -> Result<ServerDef, ProtocolError> {
    let mut def = match (&p.command, &p.url) {
        (Some(c), None) => ServerDef::stdio(&p.name, c, p.args.clone()),
        (None, Some(u)) if p.args.is_empty() => ServerDef::http(&p.name, u),
        (None, Some(_)) => {
            return Err(ProtocolError::invalid_params(
                "`args` belong to a stdio server (`command`), not to one with a `url`",
            ));
        }
        (Some(_), Some(_)) => {
            return Err(ProtocolError::invalid_params(
                "give either `command` (a stdio server) or `url` (an HTTP one), not both",
            ));
        }
        (None, None) => {
            return Err(ProtocolError::invalid_params(
                "give `command` (a stdio server) or `url` (an HTTP one)",
            ));
        }
    };
    if let Some(level) = p.level {
        def.level = level as u8;
    }
    def.network = p.network;
    def.read = p.read.iter().map(Into::into).collect();
    def.env = p.env.clone();
    def.secrets = p.secrets.clone();
    def.validate()
        .map_err(|e| ProtocolError::invalid_params(e.to_string()))?;
    Ok(def)
}

/// `mcp_add {name, command | url, …}` → the server as saved.
pub async fn mcp_add(p: McpAddParams, ctx: Ctx) -> Result<McpAddReply, ProtocolError> {
    let def = def_of(&p)?;
    let _guard = FILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut servers = load(&ctx)?;
    if let Some(i) = servers.iter().position(|s| s.name == def.name) {
        if !p.replace {
            return Err(ProtocolError::invalid_params(format!(
                "an MCP server is already named {:?}; remove it first or add with `--replace`",
                def.name
            )));
        }
        servers[i] = def.clone();
    } else {
        servers.push(def.clone());
    }
    file(&ctx)
        .save(&servers)
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(server_reply(&def, &ctx.daemon.paths.state_dir))
}

/// `mcp_remove {name}` → `{name, removed}`.
pub async fn mcp_remove(p: McpRemoveParams, ctx: Ctx) -> Result<McpRemoveReply, ProtocolError> {
    let _guard = FILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut servers = load(&ctx)?;
    let before = servers.len();
    servers.retain(|s| s.name != p.name);
    let removed = servers.len() != before;
    if removed {
        file(&ctx)
            .save(&servers)
            .map_err(|e| ProtocolError::internal(e.to_string()))?;
    }
    Ok(McpRemoveReply {
        name: p.name,
        removed,
    })
}

fn set_enabled(ctx: &Ctx, name: &str, enabled: bool) -> Result<McpServer, ProtocolError> {
    let _guard = FILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut servers = load(ctx)?;
    let Some(def) = servers.iter_mut().find(|s| s.name == name) else {
        return Err(not_found(name));
    };
    def.enabled = enabled;
    let reply = server_reply(def, &ctx.daemon.paths.state_dir);
    file(ctx)
        .save(&servers)
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(reply)
}

/// `mcp_enable {name}` → the server, enabled.
pub async fn mcp_enable(p: McpEnableParams, ctx: Ctx) -> Result<McpEnableReply, ProtocolError> {
    set_enabled(&ctx, &p.name, true)
}

/// `mcp_disable {name}` → the server, disabled.
pub async fn mcp_disable(p: McpDisableParams, ctx: Ctx) -> Result<McpEnableReply, ProtocolError> {
    set_enabled(&ctx, &p.name, false)
}

/// The declared secrets of `def`, from the vault.
fn secrets_for(
    ctx: &Ctx,
    def: &ServerDef,
) -> Result<Vec<(String, zeroize::Zeroizing<String>)>, ProtocolError> {
    if def.secrets.is_empty() {
        return Ok(Vec::new());
    }
    let brain = ctx.daemon.brain()?;
    let guard = brain.vault();
    let Some(vault) = guard.as_ref() else {
        return Err(ProtocolError::new(
            ErrorCode::Unavailable,
            format!(
                "MCP server {} needs secrets but the vault is unavailable: {} — see `sayri vault status`",
                def.name,
                brain.vault_error.as_deref().unwrap_or("unknown reason")
            ),
        ));
    };
    launch::resolve_secrets(def, |k| vault.get(k))
        .map_err(|e| ProtocolError::invalid_params(e.to_string()))
}

/// `mcp_test {name}` → connects, lists the tools, disconnects.
pub async fn mcp_test(p: McpTestParams, ctx: Ctx) -> Result<McpTestReply, ProtocolError> {
    let def = find(&load(&ctx)?, &p.name)?;
    let mut launch = Launch::new(&ctx.daemon.paths.state_dir, &def);
    launch.lifetime = std::time::Duration::from_secs(120);
    launch.secrets = secrets_for(&ctx, &def)?;
    let sandbox = ctx.daemon.brain()?.sandbox.clone();
    let conn = Connection::open(&def, &sandbox, &launch, Lifecycle::Auto)
        .await
        .map_err(mcp_err)?;
    let tools = conn.tools().await;
    let protocol_version = conn.protocol_version();
    let info = conn.server_info();
    let _ = conn.close().await;
    let tools = tools.map_err(mcp_err)?;
    Ok(McpTestReply {
        name: def.name,
        protocol_version,
        server_name: info.as_ref().map(|i| i.0.clone()),
        server_version: info.map(|i| i.1),
        tools: tools
            .into_iter()
            .map(|t| McpTool {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
            })
            .collect(),
    })
}

fn mcp_err(e: McpError) -> ProtocolError {
    let code = match e {
        McpError::Refused { .. } => ErrorCode::Denied,
        _ => ErrorCode::Unavailable,
    };
    ProtocolError::new(code, e.to_string())
}
