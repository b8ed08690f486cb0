//! Commands that work on files directly, without the daemon: `prompt show`, `pref`,
//! `models list`.

use crate::agents::FileAgents;
use crate::brain::PROVIDER_KEY;
use crate::paths::Paths;
use sayri_core::domain::agents::delegation;
use sayri_core::domain::{prompt, tokens};
use sayri_core::ports::{NoSecrets, PreferenceUpdate, SessionStore, sub_agents};
use sayri_store::Store;
use sayri_vault::{KeySource, Vault, VaultPaths};
use std::sync::Arc;

/// `sayri prompt …`.
#[derive(Debug, clap::Subcommand)]
pub enum PromptAction {
    /// Print the fixed system prompt an agent gets on every request.
    Show {
        /// Agent id (default: the configured default agent).
        #[arg(long)]
        agent: Option<String>,
        /// Also print its size in tokens (o200k_base) on stderr.
        #[arg(long)]
        tokens: bool,
    },
}

/// `sayri prompt show`.
pub fn prompt(paths: &Paths, action: PromptAction) -> anyhow::Result<()> {
    let PromptAction::Show {
        agent,
        tokens: show_tokens,
    } = action;
    let cfg = crate::config_file::load(&paths.config_file())?.0;
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
    let mut text = prompt::build_system_prompt(&profile, &[]);
    if profile.sandbox.level != sayri_core::SandboxLevel::NoExec {
        text.push_str(&delegation::prompt_line(&sub_agents(&agents, &id)));
    }
    println!("{text}");
    if show_tokens {
        eprintln!("{} tokens (o200k_base)", tokens::count(&text));
    }
    Ok(())
}

/// `sayri pref …`: learned preferences (which command served which request, with a score).
#[derive(Debug, clap::Subcommand)]
pub enum PrefAction {
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
pub fn pref(paths: &Paths, action: PrefAction) -> anyhow::Result<()> {
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

/// `sayri models …`.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsAction {
    /// List models: the voice models installed and downloadable; with --remote also the models
    /// the configured endpoint serves (`GET /models`).
    List {
        /// Also ask the provider for its models.
        #[arg(long)]
        remote: bool,
    },
    /// Voice models (whisper, Piper voices, wake words).
    #[command(flatten)]
    Voice(crate::cli::voice_models::VoiceModelsAction),
}

/// `sayri models …`.
pub async fn models(paths: &Paths, action: ModelsAction) -> anyhow::Result<()> {
    let remote = match action {
        ModelsAction::Voice(a) => return crate::cli::voice_models::run(a).await,
        ModelsAction::List { remote } => remote,
    };
    crate::cli::voice_models::print_list();
    if !remote {
        println!("Provider models: `sayri models list --remote` asks the configured endpoint");
        return Ok(());
    }
    println!("Provider models:");
    let cfg = crate::config_file::load(&paths.config_file())?.0;
    let key = Vault::open(
        VaultPaths::new(&paths.config_dir, &paths.state_dir),
        KeySource::Auto,
    )
    .ok()
    .and_then(|v| v.get(PROVIDER_KEY).map(|k| k.to_string()))
    .or_else(|| Some(cfg.provider.api_key.clone()).filter(|k| !k.is_empty()));
    let mut client_cfg = sayri_llm::ClientConfig::new(cfg.provider.base_url.clone());
    client_cfg.api_key = key;
    client_cfg.connect_timeout = std::time::Duration::from_secs(
        u64::try_from(cfg.provider.connect_timeout)
            .unwrap_or(10)
            .max(1),
    );
    let client = sayri_llm::OpenAiClient::new(client_cfg)?.with_redactor(Arc::new(NoSecrets));
    for m in client.list_models().await? {
        println!("{m}");
    }
    Ok(())
}
