//! `mcp_list`, `mcp_show`, `mcp_add`, `mcp_remove`, `mcp_enable`, `mcp_disable`, `mcp_test`,
//! `mcp_approve`: the MCP servers the user added (`$CONFIG/mcp-servers.toml`, see
//! `sayri_mcp::servers`) and what the user approved of them (`$STATE/mcp-pins.json`, see
//! `sayri_mcp::pins`).
//!
//! Nothing a server offers reaches a model: `mcp_test` shows its tools to the user only, each
//! judged against the pins with the scanner's findings; `mcp_approve` pins what the user was
//! shown. No reply carries a secret value (a vault variable names its key).

use crate::daemon::dispatch::Ctx;
use sayri_mcp::launch::{self, Launch};
use sayri_mcp::pins::{self, PinStore, Pins, PinsError, Review, ToolState};
use sayri_mcp::{Connection, Lifecycle, McpError, ServerDef, ServersFile, ToolInfo, Transport};
use sayri_protocol::params::{
    McpAddParams, McpApproveParams, McpDisableParams, McpEnableParams, McpListParams,
    McpRemoveParams, McpShowParams, McpTestParams,
};
use sayri_protocol::reply::mcp::{
    McpAddReply, McpApproval, McpApproveReply, McpEnableReply, McpEnvVar, McpFinding, McpListReply,
    McpRefusedTool, McpRemoveReply, McpServer, McpShowReply, McpTestReply, McpTool,
};
use sayri_protocol::{ErrorCode, ProtocolError, SandboxLevel};
use std::path::Path;
use std::sync::Mutex;

/// One change of the servers file at a time (read, change, write).
static FILE_LOCK: Mutex<()> = Mutex::new(());

/// One change of the pins file at a time (read, change, write).
static PINS_LOCK: Mutex<()> = Mutex::new(());

fn pin_store(ctx: &Ctx) -> PinStore {
    PinStore::in_state_dir(&ctx.daemon.paths.state_dir)
}

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

/// `mcp_add {name, command | url, …}` → the server as saved. Replacing a server with another
/// definition forgets its approvals first (refused, nothing changed, while they cannot be read).
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
        forget_pins(&ctx, &def.name, Some(&pins::source_of(&def)))?;
        servers[i] = def.clone();
    } else {
        // Approvals left by an earlier server of this name (a hand-edited file) never carry over.
        forget_pins(&ctx, &def.name, Some(&pins::source_of(&def)))?;
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
        forget_pins(&ctx, &p.name, None)?;
        file(&ctx)
            .save(&servers)
            .map_err(|e| ProtocolError::internal(e.to_string()))?;
    }
    Ok(McpRemoveReply {
        name: p.name,
        removed,
    })
}

/// Forgets `name`'s approvals (all of them with `keep: None`, a server removed; those given to
/// another definition than `keep`, a server redefined), so a new server of the same name starts
/// unapproved.
///
/// # Errors
/// `unavailable` when the approvals file cannot be read or written: the caller changes nothing
/// (an approval that could not be forgotten would come back with the file).
fn forget_pins(ctx: &Ctx, name: &str, keep: Option<&str>) -> Result<(), ProtocolError> {
    let _guard = PINS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let store = pin_store(ctx);
    let mut all = store.load().map_err(|e| {
        ProtocolError::new(
            ErrorCode::Unavailable,
            format!(
                "{e}; nothing was changed, since the approvals of {name:?} could not be forgotten (`sayri mcp disable {name}` stops Sayri using it meanwhile)"
            ),
        )
    })?;
    let forgot = match keep {
        None => all.forget(name),
        Some(source) => all.forget_unless(name, source),
    };
    if forgot {
        store
            .save(&all)
            .map_err(|e| ProtocolError::internal(e.to_string()))?;
    }
    Ok(())
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

/// What `def` offers now: connects, lists the tools, disconnects.
async fn offered(
    ctx: &Ctx,
    def: &ServerDef,
) -> Result<(Vec<ToolInfo>, Option<String>, Option<(String, String)>), ProtocolError> {
    let mut launch = Launch::new(&ctx.daemon.paths.state_dir, def);
    launch.lifetime = std::time::Duration::from_secs(120);
    launch.secrets = secrets_for(ctx, def)?;
    let sandbox = ctx.daemon.brain()?.sandbox.clone();
    let conn = Connection::open(def, &sandbox, &launch, Lifecycle::Auto)
        .await
        .map_err(mcp_err)?;
    let tools = conn.tools().await;
    let protocol_version = conn.protocol_version();
    let info = conn.server_info();
    let _ = conn.close().await;
    Ok((tools.map_err(mcp_err)?, protocol_version, info))
}

/// `def`'s tools judged against `all` pins; the names of every other server and their
/// approved tools feed the "names another tool or server" rule.
fn review_of(def: &ServerDef, tools: Vec<ToolInfo>, all: &Pins, servers: &[ServerDef]) -> Review {
    let others = sayri_mcp::calls::others_of(def, servers, all);
    pins::review(tools, all.of(&def.name, &pins::source_of(def)), &others)
}

fn tool_reply(r: pins::Reviewed, unknown: bool) -> McpTool {
    let approval = match (unknown, r.state) {
        (true, _) => McpApproval::Unknown,
        (false, ToolState::Approved) => McpApproval::Approved,
        (false, ToolState::Changed) => McpApproval::Changed,
        (false, ToolState::New) => McpApproval::New,
    };
    McpTool {
        name: r.tool.name,
        description: r.tool.description,
        input_schema: r.tool.input_schema,
        sha256: r.sha256,
        approval,
        findings: r
            .findings
            .into_iter()
            .map(|f| McpFinding {
                kind: f.kind,
                detail: f.detail,
                excerpt: f.excerpt,
            })
            .collect(),
    }
}

/// `mcp_test {name}` → connects, lists the tools, disconnects; each tool judged against what
/// the user approved (every tool withheld, `pins_error` set, when the approvals are
/// unreadable).
pub async fn mcp_test(p: McpTestParams, ctx: Ctx) -> Result<McpTestReply, ProtocolError> {
    let servers = load(&ctx)?;
    let def = find(&servers, &p.name)?;
    let (tools, protocol_version, info) = offered(&ctx, &def).await?;
    let (all, pins_error) = match pin_store(&ctx).load() {
        Ok(all) => (all, None),
        Err(e) => (Pins::new(), Some(e.to_string())),
    };
    let review = review_of(&def, tools, &all, &servers);
    let unknown = pins_error.is_some();
    Ok(McpTestReply {
        definition: pins::source_of(&def),
        name: def.name,
        protocol_version,
        server_name: info.as_ref().map(|i| i.0.clone()),
        server_version: info.map(|i| i.1),
        tools: review
            .tools
            .into_iter()
            .map(|r| tool_reply(r, unknown))
            .collect(),
        refused: review
            .refused
            .into_iter()
            .map(|r| McpRefusedTool {
                name: r.name,
                reason: r.reason,
            })
            .collect(),
        removed: if unknown { Vec::new() } else { review.removed },
        pins_error,
    })
}

/// `mcp_approve {name, tools}` → connects, lists the tools again, and pins each named tool
/// whose definition is still the one the user was shown.
pub async fn mcp_approve(p: McpApproveParams, ctx: Ctx) -> Result<McpApproveReply, ProtocolError> {
    if p.tools.is_empty() {
        return Err(ProtocolError::invalid_params(
            "name at least one tool to approve, with the `sha256` `mcp_test` showed for it",
        ));
    }
    let servers = load(&ctx)?;
    let def = find(&servers, &p.name)?;
    if let Some(shown) = &p.definition
        && *shown != pins::source_of(&def)
    {
        return Err(ProtocolError::invalid_params(format!(
            "MCP server {} was redefined since its tools were shown (another program, arguments or variables); nothing was approved — run `sayri mcp approve {}` again",
            def.name, def.name
        )));
    }
    let (tools, _, _) = offered(&ctx, &def).await?;
    let _guard = PINS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let store = pin_store(&ctx);
    let mut all = store.load().map_err(pins_err)?;
    let review = review_of(&def, tools, &all, &servers);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let out = all.approve(&def.name, &pins::source_of(&def), &p.tools, &review, now);
    store.save(&all).map_err(pins_err)?;
    Ok(McpApproveReply {
        name: def.name,
        approved: out.approved,
        changed_since_shown: out.changed_since_shown,
        not_offered: out.not_offered,
    })
}

fn pins_err(e: PinsError) -> ProtocolError {
    ProtocolError::new(ErrorCode::Unavailable, e.to_string())
}

fn mcp_err(e: McpError) -> ProtocolError {
    let code = match e {
        McpError::Refused { .. } => ErrorCode::Denied,
        _ => ErrorCode::Unavailable,
    };
    ProtocolError::new(code, e.to_string())
}
