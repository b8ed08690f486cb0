//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`) drives Sayri's
//! client (`sayri-mcp-client URL`) through its client scenarios that need no OAuth.
//!
//! Needs `./scripts/setup --tests` (the suite under `~/.cache/sayri/mcp/conformance`, and
//! the Node.js 22 it needs, named in `~/.cache/sayri/mcp/node-path`).
//!
//! Not run here: `elicitation-sep1034-client-defaults` (Sayri declares no elicitation
//! capability and declines every elicitation request, so the scenario's checks fail by design)
//! and the `auth/*` scenarios (no OAuth yet).

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

fn cache() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache"))
        .join("sayri/mcp")
}

/// Runs one client scenario; returns whether the suite passed it, and its output.
fn scenario(name: &str) -> (bool, String) {
    let mcp = cache();
    let suite =
        mcp.join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let node = std::fs::read_to_string(mcp.join("node-path")).unwrap_or_default();
    assert!(
        suite.is_file() && !node.trim().is_empty(),
        "the MCP conformance suite is not installed ({}); run ./scripts/setup --tests",
        suite.display()
    );
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(node.trim())
        .arg(&suite)
        .args(["client", "--scenario", name, "--command"])
        .arg(env!("CARGO_BIN_EXE_sayri-mcp-client"))
        .current_dir(work.path())
        .output()
        .expect("run the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.success() && text.contains("OVERALL: PASSED"),
        text,
    )
}

#[test]
fn conformance_initialize_scenario_passes() {
    let (ok, text) = scenario("initialize");
    assert!(ok, "{text}");
    assert!(text.contains("mcp-client-initialization"), "{text}");
}

#[test]
fn conformance_tools_call_scenario_passes() {
    let (ok, text) = scenario("tools_call");
    assert!(ok, "{text}");
    assert!(text.contains("tool-add-numbers"), "{text}");
}

#[test]
fn conformance_sse_retry_scenario_passes() {
    let (ok, text) = scenario("sse-retry");
    assert!(ok, "{text}");
}
