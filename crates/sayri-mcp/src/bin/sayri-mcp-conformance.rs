//! The client under test for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance client --command "sayri-mcp-conformance" --scenario …`):
//! the suite appends the URL of its scenario server; this program connects with Sayri's
//! client (Streamable HTTP, the discover probe falling back to `initialize`), lists the tools
//! and calls each one once with arguments made from its input schema, printing what it got.
//!
//! It nests the sandbox's exec helper (first argument `__sandbox-exec`), so the crate's tests
//! can start stdio servers inside the sandbox with it as the helper program.

use sayri_mcp::{Connection, Lifecycle};
use serde_json::{Map, Value};
use std::time::Duration;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args
        .first()
        .is_some_and(|a| a == sayri_sandbox::EXEC_HELPER_ARG)
    {
        sayri_sandbox::exec_helper_main(&args[1..]);
    }
    let Some(url) = args.last().and_then(|a| a.to_str()).map(str::to_string) else {
        eprintln!("usage: sayri-mcp-conformance [--initialize-only] SERVER_URL");
        std::process::exit(2);
    };
    let lifecycle = if args.iter().any(|a| a == "--initialize-only") {
        Lifecycle::Initialize
    } else {
        Lifecycle::Auto
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sayri-mcp-conformance: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    std::process::exit(rt.block_on(run(&url, lifecycle)));
}

async fn run(url: &str, lifecycle: Lifecycle) -> i32 {
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
