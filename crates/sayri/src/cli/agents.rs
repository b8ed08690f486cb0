//! `sayri agents list|show|use|create|edit|delete|detach`.
//!
//! `list` and `show` read the profiles with the daemon's loader ([`FileAgents`]) and need no
//! daemon; every change goes through the daemon (`agent_save`, `agent_delete`, `agent_detach`,
//! `agent_switch`), so a command running inside a turn is refused like any management client.
//!
//! * `create ID [fields]` makes an agent from flags; `create --from "SENTENCE" [--agent ID]`
//!   asks the model to propose one (the creator is `--agent`, else the active agent) and shows
//!   the permission card; nothing is written before it is allowed.
//! * `edit ID [fields]` changes only the fields given.
//! * `detach ID` removes the creator link after showing what the agent gains and asking
//!   (`--yes` skips the question; without a terminal it is required).

use crate::cli::ask::{AskOptions, run_ask};
use sayri_client::autostart::connect_or_start;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_core::domain::agents::intent::{self, Intent};
use sayri_core::domain::profile::AgentProfile;
use sayri_daemon::agents::{FileAgents, Listed};
use sayri_protocol::params::{
    AgentDeleteParams, AgentDetachParams, AgentSaveParams, AgentSwitchParams, RuleParam, SaveMode,
};
use sayri_protocol::reply::agents::Narrowing;
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal, Write};

/// `sayri agents …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum AgentsAction {
    /// List every agent with its effective level and creator (invalid profiles with their error).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one agent: its file, and what it may do under its creators.
    Show {
        /// Agent id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make an agent the active one.
    Use {
        /// Agent id.
        id: String,
    },
    /// Create an agent from flags, or from a sentence with --from (the model proposes it and
    /// you approve it on a permission card).
    Create(CreateArgs),
    /// Change an agent; fields not given stay as they are.
    Edit {
        /// Agent id.
        id: String,
        /// The fields to change.
        #[command(flatten)]
        fields: Fields,
    },
    /// Delete an agent (not `default`, not one that created other agents).
    Delete {
        /// Agent id.
        id: String,
    },
    /// Remove an agent's creator link, so its own profile applies without its creator's limits.
    Detach {
        /// Agent id.
        id: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

impl AgentsAction {
    /// `list` and `show` read the files with the daemon's loader and need no daemon.
    pub(crate) fn is_local(&self) -> bool {
        matches!(self, AgentsAction::List { .. } | AgentsAction::Show { .. })
    }
}

/// Arguments of `sayri agents create`.
#[derive(Debug, clap::Args)]
pub(crate) struct CreateArgs {
    /// The new agent's id (letters, digits, '-', '_').
    #[arg(required_unless_present = "from", conflicts_with = "from")]
    pub id: Option<String>,
    /// Describe the agent in a sentence; the model proposes the profile.
    #[arg(long, value_name = "SENTENCE")]
    pub from: Option<String>,
    /// With --from: the creating agent (default: the active agent).
    #[arg(long, requires = "from")]
    pub agent: Option<String>,
    /// The fields.
    #[command(flatten)]
    pub fields: Fields,
}

/// Profile fields settable from the command line.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Fields {
    /// Display name.
    #[arg(long)]
    pub name: Option<String>,
    /// One-line description.
    #[arg(long)]
    pub description: Option<String>,
    /// The agent's own system prompt.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Extra instructions.
    #[arg(long)]
    pub instructions: Option<String>,
    /// Its creator: it can never do more than that agent.
    #[arg(long)]
    pub parent: Option<String>,
    /// Isolation level: 0–4 or a name (LEVEL_2_ISOLATED_DEV, isolated, host, …).
    #[arg(long)]
    pub level: Option<String>,
    /// Whether its `ask` rules show a card.
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub ask_before_run: Option<bool>,
    /// Network at levels 1–2.
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub network: Option<bool>,
    /// What a command no rule matches gets: allow, read_only, ask or deny.
    #[arg(long)]
    pub default_effect: Option<String>,
    /// Per-command timeout in seconds.
    #[arg(long)]
    pub timeout: Option<u64>,
    /// A permission rule ACTION:PATTERN:EFFECT, e.g. 'shell:git push*:ask' (repeat; replaces
    /// the agent's rules).
    #[arg(long = "rule", value_name = "ACTION:PATTERN:EFFECT")]
    pub rules: Vec<String>,
    /// Remove all of the agent's own rules.
    #[arg(long, conflicts_with = "rules")]
    pub no_rules: bool,
    /// Programs denied outright (comma-separated).
    #[arg(long)]
    pub blocked: Option<String>,
    /// Vault secrets its commands receive (comma-separated; "" for none).
    #[arg(long)]
    pub secrets: Option<String>,
    /// Skills it may use (comma-separated; "" = all, "none" = none).
    #[arg(long)]
    pub skills: Option<String>,
    /// Plugins it may use (comma-separated; "" = all, "none" = none).
    #[arg(long)]
    pub plugins: Option<String>,
    /// Tools it may use (comma-separated; "" = all, "none" = none).
    #[arg(long)]
    pub tools: Option<String>,
    /// Model name ("default" = the provider's).
    #[arg(long)]
    pub model: Option<String>,
    /// Sampling temperature (0–2).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Completion cap in tokens (0 = the provider's).
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Its own OpenAI-compatible endpoint ("" = the provider's).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The vault secret holding that endpoint's API key ("" = none).
    #[arg(long)]
    pub api_key_secret: Option<String>,
    /// Up to 10 model calls per request instead of 6.
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub investigation_loop: Option<bool>,
    /// Record learned preferences.
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub learning: Option<bool>,
}

/// `ACTION:PATTERN:EFFECT` → a rule (the pattern may contain `:`).
fn parse_rule(text: &str) -> anyhow::Result<RuleParam> {
    let bad = || {
        anyhow::anyhow!(
            "invalid --rule {text:?}: write ACTION:PATTERN:EFFECT, e.g. 'shell:git push*:ask'"
        )
    };
    let (action, rest) = text.split_once(':').ok_or_else(bad)?;
    let (resource, effect) = rest.rsplit_once(':').ok_or_else(bad)?;
    Ok(RuleParam {
        action: action.trim().to_string(),
        resource: resource.trim().to_string(),
        effect: effect.trim().to_string(),
    })
}

fn csv(v: &Option<String>) -> Option<Vec<String>> {
    v.as_ref().map(|s| {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    })
}

impl Fields {
    fn params(&self, id: &str, mode: SaveMode) -> anyhow::Result<AgentSaveParams> {
        let rules = if self.no_rules {
            Some(Vec::new())
        } else if self.rules.is_empty() {
            None
        } else {
            Some(
                self.rules
                    .iter()
                    .map(|r| parse_rule(r))
                    .collect::<anyhow::Result<_>>()?,
            )
        };
        Ok(AgentSaveParams {
            id: Some(id.to_string()),
            name: self.name.clone(),
            description: self.description.clone(),
            system_prompt: self.prompt.clone(),
            custom_instructions: self.instructions.clone(),
            allowed_skills: csv(&self.skills),
            allowed_plugins: csv(&self.plugins),
            allowed_tools: csv(&self.tools),
            allowed_secrets: csv(&self.secrets),
            investigation_loop: self.investigation_loop,
            reinforcement_learning: self.learning,
            sandbox_level: self.level.clone(),
            ask_before_run: self.ask_before_run,
            allow_network: self.network,
            default_effect: self.default_effect.clone(),
            timeout_seconds: self.timeout,
            blocked_binaries: csv(&self.blocked),
            permission_rules: rules,
            model_name: self.model.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            base_url: self.base_url.clone(),
            api_key_secret: self.api_key_secret.clone(),
            parent: self.parent.clone(),
            mode: Some(mode),
        })
    }
}

/// Runs `sayri agents list|show` (no daemon needed); returns the exit code.
pub(crate) fn run_local(paths: &Paths, action: AgentsAction) -> anyhow::Result<i32> {
    let files = FileAgents::new(paths.agents_dir());
    match action {
        AgentsAction::List { json } => list(&files, json),
        AgentsAction::Show { id, json } => show(&files, &id, json),
        _ => anyhow::bail!("this `sayri agents` command goes through the daemon"),
    }
}

/// Runs `sayri agents …`; returns the exit code.
pub(crate) async fn run(
    paths: &Paths,
    allow_start: bool,
    action: AgentsAction,
) -> anyhow::Result<i32> {
    let files = FileAgents::new(paths.agents_dir());
    let remote = |e: sayri_client::client::ClientError| anyhow::anyhow!("{e}");
    match action {
        action @ (AgentsAction::List { .. } | AgentsAction::Show { .. }) => {
            run_local(paths, action)
        }
        AgentsAction::Use { id } => {
            let mut c = connect_or_start(paths, allow_start).await?;
            let v = c
                .request_with(&AgentSwitchParams { agent_id: id })
                .await
                .map_err(remote)?;
            println!(
                "active agent: {} ({}) — to make it the default for new daemons: sayri config set agent.default_agent {}",
                v.agent_id,
                terminal_safe(&v.name),
                v.agent_id
            );
            Ok(0)
        }
        AgentsAction::Create(args) => match (&args.id, &args.from) {
            (_, Some(sentence)) => {
                create_from_sentence(paths, allow_start, sentence, args.agent).await
            }
            (Some(id), None) => {
                save(
                    paths,
                    allow_start,
                    args.fields.params(id, SaveMode::Create)?,
                )
                .await
            }
            (None, None) => anyhow::bail!("give the new agent's id, or --from \"a sentence\""),
        },
        AgentsAction::Edit { id, fields } => {
            save(paths, allow_start, fields.params(&id, SaveMode::Update)?).await
        }
        AgentsAction::Delete { id } => {
            let mut c = connect_or_start(paths, allow_start).await?;
            let v = c
                .request_with(&AgentDeleteParams {
                    agent_id: id.clone(),
                })
                .await
                .map_err(remote)?;
            if !v.deleted {
                anyhow::bail!("agent not found: {id}");
            }
            println!("deleted agent {id}");
            Ok(0)
        }
        AgentsAction::Detach { id, yes } => detach(paths, allow_start, &files, &id, yes).await,
    }
}

fn list(files: &FileAgents, json: bool) -> anyhow::Result<i32> {
    let list = files.list();
    if json {
        let v: Vec<_> = list.iter().map(sayri_daemon::agents::listed_view).collect();
        crate::cli::print_json(&v)?;
        return Ok(0);
    }
    for l in &list {
        match &l.effective {
            Ok(e) => println!(
                "{:<20} {:<21} {:<14} {}{}",
                e.id,
                e.sandbox.level,
                e.parent
                    .as_deref()
                    .map_or(String::new(), |p| format!("created by {p}")),
                terminal_safe(&e.name),
                if l.narrowed().is_empty() {
                    ""
                } else {
                    "  (limited by its creator)"
                }
            ),
            Err(err) => println!("{:<20} ERROR: {}", l.id, terminal_safe(err)),
        }
    }
    Ok(0)
}

fn show(files: &FileAgents, id: &str, json: bool) -> anyhow::Result<i32> {
    let listed = Listed {
        id: id.to_string(),
        written: files
            .stored(id)
            .and_then(|p| p.ok_or_else(|| format!("agent not found: {id}"))),
        effective: files
            .load(id)
            .and_then(|p| p.ok_or_else(|| format!("agent not found: {id}"))),
    };
    let written = listed.written.clone().map_err(|e| anyhow::anyhow!(e))?;
    let effective = listed.effective.clone().map_err(|e| anyhow::anyhow!(e))?;
    if json {
        let inherited: Vec<Value> = effective
            .creator_rules
            .iter()
            .map(|c| {
                json!({"agent_id": c.agent_id, "blocked_binaries": c.blocked_binaries,
                       "permission_rules": c.permission_rules})
            })
            .collect();
        let v = json!({
            "written": written, "effective": effective,
            "inherited_rules": inherited, "narrowed": listed.narrowed(),
            "file": files.path(id),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    print_profile(&written, &effective, &listed, files);
    Ok(0)
}

fn print_profile(w: &AgentProfile, e: &AgentProfile, l: &Listed, files: &FileAgents) {
    let t = |s: &str| terminal_safe(s).into_owned();
    println!("{} — {}", e.id, t(&e.name));
    if !e.description.is_empty() {
        println!("  {}", t(&e.description));
    }
    let file = files.path(&e.id);
    println!(
        "  file:      {}",
        if file.exists() {
            file.display().to_string()
        } else {
            "(built in)".into()
        }
    );
    let chain: Vec<&str> = e
        .creator_rules
        .iter()
        .rev()
        .map(|c| c.agent_id.as_str())
        .collect();
    if !chain.is_empty() {
        println!(
            "  creators:  {} (it can never do more than them)",
            chain.join(" → ")
        );
    }
    let s = &e.sandbox;
    println!("  level:     {}", s.level);
    let default_effect = serde_json::to_value(s.default_effect).unwrap_or_default();
    println!(
        "  commands no rule matches: {}",
        default_effect.as_str().unwrap_or("?")
    );
    println!(
        "  ask before run: {}   network: {}   timeout: {} s",
        s.ask_before_run, s.allow_network, s.timeout_seconds
    );
    let list = |v: &[String], empty: &str| {
        if v.is_empty() {
            empty.to_string()
        } else {
            t(&v.join(", "))
        }
    };
    println!("  secrets:   {}", list(&e.allowed_secrets, "none"));
    println!(
        "  tools: {}   skills: {}   plugins: {}",
        list(&e.allowed_tools, "all"),
        list(&e.allowed_skills, "all"),
        list(&e.allowed_plugins, "all")
    );
    println!(
        "  model:     {} at {}",
        t(&e.model.model_name),
        e.model
            .base_url
            .as_deref()
            .map_or("the provider".to_string(), t)
    );
    println!("  rules (strictest layer wins; its own last):");
    for c in &e.creator_rules {
        for r in &c.permission_rules {
            println!(
                "    [creator {}] {} {} → {}",
                c.agent_id,
                r.action,
                t(&r.resource),
                r.effect
            );
        }
    }
    for r in &w.sandbox.permission_rules {
        println!("    [own] {} {} → {}", r.action, t(&r.resource), r.effect);
    }
    println!("  blocked programs: {}", list(&s.blocked_binaries, "none"));
    let narrowed = l.narrowed();
    if !narrowed.is_empty() {
        println!("  limited by its creators (as written → in effect):");
        for n in narrowed {
            println!("    {}", t(&n.to_string()));
        }
    }
}

async fn save(paths: &Paths, allow_start: bool, params: AgentSaveParams) -> anyhow::Result<i32> {
    let mut c = connect_or_start(paths, allow_start).await?;
    let v = c
        .request_with(&params)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let verb = if v.created { "created" } else { "saved" };
    println!(
        "{verb} agent {} (effective level {})",
        v.id, v.effective.sandbox.level
    );
    print_narrowed(
        &v.narrowed,
        "its creators limit it (as written → in effect):",
    );
    Ok(0)
}

fn print_narrowed(items: &[Narrowing], heading: &str) {
    if items.is_empty() {
        return;
    }
    println!("{heading}");
    for n in items {
        println!(
            "  {}: {} → {}",
            n.field,
            terminal_safe(&n.written),
            terminal_safe(&n.effective)
        );
    }
}

async fn create_from_sentence(
    paths: &Paths,
    allow_start: bool,
    sentence: &str,
    creator: Option<String>,
) -> anyhow::Result<i32> {
    let text = if intent::detect(sentence) == Some(Intent::CreateAgent) {
        sentence.to_string()
    } else {
        format!("Create a sub-agent: {sentence}")
    };
    let options = AskOptions {
        agent: creator,
        session: None,
        new: true,
        timeout: 300.0,
    };
    run_ask(paths, allow_start, &text, &options, false).await
}

async fn detach(
    paths: &Paths,
    allow_start: bool,
    files: &FileAgents,
    id: &str,
    yes: bool,
) -> anyhow::Result<i32> {
    let written = files
        .stored(id)
        .map_err(|e| anyhow::anyhow!(e))?
        .ok_or_else(|| anyhow::anyhow!("agent not found: {id}"))?;
    let Some(parent) = &written.parent else {
        anyhow::bail!("agent {id} has no creator; there is nothing to detach");
    };
    if !yes {
        if !std::io::stdin().is_terminal() {
            anyhow::bail!(
                "detaching {id} from its creator {parent} widens what it may do; run it in a terminal to confirm, or pass --yes"
            );
        }
        println!(
            "Detach {id} from its creator {parent}? From then on only its own profile limits it."
        );
        if let Ok(Some(e)) = files.load(id) {
            let mut unbound = written.clone();
            unbound.parent = None;
            for n in sayri_core::domain::agents::narrowings(&unbound, &e) {
                println!(
                    "  {}: {} now → {} after",
                    n.field,
                    terminal_safe(&n.effective),
                    terminal_safe(&n.written)
                );
            }
        }
        print!("Type yes to detach: ");
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim() != "yes" {
            println!("not detached");
            return Ok(1);
        }
    }
    let mut c = connect_or_start(paths, allow_start).await?;
    let v = c
        .request_with(&AgentDetachParams {
            agent_id: id.to_string(),
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("detached {id} from {}", v.parent);
    Ok(0)
}
