//! A small client of Sayri's MCP library, for tests and the conformance suite.
//!
//! * `sayri-mcp-client [--initialize-only] SERVER_URL` — the client the official MCP
//!   conformance suite drives (`@modelcontextprotocol/conformance client --command …`; the
//!   suite appends its scenario server's URL): connects over Streamable HTTP, lists the tools
//!   and calls each once with arguments made from its input schema, printing what it got.
//! * `sayri-mcp-client stdio --state DIR --config DIR --home DIR [--level N] [--network]
//!   [--env VAR=VALUE]… [--secret VAR=KEY]… [--pin-all] [--approved-only]
//!   [--call TOOL [--args JSON]] -- PROGRAM ARGS…` — starts a stdio server inside the sandbox
//!   as the daemon would and prints one JSON object (`protocol`, `tools`, `result`, or
//!   `refused` / `error`). `--pin-all` approves every tool offered (in `$STATE/mcp-pins.json`,
//!   standing in for the person); `--approved-only` makes the call as the daemon does, only
//!   when approved (`withheld` says why not). The declared secrets' values come
//!   as one JSON object `{KEY: value}` on stdin (standing in for the vault).
//!
//! It nests the sandbox's exec helper (first argument `__sandbox-exec`), so it is its own
//! helper program.

use clap::{Parser, Subcommand};
use sayri_mcp::calls::{self, CallRefused};
use sayri_mcp::launch::{self, Launch};
use sayri_mcp::pins::{self, PinStore};
use sayri_mcp::{Connection, Lifecycle, McpError, ServerDef};
use sayri_sandbox::{LinuxSandbox, LinuxSandboxSettings};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::time::Duration;
use zeroize::Zeroizing;

#[derive(Parser)]
#[command(name = "sayri-mcp-client", about = "Sayri's MCP client, for tests")]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    /// Offer `initialize` only (no `server/discover` probe).
    #[arg(long)]
    initialize_only: bool,
    /// The Streamable HTTP endpoint (the conformance suite appends it).
    url: Option<String>,
}

#[derive(Subcommand)]
enum Mode {
    /// Start a stdio server inside the sandbox, list its tools, optionally call one.
    Stdio(StdioArgs),
}

#[derive(clap::Args)]
struct StdioArgs {
    #[arg(long)]
    state: PathBuf,
    #[arg(long)]
    config: PathBuf,
    #[arg(long)]
    home: PathBuf,
    #[arg(long, default_value_t = 2)]
    level: u8,
    #[arg(long)]
    network: bool,
    #[arg(long = "read")]
    read: Vec<PathBuf>,
    #[arg(long = "env")]
    env: Vec<String>,
    #[arg(long = "secret")]
    secret: Vec<String>,
    /// Approve (pin) every tool the server offers now.
    #[arg(long)]
    pin_all: bool,
    /// Call only as approved (through `calls::call_approved`).
    #[arg(long)]
    approved_only: bool,
    #[arg(long)]
    call: Option<String>,
    #[arg(long, default_value = "{}")]
    args: String,
    #[arg(long, default_value = "mcp-test")]
    name: String,
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

fn main() {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if raw
        .first()
        .is_some_and(|a| a == sayri_sandbox::EXEC_HELPER_ARG)
    {
        sayri_sandbox::exec_helper_main(&raw[1..]);
    }
    let cli = Cli::parse();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sayri-mcp-client: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = match (cli.mode, cli.url) {
        (Some(Mode::Stdio(a)), _) => rt.block_on(stdio(a)),
        (None, Some(url)) => {
            let lifecycle = if cli.initialize_only {
                Lifecycle::Initialize
            } else {
                Lifecycle::Auto
            };
            rt.block_on(conformance(&url, lifecycle))
        }
        (None, None) => {
            eprintln!("sayri-mcp-client: give a server URL or `stdio … -- PROGRAM`");
            2
        }
    };
    std::process::exit(code);
}

async fn conformance(url: &str, lifecycle: Lifecycle) -> i32 {
    let conn = match Connection::http("conformance", url, lifecycle, Duration::from_secs(20)).await
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    println!(
        "connected: protocol {}",
        conn.protocol_version().unwrap_or_else(|| "unknown".into())
    );
    let tools = match conn.tools().await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            let _ = conn.close().await;
            return 1;
        }
    };
    let mut code = 0;
    for t in &tools {
        let args = arguments_for(&t.input_schema);
        println!("call {} {}", t.name, Value::Object(args.clone()));
        match conn.call(&t.name, Value::Object(args)).await {
            Ok(r) => println!("  result (error: {}): {}", r.is_error, r.text.join(" | ")),
            Err(e) => {
                eprintln!("  {e}");
                code = 1;
            }
        }
    }
    let _ = conn.close().await;
    code
}

fn pairs(items: &[String], what: &str) -> Result<Vec<(String, String)>, Failure> {
    items
        .iter()
        .map(|i| {
            i.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| Failure::Other(format!("--{what} {i:?}: write NAME=VALUE")))
        })
        .collect()
}

async fn stdio(a: StdioArgs) -> i32 {
    let out = match stdio_inner(&a).await {
        Ok(v) => v,
        Err(Failure::Refused(reason)) => json!({ "refused": reason }),
        Err(Failure::Other(error)) => json!({ "error": error }),
    };
    println!("{out}");
    if out.get("refused").is_some() {
        3
    } else if out.get("error").is_some() {
        1
    } else {
        0
    }
}

enum Failure {
    Refused(String),
    Other(String),
}

impl From<McpError> for Failure {
    fn from(e: McpError) -> Self {
        match e {
            McpError::Refused { .. } => Failure::Refused(e.to_string()),
            other => Failure::Other(other.to_string()),
        }
    }
}

async fn stdio_inner(a: &StdioArgs) -> Result<Value, Failure> {
    let (program, args) = a
        .command
        .split_first()
        .ok_or_else(|| Failure::Other("no program given after --".into()))?;
    let mut def = ServerDef::stdio(&a.name, program, args.to_vec());
    def.level = a.level;
    def.network = a.network;
    def.read = a.read.clone();
    def.env = pairs(&a.env, "env")?.into_iter().collect();
    def.secrets = pairs(&a.secret, "secret")?.into_iter().collect();
    def.validate().map_err(|e| Failure::Other(e.to_string()))?;
    let vault: Map<String, Value> = if def.secrets.is_empty() {
        Map::new()
    } else {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| Failure::Other(format!("cannot read the secrets on stdin: {e}")))?;
        serde_json::from_str(&text).map_err(|e| {
            Failure::Other(format!("the secrets on stdin are not a JSON object: {e}"))
        })?
    };
    let mut launch = Launch::new(&a.state, &def);
    launch.lifetime = Duration::from_secs(120);
    launch.secrets = launch::resolve_secrets(&def, |k| {
        vault
            .get(k)
            .and_then(Value::as_str)
            .map(|v| Zeroizing::new(v.to_string()))
    })
    .map_err(|e| Failure::Other(e.to_string()))?;
    let helper = std::env::current_exe()
        .map_err(|e| Failure::Other(format!("cannot find this program: {e}")))?;
    let sandbox = LinuxSandbox::new(LinuxSandboxSettings {
        state_dir: a.state.clone(),
        config_dir: a.config.clone(),
        home_dir: a.home.clone(),
        extra_deny_read: Vec::new(),
        default_output_limit: sayri_sandbox::settings::DEFAULT_OUTPUT_LIMIT,
        helper_program: helper,
        helper_args: vec![sayri_sandbox::EXEC_HELPER_ARG.into()],
        limits: Default::default(),
        child_registry: None,
    });
    let conn = Connection::open(&def, &sandbox, &launch, Lifecycle::Auto).await?;
    let tools = match conn.tools().await {
        Ok(t) => t,
        Err(e) => {
            let _ = conn.close().await;
            return Err(e.into());
        }
    };
    let mut out = json!({
        "protocol": conn.protocol_version(),
        "tools": tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
    });
    let store = PinStore::in_state_dir(&a.state);
    if a.pin_all {
        out["pinned"] = json!(pin_all(&store, &def, tools)?);
    }
    if let Some(tool) = &a.call {
        let args: Value = serde_json::from_str(&a.args)
            .map_err(|e| Failure::Other(format!("--args is not JSON: {e}")))?;
        let result = if a.approved_only {
            calls::call_approved(&conn, &def, &store.load(), &[], tool, args).await
        } else {
            conn.call(tool, args).await.map_err(Into::into)
        };
        match result {
            Ok(r) => {
                out["result"] = json!(r.text);
                out["is_error"] = json!(r.is_error);
            }
            Err(CallRefused::Mcp(e)) => out["error"] = json!(e.to_string()),
            Err(e) => out["withheld"] = json!(e.to_string()),
        }
    }
    let end = conn.close().await;
    out["ended"] = json!(format!("{end:?}"));
    Ok(out)
}

/// Approves every tool of `tools` (as offered now) for `def`; the names pinned.
fn pin_all(
    store: &PinStore,
    def: &ServerDef,
    tools: Vec<sayri_mcp::ToolInfo>,
) -> Result<Vec<String>, Failure> {
    let mut all = store.load().map_err(|e| Failure::Other(e.to_string()))?;
    let source = pins::source_of(def);
    let review = pins::review(tools, all.of(&def.name, &source), &[]);
    let shown = review
        .tools
        .iter()
        .map(|r| (r.tool.name.clone(), r.sha256.clone()))
        .collect();
    let done = all.approve(&def.name, &source, &shown, &review, 1);
    store
        .save(&all)
        .map_err(|e| Failure::Other(e.to_string()))?;
    Ok(done.approved)
}

/// Arguments for a tool: a value for every required property, by its schema type.
fn arguments_for(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    let (Some(props), Some(required)) = (props, required) else {
        return out;
    };
    for (i, name) in required.iter().filter_map(Value::as_str).enumerate() {
        let ty = props
            .get(name)
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let v = match ty {
            "number" | "integer" => Value::from(i as i64 + 2),
            "boolean" => Value::Bool(true),
            "array" => Value::Array(Vec::new()),
            "object" => Value::Object(Map::new()),
            _ => Value::from("test"),
        };
        out.insert(name.to_string(), v);
    }
    out
}
