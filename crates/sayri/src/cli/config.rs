//! `sayri config get|set|list`.
//!
//! With a daemon running, the daemon reads and changes the settings (so it applies a change at
//! once). Without one, these commands read and edit `sayri.toml` directly, under the same
//! writers' lock and with the same checks, and start nothing — except `provider.api_key`,
//! which lives in the vault and always goes through the daemon (started when needed, unless
//! `--no-start`).
//!
//! Setting `ui.autostart` or `ui.autostart_mode` also rewrites what starts at login (the
//! unit's link, the autostart entry) when `sayri install --user` installed Sayri.
//!
//! `set` parses its text by the key's type first (`true/false/yes/no/on/off/1/0` for a
//! boolean, a JSON array such as `["/srv/private"]` for a list) and sends the typed value.
//!
//! A secret setting (`provider.api_key`, `provider.extra_headers`, any key named like a token or
//! password) never takes its value from the command line, where every user of the machine can
//! read it (`ps`, `/proc/PID/cmdline`) and the shell keeps it in its history: `set` reads it
//! from stdin (a pipe) or a hidden prompt, and refuses a value given as an argument (an empty
//! one, which clears the setting, is allowed).

use clap::Subcommand;
use sayri_client::autostart::connect_or_start;
use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_client::paths::{Paths, ensure_private_dir};
use sayri_core::domain::config::Config;
use sayri_daemon::config_file;
use sayri_daemon::config_values::{config_rows, set_in_file, shown_value};
use sayri_protocol::params::{ConfigGetParams, ConfigListParams, ConfigSetParams};
use sayri_protocol::reply::config::ConfigRow;
use serde_json::Value;

/// `sayri config` actions.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigAction {
    /// Print one setting (secrets masked), e.g. `sayri config get provider.model`.
    Get {
        /// `group.key`.
        key: String,
    },
    /// Change one setting, e.g. `sayri config set provider.model qwen2.5`.
    /// Booleans accept true/false/yes/no/on/off/1/0; lists take a JSON array, e.g.
    /// `sayri config set sandbox.deny_read '["/srv/private"]'` (`[]` empties one).
    /// A secret (`provider.api_key`) is read from stdin or a hidden prompt, never given here.
    Set {
        /// `group.key`.
        key: String,
        /// New value (parsed by the setting's type, then checked). Left out for a secret.
        value: Option<String>,
    },
    /// Print every setting with its value (secrets masked).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print every setting with its type, default and meaning as a Markdown table.
    Reference,
}

impl ConfigAction {
    /// Whether the action needs the daemon even when none runs (the provider key lives in the
    /// vault, which the daemon manages).
    fn changes_autostart(&self) -> bool {
        matches!(self, ConfigAction::Set { key, .. } if key.starts_with("ui.autostart"))
    }

    fn needs_daemon(&self) -> bool {
        matches!(self, ConfigAction::Get { key } | ConfigAction::Set { key, .. }
            if key == "provider.api_key")
    }
}

impl ConfigAction {
    /// The action with `set`'s value in hand: the argument, or for a secret setting what
    /// stdin or the hidden prompt gave (see the module rules). Called before anything changes.
    fn with_value_read(self) -> anyhow::Result<ConfigAction> {
        Ok(match self {
            ConfigAction::Set { key, value } => {
                let value = Some(set_value(&key, value)?);
                ConfigAction::Set { key, value }
            }
            other => other,
        })
    }
}

/// The value `sayri config set KEY [VALUE]` stores (see the module rules).
fn set_value(key: &str, given: Option<String>) -> anyhow::Result<String> {
    // An unknown key is refused with the others, by the check of the value.
    let secret = Config::spec(key).is_ok_and(|s| s.is_secret());
    match given {
        Some(v) if secret && !matches!(v.trim(), "" | "[]") => anyhow::bail!(
            "{key} is a secret, and a value on the command line can be read by every user of this machine (`ps`) and stays in your shell history; nothing was changed. Give it on stdin instead: `sayri config set {key}` asks for it with hidden input, or pipe it: `printf %s \"$KEY\" | sayri config set {key}`"
        ),
        Some(v) => Ok(v),
        None if secret => Ok(super::secret_input::read_secret(
            &format!("the value of {key}"),
            &format!("printf %s \"$KEY\" | sayri config set {key}"),
            true,
        )?
        .to_string()),
        None => {
            use clap::CommandFactory;
            super::Cli::command()
                .error(
                    clap::error::ErrorKind::MissingRequiredArgument,
                    format!(
                        "`sayri config set {key}` needs the new value: `sayri config set {key} VALUE` (`sayri config reference` lists what each setting takes)"
                    ),
                )
                .exit()
        }
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Runs `sayri config …`.
pub(crate) async fn run(
    paths: &Paths,
    allow_start: bool,
    action: ConfigAction,
) -> anyhow::Result<()> {
    if let ConfigAction::Reference = action {
        print!("{}", sayri_core::domain::config::reference_markdown());
        return Ok(());
    }
    let action = action.with_value_read()?;
    let client = match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => c,
        Err(ClientError::NotRunning { .. }) if action.needs_daemon() => {
            connect_or_start(paths, allow_start).await?
        }
        Err(ClientError::NotRunning { .. }) => {
            let autostart = action.changes_autostart();
            run_on_file(paths, action)?;
            return after_set(paths, autostart);
        }
        Err(e) => return Err(e.into()),
    };
    let autostart = action.changes_autostart();
    run_through_daemon(client, action).await?;
    after_set(paths, autostart)
}

/// A changed `ui.autostart*` applies to what starts at login at once.
fn after_set(paths: &Paths, autostart: bool) -> anyhow::Result<()> {
    if autostart {
        crate::cli::install::autostart_changed(paths)?;
    }
    Ok(())
}

async fn run_through_daemon(mut client: Client, action: ConfigAction) -> anyhow::Result<()> {
    match action {
        ConfigAction::Get { key } => {
            let r = client
                .request_with(&ConfigGetParams { key, group: None })
                .await?;
            println!("{}", text(&r.value));
        }
        ConfigAction::Set { key, value } => {
            let value = Config::parse_text(&key, value.as_deref().unwrap_or_default())?;
            let r = client
                .request_with(&ConfigSetParams {
                    key,
                    group: None,
                    value,
                })
                .await?;
            println!("{}.{} = {}", r.group, r.key, r.value);
        }
        ConfigAction::List { json } => {
            let r = client.request_with(&ConfigListParams {}).await?;
            print_list(&r, json)?;
        }
        ConfigAction::Reference => {
            print!("{}", sayri_core::domain::config::reference_markdown());
        }
    }
    Ok(())
}

/// The same actions on `sayri.toml` itself (no daemon runs).
fn run_on_file(paths: &Paths, action: ConfigAction) -> anyhow::Result<()> {
    match action {
        ConfigAction::Get { key } => {
            Config::spec(&key)?;
            let (cfg, _) = config_file::load(&paths.config_file())?;
            println!("{}", text(&shown_value(&key, &cfg)?));
        }
        ConfigAction::Set { key, value } => {
            let value = Config::parse_text(&key, value.as_deref().unwrap_or_default())?;
            ensure_private_dir(&paths.config_dir)?;
            let (_, stored) = set_in_file(paths, &key, &value)?;
            println!("{key} = {}", stored.to_json());
        }
        ConfigAction::List { json } => {
            let (cfg, _) = config_file::load(&paths.config_file())?;
            print_list(&config_rows(&cfg, false), json)?;
        }
        ConfigAction::Reference => {
            print!("{}", sayri_core::domain::config::reference_markdown());
        }
    }
    Ok(())
}

fn print_list(list: &[ConfigRow], json: bool) -> anyhow::Result<()> {
    if json {
        return crate::cli::print_json(&list);
    }
    for it in list {
        println!("{}.{} = {}", it.group, it.key, it.value);
    }
    Ok(())
}
