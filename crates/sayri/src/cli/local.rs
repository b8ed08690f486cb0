//! Commands that work on files directly, without the daemon: `prompt show`, `pref`.

use sayri_client::paths::Paths;
use sayri_core::domain::agents::delegation;
use sayri_core::domain::mcp_block::{self, McpServerSummary};
use sayri_core::domain::{prompt, tokens};
use sayri_core::ports::{PreferenceUpdate, SessionStore, sub_agents};
use sayri_daemon::agents::FileAgents;
use sayri_mcp::ServersFile;
use sayri_mcp::pins::PinStore;
use sayri_store::Store;

/// `sayri prompt …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PromptAction {
    /// Print the fixed system prompt an agent gets on every request.
    Show {
        /// Agent id (default: the configured default agent).
        #[arg(long)]
        agent: Option<String>,
        /// Also print its size in tokens (o200k_base) on stderr, and what the MCP line costs.
        #[arg(long)]
        tokens: bool,
    },
}

/// `sayri prompt show`.
pub(crate) fn prompt(paths: &Paths, action: PromptAction) -> anyhow::Result<()> {
    let PromptAction::Show {
        agent,
        tokens: show_tokens,
    } = action;
    let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
    let id = agent.unwrap_or(cfg.agent.default_agent);
    let agents = FileAgents::new(paths.agents_dir());
    let profile = agents
        .load(&id)
        .map_err(|e| anyhow::anyhow!(e))?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "agent not found: {id} (profiles live in {})",
                agents.dir().display()
            )
        })?;
    let host = prompt::Host {
        root: nix::unistd::geteuid().is_root(),
        tools: sayri_daemon::desktop_tools::offered(),
    };
    let mcp = mcp_block::offered_to(&profile, profile.sandbox.level, approved_mcp(paths));
    let mut text = prompt::build_system_prompt_with(&profile, &[], &host, &mcp);
    if profile.sandbox.level != sayri_core::SandboxLevel::NoExec {
        text.push_str(&delegation::prompt_line(&sub_agents(&agents, &id)));
    }
    println!("{text}");
    if show_tokens {
        // The exact tokenizer is built for these counts only and freed with the process.
        let counter = tokens::exact::ExactTokenizer::load().map_err(|e| anyhow::anyhow!(e))?;
        eprintln!(
            "{} tokens (o200k_base; your model's tokenizer may count differently), {} bytes",
            counter.count(&text),
            text.len()
        );
        if let Some(section) = mcp_block::mcp_section(&mcp) {
            let tools: usize = mcp.iter().map(|s| s.tools.len()).sum();
            eprintln!(
                "of which the MCP line{}: {} tokens for {} server{} / {tools} tool{} (the tools you approved; a turn lists those the servers still offer)",
                if mcp.len() == 1 { "" } else { "s" },
                counter.count(&section),
                mcp.len(),
                if mcp.len() == 1 { "" } else { "s" },
                if tools == 1 { "" } else { "s" },
            );
        }
    }
    Ok(())
}

/// The MCP tools the user approved, per enabled server, read from the servers and approvals
/// files alone (no server is started); what cannot be read is said on stderr and lists nothing.
fn approved_mcp(paths: &Paths) -> Vec<McpServerSummary> {
    let servers = match ServersFile::in_config_dir(&paths.config_dir).load() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("MCP servers are not listed: {e}");
            return Vec::new();
        }
    };
    if servers.is_empty() {
        return Vec::new();
    }
    let pins = match PinStore::in_state_dir(&paths.state_dir).load() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("no MCP tool is listed: {e}");
            return Vec::new();
        }
    };
    servers
        .iter()
        .filter(|def| def.enabled)
        .filter_map(|def| {
            let approved = pins.of(&def.name, &sayri_mcp::pins::source_of(def))?;
            Some(McpServerSummary {
                name: def.name.clone(),
                tools: approved.keys().cloned().collect(),
                description: String::new(),
            })
        })
        .collect()
}

/// `sayri pref …`: learned preferences (which command served which request, with a score).
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PrefAction {
    /// Find learned commands for a request.
    Query {
        /// Words of the request.
        text: Vec<String>,
        /// Agent.
        #[arg(long)]
        agent: Option<String>,
        /// How many.
        #[arg(long, default_value_t = 3)]
        limit: usize,
    },
    /// Record that a command served an intent (or failed).
    Record {
        /// What the user wanted.
        #[arg(long)]
        intent: String,
        /// The command that did it.
        #[arg(long)]
        command: String,
        /// A command that should be avoided instead.
        #[arg(long)]
        rejected: Option<String>,
        /// Agent.
        #[arg(long, default_value = "default")]
        agent: String,
        /// The command failed.
        #[arg(long)]
        fail: bool,
        /// Notes.
        #[arg(long)]
        notes: Option<String>,
    },
    /// List learned preferences.
    List {
        /// Agent.
        #[arg(long)]
        agent: Option<String>,
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Forget learned preferences (of one agent, or all).
    Clear {
        /// Agent.
        #[arg(long)]
        agent: Option<String>,
    },
}

fn print_prefs(list: &[sayri_core::ports::Preference]) {
    for (i, p) in list.iter().enumerate() {
        let avoid = if p.rejected_command.is_empty() {
            String::new()
        } else {
            format!(" [Avoid: {}]", p.rejected_command)
        };
        println!(
            "{}. Intent: '{}' -> Command: `{}` (Score: {:+}, Success: {}, Fail: {}){avoid}",
            i + 1,
            p.intent,
            p.command,
            p.score,
            p.success_count,
            p.failure_count
        );
    }
}

/// `sayri pref …`. Exit 1 when a query matched nothing.
pub(crate) fn pref(paths: &Paths, action: PrefAction) -> anyhow::Result<()> {
    paths.ensure_dirs()?;
    let store = Store::open(paths.database())?;
    match action {
        PrefAction::Query { text, agent, limit } => {
            let found = store.query_preferences(&text.join(" "), agent.as_deref(), limit)?;
            if found.is_empty() {
                anyhow::bail!("No learned preference found.");
            }
            print_prefs(&found);
        }
        PrefAction::Record {
            intent,
            command,
            rejected,
            agent,
            fail,
            notes,
        } => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            let p = store.record_preference(&PreferenceUpdate {
                agent_id: agent,
                intent,
                command,
                success: !fail,
                rejected_command: rejected,
                notes,
                now,
            })?;
            print_prefs(&[p]);
        }
        PrefAction::List { agent, limit } => {
            let list = store.list_preferences(agent.as_deref(), limit)?;
            if list.is_empty() {
                println!("No learned preferences yet.");
            }
            print_prefs(&list);
        }
        PrefAction::Clear { agent } => {
            let n = store.clear_preferences(agent.as_deref())?;
            println!("removed {n}");
        }
    }
    Ok(())
}
