//! Connections to MCP servers through the official Rust SDK (`rmcp`).
//!
//! Protocol revisions: a connection first asks `server/discover` (the stateless revision
//! 2026-07-28) and falls back to the `initialize` handshake (2025-11-25, or an older revision
//! the server answers with) when the server does not know it ([`Lifecycle::Auto`], rmcp's
//! `ClientLifecycleMode::Auto` over HTTP; over stdio the probe gets the whole handshake time
//! and a server that does not speak it is started afresh for `initialize`).
//! [`Lifecycle::Initialize`] skips the probe.
//!
//! A stdio server is started inside the sandbox ([`crate::launch`]); an HTTP server is reached
//! over Streamable HTTP with Sayri's TLS set-up (the system's certificates).

use crate::launch::{self, Launch};
use crate::servers::{ServerDef, Transport};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService,
};
use sayri_sandbox::LinuxSandbox;
use sayri_sandbox::stdio::{StdioEnd, StdioProgram};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How a connection starts its MCP lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// `server/discover` (2026-07-28), falling back to `initialize` (2025-11-25) for servers
    /// that do not know it.
    Auto,
    /// The `initialize` handshake only (2025-11-25 offered).
    Initialize,
    /// `server/discover` only (2026-07-28).
    Discover,
}

impl Lifecycle {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Lifecycle::Initialize => ClientLifecycleMode::Initialize,
            Lifecycle::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Lifecycle::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
        }
    }
}

/// The revisions Sayri's client speaks, newest first.
pub const PROTOCOL_REVISIONS: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// Connecting to or speaking with a server failed.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The sandbox refused to start the server; it never ran (on the host or anywhere).
    #[error("MCP server {server}: the sandbox refused to start it: {reason}")]
    Refused {
        /// The server's name.
        server: String,
        /// What is missing and what to do.
        reason: String,
    },
    /// The server could not be started or reached, or the handshake failed.
    #[error("MCP server {server}: {message}")]
    Connect {
        /// The server's name.
        server: String,
        /// What happened, with the last lines the server wrote to stderr when there are any.
        message: String,
    },
    /// A request failed after the connection was up.
    #[error("MCP server {server}: {request} failed: {message}")]
    Request {
        /// The server's name.
        server: String,
        /// The request (`tools/list`, `tools/call NAME`).
        request: String,
        /// What the server or the transport said.
        message: String,
    },
}

/// One tool a server offers, as the server describes it. Outside text: nothing here may reach
/// the model before the user approves it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// Its description, verbatim.
    pub description: Option<String>,
    /// Its input schema (a JSON Schema object).
    pub input_schema: serde_json::Value,
}

/// A tool call's result, as text blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// The text of every text block, in order; other blocks are summarised (`[image]`).
    pub text: Vec<String>,
    /// Whether the server marked the result as an error.
    pub is_error: bool,
    /// The structured result, when the server gave one.
    pub structured: Option<serde_json::Value>,
}

/// What the stderr of a stdio server is kept as: its last lines, for error messages.
type StderrTail = Arc<Mutex<Vec<String>>>;

const STDERR_TAIL_LINES: usize = 20;

/// A live connection to one server.
pub struct Connection {
    server: String,
    service: RunningService<RoleClient, ClientConfig>,
    program: Option<StdioProgram>,
    stderr: StderrTail,
}

/// The identity Sayri's client gives servers, and the revision its `initialize` offers
/// (2025-11-25, the newest with that handshake; the discover probe names 2026-07-28 itself).
/// No capabilities are declared: Sayri answers no sampling, elicitation or roots request yet.
pub fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("sayri", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

impl Connection {
    /// Connects to `def`: a stdio server started inside `sandbox` with `launch`, or an HTTP
    /// server at its URL. Fails when the server is disabled.
    ///
    /// # Errors
    /// The definition is invalid or disabled, the sandbox refuses the level, the server does not
    /// start or does not answer the handshake within `launch.handshake_timeout`.
    pub async fn open(
        def: &ServerDef,
        sandbox: &LinuxSandbox,
        launch: &Launch,
        lifecycle: Lifecycle,
    ) -> Result<Connection, McpError> {
        let connect = |message: String| McpError::Connect {
            server: def.name.clone(),
            message,
        };
        def.validate().map_err(|e| connect(e.to_string()))?;
        if !def.enabled {
            return Err(connect(format!(
                "it is disabled; enable it with `sayri mcp enable {}`",
                def.name
            )));
        }
        match &def.transport {
            Transport::Http { url } => {
                Self::http(&def.name, url, lifecycle, launch.handshake_timeout).await
            }
            Transport::Stdio { .. } => {
                if let Some(reason) = launch::hidden_under_tmp(def).or_else(|| {
                    launch::hidden_read_path(def, &sandbox.settings().deny_read_paths())
                }) {
                    return Err(McpError::Refused {
                        server: def.name.clone(),
                        reason,
                    });
                }
                let request =
                    launch::exec_request(def, launch).map_err(|e| connect(e.to_string()))?;
                let start = || async {
                    sandbox
                        .spawn_stdio(&request)
                        .await
                        .map_err(|reason| McpError::Refused {
                            server: def.name.clone(),
                            reason: reason.to_string(),
                        })
                };
                let wait = launch.handshake_timeout;
                if lifecycle != Lifecycle::Auto {
                    return Self::over_stdio(&def.name, start().await?, lifecycle, wait).await;
                }
                // The probe gets the whole handshake time (rmcp's own fallback waits 10 s and
                // then mistakes a slow server's late answer for a conflicting one); a server
                // that does not speak it is started afresh and spoken to with `initialize`.
                let probe = start().await?;
                match Self::over_stdio(&def.name, probe, Lifecycle::Discover, wait).await {
                    Ok(c) => Ok(c),
                    Err(e @ McpError::Refused { .. }) => Err(e),
                    Err(first) => {
                        tracing::debug!("{first}; trying initialize");
                        let program = start().await?;
                        Self::over_stdio(&def.name, program, Lifecycle::Initialize, wait).await
                    }
                }
            }
        }
    }

    /// Connects to the Streamable HTTP endpoint `url`.
    ///
    /// # Errors
    /// The HTTP client cannot be set up, or the handshake fails or times out.
    pub async fn http(
        server: &str,
        url: &str,
        lifecycle: Lifecycle,
        timeout: Duration,
    ) -> Result<Connection, McpError> {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let connect = |message: String| McpError::Connect {
            server: server.to_string(),
            message,
        };
        let https = url.starts_with("https:");
        let client = sayri_http::client_builder(https)
            .map_err(|e| connect(format!("cannot set up HTTPS: {e}")))?
            .build()
            .map_err(|e| connect(format!("cannot set up the HTTP client: {e}")))?;
        let attempt = |lifecycle: Lifecycle| {
            let transport = StreamableHttpClientTransport::with_client(
                client.clone(),
                StreamableHttpClientTransportConfig::with_uri(url.to_string()),
            );
            tokio::time::timeout(
                timeout,
                client_config().serve_with_lifecycle(transport, lifecycle.mode()),
            )
        };
        let timed_out = || {
            connect(format!(
                "{url} did not answer the handshake within {timeout:?}"
            ))
        };
        let started = match attempt(lifecycle).await.map_err(|_| timed_out())? {
            Ok(s) => s,
            // A legacy server that answers the discover probe with something other than an
            // error (an empty result, say) is spoken to with `initialize` on a fresh
            // connection: HTTP requests are independent, so nothing of the probe remains.
            Err(ClientInitializeError::TransportError { error, .. }) => {
                return Err(connect(format!(
                    "cannot reach {url}: {}; is the server running, and is the URL right?",
                    error_chain(&*error.error)
                )));
            }
            Err(first) if lifecycle == Lifecycle::Auto => attempt(Lifecycle::Initialize)
                .await
                .map_err(|_| timed_out())?
                .map_err(|e| {
                    connect(format!(
                        "handshake with {url} failed: {e} (the server/discover probe before it: {first})"
                    ))
                })?,
            Err(e) => return Err(connect(format!("handshake with {url} failed: {e}"))),
        };
        Ok(Connection {
            server: server.to_string(),
            service: started,
            program: None,
            stderr: StderrTail::default(),
        })
    }

    /// Speaks MCP over a started stdio program's pipes.
    ///
    /// # Errors
    /// The handshake fails or times out; a refusal of the sandbox is reported as
    /// [`McpError::Refused`] with its reason.
    pub async fn over_stdio(
        server: &str,
        mut program: StdioProgram,
        lifecycle: Lifecycle,
        timeout: Duration,
    ) -> Result<Connection, McpError> {
        let stderr = StderrTail::default();
        if let Some(mut err) = program.stderr.take() {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = err.read(&mut chunk).await {
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(i) = buf.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buf.drain(..=i).collect();
                        push_tail(&tail, String::from_utf8_lossy(&line).trim_end().to_string());
                    }
                    if buf.len() > 8192 {
                        push_tail(&tail, String::from_utf8_lossy(&buf).into_owned());
                        buf.clear();
                    }
                }
                if !buf.is_empty() {
                    push_tail(&tail, String::from_utf8_lossy(&buf).into_owned());
                }
            });
        }
        let (Some(out), Some(inp)) = (program.stdout.take(), program.stdin.take()) else {
            return Err(McpError::Connect {
                server: server.to_string(),
                message: "the program's pipes are missing (internal error)".into(),
            });
        };
        let started = tokio::time::timeout(
            timeout,
            client_config().serve_with_lifecycle((out, inp), lifecycle.mode()),
        )
        .await;
        let failure = match started {
            Ok(Ok(service)) => {
                return Ok(Connection {
                    server: server.to_string(),
                    service,
                    program: Some(program),
                    stderr,
                });
            }
            Ok(Err(e)) => format!("the handshake failed: {e}"),
            Err(_) => format!("it did not answer the handshake within {timeout:?}"),
        };
        match program.finish().await {
            StdioEnd::Refused(reason) => Err(McpError::Refused {
                server: server.to_string(),
                reason,
            }),
            StdioEnd::Ended(how) => Err(McpError::Connect {
                server: server.to_string(),
                message: with_tail(&format!("{failure}; the server {how}"), &stderr),
            }),
        }
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The protocol revision the connection settled on (`2025-11-25`, `2026-07-28`, …).
    pub fn protocol_version(&self) -> Option<String> {
        self.service
            .peer_info()
            .map(|i| i.protocol_version.to_string())
    }

    /// The server's own name and version, when it gave them.
    pub fn server_info(&self) -> Option<(String, String)> {
        let info = self.service.peer_info()?;
        let imp = info.server_info.as_ref()?;
        Some((imp.name.clone(), imp.version.clone()))
    }

    /// Every tool the server offers (all pages).
    ///
    /// # Errors
    /// The request fails.
    pub async fn tools(&self) -> Result<Vec<ToolInfo>, McpError> {
        let tools = self
            .service
            .list_all_tools()
            .await
            .map_err(|e| self.request_error("tools/list", e.to_string()))?;
        Ok(tools
            .into_iter()
            .map(|t| ToolInfo {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()),
                input_schema: serde_json::Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls tool `name` with `arguments` (a JSON object).
    ///
    /// # Errors
    /// `arguments` is not an object, or the request fails.
    pub async fn call(
        &self,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<CallResult, McpError> {
        let request = format!("tools/call {name}");
        let serde_json::Value::Object(args) = arguments else {
            return Err(self.request_error(&request, "the arguments must be a JSON object".into()));
        };
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = Some(args);
        let result = self
            .service
            .call_tool(params)
            .await
            .map_err(|e| self.request_error(&request, e.to_string()))?;
        let text = result
            .content
            .iter()
            .map(|c| match c.as_text() {
                Some(t) => t.text.clone(),
                None => summarise(&serde_json::to_value(c).unwrap_or_default()),
            })
            .collect();
        Ok(CallResult {
            text,
            is_error: result.is_error.unwrap_or(false),
            structured: result.structured_content.clone(),
        })
    }

    /// Ends the connection and, for a stdio server, stops the program and says how it ended.
    pub async fn close(mut self) -> Option<StdioEnd> {
        let program = self.program.take();
        let _ = self.service.cancel().await;
        match program {
            Some(p) => Some(p.finish().await),
            None => None,
        }
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lock().map(|t| t.clone()).unwrap_or_default()
    }

    fn request_error(&self, request: &str, message: String) -> McpError {
        McpError::Request {
            server: self.server.clone(),
            request: request.to_string(),
            // The server's own words (a JSON-RPC error message) are shown safely, on one line.
            message: with_tail(
                &sayri_core::domain::skills::scanner::hidden::excerpt(&message, 600),
                &self.stderr,
            ),
        }
    }
}

/// Keeps `line` of a server's stderr (its text shown safely: a server's output must not drive
/// the terminal of whoever reads an error message).
fn push_tail(tail: &StderrTail, line: String) {
    if let Ok(mut t) = tail.lock() {
        t.push(sayri_core::domain::skills::scanner::hidden::excerpt(
            &line, 400,
        ));
        let extra = t.len().saturating_sub(STDERR_TAIL_LINES);
        t.drain(..extra);
    }
}

fn with_tail(message: &str, tail: &StderrTail) -> String {
    let lines = tail.lock().map(|t| t.clone()).unwrap_or_default();
    if lines.is_empty() {
        message.to_string()
    } else {
        format!(
            "{message}\nits last stderr lines:\n  {}",
            lines.join("\n  ")
        )
    }
}

/// An error with its causes, `a: b: c`.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = c.source();
    }
    parts.join(": ")
}

/// A one-line stand-in for a content block that is not text (`[image image/png]`).
fn summarise(block: &serde_json::Value) -> String {
    let kind = block
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("content");
    match block.get("mimeType").and_then(|m| m.as_str()) {
        Some(m) => format!("[{kind} {m}]"),
        None => format!("[{kind}]"),
    }
}
