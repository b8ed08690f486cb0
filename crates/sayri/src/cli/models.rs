//! `sayri models …`: chat models — the local ones Sayri can serve itself (`list`, `install`)
//! and those of the configured endpoint (`list --remote`).

use anyhow::{Context, bail};
use sayri_client::client::{CONNECT_TIMEOUT, Client};
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_core::ports::NoSecrets;
use sayri_daemon::brain::PROVIDER_KEY;
use sayri_daemon::local_model::{self, InstalledModel};
use sayri_protocol::params::StatusParams;
use sayri_protocol::reply::runtime::LocalModelStatus;
use sayri_vault::{KeySource, Vault, VaultPaths};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `sayri models …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ModelsAction {
    /// List local chat models (installed, and which one the daemon serves); `--remote` lists
    /// what the configured endpoint serves instead.
    List {
        /// Ask the configured endpoint (`GET /models`).
        #[arg(long)]
        remote: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Install a GGUF chat model file so `provider.local_model` can name it.
    Install {
        /// The `.gguf` file.
        file: PathBuf,
        /// Name to install it under (default: the file name without `.gguf`).
        #[arg(long)]
        name: Option<String>,
    },
    /// Voice models (whisper, Piper voices, wake words, VAD).
    #[command(flatten)]
    Voice(crate::cli::voice_models::VoiceModelsAction),
}

/// Runs `sayri models …`; the exit status.
pub(crate) async fn run(paths: &Paths, action: ModelsAction) -> anyhow::Result<i32> {
    let done = match action {
        ModelsAction::List { remote: true, json } => list_remote(paths, json).await,
        ModelsAction::List {
            remote: false,
            json,
        } => list_local(paths, json).await,
        ModelsAction::Install { file, name } => install(paths, &file, name.as_deref()),
        ModelsAction::Voice(a) => return crate::cli::voice_models::run(a).await,
    };
    done.map(|()| 0)
}

/// The local model section of a running daemon's status (`None` when no daemon runs; this
/// listing never starts one; `Some(None)` before the daemon's core is up).
async fn served(paths: &Paths) -> Option<Option<LocalModelStatus>> {
    let mut c = Client::connect(&paths.socket(), CONNECT_TIMEOUT)
        .await
        .ok()?;
    let status = c.request_with(&StatusParams {}).await.ok()?;
    Some(status.local_model)
}

async fn list_local(paths: &Paths, as_json: bool) -> anyhow::Result<()> {
    let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
    let configured = cfg.provider.local_model.clone();
    let mut models = local_model::installed(paths);
    let chosen = (!configured.is_empty())
        .then(|| local_model::resolve(paths, &configured))
        .and_then(Result::ok);
    if let Some(path) = &chosen
        && !models.iter().any(|m| &m.path == path)
    {
        models.push(InstalledModel {
            name: path.display().to_string(),
            path: path.clone(),
            bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        });
    }
    let served = served(paths).await;
    if as_json {
        let list: Vec<Value> = models
            .iter()
            .map(|m| {
                let in_use = chosen.as_ref() == Some(&m.path);
                json!({
                    "name": m.name, "path": m.path, "bytes": m.bytes, "configured": in_use,
                    "served": if in_use { served.clone().flatten() } else { None },
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    if models.is_empty() {
        println!(
            "no local models installed in {} — `./scripts/setup --model` installs a small one, `sayri models install FILE.gguf` adds yours",
            paths.models_dir().display()
        );
    } else {
        println!("local models in {}:", paths.models_dir().display());
    }
    for m in &models {
        let in_use = chosen.as_ref() == Some(&m.path);
        let note = if in_use {
            format!("  ← provider.local_model, {}", served_note(served.as_ref()))
        } else {
            String::new()
        };
        println!(
            "  {:<32} {:>8}{note}",
            terminal_safe(&m.name),
            human_size(m.bytes)
        );
    }
    if !configured.is_empty() && chosen.is_none() {
        println!(
            "provider.local_model is {} but {}",
            terminal_safe(&configured),
            local_model::resolve(paths, &configured)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        );
    }
    if let Some(first) = models.first()
        && chosen.is_none()
    {
        println!(
            "use one with: sayri config set provider.local_model {}",
            first.name
        );
    }
    println!();
    crate::cli::voice_models::print_list();
    Ok(())
}

/// `served: ready on 127.0.0.1:PORT`, `starting`, … or that no daemon runs.
fn served_note(served: Option<&Option<LocalModelStatus>>) -> String {
    let Some(s) = served else {
        return "not served (the daemon is not running; `sayri status` starts it)".into();
    };
    let Some(s) = s else {
        return "not served".into();
    };
    match s.state.as_str() {
        "ready" => format!("served on 127.0.0.1:{}", s.port.unwrap_or(0)),
        "starting" => "server starting".into(),
        "failed" => format!(
            "server failed: {}",
            terminal_safe(s.error.as_deref().unwrap_or(""))
        ),
        _ => "not served".into(),
    }
}

/// `98.4 MB`.
fn human_size(bytes: u64) -> String {
    let mb = bytes as f64 / 1_000_000.0;
    if mb >= 1000.0 {
        format!("{:.1} GB", mb / 1000.0)
    } else {
        format!("{mb:.1} MB")
    }
}

/// `sayri models install FILE [--name NAME]`: the file must be a GGUF model; it is hard-linked
/// into the models directory when possible, else copied (through a temporary file).
fn install(paths: &Paths, file: &Path, name: Option<&str>) -> anyhow::Result<()> {
    let mut magic = [0u8; 4];
    std::fs::File::open(file)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .with_context(|| format!("cannot read {}", file.display()))?;
    if &magic != b"GGUF" {
        bail!(
            "{} is not a GGUF model file (it does not start with \"GGUF\"); convert or download the model in GGUF format",
            file.display()
        );
    }
    let name = match name {
        Some(n) => n.strip_suffix(".gguf").unwrap_or(n).to_string(),
        None => local_model::model_id(file),
    };
    let spec = sayri_core::domain::config::Config::spec("provider.local_model")?;
    spec.validate(&sayri_core::domain::config::ConfigValue::Str(name.clone()))
        .map_err(|e| anyhow::anyhow!("cannot install under the name {name:?}: {e}"))?;
    paths.ensure_dirs()?;
    let dir = paths.models_dir();
    sayri_client::paths::ensure_private_dir(&dir)?;
    let dest = dir.join(format!("{name}.gguf"));
    let size = std::fs::metadata(file)?.len();
    if std::fs::metadata(&dest).is_ok_and(|m| m.len() == size) {
        println!("{name} is already installed ({})", dest.display());
    } else {
        let tmp = dir.join(format!(".{name}.gguf.part"));
        let _ = std::fs::remove_file(&tmp);
        if std::fs::hard_link(file, &tmp).is_err() {
            std::fs::copy(file, &tmp)
                .with_context(|| format!("cannot copy {} to {}", file.display(), dir.display()))?;
        }
        std::fs::rename(&tmp, &dest)?;
        println!(
            "installed {name} ({}) in {}",
            human_size(size),
            dir.display()
        );
    }
    println!("use it with: sayri config set provider.local_model {name}");
    Ok(())
}

/// `sayri models list --remote`.
async fn list_remote(paths: &Paths, as_json: bool) -> anyhow::Result<()> {
    let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
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
    let list = client.list_models().await?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for m in list {
            println!("{}", terminal_safe(&m));
        }
    }
    Ok(())
}
