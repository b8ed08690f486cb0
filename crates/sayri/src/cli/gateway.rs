//! `sayri gateway list|create|edit|start|stop|delete|pin|peers` (through the daemon).
//!
//! A bot token never comes from the command line (any local user can read it there): `create`
//! and `edit --token` read it from stdin (a pipe) or a hidden prompt, and store it in the vault
//! as `GATEWAY_<ID>_TOKEN`; the gateway process receives it in its environment.

use sayri_client::autostart::connect_or_start;
use sayri_client::client::Client;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_core::domain::gateway::GatewayInstance;
use sayri_protocol::params::{
    GatewayDeleteParams, GatewayInstanceParams, GatewayListParams, GatewayPeerAddParams,
    GatewayPeerRemoveParams, GatewayPeersParams, GatewayPinParams, GatewaySaveParams,
    GatewayStartParams, GatewayStopParams, SaveMode, VaultSetParams,
};
use sayri_protocol::reply::gateways::GatewayEntry;
use std::collections::BTreeMap;

/// The secret a known plugin needs: (environment variable, what to call it).
fn plugin_token(plugin: &str) -> Option<(&'static str, &'static str)> {
    match plugin {
        "telegram" => Some(("TELEGRAM_BOT_TOKEN", "Telegram bot token (from @BotFather)")),
        _ => None,
    }
}

/// Settings shared by `create` and `edit`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct InstanceFlags {
    /// The agent its messages go to.
    #[arg(long)]
    pub agent: Option<String>,
    /// Further agents a chat may switch to with /agent (comma-separated).
    #[arg(long)]
    pub agents: Option<String>,
    /// Highest sandbox level of its turns (0-4 or a name such as LEVEL_1_READONLY); messages
    /// can only lower it.
    #[arg(long)]
    pub level_cap: Option<String>,
    /// Bot API base URL (default https://api.telegram.org).
    #[arg(long)]
    pub api_base: Option<String>,
    /// A program option NAME=VALUE, given to it as --NAME VALUE (repeatable; never a secret).
    #[arg(long = "option", value_name = "NAME=VALUE")]
    pub options: Vec<String>,
    /// A group chat id it answers paired members in (repeatable; none = group chats off).
    #[arg(long = "group", value_name = "CHAT_ID")]
    pub groups: Vec<String>,
}

/// `sayri gateway …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum GatewayAction {
    /// List gateway instances with their state, pid, restarts and last error.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create an instance; the bot token is read from stdin (or a hidden prompt).
    Create {
        /// The gateway program: telegram.
        plugin: String,
        /// Its id (a-z, 0-9, '_', '-').
        #[arg(long = "name", value_name = "ID")]
        id: String,
        /// Its settings.
        #[command(flatten)]
        flags: InstanceFlags,
        /// Do not start it now nor with the daemon.
        #[arg(long)]
        no_auto_start: bool,
    },
    /// Change an instance (a running one is restarted).
    Edit {
        /// The instance.
        id: String,
        /// Its settings.
        #[command(flatten)]
        flags: InstanceFlags,
        /// Turn group chats off.
        #[arg(long, conflicts_with = "groups")]
        no_groups: bool,
        /// Start it with the daemon (yes/no).
        #[arg(long, value_name = "yes|no")]
        auto_start: Option<String>,
        /// Read a new bot token from stdin (or a hidden prompt).
        #[arg(long)]
        token: bool,
    },
    /// Start an instance (one already running is left as it is).
    Start {
        /// The instance.
        id: String,
    },
    /// Stop an instance.
    Stop {
        /// The instance.
        id: String,
    },
    /// Stop and delete an instance, its peers and the secrets made for it.
    Delete {
        /// The instance.
        id: String,
        /// Keep its secrets in the vault.
        #[arg(long)]
        keep_secrets: bool,
    },
    /// Make a one-time PIN to pair a chat account (send `/pair PIN` to the bot privately).
    Pin {
        /// The instance.
        id: String,
    },
    /// Who may talk to an instance.
    Peers {
        /// What to do.
        #[command(subcommand)]
        action: PeersAction,
    },
}

/// `sayri gateway peers …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PeersAction {
    /// List the paired senders of an instance.
    List {
        /// The instance.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Pair a sender id without a PIN (Telegram: the numeric user id).
    Add {
        /// The instance.
        id: String,
        /// The sender id.
        peer: String,
    },
    /// Unpair a sender.
    Remove {
        /// The instance.
        id: String,
        /// The sender id.
        peer: String,
    },
}

fn remote(e: sayri_client::client::ClientError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Reads a bot token from stdin (a pipe) or a hidden prompt on a terminal.
fn read_token(what: &str) -> anyhow::Result<String> {
    let value = super::secret_input::read_secret(
        what,
        "printf %s \"$TOKEN\" | sayri gateway create …",
        false,
    )?;
    Ok(value.to_string())
}

fn parse_options(flags: &InstanceFlags) -> anyhow::Result<Option<BTreeMap<String, String>>> {
    if flags.options.is_empty() && flags.api_base.is_none() {
        return Ok(None);
    }
    let mut m = BTreeMap::new();
    for o in &flags.options {
        let Some((k, v)) = o.split_once('=') else {
            anyhow::bail!("--option {o:?}: write NAME=VALUE");
        };
        m.insert(k.trim().to_string(), v.to_string());
    }
    if let Some(url) = &flags.api_base {
        let ok = url.starts_with("http://") || url.starts_with("https://");
        if !ok {
            anyhow::bail!("--api-base {url:?}: give an http:// or https:// URL");
        }
        m.insert("api-base".into(), url.trim_end_matches('/').to_string());
    }
    Ok(Some(m))
}

fn csv(s: &Option<String>) -> Option<Vec<String>> {
    s.as_ref().map(|s| {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    })
}

/// Runs `sayri gateway …`.
pub(crate) async fn run(
    paths: &Paths,
    allow_start: bool,
    action: GatewayAction,
) -> anyhow::Result<()> {
    // Secrets are read before anything is changed, so a missing token changes nothing.
    let token = match &action {
        GatewayAction::Create { plugin, .. } => match plugin_token(plugin) {
            Some((_, what)) => Some(read_token(what)?),
            None => None,
        },
        GatewayAction::Edit { token: true, .. } => Some(read_token("bot token")?),
        _ => None,
    };
    let mut c = connect_or_start(paths, allow_start).await?;
    match action {
        GatewayAction::List { json } => list(&mut c, json).await,
        GatewayAction::Create {
            plugin,
            id,
            flags,
            no_auto_start,
        } => create(&mut c, &plugin, &id, &flags, !no_auto_start, token).await,
        GatewayAction::Edit {
            id,
            flags,
            no_groups,
            auto_start,
            ..
        } => edit(&mut c, &id, &flags, no_groups, auto_start, token).await,
        GatewayAction::Start { id } => {
            let v = c
                .request_with(&GatewayStartParams {
                    instance_id: id.clone(),
                })
                .await
                .map_err(remote)?;
            if v.already_running {
                let pid = v.gateway.pid;
                let pid = pid.map_or_else(String::new, |p| format!(" (pid {p})"));
                println!(
                    "gateway {id} is already running{pid}; nothing changed (`sayri gateway stop {id}` stops it, `sayri gateway edit` restarts it with new settings)"
                );
            } else {
                println!("started gateway {id}");
            }
            Ok(())
        }
        GatewayAction::Stop { id } => {
            let v = c
                .request_with(&GatewayStopParams {
                    instance_id: id.clone(),
                })
                .await
                .map_err(remote)?;
            if v.stopped {
                println!("stopped gateway {id}");
            } else {
                println!("gateway {id} was not running");
            }
            Ok(())
        }
        GatewayAction::Delete { id, keep_secrets } => {
            let v = c
                .request_with(&GatewayDeleteParams {
                    instance_id: id.clone(),
                    keep_secrets,
                })
                .await
                .map_err(remote)?;
            println!("deleted gateway {id} and its peers");
            for k in &v.secrets_deleted {
                println!("deleted secret {k} from the vault");
            }
            Ok(())
        }
        GatewayAction::Pin { id } => pin(&mut c, &id).await,
        GatewayAction::Peers { action } => peers(&mut c, action).await,
    }
}

async fn list(c: &mut Client, json: bool) -> anyhow::Result<()> {
    let v = c
        .request_with(&GatewayListParams {})
        .await
        .map_err(remote)?;
    if json {
        return crate::cli::print_json(&v);
    }
    let list = v;
    if list.is_empty() {
        println!(
            "no gateways yet — create one with: sayri gateway create telegram --name home --agent default --level-cap 1"
        );
        return Ok(());
    }
    let s = |t: &str| terminal_safe(t).into_owned();
    for g in &list {
        let i = &g.instance;
        let pid = g.pid.map_or("-".to_string(), |p| p.to_string());
        println!(
            "{}  {}  agent {}  cap {}  {}  pid {pid}  restarts {}  peers {}",
            s(&i.id),
            s(&i.plugin),
            s(&i.agent),
            i.level_cap,
            s(&g.state),
            g.restarts,
            g.peers,
        );
        if let Some(line) = pending_line(g) {
            println!("    {line}");
        }
        for (e, label) in [
            (&g.last_error, "last error"),
            (&g.last_delivery_error, "last undelivered reply"),
        ] {
            if let Some(e) = e {
                println!("    {label}: {}", terminal_safe(e));
            }
        }
    }
    Ok(())
}

/// `2 replies waiting to be delivered; next attempt in 35 s` for an instance with a non-empty
/// outbox.
fn pending_line(g: &GatewayEntry) -> Option<String> {
    let n = Some(g.pending_replies).filter(|n| *n > 0)?;
    let mut line = format!(
        "{n} repl{} waiting to be delivered",
        if n == 1 { "y" } else { "ies" }
    );
    if let Some(at) = g.next_retry_at {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        line.push_str(&format!("; next attempt in {:.0} s", (at - now).max(0.0)));
    }
    Some(line)
}

async fn create(
    c: &mut Client,
    plugin: &str,
    id: &str,
    flags: &InstanceFlags,
    auto_start: bool,
    token: Option<String>,
) -> anyhow::Result<()> {
    let key = format!("{}TOKEN", GatewayInstance::own_secret_prefix(id));
    let secrets =
        plugin_token(plugin).map(|(env, _)| BTreeMap::from([(env.to_string(), key.clone())]));
    let instance = GatewayInstanceParams {
        id: id.to_string(),
        plugin: Some(plugin.to_string()),
        agent: flags.agent.clone(),
        agents: csv(&flags.agents),
        level_cap: flags.level_cap.clone(),
        secrets,
        options: parse_options(flags)?,
        allowed_groups: (!flags.groups.is_empty()).then(|| flags.groups.clone()),
        auto_start: Some(auto_start),
        ..Default::default()
    };
    let v = c
        .request_with(&GatewaySaveParams {
            instance,
            mode: Some(SaveMode::Create),
        })
        .await
        .map_err(remote)?;
    if let Some(token) = token {
        let stored = c
            .request_with(&VaultSetParams {
                key: key.clone(),
                value: token,
                description: format!("{plugin} token of gateway {id}"),
            })
            .await;
        if let Err(e) = stored {
            let _ = c
                .request_with(&GatewayDeleteParams {
                    instance_id: id.to_string(),
                    keep_secrets: true,
                })
                .await;
            anyhow::bail!("the token could not be stored, so gateway {id} was not created: {e}");
        }
    }
    let inst = &v.instance;
    println!(
        "created gateway {id} ({plugin}, agent {}, level cap {})",
        inst.agent, inst.level_cap
    );
    if auto_start {
        c.request_with(&GatewayStartParams {
            instance_id: id.to_string(),
        })
        .await
        .map_err(|e| anyhow::anyhow!("gateway {id} was created but did not start: {e}"))?;
        println!("started gateway {id}");
    }
    println!(
        "to talk to it, pair your account: run `sayri gateway pin {id}` and send /pair PIN to the bot in a private chat"
    );
    Ok(())
}

async fn edit(
    c: &mut Client,
    id: &str,
    flags: &InstanceFlags,
    no_groups: bool,
    auto_start: Option<String>,
    token: Option<String>,
) -> anyhow::Result<()> {
    let auto_start = match auto_start
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None => None,
        Some("yes" | "on" | "true" | "1") => Some(true),
        Some("no" | "off" | "false" | "0") => Some(false),
        Some(other) => anyhow::bail!("--auto-start {other:?}: write yes or no"),
    };
    let current = c
        .request_with(&GatewayListParams {})
        .await
        .map_err(remote)?;
    let Some(existing) = current.into_iter().find(|g| g.instance.id == id) else {
        anyhow::bail!("no gateway instance {id} (see `sayri gateway list`)");
    };
    let mut options = None;
    if let Some(new) = parse_options(flags)? {
        let mut merged = existing.instance.options.clone();
        merged.extend(new);
        options = Some(merged);
    }
    let mut secrets = None;
    if let Some(token) = token {
        let plugin = existing.instance.plugin.as_str();
        let Some((env, _)) = plugin_token(plugin) else {
            anyhow::bail!("--token: the {plugin} gateway takes no bot token");
        };
        let key = format!("{}TOKEN", GatewayInstance::own_secret_prefix(id));
        c.request_with(&VaultSetParams {
            key: key.clone(),
            value: token,
            description: format!("{plugin} token of gateway {id}"),
        })
        .await
        .map_err(remote)?;
        let mut merged = existing.instance.secrets.clone();
        merged.insert(env.to_string(), key);
        secrets = Some(merged);
    }
    let instance = GatewayInstanceParams {
        id: id.to_string(),
        agent: flags.agent.clone(),
        agents: csv(&flags.agents),
        level_cap: flags.level_cap.clone(),
        secrets,
        options,
        allowed_groups: if no_groups {
            Some(Vec::new())
        } else {
            (!flags.groups.is_empty()).then(|| flags.groups.clone())
        },
        auto_start,
        ..GatewayInstanceParams::default()
    };
    let v = c
        .request_with(&GatewaySaveParams {
            instance,
            mode: Some(SaveMode::Update),
        })
        .await
        .map_err(remote)?;
    println!(
        "saved gateway {id}{}",
        if v.restarted { " (restarted)" } else { "" }
    );
    Ok(())
}

async fn pin(c: &mut Client, id: &str) -> anyhow::Result<()> {
    let v = c
        .request_with(&GatewayPinParams {
            instance_id: id.to_string(),
        })
        .await
        .map_err(remote)?;
    let pin = &v.pin;
    let minutes = v.expires_in.div_euclid(60);
    println!("Pairing PIN for gateway {id}: {pin} (one use, valid for {minutes} minutes)");
    println!("Send this to the bot in a private chat from the account to pair:");
    println!("  /pair {pin}");
    Ok(())
}

async fn peers(c: &mut Client, action: PeersAction) -> anyhow::Result<()> {
    match action {
        PeersAction::List { id, json } => {
            let v = c
                .request_with(&GatewayPeersParams {
                    instance_id: id.clone(),
                })
                .await
                .map_err(remote)?;
            if json {
                return crate::cli::print_json(&v);
            }
            let list = v;
            if list.is_empty() {
                println!(
                    "nobody is paired with gateway {id} — run `sayri gateway pin {id}`, or `sayri gateway peers add {id} SENDER_ID`"
                );
            }
            for p in list {
                println!(
                    "{}  via {}  {}",
                    terminal_safe(&p.peer_id),
                    terminal_safe(&p.via),
                    terminal_safe(&p.name)
                );
            }
        }
        PeersAction::Add { id, peer } => {
            let v = c
                .request_with(&GatewayPeerAddParams {
                    instance_id: id.clone(),
                    peer_id: peer.clone(),
                })
                .await
                .map_err(remote)?;
            if v.added {
                println!("paired sender {peer} with gateway {id}");
            } else {
                println!("sender {peer} was already paired with gateway {id}");
            }
        }
        PeersAction::Remove { id, peer } => {
            let v = c
                .request_with(&GatewayPeerRemoveParams {
                    instance_id: id.clone(),
                    peer_id: peer.clone(),
                })
                .await
                .map_err(remote)?;
            if v.removed {
                println!("unpaired sender {peer} from gateway {id}");
            } else {
                anyhow::bail!("sender {peer} was not paired with gateway {id}");
            }
        }
    }
    Ok(())
}
