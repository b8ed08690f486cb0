//! `sayri config get|set|list`.
//!
//! With a daemon running, the daemon reads and changes the settings (so it applies a change at
//! once). Without one, these commands read and edit `sayri.toml` directly, under the same
//! writers' lock and with the same checks, and start nothing — except `provider.api_key`,
//! which lives in the vault and always goes through the daemon (started when needed, unless
//! `--no-start`).
//!
//! `set` parses its text by the key's type first (`true/false/yes/no/on/off/1/0` for a
//! boolean, a JSON array such as `["/srv/private"]` for a list) and sends the typed value.

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
    Set {
        /// `group.key`.
        key: String,
        /// New value (parsed by the setting's type, then checked).
        value: String,
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
    fn needs_daemon(&self) -> bool {
        matches!(self, ConfigAction::Get { key } | ConfigAction::Set { key, .. }
            if key == "provider.api_key")
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
    let client = match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(c) => c,
        Err(ClientError::NotRunning { .. }) if action.needs_daemon() => {
            connect_or_start(paths, allow_start).await?
        }
        Err(ClientError::NotRunning { .. }) => return run_on_file(paths, action),
        Err(e) => return Err(e.into()),
    };
    run_through_daemon(client, action).await
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
            let value = Config::parse_text(&key, &value)?;
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
            let value = Config::parse_text(&key, &value)?;
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
