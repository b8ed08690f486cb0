//! `sayri setup`: the first-run wizard. Chooses the model server (a running Ollama, llama.cpp
//! server or LM Studio found on this computer, Sayri's own local model, or any address), the
//! model, an API key (stored in the vault, never in `sayri.toml`) and what the assistant may do
//! (its sandbox level, explained in plain words).
//!
//! * Interactive on a terminal; with `--yes` every answer comes from the flags (or what is
//!   detected), for scripts.
//! * Nothing is written before the summary is confirmed: end of input (Ctrl-D) at any question,
//!   or `n` at the summary, leaves every file as it was and exits 0 (as the original wizard did).
//! * The chosen server must answer `GET …/models` before anything is offered for confirmation.
//! * With a daemon running, the settings and the key go through it (it applies them at once);
//!   otherwise `sayri.toml` is edited in place under the writers' lock, and the key goes straight
//!   into the vault.
//! * Voice (optional): the whisper speech-recognition model the settings want (`stt.language`,
//!   `stt.model_size`) is offered for download from Sayri's catalog (size shown; default no;
//!   `--voice-models` with `--yes`). It is downloaded after the settings are written, through
//!   the same verified download as `sayri models download` (progress bar, sha256 checked, nothing
//!   installed unless it matches). An installed model is reported as present instead; a build
//!   without voice says how to get it instead of offering anything.
//! * The built-in `default` agent cannot be changed: choosing another level for it creates the
//!   agent `assistant` (the built-in profile at that level) and makes it the default; an agent
//!   of the user's own that is the default gets the new level in its profile.

use anyhow::{Context, bail};
use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_client::paths::Paths;
use sayri_core::domain::config::Config;
use sayri_core::domain::profile::AgentProfile;
use sayri_daemon::agents::FileAgents;
use sayri_daemon::brain::PROVIDER_KEY;
use sayri_protocol::SandboxLevel;
use sayri_protocol::params::ConfigSetParams;
use sayri_voice::models::catalog::{self, CatalogEntry};
use sayri_voice::models::{ModelKind, ModelStore};
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal, Read, Write};
use std::time::Duration;
use zeroize::Zeroizing;

/// Servers looked for on this computer: name and port of their OpenAI-compatible API.
pub(crate) const KNOWN_SERVERS: &[(&str, u16)] = &[
    ("Ollama", 11434),
    ("llama.cpp server", 8080),
    ("LM Studio", 1234),
];

/// How long a server has to answer `GET …/models` while looking for servers.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// The agent created when the built-in `default` is asked to run at another level.
pub(crate) const ASSISTANT_AGENT: &str = "assistant";

/// What the cancel message says.
const NOTHING_WRITTEN: &str = "nothing was written";

/// `sayri setup` options.
#[derive(Debug, clap::Args)]
pub(crate) struct SetupArgs {
    /// Answer nothing interactively: use the flags, and detect what they leave out.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 (`/v1` is added
    /// to an address without a path).
    #[arg(long, value_name = "URL", conflicts_with = "local_model")]
    pub endpoint: Option<String>,
    /// Serve this installed local model (`sayri models list`) instead of using a server.
    #[arg(long, value_name = "NAME")]
    pub local_model: Option<String>,
    /// Model to use (default: the first the server lists).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Read the server's API key from stdin (stored in the vault).
    #[arg(long)]
    pub api_key_stdin: bool,
    /// What the default agent may do: 0-4 or a level name (default: as it is now).
    #[arg(long, value_name = "LEVEL")]
    pub level: Option<SandboxLevel>,
    /// With --yes: also download the speech-recognition model voice needs (whisper, for
    /// stt.language and stt.model_size; `sayri models list` shows sizes), unless one is
    /// installed.
    #[arg(long)]
    pub voice_models: bool,
    /// Download voice models from this copy of the catalog's files (the same file names, e.g.
    /// URL/ggml-base.en.bin) instead of huggingface.co; each is still checked against the
    /// catalog's sha256.
    #[arg(long, value_name = "URL")]
    pub voice_models_mirror: Option<String>,
}

/// The plain-words meaning of each level, shown when choosing one.
pub(crate) fn level_words(level: SandboxLevel) -> &'static str {
    match level {
        SandboxLevel::NoExec => "Talk only: it never runs a command.",
        SandboxLevel::ReadOnly => {
            "Look, but do not touch: commands run read-only, without network, and cannot read your secrets, SSH keys or Sayri's settings."
        }
        SandboxLevel::IsolatedDev => {
            "A private workshop: as 1, plus a folder of its own it may write in; everything else stays read-only."
        }
        SandboxLevel::HostUser => {
            "Act as you: commands run as your user; anything beyond looking asks you first, and sudo is refused."
        }
        SandboxLevel::HostRoot => {
            "Act as administrator: as 3, and a command may ask for root through a password dialog (pkexec), each time."
        }
    }
}

/// Where the chat model comes from.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// An OpenAI-compatible server and the model names it listed.
    Server { url: String, models: Vec<String> },
    /// A local model Sayri serves itself.
    Local { name: String },
}

/// Everything the wizard will write once confirmed.
struct Plan {
    source: Source,
    model: Option<String>,
    api_key: Option<Zeroizing<String>>,
    level: SandboxLevel,
    voice: VoiceStep,
}

/// The voice-model step: what is there, and what will be downloaded.
#[derive(Debug, Clone, PartialEq)]
enum VoiceStep {
    /// This build has no voice: nothing to download.
    NotBuilt,
    /// A whisper model is installed: `name`, the wanted one or the closest to `wanted`.
    Present { name: String, wanted: String },
    /// The wanted model is not in the catalog: it is imported by hand.
    NotInCatalog { wanted: String },
    /// The wanted model can be downloaded; `download` when chosen.
    Offered {
        entry: &'static CatalogEntry,
        download: bool,
    },
}

impl VoiceStep {
    /// What the settings `cfg` want, against the voice model store.
    fn resolve(cfg: &Config) -> VoiceStep {
        if !sayri_daemon::voice::BUILT {
            return VoiceStep::NotBuilt;
        }
        let store = ModelStore::open_default();
        let whisper = sayri_voice::plan::VoicePlan::resolve(cfg, &store).whisper;
        if let Some(name) = whisper.name {
            return VoiceStep::Present {
                name,
                wanted: whisper.wanted,
            };
        }
        match catalog::lookup(ModelKind::Whisper, &whisper.wanted) {
            Some(entry) => VoiceStep::Offered {
                entry,
                download: false,
            },
            None => VoiceStep::NotInCatalog {
                wanted: whisper.wanted,
            },
        }
    }

    /// The line of the summary.
    fn summary(&self) -> String {
        match self {
            VoiceStep::NotBuilt => "none: this sayri was built without voice".into(),
            VoiceStep::Present { name, .. } => format!("whisper {name} is installed"),
            VoiceStep::NotInCatalog { wanted } => {
                format!(
                    "none downloaded (whisper {wanted}: `sayri models import whisper FILE --name {wanted}`)"
                )
            }
            VoiceStep::Offered {
                entry,
                download: true,
            } => format!(
                "download whisper {} ({} MB) after writing the settings",
                entry.name, entry.megabytes
            ),
            VoiceStep::Offered { entry, .. } => format!(
                "not downloaded (later: `sayri models download whisper {}`)",
                entry.name
            ),
        }
    }

    /// Prints what this step is about, before any question.
    fn explain(&self) {
        match self {
            VoiceStep::NotBuilt => println!("{}", sayri_daemon::voice::status::not_built()),
            VoiceStep::Present { name, wanted } => {
                println!(
                    "The speech-recognition model whisper {name} is already installed ({}); nothing to download.",
                    ModelStore::open_default().root().display()
                );
                if name != wanted {
                    println!(
                        "(The settings ask for whisper {wanted}; voice uses {name} until `sayri models download whisper {wanted}` installs it.)"
                    );
                }
            }
            VoiceStep::NotInCatalog { wanted } => println!(
                "The settings ask for whisper {wanted}, which Sayri cannot download: `sayri models import whisper FILE --name {wanted}` installs a copy you have."
            ),
            VoiceStep::Offered { entry, .. } => println!(
                "To talk to Sayri it needs a speech-recognition model: whisper {} ({} MB, {} licence), downloaded from {} and checked against its sha256.",
                entry.name,
                entry.megabytes,
                entry.licence,
                url_host(entry.url)
            ),
        }
    }
}

fn url_host(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| url.to_string())
}

/// Where `entry` is downloaded from: its catalog URL, or the same file name under `mirror`.
fn download_url(entry: &CatalogEntry, mirror: Option<&str>) -> String {
    match mirror {
        None => entry.url.to_string(),
        Some(m) => {
            let file = entry.url.rsplit('/').next().unwrap_or(entry.url);
            format!("{}/{file}", m.trim_end_matches('/'))
        }
    }
}

/// Checks `--voice-models-mirror`: an `http://` or `https://` address.
fn check_mirror(mirror: Option<&str>) -> anyhow::Result<()> {
    if let Some(m) = mirror {
        match url::Url::parse(m) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => bail!(
                "--voice-models-mirror {:?} is not an http:// or https:// address; {NOTHING_WRITTEN}",
                sayri_http::without_credentials(m)
            ),
        }
    }
    Ok(())
}

/// End of input at a question: the wizard stops, having written nothing.
#[derive(Debug, thiserror::Error)]
#[error("setup cancelled (end of input); {NOTHING_WRITTEN}")]
struct Cancelled;

/// Reads answers from stdin and asks on stdout; end of input cancels.
struct Prompter {
    tty: bool,
}

impl Prompter {
    fn cancelled() -> anyhow::Error {
        Cancelled.into()
    }

    /// One answer, trimmed. A line cut off by end of input counts as end of input.
    fn line(&mut self, prompt: &str) -> anyhow::Result<String> {
        print!("{prompt}");
        std::io::stdout().flush()?;
        let mut s = String::new();
        let n = std::io::stdin().lock().read_line(&mut s)?;
        if n == 0 || !s.ends_with('\n') {
            println!();
            return Err(Self::cancelled());
        }
        Ok(s.trim().to_string())
    }

    /// An answer typed without echo (for the API key).
    fn hidden(&mut self, prompt: &str) -> anyhow::Result<Zeroizing<String>> {
        use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let saved = if self.tty {
            tcgetattr(&stdin).ok()
        } else {
            None
        };
        if let Some(t) = &saved {
            let mut quiet = t.clone();
            quiet.local_flags.remove(LocalFlags::ECHO);
            // TCSANOW: answers typed ahead stay in the input queue.
            let _ = tcsetattr(&stdin, SetArg::TCSANOW, &quiet);
        }
        let answer = self.line(prompt);
        if let Some(t) = &saved {
            let _ = tcsetattr(&stdin, SetArg::TCSANOW, t);
            println!();
        }
        answer.map(Zeroizing::new)
    }

    /// A number from `1..=n`, or free text; an empty answer is `default`.
    fn choose(&mut self, prompt: &str, n: usize, default: usize) -> anyhow::Result<Choice> {
        let a = self.line(&format!("{prompt} [{default}]: "))?;
        if a.is_empty() {
            return Ok(Choice::Number(default));
        }
        match a.parse::<usize>() {
            Ok(k) if (1..=n).contains(&k) => Ok(Choice::Number(k)),
            _ => Ok(Choice::Text(a)),
        }
    }
}

enum Choice {
    Number(usize),
    Text(String),
}

/// `http://host:port` → `http://host:port/v1`; `host:port` → `http://host:port/v1`.
pub(crate) fn normalize_url(input: &str) -> String {
    let t = input.trim().trim_end_matches('/');
    let with_scheme = if t.contains("://") {
        t.to_string()
    } else {
        format!("http://{t}")
    };
    match url::Url::parse(&with_scheme) {
        Ok(u) if u.path().is_empty() || u.path() == "/" => {
            format!("{}/v1", with_scheme.trim_end_matches('/'))
        }
        _ => with_scheme,
    }
}

/// Whether `url` names this computer (no key is asked for by default there).
fn is_loopback(url: &str) -> bool {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| h == "localhost" || h == "127.0.0.1" || h == "[::1]" || h == "::1")
}

/// Checks `url` as `provider.base_url` would be checked.
fn check_url(url: &str) -> anyhow::Result<()> {
    Config::spec("provider.base_url")?
        .value_from_json(&Value::String(url.to_string()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    sayri_llm::Endpoint::parse(url).map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
    Ok(())
}

/// The model list of `url`: `Err((message, http status))` when it does not answer.
async fn list_models(
    url: &str,
    key: Option<&str>,
    timeout: Duration,
) -> Result<Vec<String>, (String, Option<u16>)> {
    let mut cfg = sayri_llm::ClientConfig::new(url.to_string());
    cfg.api_key = key.map(str::to_string).filter(|k| !k.is_empty());
    cfg.connect_timeout = timeout;
    cfg.first_byte_timeout = timeout;
    cfg.retries = 0;
    let client = sayri_llm::OpenAiClient::new(cfg).map_err(|e| (e.to_string(), None))?;
    client.list_models().await.map_err(|e| {
        let status = match &e {
            sayri_core::ports::ChatError::Http { status, .. } => Some(*status),
            _ => None,
        };
        (e.to_string(), status)
    })
}

/// Servers answering on this computer: `(label, url, models)`; `current` (the configured
/// server) is tried too.
async fn detect(current: &str) -> Vec<(String, String, Vec<String>)> {
    let mut candidates: Vec<(String, String)> = KNOWN_SERVERS
        .iter()
        .map(|(name, port)| (name.to_string(), format!("http://127.0.0.1:{port}/v1")))
        .collect();
    if !candidates.iter().any(|(_, u)| u == current) {
        candidates.push(("your current server".into(), current.to_string()));
    }
    let probes = candidates
        .iter()
        .map(|(_, u)| list_models(u, None, PROBE_TIMEOUT));
    let answers = futures::future::join_all(probes).await;
    candidates
        .into_iter()
        .zip(answers)
        .filter_map(|((label, url), r)| r.ok().map(|m| (label, url, m)))
        .collect()
}

/// Runs `sayri setup`; returns the exit code.
pub(crate) async fn run(paths: &Paths, args: SetupArgs) -> anyhow::Result<i32> {
    let (cfg, _) = sayri_daemon::config_file::load(&paths.config_file())?;
    let agents = FileAgents::new(paths.agents_dir());
    let current_level = agents
        .load(&cfg.agent.default_agent)
        .ok()
        .flatten()
        .map(|p| p.sandbox.level)
        .unwrap_or(SandboxLevel::HostUser);
    let tty = std::io::stdin().is_terminal();
    check_mirror(args.voice_models_mirror.as_deref())?;
    let plan = if args.yes {
        plan_from_flags(paths, &cfg, &args, current_level).await?
    } else if !tty {
        bail!(
            "stdin is not a terminal, so there is no one to answer; pass the answers as flags with --yes (e.g. `sayri setup --yes --endpoint http://127.0.0.1:11434/v1 --model NAME`)"
        );
    } else {
        let mut p = Prompter { tty };
        // Ending the input or declining the summary is a choice, not an error (exit 0).
        match ask(paths, &cfg, &args, current_level, &mut p).await {
            Ok(Some(plan)) => plan,
            Ok(None) => {
                println!("not saved; {NOTHING_WRITTEN}");
                return Ok(0);
            }
            Err(e) if e.is::<Cancelled>() => {
                println!("{e}");
                return Ok(0);
            }
            Err(e) => return Err(e),
        }
    };
    apply(paths, &cfg, &plan).await?;
    println!("Sayri is set up. Try: sayri ask \"What can you do?\"");
    if let VoiceStep::Offered {
        entry,
        download: true,
    } = &plan.voice
    {
        let url = download_url(entry, args.voice_models_mirror.as_deref());
        println!(
            "Downloading whisper {} ({} MB) from {}…",
            entry.name,
            entry.megabytes,
            sayri_http::without_credentials(&url)
        );
        let store = ModelStore::open_default();
        if let Err(e) = crate::cli::voice_models::download_verified(
            &store,
            ModelKind::Whisper,
            entry.name,
            &url,
            entry.sha256,
            "sayri setup",
        )
        .await
        {
            eprintln!(
                "sayri: the settings are saved, but the voice model was not installed: {e:#}\nTry again later with `sayri models download whisper {}`.",
                entry.name
            );
            return Ok(1);
        }
    }
    let store = ModelStore::open_default();
    let voice = sayri_voice::plan::VoicePlan::resolve(&cfg, &store);
    if cfg.stt.mode != "disabled" && !(sayri_daemon::voice::BUILT && voice.stt_ready()) {
        println!(
            "Voice is not ready yet: `sayri voice status` says what to install (e.g. `sayri models download whisper base.en`)."
        );
    }
    println!("`sayri doctor` checks everything else (sandbox, voice, desktop).");
    Ok(0)
}

/// The plan from the flags alone (`--yes`).
async fn plan_from_flags(
    paths: &Paths,
    cfg: &Config,
    args: &SetupArgs,
    current_level: SandboxLevel,
) -> anyhow::Result<Plan> {
    let api_key = if args.api_key_stdin {
        let mut s = Zeroizing::new(String::new());
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the API key from stdin")?;
        let k = Zeroizing::new(s.trim().to_string());
        if k.is_empty() {
            bail!("--api-key-stdin was given but stdin was empty; {NOTHING_WRITTEN}");
        }
        Some(k)
    } else {
        None
    };
    let source = if let Some(name) = &args.local_model {
        sayri_daemon::local_model::check_setting(paths, name)
            .map_err(|e| anyhow::anyhow!("local model {name}: {e}; {NOTHING_WRITTEN}"))?;
        Source::Local { name: name.clone() }
    } else {
        let url = match &args.endpoint {
            Some(u) => normalize_url(u),
            None => match detect(&cfg.provider.base_url).await.into_iter().next() {
                Some((_, url, _)) => url,
                None => match sayri_daemon::local_model::installed(paths).first() {
                    Some(m) => {
                        let name = m.name.clone();
                        return finish_flags_plan(
                            Source::Local { name },
                            cfg,
                            args,
                            api_key,
                            current_level,
                        );
                    }
                    None => bail!(
                        "no model server answers on this computer (looked for {}) and no local model is installed; start a server, or pass --endpoint URL, or {}; {NOTHING_WRITTEN}",
                        known_list(),
                        LOCAL_MODEL_HINT
                    ),
                },
            },
        };
        check_url(&url)?;
        let models = list_models(
            &url,
            api_key.as_deref().map(|k| k.as_str()),
            CONNECT_TIMEOUT,
        )
        .await
        .map_err(|(e, status)| {
            let hint = if matches!(status, Some(401 | 403)) {
                " (it wants an API key: add --api-key-stdin)"
            } else {
                ""
            };
            anyhow::anyhow!("{url} does not answer: {e}{hint}; {NOTHING_WRITTEN}")
        })?;
        Source::Server { url, models }
    };
    finish_flags_plan(source, cfg, args, api_key, current_level)
}

fn finish_flags_plan(
    source: Source,
    cfg: &Config,
    args: &SetupArgs,
    api_key: Option<Zeroizing<String>>,
    current_level: SandboxLevel,
) -> anyhow::Result<Plan> {
    let model = match (&source, &args.model) {
        (Source::Local { .. }, _) => None,
        (Source::Server { url, models }, Some(m)) => {
            if !models.is_empty() && !models.contains(m) {
                bail!(
                    "{url} does not serve {m} (it serves: {}); {NOTHING_WRITTEN}",
                    models.join(", ")
                );
            }
            Some(m.clone())
        }
        (Source::Server { url, models }, None) => match models.first() {
            Some(m) => Some(m.clone()),
            None => bail!("{url} lists no models; pass --model NAME; {NOTHING_WRITTEN}"),
        },
    };
    let voice = match VoiceStep::resolve(cfg) {
        VoiceStep::NotBuilt if args.voice_models => bail!(
            "--voice-models: {}; {NOTHING_WRITTEN}",
            sayri_daemon::voice::status::not_built()
        ),
        VoiceStep::NotInCatalog { wanted } if args.voice_models => bail!(
            "--voice-models: the settings ask for whisper {wanted}, which is not in Sayri's catalog (`sayri models list` shows what is); install it with `sayri models import whisper FILE --name {wanted}`; {NOTHING_WRITTEN}"
        ),
        VoiceStep::Offered { entry, .. } => VoiceStep::Offered {
            entry,
            download: args.voice_models,
        },
        other => other,
    };
    let plan = Plan {
        source,
        model,
        api_key,
        level: args.level.unwrap_or(current_level),
        voice,
    };
    if let VoiceStep::Present { .. } = &plan.voice
        && args.voice_models
    {
        plan.voice.explain();
    }
    print_summary(&plan);
    Ok(plan)
}

/// How to get a local model when there is neither a server nor one installed.
const LOCAL_MODEL_HINT: &str = "install Sayri's own small local model with `./scripts/setup --model` (from the source tree) or add a GGUF file with `sayri models install FILE.gguf`";

fn known_list() -> String {
    KNOWN_SERVERS
        .iter()
        .map(|(n, p)| format!("{n} on port {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sandbox levels this machine cannot give, each with what is missing (from the same probe
/// as `sayri sandbox check`); empty when the probe fails or takes over 10 s.
async fn unavailable_levels(paths: &Paths, cfg: &Config) -> Vec<(SandboxLevel, String)> {
    let settings = sayri_daemon::brain::settings::sandbox_settings(paths, cfg);
    let sb = sayri_sandbox::launcher::LinuxSandbox::new(settings);
    match tokio::time::timeout(std::time::Duration::from_secs(10), sb.capabilities()).await {
        Ok(Ok(report)) => report
            .levels
            .iter()
            .filter(|l| !l.guaranteed)
            .map(|l| (l.level, l.missing.join("; ")))
            .collect(),
        _ => Vec::new(),
    }
}

/// The interactive questions. `Ok(None)` when the summary was declined.
async fn ask(
    paths: &Paths,
    cfg: &Config,
    args: &SetupArgs,
    current_level: SandboxLevel,
    p: &mut Prompter,
) -> anyhow::Result<Option<Plan>> {
    println!("Sayri setup. Nothing is written until you confirm the summary at the end;");
    println!("Ctrl-D cancels at any question.\n");
    let (source, api_key) = ask_source(paths, cfg, p).await?;
    let model = ask_model(&source, cfg, args, p)?;
    let level = ask_level(paths, cfg, current_level, p).await?;
    let voice = ask_voice(cfg, p)?;
    let plan = Plan {
        source,
        model,
        api_key,
        level,
        voice,
    };
    println!();
    print_summary(&plan);
    println!("  settings file:  {}", paths.config_file().display());
    loop {
        let a = p.line("Write these settings? [Y/n]: ")?;
        match a.to_ascii_lowercase().as_str() {
            "" | "y" | "yes" => return Ok(Some(plan)),
            "n" | "no" => return Ok(None),
            _ => println!("answer y or n"),
        }
    }
}

/// Question 1: where the answers come from — a detected server, an installed local model or a
/// typed address (checked by listing its models, with an API key asked for when the server wants
/// one or is not on this computer). Asks again until a source answers.
async fn ask_source(
    paths: &Paths,
    cfg: &Config,
    p: &mut Prompter,
) -> anyhow::Result<(Source, Option<Zeroizing<String>>)> {
    println!("1. Where the answers come from");
    println!("Looking for model servers on this computer…");
    let found = detect(&cfg.provider.base_url).await;
    let locals = sayri_daemon::local_model::installed(paths);
    let mut options: Vec<(String, Source)> = Vec::new();
    for (label, url, models) in found {
        options.push((
            format!("{label} at {url} ({} model(s))", models.len()),
            Source::Server { url, models },
        ));
    }
    for m in &locals {
        options.push((
            format!("Sayri's own local model {} (Sayri runs it for you)", m.name),
            Source::Local {
                name: m.name.clone(),
            },
        ));
    }
    let mut api_key: Option<Zeroizing<String>> = None;
    let source = loop {
        let typed = if options.is_empty() {
            println!(
                "No model server answers on this computer (looked for {}), and no local model is installed.",
                known_list()
            );
            println!(
                "To get one, press Ctrl-D and {LOCAL_MODEL_HINT}, then run `sayri setup` again."
            );
            p.line("Address of an OpenAI-compatible server (e.g. http://127.0.0.1:11434/v1): ")?
        } else {
            for (i, (label, _)) in options.iter().enumerate() {
                println!("  {}) {label}", i + 1);
            }
            println!("  or type the address of another server (e.g. https://api.example.com/v1)");
            match p.choose("Choose a number or type an address", options.len(), 1)? {
                Choice::Number(k) => break options[k - 1].1.clone(),
                Choice::Text(t) => t,
            }
        };
        if typed.is_empty() {
            continue;
        }
        let url = normalize_url(&typed);
        if let Err(e) = check_url(&url) {
            println!("{e}");
            continue;
        }
        let mut listed = list_models(&url, None, CONNECT_TIMEOUT).await;
        let wants_key = matches!(&listed, Err((_, Some(401 | 403))));
        if wants_key || !is_loopback(&url) {
            let prompt = if wants_key {
                format!("{url} asks for an API key. API key (input hidden): ")
            } else {
                format!("API key for {url} (input hidden; leave empty if it needs none): ")
            };
            let k = p.hidden(&prompt)?;
            if !k.is_empty() {
                listed = list_models(&url, Some(k.as_str()), CONNECT_TIMEOUT).await;
                api_key = Some(k);
            }
        }
        match listed {
            Ok(models) => break Source::Server { url, models },
            Err((e, _)) => {
                println!("{url} does not answer: {e}");
                println!("Start the server and try again, or type another address.");
                api_key = None;
            }
        }
    };
    Ok((source, api_key))
}

/// Question 2: the model of a server source (`None` for Sayri's own local model, which names
/// its model already). The default is `--model`, else the configured model, when the server lists it.
fn ask_model(
    source: &Source,
    cfg: &Config,
    args: &SetupArgs,
    p: &mut Prompter,
) -> anyhow::Result<Option<String>> {
    let model = match source {
        Source::Local { name } => {
            println!("\n2. Model\n{name}, which Sayri runs for you.");
            None
        }
        Source::Server { models, .. } if models.is_empty() => {
            println!("\n2. Model\nThe server lists no models.");
            loop {
                let m = p.line("Model name: ")?;
                if !m.is_empty() {
                    break Some(m);
                }
            }
        }
        Source::Server { models, .. } => {
            println!("\n2. Model");
            let shown = models.len().min(30);
            for (i, m) in models.iter().take(shown).enumerate() {
                println!(
                    "  {}) {}",
                    i + 1,
                    sayri_client::terminal_text::terminal_safe(m)
                );
            }
            if models.len() > shown {
                println!("  … and {} more (type a name)", models.len() - shown);
            }
            let default = args
                .model
                .as_ref()
                .or(Some(&cfg.provider.model))
                .and_then(|m| models.iter().take(shown).position(|x| x == m))
                .map_or(1, |i| i + 1);
            Some(
                match p.choose("Choose a number or type a model name", shown, default)? {
                    Choice::Number(k) => models[k - 1].clone(),
                    Choice::Text(t) => t,
                },
            )
        }
    };
    Ok(model)
}

/// Question 3: the sandbox level, each marked with what this machine lacks for it; an empty
/// answer keeps `current_level`.
async fn ask_level(
    paths: &Paths,
    cfg: &Config,
    current_level: SandboxLevel,
    p: &mut Prompter,
) -> anyhow::Result<SandboxLevel> {
    println!("\n3. What may the assistant do on this computer?");
    let missing = unavailable_levels(paths, cfg).await;
    for l in SandboxLevel::ALL {
        let rec = if let Some(why) = missing.iter().find(|(m, _)| *m == l).map(|(_, w)| w) {
            format!(" (not available here: {why})")
        } else if l == SandboxLevel::HostUser {
            " (recommended)".to_string()
        } else {
            String::new()
        };
        println!("  {}) {}{rec}", l.number(), level_words(l));
    }
    let level = loop {
        let a = p.line(&format!("Choose 0-4 [{}]: ", current_level.number()))?;
        if a.is_empty() {
            break current_level;
        }
        match a.parse::<SandboxLevel>() {
            Ok(l) => break l,
            Err(e) => println!("{e}"),
        }
    };
    Ok(level)
}

/// Question 4 (optional): whether to download the offered speech-to-text model now.
fn ask_voice(cfg: &Config, p: &mut Prompter) -> anyhow::Result<VoiceStep> {
    println!("\n4. Voice (optional)");
    let mut voice = VoiceStep::resolve(cfg);
    voice.explain();
    if let VoiceStep::Offered { entry, download } = &mut voice {
        *download = loop {
            let a = p.line(&format!(
                "Download whisper {} ({} MB) now? [y/N]: ",
                entry.name, entry.megabytes
            ))?;
            match a.to_ascii_lowercase().as_str() {
                "" | "n" | "no" => break false,
                "y" | "yes" => break true,
                _ => println!("answer y or n"),
            }
        };
    }
    Ok(voice)
}

fn print_summary(plan: &Plan) {
    println!("Summary:");
    match &plan.source {
        Source::Server { url, .. } => println!("  model server:   {url}"),
        Source::Local { name } => println!("  local model:    {name} (served by Sayri)"),
    }
    if let Some(m) = &plan.model {
        println!(
            "  model:          {}",
            sayri_client::terminal_text::terminal_safe(m)
        );
    }
    println!(
        "  API key:        {}",
        if plan.api_key.is_some() {
            "stored in the vault (PROVIDER_API_KEY), never in sayri.toml"
        } else {
            "none"
        }
    );
    println!(
        "  assistant:      level {} — {}",
        plan.level.number(),
        level_words(plan.level)
    );
    println!("  voice models:   {}", plan.voice.summary());
}

/// The settings a plan changes, as `(key, value)`; `agent_id` is the default agent afterwards.
fn settings_of(plan: &Plan, agent_id: &str) -> Vec<(&'static str, Value)> {
    let mut v = Vec::new();
    match &plan.source {
        Source::Server { url, .. } => {
            v.push(("provider.base_url", json!(url)));
            v.push(("provider.local_model", json!("")));
        }
        Source::Local { name } => v.push(("provider.local_model", json!(name))),
    }
    if let Some(m) = &plan.model {
        v.push(("provider.model", json!(m)));
    }
    v.push(("agent.default_agent", json!(agent_id)));
    v.push(("ui.setup_complete", json!(true)));
    v
}

/// The agent that will be the default at `plan.level`, and the profile to write for it (if any).
fn agent_change(
    agents: &FileAgents,
    cfg: &Config,
    level: SandboxLevel,
) -> anyhow::Result<(String, Option<AgentProfile>)> {
    let id = cfg.agent.default_agent.clone();
    // `default` is the built-in agent (never written to a file).
    let current = if id == "default" {
        None
    } else {
        agents
            .stored(&id)
            .map_err(|e| anyhow::anyhow!("the default agent {id} cannot be read: {e}"))?
    };
    match current {
        Some(mut p) => {
            if p.sandbox.level == level {
                return Ok((id, None));
            }
            p.sandbox.level = level;
            Ok((id, Some(p)))
        }
        // The built-in `default`: kept when its level is wanted, else an `assistant` agent.
        None if level == AgentProfile::builtin_default().sandbox.level => {
            Ok(("default".into(), None))
        }
        None => {
            // An `assistant` left by an earlier setup is reused (its other fields kept).
            let mut p = match agents.stored(ASSISTANT_AGENT) {
                Ok(Some(p)) => p,
                _ => {
                    let mut p = AgentProfile::builtin_default();
                    p.id = ASSISTANT_AGENT.into();
                    p.name = "Assistant".into();
                    p
                }
            };
            p.sandbox.level = level;
            Ok((ASSISTANT_AGENT.into(), Some(p)))
        }
    }
}

/// Writes the plan: the agent profile, the key, then the settings.
async fn apply(paths: &Paths, cfg: &Config, plan: &Plan) -> anyhow::Result<()> {
    let agents = FileAgents::new(paths.agents_dir());
    let (agent_id, profile) = agent_change(&agents, cfg, plan.level)?;
    let settings = settings_of(plan, &agent_id);
    // Every value is checked before anything is written.
    let mut trial = cfg.clone();
    for (k, v) in &settings {
        if *k == "agent.default_agent" && profile.is_some() {
            continue;
        }
        trial
            .set_json(k, v)
            .map_err(|e| anyhow::anyhow!("{e}; {NOTHING_WRITTEN}"))?;
        if *k != "agent.default_agent" {
            sayri_daemon::settings_check::check_change(paths, &trial, k)
                .map_err(|e| anyhow::anyhow!("{e}; {NOTHING_WRITTEN}"))?;
        }
    }
    paths.ensure_dirs()?;
    if let Some(p) = &profile {
        agents
            .save(p)
            .map_err(|e| anyhow::anyhow!("cannot write the agent {}: {e}", p.id))?;
        println!(
            "wrote {} (level {})",
            agents.path(&p.id).display(),
            p.sandbox.level.number()
        );
    }
    match Client::connect(&paths.socket(), CONNECT_TIMEOUT).await {
        Ok(mut client) => {
            if let Some(k) = &plan.api_key {
                client
                    .request_with(&ConfigSetParams {
                        key: "provider.api_key".into(),
                        group: None,
                        value: json!(k.as_str()),
                    })
                    .await?;
                println!("stored the API key in the vault");
            }
            for (k, v) in settings {
                client
                    .request_with(&ConfigSetParams {
                        key: k.into(),
                        group: None,
                        value: v,
                    })
                    .await?;
            }
            println!("the running daemon applied the settings");
        }
        Err(ClientError::NotRunning { .. }) => {
            if let Some(k) = &plan.api_key {
                let mut vault = sayri_vault::Vault::open(
                    sayri_vault::VaultPaths::new(&paths.config_dir, &paths.state_dir),
                    sayri_vault::KeySource::Auto,
                )?;
                vault.set(PROVIDER_KEY, k, "LLM provider API key")?;
                println!("stored the API key in the vault");
                crate::cli::vault::after_change(paths, &vault);
            }
            sayri_daemon::config_file::update(&paths.config_file(), |c| {
                for (k, v) in &settings {
                    c.set_json(k, v)?;
                }
                for (k, _) in &settings {
                    sayri_daemon::settings_check::check_change(paths, c, k)?;
                }
                Ok(())
            })?;
            println!("wrote {}", paths.config_file().display());
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_without_a_path_gets_the_openai_prefix() {
        assert_eq!(normalize_url("127.0.0.1:8080"), "http://127.0.0.1:8080/v1");
        assert_eq!(
            normalize_url("http://localhost:11434/"),
            "http://localhost:11434/v1"
        );
        assert_eq!(
            normalize_url("https://api.example.com/v1"),
            "https://api.example.com/v1"
        );
        assert_eq!(
            normalize_url("http://h:1/openai/v1/"),
            "http://h:1/openai/v1"
        );
    }

    #[test]
    fn only_this_computer_counts_as_loopback() {
        assert!(is_loopback("http://127.0.0.1:1/v1"));
        assert!(is_loopback("http://localhost:1/v1"));
        assert!(!is_loopback("https://api.example.com/v1"));
    }
}
