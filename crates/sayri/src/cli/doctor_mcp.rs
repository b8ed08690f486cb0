//! `sayri doctor`'s MCP lines, read from the files alone (no server is started): the servers
//! file, the approvals file, and per server how it runs and how many of its tools are approved.

use super::doctor::{Finding, Status, finding};
use sayri_client::paths::Paths;
use sayri_mcp::pins::PinStore;
use sayri_mcp::{ServerDef, ServersFile, Transport};

/// One line per server, and a line for a file that cannot be used.
pub fn check(paths: &Paths, out: &mut Vec<Finding>) {
    let file = ServersFile::in_config_dir(&paths.config_dir);
    let servers = match file.load() {
        Ok(s) => s,
        Err(e) => {
            out.push(finding(
                "mcp.servers",
                "MCP servers",
                Status::Fail,
                e.to_string(),
                Some(format!(
                    "correct {} (or move it aside and add the servers again with `sayri mcp add`)",
                    file.path().display()
                )),
            ));
            return;
        }
    };
    if servers.is_empty() {
        out.push(finding(
            "mcp.servers",
            "MCP servers",
            Status::Off,
            "none added".into(),
            Some("add one with `sayri mcp add NAME -- COMMAND ARGS…`".into()),
        ));
        return;
    }
    let store = PinStore::in_state_dir(&paths.state_dir);
    let pins = match store.load() {
        Ok(p) => Some(p),
        Err(e) => {
            out.push(finding(
                "mcp.approvals",
                "MCP approvals",
                Status::Warn,
                e.to_string(),
                Some(format!(
                    "move {} aside, then approve each server again with `sayri mcp approve NAME`",
                    store.path().display()
                )),
            ));
            None
        }
    };
    for def in &servers {
        let approved = pins
            .as_ref()
            .and_then(|p| p.of(&def.name, &sayri_mcp::pins::source_of(def)))
            .map_or(0, |t| t.len());
        out.push(server_line(def, approved, pins.is_some()));
    }
}

/// How `def` runs and what is approved of it.
fn server_line(def: &ServerDef, approved: usize, pins_readable: bool) -> Finding {
    let how = match &def.transport {
        Transport::Stdio { .. } => {
            let net = if def.network { ", network" } else { "" };
            format!("stdio at level {}{net}", def.level)
        }
        Transport::Http { url } => format!("HTTP at {url}"),
    };
    let state = if def.enabled { "enabled" } else { "disabled" };
    let tools = match (pins_readable, approved) {
        (false, _) => "every tool withheld (approvals unreadable)".to_string(),
        (true, 0) => "no tool approved yet".to_string(),
        (true, n) => format!("{n} tool(s) approved"),
    };
    let fix = (pins_readable && approved == 0 && def.enabled).then(|| {
        format!(
            "review its tools with `sayri mcp approve {}` (`sayri mcp test {}` connects and lists them)",
            def.name, def.name
        )
    });
    finding(
        &format!("mcp.{}", def.name),
        &format!("MCP server {}", def.name),
        Status::Ok,
        format!("{how}, {state}; {tools}"),
        fix,
    )
}
