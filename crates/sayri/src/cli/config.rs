//! `sayri config get|set|list` through the daemon (values typed by the daemon's key table).

use crate::cli::autostart::connect_or_start;
use crate::paths::Paths;
use clap::Subcommand;
use sayri_protocol::params::{ConfigGetParams, ConfigListParams, ConfigSetParams};
use serde_json::Value;

/// `sayri config` actions.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print one setting (secrets masked), e.g. `sayri config get provider.model`.
    Get {
        /// `group.key`.
        key: String,
    },
    /// Change one setting, e.g. `sayri config set provider.model qwen2.5`.
    /// Booleans accept true/false/yes/no/on/off/1/0; lists accept a JSON array.
    Set {
        /// `group.key`.
        key: String,
        /// New value (converted to the setting's type).
        value: String,
    },
    /// Print every setting with its value (secrets masked).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Runs `sayri config …`.
pub async fn run(paths: &Paths, allow_start: bool, action: ConfigAction) -> anyhow::Result<()> {
    let mut client = connect_or_start(paths, allow_start).await?;
    match action {
        ConfigAction::Get { key } => {
            let r = client
                .request_with(&ConfigGetParams { key, group: None })
                .await?;
            println!("{}", text(r.get("value").unwrap_or(&Value::Null)));
        }
        ConfigAction::Set { key, value } => {
            let r = client
                .request_with(&ConfigSetParams {
                    key,
                    group: None,
                    value: Value::String(value),
                })
                .await?;
            println!(
                "{}.{} = {}",
                text(r.get("group").unwrap_or(&Value::Null)),
                text(r.get("key").unwrap_or(&Value::Null)),
                r.get("value").unwrap_or(&Value::Null)
            );
        }
        ConfigAction::List { json } => {
            let r = client.request_with(&ConfigListParams {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else if let Value::Array(items) = r {
                for it in items {
                    let g = text(it.get("group").unwrap_or(&Value::Null));
                    let k = text(it.get("key").unwrap_or(&Value::Null));
                    let v = it.get("value").unwrap_or(&Value::Null);
                    println!("{g}.{k} = {v}");
                }
            }
        }
    }
    Ok(())
}
