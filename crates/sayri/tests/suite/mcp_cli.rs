//! `sayri mcp …` against the real daemon, with a real MCP server from PyPI (`mcp-server-time`,
//! installed by `./scripts/setup --tests` into `~/.cache/sayri/mcp/venv`) started inside the
//! sandbox: add, list, show, test, disable, enable, remove, and the refusals a person can hit.

use super::support::*;
use std::path::PathBuf;

fn ok(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn refused(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(
        !out.status.success(),
        "{args:?} succeeded: {}",
        stdout(&out)
    );
    stderr(&out)
}

fn time_server() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let p = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache"))
        .join("sayri/mcp/venv/bin/mcp-server-time");
    assert!(
        p.is_file(),
        "{} is missing; run ./scripts/setup --tests",
        p.display()
    );
    p
}

#[test]
fn mcp_cli_adds_tests_and_removes_a_real_server_run_inside_the_sandbox() {
    let env = Env::new();
    let _d = env.start_daemon();
    let time = time_server();
    let time = time.to_str().unwrap();
    let added = ok(&env, &["mcp", "add", "time", "--", time]);
    assert!(added.contains("added MCP server time"), "{added}");
    assert!(added.contains("(level 2)"), "level 2 by default: {added}");
    let list = ok(&env, &["mcp", "list"]);
    assert!(list.contains("time  stdio  enabled"), "{list}");
    let tested = ok(&env, &["mcp", "test", "time"]);
    assert!(tested.contains("get_current_time"), "{tested}");
    assert!(
        tested.contains("protocol 2026-07-28") || tested.contains("protocol 2025-11-25"),
        "{tested}"
    );
    let workspace = env.state_dir().join("sandboxes/mcp-time");
    assert!(workspace.is_dir(), "it ran in its own workspace");

    // The same name twice is refused; the first definition stays.
    let again = refused(&env, &["mcp", "add", "time", "--", "/bin/true"]);
    assert!(again.contains("already named \"time\""), "{again}");
    // Loader variables and secrets in argv are refused when saving, each named.
    let rogue = refused(
        &env,
        &[
            "mcp",
            "add",
            "rogue",
            "--env",
            "LD_PRELOAD=/tmp/x.so",
            "--env",
            "NODE_OPTIONS=--require=/tmp/h.js",
            "--env",
            "BASH_ENV=/tmp/rc",
            "--",
            "python3",
            "srv.py",
        ],
    );
    for n in ["LD_PRELOAD", "NODE_OPTIONS", "BASH_ENV"] {
        assert!(rogue.contains(n), "{rogue}");
    }
    let argv = refused(
        &env,
        &[
            "mcp",
            "add",
            "argv",
            "--",
            "srv",
            "--token",
            "$SECRET:NOTES_TOKEN",
        ],
    );
    assert!(argv.contains("never in its arguments"), "{argv}");
    assert!(!ok(&env, &["mcp", "list"]).contains("rogue"));

    // A secret is named by its vault key and never shown; a missing one stops `test`.
    ok(
        &env,
        &[
            "mcp",
            "add",
            "notes",
            "--secret",
            "NOTES_TOKEN=NOTES_TOKEN",
            "--env",
            "UNITS=metric",
            "--",
            time,
        ],
    );
    let shown = ok(&env, &["mcp", "show", "notes"]);
    assert!(shown.contains("NOTES_TOKEN ← vault NOTES_TOKEN"), "{shown}");
    assert!(shown.contains("UNITS (literal value)"), "{shown}");
    let missing = refused(&env, &["mcp", "test", "notes"]);
    assert!(missing.contains("sayri vault set NOTES_TOKEN"), "{missing}");

    ok(&env, &["mcp", "disable", "time"]);
    let off = refused(&env, &["mcp", "test", "time"]);
    assert!(off.contains("sayri mcp enable time"), "{off}");
    ok(&env, &["mcp", "enable", "time"]);
    assert!(ok(&env, &["mcp", "remove", "time"]).contains("removed MCP server time"));
    assert!(ok(&env, &["mcp", "remove", "time"]).contains("nothing changed"));
    let file = std::fs::read_to_string(env.config_dir().join("mcp-servers.toml")).unwrap();
    assert!(
        !file.contains("[servers.time]") && file.contains("[servers.notes]"),
        "{file}"
    );
}
