//! `sayri mcp add|list|show|remove|enable|disable|test|approve|serve` (through the daemon): the MCP
//! servers the user added. A secret never comes from the command line: `--secret VAR=KEY`
//! names a vault key (`sayri vault set KEY` stores the value).
//!
//! Nothing a server offers reaches a model before the user approves it: `test` prints its tools
//! for the user only, each with its approval state; `approve` shows the card (see `mcp_card`)
//! and pins what was shown. `serve` is the other direction (see `mcp_serve`).

use crate::cli::mcp_card;
use sayri_client::autostart::connect_or_start;
use sayri_client::client::Client;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::SandboxLevel;
use sayri_protocol::params::{
    McpAddParams, McpApproveParams, McpDisableParams, McpEnableParams, McpListParams,
    McpRemoveParams, McpShowParams, McpTestParams,
};
use sayri_protocol::reply::mcp::{McpApproval, McpServer};
use std::collections::BTreeMap;
use std::str::FromStr;

/// `sayri mcp …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpAction {
    /// Add a server: `sayri mcp add NAME -- COMMAND ARGS…` (stdio, run inside the sandbox) or
    /// `sayri mcp add NAME --url URL` (Streamable HTTP).
    Add {
        /// Its name (a-z, A-Z, 0-9, '_', '-').
        name: String,
        /// A Streamable HTTP endpoint instead of a program.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// Sandbox level of a stdio server: 1 (read-only), 2 (own workspace; the default) or 3
        /// (host user); a name such as LEVEL_1_READONLY works too.
        #[arg(long)]
        level: Option<String>,
        /// Levels 1-2: let it use the network (off by default).
        #[arg(long)]
        network: bool,
        /// An extra path it is meant to read (repeatable; absolute).
        #[arg(long = "read", value_name = "PATH")]
        read: Vec<String>,
        /// A variable VAR=VALUE it gets (repeatable; never a secret).
        #[arg(long = "env", value_name = "VAR=VALUE")]
        env: Vec<String>,
        /// A variable VAR it gets from the vault key KEY (repeatable).
        #[arg(long = "secret", value_name = "VAR=KEY")]
        secret: Vec<String>,
        /// Replace a server of the same name.
        #[arg(long)]
        replace: bool,
        /// The program and its arguments, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// List the servers.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one server: how it runs and the variables it gets (names and sources, no values).
    Show {
        /// The server.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a server.
    Remove {
        /// The server.
        name: String,
    },
    /// Let Sayri connect to a server again.
    Enable {
        /// The server.
        name: String,
    },
    /// Keep a server but never connect to it.
    Disable {
        /// The server.
        name: String,
    },
    /// Connect to a server (a stdio one inside the sandbox), list its tools with their
    /// approval state and disconnect.
    Test {
        /// The server.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Be an MCP server on stdin/stdout for another MCP client (Claude Code, Codex, an editor):
    /// its tools run one command through an agent's permission rules and sandbox (cards appear
    /// on your desktop), ask that agent, or read Sayri's status.
    Serve {
        /// The agent whose rules, level and sandbox apply to the client's commands.
        #[arg(long, default_value = "default")]
        agent: String,
    },
    /// Show every tool a server offers that is not approved yet — name, description and input
    /// schema verbatim, with the scanner's findings — and approve them as shown. A tool whose
    /// definition changes later is withheld until approved again.
    Approve {
        /// The server.
        name: String,
        /// Approve only this tool (repeatable; default: every tool shown).
        #[arg(long = "tool", value_name = "TOOL")]
        tools: Vec<String>,
        /// Approve without asking (after reading `sayri mcp approve NAME` or `test` output).
        #[arg(long)]
        yes: bool,
    },
}

fn remote(e: sayri_client::client::ClientError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

fn pairs(items: &[String], flag: &str) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|i| {
            i.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| anyhow::anyhow!("{flag} {i:?}: write NAME=VALUE"))
        })
        .collect()
}

/// A level given as a number (1-3) or a name.
fn level(text: &str) -> anyhow::Result<SandboxLevel> {
    let by_number = match text.trim() {
        "0" => Some(SandboxLevel::NoExec),
        "1" => Some(SandboxLevel::ReadOnly),
        "2" => Some(SandboxLevel::IsolatedDev),
        "3" => Some(SandboxLevel::HostUser),
        "4" => Some(SandboxLevel::HostRoot),
        _ => None,
    };
    match by_number {
        Some(l) => Ok(l),
        None => SandboxLevel::from_str(text)
            .map_err(|_| anyhow::anyhow!("--level {text:?}: give 1, 2 or 3 (or a level name)")),
    }
}

/// Runs `sayri mcp …`.
pub(crate) async fn run(paths: &Paths, allow_start: bool, action: McpAction) -> anyhow::Result<()> {
    if let McpAction::Serve { agent } = action {
        return crate::cli::mcp_serve::run(paths, allow_start, agent).await;
    }
    let mut c = connect_or_start(paths, allow_start).await?;
    match action {
        McpAction::Add {
            name,
            url,
            level: lv,
            network,
            read,
            env,
            secret,
            replace,
            command,
        } => {
            let (command, args) = match command.split_first() {
                Some((p, rest)) => (Some(p.clone()), rest.to_vec()),
                None => (None, Vec::new()),
            };
            if command.is_none() && url.is_none() {
                anyhow::bail!(
                    "give the program after `--` (sayri mcp add {name} -- COMMAND ARGS…) or --url URL"
                );
            }
            let p = McpAddParams {
                name,
                command,
                args,
                url,
                level: lv.as_deref().map(level).transpose()?,
                network,
                read,
                env: pairs(&env, "--env")?,
                secrets: pairs(&secret, "--secret")?,
                replace,
            };
            let s = c.request_with(&p).await.map_err(remote)?;
            println!("added MCP server {}", s.name);
            print_server(&s);
            println!("check it with: sayri mcp test {}", s.name);
            Ok(())
        }
        McpAction::List { json } => list(&mut c, json).await,
        McpAction::Show { name, json } => {
            let s = c
                .request_with(&McpShowParams { name })
                .await
                .map_err(remote)?;
            if json {
                return crate::cli::print_json(&s);
            }
            print_server(&s);
            Ok(())
        }
        McpAction::Remove { name } => {
            let v = c
                .request_with(&McpRemoveParams { name: name.clone() })
                .await
                .map_err(remote)?;
            if v.removed {
                println!("removed MCP server {name}");
            } else {
                println!("no MCP server is named {name}; nothing changed");
            }
            Ok(())
        }
        McpAction::Enable { name } => {
            c.request_with(&McpEnableParams { name: name.clone() })
                .await
                .map_err(remote)?;
            println!("enabled MCP server {name}");
            Ok(())
        }
        McpAction::Disable { name } => {
            c.request_with(&McpDisableParams { name: name.clone() })
                .await
                .map_err(remote)?;
            println!("disabled MCP server {name} (kept; `sayri mcp enable {name}` turns it on)");
            Ok(())
        }
        McpAction::Test { name, json } => test(&mut c, name, json).await,
        McpAction::Approve { name, tools, yes } => approve(&mut c, name, tools, yes).await,
        McpAction::Serve { .. } => Ok(()),
    }
}

async fn list(c: &mut Client, json: bool) -> anyhow::Result<()> {
    let v = c.request_with(&McpListParams {}).await.map_err(remote)?;
    if json {
        return crate::cli::print_json(&v);
    }
    if v.is_empty() {
        println!("no MCP servers yet — add one with: sayri mcp add time -- mcp-server-time");
        return Ok(());
    }
    for s in &v {
        let state = if s.enabled { "enabled" } else { "disabled" };
        println!(
            "{}  {}  {state}  {}",
            terminal_safe(&s.name),
            s.transport,
            how(s)
        );
    }
    Ok(())
}

/// How a server is reached, in one line.
fn how(s: &McpServer) -> String {
    match (&s.command, &s.url) {
        (Some(cmd), _) => {
            let mut words = vec![cmd.clone()];
            words.extend(s.args.iter().cloned());
            let net = if s.network { ", network" } else { "" };
            terminal_safe(&format!(
                "{} (level {}{net})",
                words.join(" "),
                s.level as u8
            ))
            .into_owned()
        }
        (None, Some(url)) => terminal_safe(url).into_owned(),
        (None, None) => String::new(),
    }
}

fn print_server(s: &McpServer) {
    println!("name:      {}", terminal_safe(&s.name));
    println!("transport: {}", s.transport);
    println!("runs:      {}", how(s));
    println!("enabled:   {}", s.enabled);
    if let Some(w) = &s.workspace {
        println!("workspace: {}", terminal_safe(&w.to_string_lossy()));
    }
    for r in &s.read {
        println!("reads:     {}", terminal_safe(&r.to_string_lossy()));
    }
    for e in &s.env {
        match &e.vault_key {
            Some(k) => println!(
                "env:       {} ← vault {}",
                terminal_safe(&e.name),
                terminal_safe(k)
            ),
            None => println!("env:       {} (literal value)", terminal_safe(&e.name)),
        }
    }
}

async fn test(c: &mut Client, name: String, json: bool) -> anyhow::Result<()> {
    let v = c
        .request_with(&McpTestParams { name })
        .await
        .map_err(remote)?;
    if json {
        return crate::cli::print_json(&v);
    }
    let named = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
    let who = match (&named(&v.server_name), &named(&v.server_version)) {
        (Some(n), Some(ver)) => format!(" ({} {})", mcp_card::one_line(n), mcp_card::one_line(ver)),
        (Some(n), None) => format!(" ({})", mcp_card::one_line(n)),
        _ => String::new(),
    };
    let heading = format!(
        "connected to {}{who}, protocol {}; {} tool(s):",
        mcp_card::one_line(&v.name),
        mcp_card::one_line(v.protocol_version.as_deref().unwrap_or("unknown")),
        v.tools.len()
    );
    mcp_card::print_rows("", "   ┆ ", &heading);
    if let Some(e) = &v.pins_error {
        mcp_card::print_rows("warning: ", "   ┆ ", &mcp_card::one_line(e));
    }
    for t in &v.tools {
        let d = t.description.as_deref().unwrap_or("");
        let first = d.lines().next().unwrap_or("");
        let found = match t.findings.len() {
            0 => String::new(),
            n => format!("  [{n} finding(s)]"),
        };
        let line = format!(
            "{}  [{}]{found}  {}",
            mcp_card::one_line(&t.name),
            mcp_card::state_word(t.approval),
            mcp_card::one_line(first)
        );
        mcp_card::print_rows("  ", "    ┆ ", &line);
    }
    for r in &v.removed {
        let line = format!("{}  [removed since approved]", mcp_card::one_line(r));
        mcp_card::print_rows("  ", "    ┆ ", &line);
    }
    mcp_card::print_refused(&v);
    if v.tools.iter().any(|t| t.approval != McpApproval::Approved) {
        println!(
            "review and approve with: sayri mcp approve {}",
            terminal_safe(&v.name)
        );
    }
    Ok(())
}

async fn approve(c: &mut Client, name: String, only: Vec<String>, yes: bool) -> anyhow::Result<()> {
    let v = c
        .request_with(&McpTestParams { name: name.clone() })
        .await
        .map_err(remote)?;
    if let Some(e) = &v.pins_error {
        anyhow::bail!("{}", mcp_card::one_line(e));
    }
    if let Some(missing) = only.iter().find(|t| !v.tools.iter().any(|x| &x.name == *t)) {
        anyhow::bail!(
            "MCP server {} offers no tool named {:?}; see `sayri mcp test {}`",
            terminal_safe(&name),
            terminal_safe(missing),
            terminal_safe(&name)
        );
    }
    let pending = mcp_card::print_card(&v, &only);
    if pending.is_empty() {
        println!(
            "every tool of {} is approved as offered",
            terminal_safe(&name)
        );
        return Ok(());
    }
    if !yes && !confirmed(pending.len())? {
        println!("nothing approved");
        return Ok(());
    }
    let tools = pending
        .iter()
        .map(|t| (t.name.clone(), t.sha256.clone()))
        .collect();
    let out = c
        .request_with(&McpApproveParams {
            name,
            tools,
            definition: Some(v.definition.clone()),
        })
        .await
        .map_err(remote)?;
    for t in &out.approved {
        println!(
            "approved {}.{}",
            terminal_safe(&out.name),
            mcp_card::visible(t)
        );
    }
    for t in &out.changed_since_shown {
        println!(
            "NOT approved {}.{}: the server changed it after it was shown; run `sayri mcp approve {}` again",
            terminal_safe(&out.name),
            mcp_card::visible(t),
            terminal_safe(&out.name)
        );
    }
    if out.changed_since_shown.is_empty() && out.not_offered.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("some tools were not approved (see above)")
    }
}

/// Asks on the terminal; refuses without one.
fn confirmed(n: usize) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "approving MCP tools needs a person: run this in a terminal, or pass --yes after reading the card above"
        );
    }
    print!("Approve these {n} tool(s) as shown? Type yes: ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(answer.trim() == "yes")
}
