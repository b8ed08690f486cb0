//! The engine's MCP port over the user's servers (`$CONFIG/mcp-servers.toml`) and what the
//! user approved of them (`$STATE/mcp-pins.json`).
//!
//! # Rules
//! - A server is contacted only when it is enabled and the user approved at least one of its
//!   tools for its current definition; a server with nothing approved is never started for a
//!   turn.
//! - Connections are kept between turns (a stdio server stays running inside its sandbox) and
//!   dropped when the server's definition changes, it is disabled or removed, or a request on
//!   the connection fails; the next use opens a new one.
//! - Every listing for a prompt and every call re-reads both files and lists the server's
//!   tools again, so a tool changed or a file edited since the last turn is judged as it is
//!   now (see `sayri_mcp::calls`).
//! - A server that does not answer within [`OFFER_TIMEOUT`] is left out of the prompt (and
//!   logged); a turn never waits longer for it.
//! - What `status` shows of each server ([`McpService::states`]) is what the daemon last saw:
//!   whether it holds a connection, how many approved tools the server last offered, and the
//!   last failure (cleared by the next success). Reading it starts nothing.

use sayri_core::domain::mcp_block::McpServerSummary;
use sayri_core::ports::{McpCallError, McpOutput, McpTools};
use sayri_mcp::calls::{self, CallRefused};
use sayri_mcp::launch::{self, Launch};
use sayri_mcp::pins::{self, PinStore, Pins, PinsError};
use sayri_mcp::{CallResult, Connection, Lifecycle, ServerDef, ServersFile};
use sayri_sandbox::LinuxSandbox;
use sayri_vault::Vault;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest a turn waits for one server's tool list before its prompt is built without it.
pub const OFFER_TIMEOUT: Duration = Duration::from_secs(20);

/// Longest one call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// A kept connection and the definition it was opened for.
struct Held {
    source: String,
    conn: Arc<Connection>,
}

/// The MCP port of the daemon (see the module rules).
pub struct McpService {
    servers: ServersFile,
    pins: PinStore,
    state_dir: PathBuf,
    sandbox: Arc<LinuxSandbox>,
    vault: Arc<Mutex<Option<Vault>>>,
    held: tokio::sync::Mutex<HashMap<String, Held>>,
    seen: Mutex<HashMap<String, Seen>>,
}

/// What the daemon last saw of one server (for `status`).
#[derive(Debug, Clone, Default)]
struct Seen {
    connected: bool,
    offered: Option<usize>,
    last_error: Option<String>,
}

/// Everything one request needs: the server, the others, the approvals as read now.
struct Now {
    def: ServerDef,
    others: Vec<String>,
    pins: Result<Pins, PinsError>,
}

impl McpService {
    /// A service over the files in `config_dir` and `state_dir`, starting stdio servers in
    /// `sandbox` with secrets from `vault`.
    pub fn new(
        config_dir: &std::path::Path,
        state_dir: &std::path::Path,
        sandbox: Arc<LinuxSandbox>,
        vault: Arc<Mutex<Option<Vault>>>,
    ) -> McpService {
        McpService {
            servers: ServersFile::in_config_dir(config_dir),
            pins: PinStore::in_state_dir(state_dir),
            state_dir: state_dir.to_path_buf(),
            sandbox,
            vault,
            held: tokio::sync::Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Each server of the file as the daemon last saw it (nothing is started or asked).
    pub fn states(&self) -> Vec<sayri_protocol::reply::runtime::McpServerState> {
        let Ok(servers) = self.servers.load() else {
            return Vec::new();
        };
        let pins = self.pins.load().ok();
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        servers
            .iter()
            .map(|def| {
                let s = seen.get(&def.name).cloned().unwrap_or_default();
                sayri_protocol::reply::runtime::McpServerState {
                    name: def.name.clone(),
                    enabled: def.enabled,
                    transport: match def.transport {
                        sayri_mcp::Transport::Stdio { .. } => "stdio",
                        sayri_mcp::Transport::Http { .. } => "http",
                    }
                    .into(),
                    connected: s.connected,
                    tools_approved: pins
                        .as_ref()
                        .and_then(|p| p.of(&def.name, &pins::source_of(def)))
                        .map_or(0, |t| t.len()),
                    tools_offered: s.offered,
                    last_error: s.last_error,
                }
            })
            .collect()
    }

    /// Records what was just seen of `server`.
    fn see(&self, server: &str, f: impl FnOnce(&mut Seen)) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        f(seen.entry(server.to_string()).or_default());
    }

    /// Records a failure of `server` (one line), and that its connection is gone when `dropped`.
    fn failed(&self, server: &str, error: &str, dropped: bool) {
        let line: String = error.split_whitespace().collect::<Vec<_>>().join(" ");
        self.see(server, |s| {
            s.last_error = Some(line);
            if dropped {
                s.connected = false;
            }
        });
    }

    /// The servers and approvals as the files say now.
    fn read_files(&self) -> Result<(Vec<ServerDef>, Result<Pins, PinsError>), String> {
        let servers = self.servers.load().map_err(|e| e.to_string())?;
        Ok((servers, self.pins.load()))
    }

    /// What a request to `server` works with, or why it cannot be made.
    fn now_for(&self, server: &str) -> Result<Now, McpCallError> {
        let (servers, pins) = self.read_files().map_err(McpCallError::NotOffered)?;
        let Some(def) = servers.iter().find(|s| s.name == server).cloned() else {
            return Err(McpCallError::NotOffered(format!(
                "there is no MCP server {server} any more"
            )));
        };
        if !def.enabled {
            return Err(McpCallError::NotOffered(format!(
                "MCP server {server} is disabled"
            )));
        }
        let all = pins.as_ref().cloned().unwrap_or_default();
        let others = calls::others_of(&def, &servers, &all);
        Ok(Now { def, others, pins })
    }

    /// The kept connection to `def`, or a new one.
    async fn connection(&self, def: &ServerDef) -> Result<Arc<Connection>, String> {
        let source = pins::source_of(def);
        let mut held = self.held.lock().await;
        if let Some(h) = held.get(&def.name)
            && h.source == source
        {
            return Ok(h.conn.clone());
        }
        let mut launch = Launch::new(&self.state_dir, def);
        launch.secrets = self.secrets(def)?;
        let conn = match Connection::open(def, &self.sandbox, &launch, Lifecycle::Auto).await {
            Ok(c) => c,
            Err(e) => {
                let e = e.to_string();
                self.failed(&def.name, &e, true);
                return Err(e);
            }
        };
        self.see(&def.name, |s| s.connected = true);
        let conn = Arc::new(conn);
        held.insert(
            def.name.clone(),
            Held {
                source,
                conn: conn.clone(),
            },
        );
        Ok(conn)
    }

    /// Drops the kept connection to `server` (the next use opens a new one).
    async fn forget(&self, server: &str) {
        self.held.lock().await.remove(server);
        self.see(server, |s| s.connected = false);
    }

    fn secrets(
        &self,
        def: &ServerDef,
    ) -> Result<Vec<(String, zeroize::Zeroizing<String>)>, String> {
        if def.secrets.is_empty() {
            return Ok(Vec::new());
        }
        let guard = self.vault.lock().unwrap_or_else(|e| e.into_inner());
        let Some(vault) = guard.as_ref() else {
            return Err(format!(
                "MCP server {} needs secrets but the vault is unavailable (see `sayri vault status`)",
                def.name
            ));
        };
        launch::resolve_secrets(def, |k| vault.get(k)).map_err(|e| e.to_string())
    }

    /// `def`'s tools approved as offered now.
    async fn approved_names(
        &self,
        def: &ServerDef,
        all: &Pins,
        servers: &[ServerDef],
    ) -> Result<Vec<String>, String> {
        let conn = self.connection(def).await?;
        let tools = match conn.tools().await {
            Ok(t) => t,
            Err(e) => {
                self.forget(&def.name).await;
                return Err(e.to_string());
            }
        };
        let others = calls::others_of(def, servers, all);
        let review = pins::review(tools, all.of(&def.name, &pins::source_of(def)), &others);
        Ok(review.approved().map(|t| t.name.clone()).collect())
    }

    /// Closes every kept connection whose server is gone, disabled or redefined.
    async fn prune(&self, servers: &[ServerDef]) {
        let mut held = self.held.lock().await;
        held.retain(|name, h| {
            servers
                .iter()
                .any(|s| &s.name == name && s.enabled && pins::source_of(s) == h.source)
        });
    }

    async fn offered_now(&self) -> Vec<McpServerSummary> {
        let (servers, pins) = match self.read_files() {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("MCP servers are not offered: {e}");
                return Vec::new();
            }
        };
        self.prune(&servers).await;
        let all = match pins {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("no MCP tool is offered: {e}");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for def in servers.iter().filter(|s| s.enabled) {
            let has_pins = all
                .of(&def.name, &pins::source_of(def))
                .is_some_and(|p| !p.is_empty());
            if !has_pins {
                continue;
            }
            match tokio::time::timeout(OFFER_TIMEOUT, self.approved_names(def, &all, &servers))
                .await
            {
                Ok(Ok(tools)) => {
                    self.see(&def.name, |s| {
                        s.offered = Some(tools.len());
                        s.last_error = None;
                    });
                    out.push(McpServerSummary {
                        name: def.name.clone(),
                        tools,
                        description: String::new(),
                    })
                }
                Ok(Err(e)) => {
                    self.failed(&def.name, &e, false);
                    tracing::warn!("MCP server {} is not offered: {e}", def.name)
                }
                Err(_) => {
                    self.forget(&def.name).await;
                    self.failed(
                        &def.name,
                        &format!(
                            "it did not list its tools within {} s",
                            OFFER_TIMEOUT.as_secs()
                        ),
                        true,
                    );
                    tracing::warn!(
                        "MCP server {} is not offered: it did not list its tools within {} s",
                        def.name,
                        OFFER_TIMEOUT.as_secs()
                    );
                }
            }
        }
        out
    }

    async fn describe_now(&self, server: &str, tool: &str) -> Result<String, McpCallError> {
        let now = self.now_for(server)?;
        let conn = self
            .connection(&now.def)
            .await
            .map_err(McpCallError::Failed)?;
        match calls::approved_tool(&conn, &now.def, &now.pins, &now.others, tool).await {
            Ok(t) => Ok(serde_json::to_string_pretty(&t.input_schema).unwrap_or_default()),
            Err(e) => Err(self.refused(server, e).await),
        }
    }

    async fn call_now(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<McpOutput, McpCallError> {
        let now = self.now_for(server)?;
        let conn = self
            .connection(&now.def)
            .await
            .map_err(McpCallError::Failed)?;
        let args = Value::Object(arguments);
        match calls::call_approved(&conn, &now.def, &now.pins, &now.others, tool, args).await {
            Ok(r) => Ok(output_of(r)),
            Err(e) => Err(self.refused(server, e).await),
        }
    }

    /// The port's form of `e`; a transport failure drops the connection.
    async fn refused(&self, server: &str, e: CallRefused) -> McpCallError {
        match e {
            CallRefused::InvalidArguments {
                problems, schema, ..
            } => McpCallError::InvalidArguments {
                message: format!("the arguments do not match its input schema: {problems}"),
                schema: serde_json::to_string_pretty(&schema).unwrap_or_default(),
            },
            CallRefused::PinsUnreadable(e) => McpCallError::NotOffered(e.to_string()),
            CallRefused::Withheld(w) => McpCallError::NotOffered(format!(
                "{w} (the user approves tools with `sayri mcp approve {server}`)"
            )),
            CallRefused::Mcp(e) => {
                self.forget(server).await;
                self.failed(server, &e.to_string(), true);
                McpCallError::Failed(e.to_string())
            }
        }
    }
}

/// A call's result as one text: the text parts, else the structured result as JSON.
fn output_of(r: CallResult) -> McpOutput {
    let mut text = r.text.join("\n");
    if text.trim().is_empty()
        && let Some(s) = &r.structured
    {
        text = serde_json::to_string_pretty(s).unwrap_or_default();
    }
    McpOutput {
        text,
        is_error: r.is_error,
    }
}

/// Runs `f` until `cancel` fires or `limit` passes.
async fn bounded<T>(
    f: impl std::future::Future<Output = Result<T, McpCallError>>,
    limit: Duration,
    cancel: CancellationToken,
) -> Result<T, McpCallError> {
    tokio::select! {
        r = tokio::time::timeout(limit, f) => r.unwrap_or_else(|_| Err(McpCallError::Failed(format!(
            "the server did not answer within {} s", limit.as_secs()
        )))),
        () = cancel.cancelled() => Err(McpCallError::Failed("the request was interrupted".into())),
    }
}

impl McpTools for McpService {
    fn offered(
        &self,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'_, Vec<McpServerSummary>> {
        Box::pin(async move {
            tokio::select! {
                v = self.offered_now() => v,
                () = cancel.cancelled() => Vec::new(),
            }
        })
    }

    fn describe<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'a, Result<String, McpCallError>> {
        Box::pin(bounded(
            self.describe_now(server, tool),
            OFFER_TIMEOUT,
            cancel,
        ))
    }

    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'a, Result<McpOutput, McpCallError>> {
        Box::pin(bounded(
            self.call_now(server, tool, arguments),
            CALL_TIMEOUT,
            cancel,
        ))
    }
}
