//! Sayri as an MCP server (`sayri mcp serve`, stdio): other MCP clients (coding agents,
//! editors) get three tools over the official SDK's server role —
//! * `run_command`: one shell command judged by the permission engine of a named agent and run
//!   in its sandbox. Where the agent's rules ask, the card appears on the user's desktop
//!   clients and the call waits for the answer; a refusal is a tool error saying why.
//! * `ask`: one turn of that agent (it may run commands under the same rules).
//! * `status`: what the daemon is doing, read-only.
//!
//! The server holds no rights of its own: every call is a request to the daemon through a
//! [`Backend`], which applies the agent's rules, and every output it returns was redacted there
//! (no vault secret leaves). A call the client cancels drops its request and closes its
//! daemon connection; the daemon does not yet end a card or a command on that alone (the card
//! times out; the command ends at its agent's timeout).

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer, ServiceExt};
use sayri_protocol::SandboxLevel;
use sayri_protocol::reply::sessions::{AskReply, RunCommandReply};
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A future the backend returns.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// What the server asks of the daemon. Each method is one request; an `Err` is a message for
/// the person (the daemon is down, the agent does not exist…).
pub trait Backend: Send + Sync + 'static {
    /// `run_command` for the served agent, at `level` when given (the daemon only lowers).
    fn run_command<'a>(
        &'a self,
        command: &'a str,
        level: Option<SandboxLevel>,
    ) -> BackendFuture<'a, RunCommandReply>;
    /// One turn of the served agent.
    fn ask<'a>(&'a self, text: &'a str) -> BackendFuture<'a, AskReply>;
    /// The daemon's status, reduced to what another program may see.
    fn status(&self) -> BackendFuture<'_, Value>;
}

/// Serves MCP on stdin/stdout for `agent` until the client closes the connection.
pub async fn serve_stdio<B: Backend>(backend: B, agent: String) -> Result<(), String> {
    let server = SayriServer {
        backend: Arc::new(backend),
        agent,
    };
    let running = server
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .map_err(|e| format!("the MCP client did not complete the handshake: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP server stopped: {e}"))
}

/// The server's handler.
struct SayriServer<B> {
    backend: Arc<B>,
    agent: String,
}

/// The levels a caller may ask `run_command` to lower to, by their wire names.
const LEVELS: &[&str] = &[
    "LEVEL_0_NO_EXEC",
    "LEVEL_1_READONLY",
    "LEVEL_2_ISOLATED_DEV",
    "LEVEL_3_HOST_USER",
    "LEVEL_4_HOST_ROOT",
];

impl<B: Backend> SayriServer<B> {
    /// The three tools, described for a model that has never heard of Sayri.
    fn tools(&self) -> Vec<Tool> {
        let agent = &self.agent;
        vec![
            Tool::new(
                "run_command",
                format!(
                    "Run one shell command on the user's machine inside Sayri's kernel sandbox, \
                     under the permission rules of Sayri agent '{agent}'. A command the rules \
                     make 'ask' waits until the user answers on their desktop; a denied one \
                     returns an error saying why. The output has the user's secrets redacted."
                ),
                schema(
                    json!({
                        "command": {"type": "string", "minLength": 1,
                                    "description": "The shell command (bash)."},
                        "level": {"type": "string", "enum": LEVELS,
                                  "description": "Run at a lower sandbox level than the agent's own."},
                    }),
                    &["command"],
                ),
            ),
            Tool::new(
                "ask",
                format!(
                    "Ask Sayri agent '{agent}' a question or give it a task; it answers in text \
                     and may run commands under the same permission rules."
                ),
                schema(
                    json!({"text": {"type": "string", "minLength": 1,
                                    "description": "The request."}}),
                    &["text"],
                ),
            ),
            Tool::new(
                "status",
                "Sayri's state, read-only: version, whether a turn is running, the active \
                 agent, sandbox and model readiness.",
                schema(json!({}), &[]),
            ),
        ]
    }

    /// Runs one tool call; a bad argument or a refusal is a tool error the caller can read.
    async fn call(&self, name: &str, args: &Map<String, Value>) -> CallToolResult {
        let result = match name {
            "run_command" => self.run_command(args).await,
            "ask" => self.ask(args).await,
            "status" => self.status(args).await,
            other => Err(format!(
                "Sayri has no tool {other:?}: its tools are run_command, ask and status."
            )),
        };
        result.unwrap_or_else(text_error)
    }

    async fn run_command(&self, args: &Map<String, Value>) -> Result<CallToolResult, String> {
        only_known(args, &["command", "level"])?;
        let command = required_text(args, "command")?;
        let level = match args.get("level") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                serde_json::from_value::<SandboxLevel>(v.clone())
                    .map_err(|_| format!("level {v} is not one of {}", LEVELS.join(", ")))?,
            ),
        };
        let r = self.backend.run_command(command, level).await?;
        Ok(command_result(r))
    }

    async fn ask(&self, args: &Map<String, Value>) -> Result<CallToolResult, String> {
        only_known(args, &["text"])?;
        let text = required_text(args, "text")?;
        let r = self.backend.ask(text).await?;
        let facts = json!({"session_id": r.session_id, "error": r.error});
        Ok(match r.error {
            Some(e) if r.text.is_empty() => {
                structured(format!("Sayri could not answer: {e}"), facts, true)
            }
            _ => structured(r.text, facts, false),
        })
    }

    async fn status(&self, args: &Map<String, Value>) -> Result<CallToolResult, String> {
        only_known(args, &[])?;
        let v = self.backend.status().await?;
        Ok(structured(v.to_string(), v, false))
    }
}

impl<B: Backend> ServerHandler for SayriServer<B> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sayri", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Sayri runs commands inside a kernel sandbox under the user's permission rules \
                 (agent '{}'). Commands that need approval wait for the user.",
                self.agent
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = tokio::select! {
            r = self.call(&request.name, &args) => r,
            // Dropping the call closes its daemon connection (the daemon lets the card time out).
            _ = context.ct.cancelled() => text_error("the call was cancelled".into()),
        };
        Ok(result.into())
    }
}

/// An object schema with `properties`, `required` and no other keys.
fn schema(properties: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let v = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    Arc::new(match v {
        Value::Object(m) => m,
        _ => Map::new(),
    })
}

/// Refuses an argument the tool does not take.
fn only_known(args: &Map<String, Value>, known: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "unknown argument {k:?}; this tool takes {}",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )),
        None => Ok(()),
    }
}

/// A required non-blank string argument.
fn required_text<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    match args.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim()),
        Some(Value::String(_)) => Err(format!("{name} is blank")),
        Some(other) => Err(format!("{name} must be a string, not {other}")),
        None => Err(format!("{name} is required")),
    }
}

/// A command's reply as a tool result: its output (head, what was left out, tail) as text, the
/// facts as structured content; not run, timed out or killed is a tool error.
fn command_result(r: RunCommandReply) -> CallToolResult {
    let mut text = r.output;
    if r.omitted_bytes > 0 || !r.output_tail.is_empty() {
        text.push_str(&format!("\n[… {} bytes left out …]\n", r.omitted_bytes));
        text.push_str(&r.output_tail);
    }
    let failed = !matches!(r.status.as_str(), "success" | "failed");
    if r.status == "denied" {
        text = format!("Not run: {text}");
    } else if let Some(code) = r.exit_code.filter(|_| r.status == "failed") {
        text.push_str(&format!("\n[exit code {code}]"));
    }
    let facts = json!({
        "status": r.status,
        "exit_code": r.exit_code,
        "agent_id": r.agent_id,
        "level": r.level,
        "omitted_bytes": r.omitted_bytes,
        "duration_ms": r.duration_ms,
    });
    structured(text, facts, failed)
}

/// A result with `text` and structured `facts`.
fn structured(text: String, facts: Value, is_error: bool) -> CallToolResult {
    let mut r = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    r.structured_content = Some(facts);
    r
}

/// A tool error with `message` only.
fn text_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
