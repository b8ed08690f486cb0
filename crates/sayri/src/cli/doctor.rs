//! `sayri doctor [--json]`: checks everything Sayri needs on this machine and, for each problem,
//! prints the exact command or step that fixes it.
//!
//! Every check ends in one of four states:
//! * `ok`: works.
//! * `fail`: Sayri cannot work as configured (the settings are invalid, the model endpoint does
//!   not answer or lacks the model, the vault cannot be opened, the default agent's sandbox level
//!   cannot keep its promise, the disk is almost full). `sayri doctor` then exits 1.
//! * `off`: an optional part that is not available here — not set up yet (voice models, the
//!   systemd unit), or something this machine does not have (no audio device, no D-Bus session
//!   bus, no notification service, no systemd user manager). Said as such, with what enables it;
//!   it does not change the exit status.
//! * `warn`: works, but something else can reach what it should not (the model server listens
//!   on every address, prompts travel unencrypted, the daemon's socket was passed connectable by
//!   others); the fix says how to close it. It does not change the exit status either.
//!
//! The doctor starts nothing and creates nothing: a daemon that is not running is reported as
//! such (client commands start it on demand), a vault that does not exist yet is not created.

use sayri_client::client::{Client, ClientError};
use sayri_client::paths::Paths;
use sayri_core::domain::config::Config;
use sayri_daemon::agents::FileAgents;
use sayri_daemon::brain::PROVIDER_KEY;
use sayri_protocol::SandboxLevel;
use sayri_protocol::params::StatusParams;
use sayri_protocol::reply::runtime::StatusReply;
use sayri_vault::{KeySource, Vault, VaultError, VaultPaths};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// How long the doctor waits for the daemon, the model endpoint and D-Bus, each.
pub(crate) const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Free space below which the disk check fails, bytes (a small chat model is ~100 MB, a useful
/// one several GB; SQLite needs room to write).
pub(crate) const MIN_FREE_BYTES: u64 = 1 << 30;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    /// Works.
    Ok,
    /// Sayri cannot work as configured; `fix` says what to do.
    Fail,
    /// An optional part is not available here (not set up, or this machine cannot have it).
    Off,
    /// Works, but is exposed to what should not reach it; `fix` says how to close it.
    Warn,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    /// Stable identifier, e.g. `model_endpoint`, `sandbox.level_2`.
    pub id: String,
    /// What was checked, in words.
    pub title: String,
    /// The outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// The exact fix (a command or a step); `None` when there is nothing to do.
    pub fix: Option<String>,
}

/// A finding.
pub fn finding(
    id: &str,
    title: &str,
    status: Status,
    detail: String,
    fix: Option<String>,
) -> Finding {
    Finding {
        id: id.into(),
        title: title.into(),
        status,
        detail,
        fix,
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    /// True when no check failed.
    pub ok: bool,
    /// Every check, in the order they ran.
    pub checks: Vec<Finding>,
}

/// Runs `sayri doctor`; returns the exit code (0 when no check failed, else 1).
pub(crate) async fn run(paths: &Paths, json: bool) -> anyhow::Result<i32> {
    let report = diagnose(paths).await;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(if report.ok { 0 } else { 1 })
}

fn print_report(report: &Report) {
    use sayri_client::terminal_text::terminal_safe;
    for f in &report.checks {
        let mark = match f.status {
            Status::Ok => "ok  ",
            Status::Fail => "FAIL",
            Status::Off => "off ",
            Status::Warn => "warn",
        };
        println!(
            "[{mark}] {}: {}",
            terminal_safe(&f.title),
            terminal_safe(&f.detail)
        );
        if let Some(fix) = &f.fix {
            println!("       fix: {}", terminal_safe(fix));
        }
    }
    let failed = report
        .checks
        .iter()
        .filter(|f| f.status == Status::Fail)
        .count();
    if failed == 0 {
        println!("\nall checks passed (\"off\" lines are optional parts not available here)");
    } else {
        println!("\n{failed} check(s) failed; apply the fixes above and run `sayri doctor` again");
    }
}

/// Runs every check.
pub(crate) async fn diagnose(paths: &Paths) -> Report {
    let mut checks = Vec::new();
    let cfg = settings(paths, &mut checks);
    let cfg_ok = cfg.is_some();
    let cfg = cfg.unwrap_or_else(sayri_daemon::config_file::user_defaults);
    let default_level = agents(paths, &cfg, &mut checks);
    let daemon_status = daemon(paths, &mut checks).await;
    super::doctor_security::passed_sockets(daemon_status.as_ref(), &mut checks);
    let key = vault(paths, &cfg, &mut checks);
    model(paths, &cfg, key, daemon_status.as_ref(), &mut checks).await;
    super::doctor_security::endpoint_exposure(&cfg, &mut checks);
    super::doctor_security::yama(&mut checks);
    sandbox(paths, &cfg, default_level, &mut checks).await;
    voice(&cfg, &mut checks);
    desktop_bus(&mut checks).await;
    checks.push(super::doctor_database::check(paths, daemon_status.as_ref()));
    super::doctor_mcp::check(paths, &mut checks);
    disk(paths, &mut checks);
    systemd_unit(&mut checks);
    let ok = cfg_ok && checks.iter().all(|c| c.status != Status::Fail);
    Report { ok, checks }
}

fn settings(paths: &Paths, out: &mut Vec<Finding>) -> Option<Config> {
    let file = paths.config_file();
    match sayri_daemon::config_file::load(&file) {
        Ok((cfg, existed)) => {
            let problems = cfg.problems();
            if let Some(p) = problems.first() {
                out.push(finding(
                    "settings",
                    "settings",
                    Status::Fail,
                    format!("{}: {p}", file.display()),
                    Some(format!(
                        "set a valid value with `sayri config set KEY VALUE`, or edit {}",
                        file.display()
                    )),
                ));
                return None;
            }
            let wizard = || "run `sayri setup` to choose your model server and model".to_string();
            if !existed {
                // Nothing is wrong yet, but nothing is set up either: said as missing.
                let detail = format!(
                    "missing: no settings file yet ({}); Sayri runs on its defaults until you choose a model",
                    file.display()
                );
                out.push(finding(
                    "settings",
                    "settings",
                    Status::Off,
                    detail,
                    Some(wizard()),
                ));
                return Some(cfg);
            }
            let detail = format!("{} is valid", file.display());
            let fix = (!cfg.ui.setup_complete).then(wizard);
            out.push(finding("settings", "settings", Status::Ok, detail, fix));
            Some(cfg)
        }
        Err(e) => {
            out.push(finding(
                "settings",
                "settings",
                Status::Fail,
                e.to_string(),
                Some(format!(
                    "fix the line named above in {} (or move the file away to start from the defaults)",
                    file.display()
                )),
            ));
            None
        }
    }
}

/// Checks every agent profile; returns the default agent's level when it loads.
fn agents(paths: &Paths, cfg: &Config, out: &mut Vec<Finding>) -> Option<SandboxLevel> {
    let agents = FileAgents::new(paths.agents_dir());
    let broken: Vec<String> = agents
        .list()
        .into_iter()
        .filter_map(|l| l.effective.err().map(|e| format!("{}: {e}", l.id)))
        .collect();
    let id = &cfg.agent.default_agent;
    let default = agents.load(id);
    match (&default, broken.is_empty()) {
        (Ok(Some(p)), true) => out.push(finding(
            "agents",
            "agent profiles",
            Status::Ok,
            format!(
                "every profile is valid; the default agent {id} runs commands at {}",
                p.sandbox.level
            ),
            None,
        )),
        (Ok(Some(_)), false) => out.push(finding(
            "agents",
            "agent profiles",
            Status::Fail,
            broken.join("; "),
            Some(format!(
                "fix or delete the files named above in {} (`sayri agents list` shows each problem)",
                agents.dir().display()
            )),
        )),
        (Ok(None), _) => out.push(finding(
            "agents",
            "agent profiles",
            Status::Fail,
            format!("the default agent {id} does not exist"),
            Some("sayri config set agent.default_agent default".into()),
        )),
        (Err(e), _) => out.push(finding(
            "agents",
            "agent profiles",
            Status::Fail,
            format!("the default agent {id} cannot be used: {e}"),
            Some(format!(
                "fix {}/{id}.json, or `sayri config set agent.default_agent default`",
                agents.dir().display()
            )),
        )),
    }
    default.ok().flatten().map(|p| p.sandbox.level)
}

/// Whether the daemon answers; its status object when it does.
async fn daemon(paths: &Paths, out: &mut Vec<Finding>) -> Option<StatusReply> {
    let socket = paths.socket();
    match Client::connect(&socket, CHECK_TIMEOUT).await {
        Ok(mut c) => match c.request_with(&StatusParams {}).await {
            Ok(status) => {
                let version = status.version.as_str();
                let pid = status.pid;
                let mine = env!("CARGO_PKG_VERSION");
                let (st, fix) = if version == mine {
                    (Status::Ok, None)
                } else {
                    (
                        Status::Fail,
                        Some(format!(
                            "restart it so it runs this version ({mine}): `sayri quit`, then any `sayri` command"
                        )),
                    )
                };
                out.push(finding(
                    "daemon",
                    "daemon",
                    st,
                    format!(
                        "running (pid {pid}, version {version}) on {}",
                        socket.display()
                    ),
                    fix,
                ));
                Some(status)
            }
            Err(ClientError::Reply(e)) => {
                out.push(finding(
                    "daemon",
                    "daemon",
                    Status::Fail,
                    format!("running, but {e}"),
                    Some(format!(
                        "restart it so it runs this version ({}): `sayri quit`, then any `sayri` command",
                        env!("CARGO_PKG_VERSION")
                    )),
                ));
                None
            }
            Err(e) => {
                out.push(finding(
                    "daemon",
                    "daemon",
                    Status::Fail,
                    format!("connected but it did not answer `status`: {e}"),
                    Some(format!(
                        "look at {}; restart it with `sayri quit` and any `sayri` command",
                        paths.log_file().display()
                    )),
                ));
                None
            }
        },
        Err(ClientError::NotRunning { .. }) => {
            out.push(finding(
                "daemon",
                "daemon",
                Status::Off,
                format!("not running (no listener on {})", socket.display()),
                Some(
                    "nothing to do: any `sayri` command starts it (or `systemctl --user start sayri` once installed with `sayri install --user`)"
                        .into(),
                ),
            ));
            None
        }
        Err(e) => {
            out.push(finding(
                "daemon",
                "daemon",
                Status::Fail,
                e.to_string(),
                Some(format!(
                    "see {}; remove a stale socket only if no sayri daemon runs",
                    paths.log_file().display()
                )),
            ));
            None
        }
    }
}

/// The vault: opens it when it exists (never creates one); returns the provider key it holds.
fn vault(paths: &Paths, cfg: &Config, out: &mut Vec<Finding>) -> Option<String> {
    let vp = VaultPaths::new(&paths.config_dir, &paths.state_dir);
    if std::fs::symlink_metadata(&vp.vault_file).is_err() {
        out.push(finding(
            "vault",
            "secrets vault",
            Status::Ok,
            format!(
                "no vault yet ({}); it is created with the first secret",
                vp.vault_file.display()
            ),
            None,
        ));
        return Some(cfg.provider.api_key.clone()).filter(|k| !k.is_empty());
    }
    match Vault::open(vp.clone(), KeySource::Auto) {
        Ok(v) => {
            let s = v.status();
            out.push(finding(
                "vault",
                "secrets vault",
                Status::Ok,
                format!(
                    "{} secret(s), sealed by the {} ({})",
                    s.secrets,
                    s.key_source.describe(),
                    s.reason
                ),
                None,
            ));
            v.get(PROVIDER_KEY)
                .map(|k| k.to_string())
                .or_else(|| Some(cfg.provider.api_key.clone()).filter(|k| !k.is_empty()))
        }
        Err(VaultError::PassphraseRequired { .. }) => {
            out.push(finding(
                "vault",
                "secrets vault",
                Status::Ok,
                format!(
                    "{} is sealed with a passphrase (not checked here)",
                    vp.vault_file.display()
                ),
                Some(format!(
                    "set {} for the daemon, or check it with `sayri vault status`",
                    sayri_vault::cli::PASSPHRASE_ENV
                )),
            ));
            None
        }
        Err(e) => {
            out.push(finding(
                "vault",
                "secrets vault",
                Status::Fail,
                e.to_string(),
                Some(
                    "run `sayri vault status` for details; restore the key source named above"
                        .into(),
                ),
            ));
            None
        }
    }
}

/// The model endpoint answers `GET /models` and serves `provider.model`; or the local model
/// Sayri serves itself is installed.
async fn model(
    paths: &Paths,
    cfg: &Config,
    key: Option<String>,
    daemon: Option<&StatusReply>,
    out: &mut Vec<Finding>,
) {
    if !cfg.provider.local_model.is_empty() {
        local_model(paths, &cfg.provider.local_model, daemon, out);
        return;
    }
    let url = cfg.provider.base_url.clone();
    let client_cfg = match sayri_daemon::brain::settings::client_config(cfg, key) {
        Ok(mut c) => {
            c.retries = 0;
            c.connect_timeout = c.connect_timeout.min(CHECK_TIMEOUT);
            c.first_byte_timeout = c.first_byte_timeout.min(CHECK_TIMEOUT);
            c
        }
        Err(e) => {
            out.push(finding(
                "model_endpoint",
                "model endpoint",
                Status::Fail,
                e,
                Some("sayri config set provider.extra_headers '[]'".into()),
            ));
            return;
        }
    };
    let listed = match sayri_llm::OpenAiClient::new(client_cfg) {
        Ok(c) => c
            .list_models()
            .await
            .map_err(|e| (e.to_string(), status_of(&e))),
        Err(e) => Err((e.to_string(), None)),
    };
    let models = match listed {
        Ok(m) => m,
        Err((e, status)) => {
            let fix = match status {
                Some(401 | 403) => "store the server's API key: `sayri config set provider.api_key` (it asks for the key; kept in the vault), or run `sayri setup`".to_string(),
                _ => format!(
                    "start your model server (Ollama: `ollama serve`; llama.cpp: `llama-server --port 8080`), or point Sayri at one with `sayri setup` or `sayri config set provider.base_url URL` (now {url})"
                ),
            };
            out.push(finding(
                "model_endpoint",
                "model endpoint",
                Status::Fail,
                format!("{url} does not answer: {e}"),
                Some(fix),
            ));
            return;
        }
    };
    out.push(finding(
        "model_endpoint",
        "model endpoint",
        Status::Ok,
        format!("{url} answers ({} model(s))", models.len()),
        None,
    ));
    served_model(&url, &cfg.provider.model, &models, out);
}

/// The local model Sayri serves itself (`provider.local_model` = `name`): installed, and how the
/// daemon's supervisor reports it.
fn local_model(paths: &Paths, name: &str, daemon: Option<&StatusReply>, out: &mut Vec<Finding>) {
    match sayri_daemon::local_model::check_setting(paths, name) {
            Err(e) => out.push(finding(
                "model_endpoint",
                "model",
                Status::Fail,
                format!("provider.local_model is {name}: {e}"),
                Some(
                    "install it (`sayri models install FILE.gguf`, or `./scripts/setup --model`), or `sayri setup` to use a model server instead"
                        .into(),
                ),
            )),
            Ok(()) => {
                let served = daemon
                    .and_then(|s| s.local_model.as_ref())
                    .map_or("not started (the daemon is not running)", |l| {
                        l.state.as_str()
                    });
                let failed = served == "failed";
                out.push(finding(
                    "model_endpoint",
                    "model",
                    if failed { Status::Fail } else { Status::Ok },
                    format!("local model {name}, served by Sayri: {served}"),
                    failed.then(|| {
                        format!(
                            "see {}/local-model.log; `sayri status` shows the error",
                            paths.logs_dir().display()
                        )
                    }),
                ));
            }
        }
}

/// Whether the endpoint at `url` serves `wanted` (`provider.model`) among the `models` it lists;
/// a server that lists none is not checked.
fn served_model(url: &str, wanted: &str, models: &[String], out: &mut Vec<Finding>) {
    if models.is_empty() || models.iter().any(|m| m == wanted) {
        out.push(finding(
            "model",
            "model",
            Status::Ok,
            if models.is_empty() {
                format!("{wanted} (the server lists no models, so it was not checked)")
            } else {
                format!("{wanted} is served")
            },
            None,
        ));
    } else {
        let shown: Vec<&str> = models.iter().take(8).map(String::as_str).collect();
        out.push(finding(
            "model",
            "model",
            Status::Fail,
            format!(
                "provider.model is {wanted}, which {url} does not serve (it serves: {})",
                shown.join(", ")
            ),
            Some(format!("sayri config set provider.model {}", models[0])),
        ));
    }
}

fn status_of(e: &sayri_core::ports::ChatError) -> Option<u16> {
    match e {
        sayri_core::ports::ChatError::Http { status, .. } => Some(*status),
        _ => None,
    }
}

/// Each sandbox level's guarantees; the default agent's level must hold.
async fn sandbox(
    paths: &Paths,
    cfg: &Config,
    default_level: Option<SandboxLevel>,
    out: &mut Vec<Finding>,
) {
    let settings = sayri_daemon::brain::settings::sandbox_settings(paths, cfg);
    let sb = sayri_sandbox::launcher::LinuxSandbox::new(settings);
    let report = match tokio::time::timeout(CHECK_TIMEOUT * 2, sb.capabilities()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            out.push(finding(
                "sandbox",
                "sandbox",
                Status::Fail,
                format!("cannot probe the sandbox: {e}"),
                Some("reinstall Sayri so `sayri-exec` lies next to `sayri`".into()),
            ));
            return;
        }
        Err(_) => {
            out.push(finding(
                "sandbox",
                "sandbox",
                Status::Fail,
                "the sandbox probe did not finish in time".into(),
                Some("run `sayri sandbox check` to see where it stops".into()),
            ));
            return;
        }
    };
    for l in &report.levels {
        let used = default_level == Some(l.level);
        let id = format!("sandbox.level_{}", l.level.number());
        let title = format!("sandbox level {} ({})", l.level.number(), l.level.name());
        if l.guaranteed {
            out.push(finding(
                &id,
                &title,
                Status::Ok,
                format!(
                    "every guarantee holds{}",
                    if used {
                        " (the default agent's level)"
                    } else {
                        ""
                    }
                ),
                None,
            ));
        } else {
            let fix = if l.advice.is_empty() {
                "see `sayri sandbox check`".to_string()
            } else {
                l.advice.join("; ")
            };
            out.push(finding(
                &id,
                &title,
                if used { Status::Fail } else { Status::Off },
                format!(
                    "not available here: {}{}",
                    l.missing.join("; "),
                    if used {
                        " — and the default agent uses this level, so its commands are refused"
                    } else {
                        ""
                    }
                ),
                Some(fix),
            ));
        }
    }
}

/// Voice models and audio devices (optional: `off` when missing).
fn voice(cfg: &Config, out: &mut Vec<Finding>) {
    let listening = cfg.stt.mode != "disabled";
    if !listening && !cfg.tts.enabled {
        out.push(finding(
            "voice",
            "voice",
            Status::Ok,
            "off (stt.mode is disabled and tts.enabled is false)".into(),
            None,
        ));
        return;
    }
    let store = sayri_voice::models::ModelStore::open_default();
    let plan = sayri_voice::plan::VoicePlan::resolve(cfg, &store);
    let mut fields = StatusReply::default();
    sayri_daemon::voice::status::fill(
        &mut fields,
        &plan,
        sayri_daemon::voice::BUILT,
        &sayri_daemon::voice::status::LoopState::default(),
    );
    let mut parts = Vec::new();
    let mut fixes = Vec::new();
    for (ready, missing, what, needed) in [
        (
            fields.stt_ready,
            &fields.stt_missing,
            "speech to text",
            listening,
        ),
        (
            fields.wake_ready,
            &fields.wake_missing,
            "wake word",
            cfg.stt.mode == "wakeword",
        ),
        (
            fields.tts_ready,
            &fields.tts_missing,
            "speech output",
            cfg.tts.enabled,
        ),
    ] {
        if !needed {
            continue;
        }
        if ready {
            parts.push(format!("{what} ready"));
        } else {
            parts.push(format!("{what} not ready"));
            fixes.extend(missing.iter().cloned());
        }
    }
    // The same fix (a rebuild, one setup command) often answers several parts: say it once.
    let mut seen = std::collections::HashSet::new();
    fixes.retain(|f| seen.insert(f.clone()));
    out.push(finding(
        "voice.models",
        "voice models",
        if fixes.is_empty() {
            Status::Ok
        } else {
            Status::Off
        },
        parts.join(", "),
        (!fixes.is_empty()).then(|| fixes.join("; ")),
    ));
    let inputs = super::voice::devices(true);
    let outputs = super::voice::devices(false);
    let file_mic = cfg.stt.mic_device.starts_with("file:");
    let file_out = cfg.tts.output_device.starts_with("file:");
    let have_in = file_mic || !inputs.is_empty();
    let have_out = file_out || !outputs.is_empty();
    let detail = format!(
        "{} capture device(s){}, {} playback device(s){}",
        inputs.len(),
        if file_mic {
            " (microphone is a file)"
        } else {
            ""
        },
        outputs.len(),
        if file_out { " (speaker is a file)" } else { "" },
    );
    out.push(finding(
        "voice.audio",
        "audio devices",
        if (have_in || !listening) && (have_out || !cfg.tts.enabled) {
            Status::Ok
        } else {
            Status::Off
        },
        detail,
        (!(have_in && have_out)).then(|| {
            "this machine shows no sound card to Sayri; on a desktop, check that PipeWire/PulseAudio runs and `arecord -l`/`aplay -l` list devices (`sayri voice status` lists what Sayri sees)".to_string()
        }),
    ));
}

/// The D-Bus session bus and the notification service on it.
async fn desktop_bus(out: &mut Vec<Finding>) {
    #[cfg(feature = "dbus")]
    {
        let conn = tokio::time::timeout(CHECK_TIMEOUT, zbus::Connection::session()).await;
        let conn = match conn {
            Ok(Ok(c)) => {
                out.push(finding(
                    "dbus",
                    "D-Bus session bus",
                    Status::Ok,
                    "connected".into(),
                    None,
                ));
                c
            }
            other => {
                let why = match other {
                    Ok(Err(e)) => e.to_string(),
                    _ => "timed out".into(),
                };
                let addr = if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
                    "DBUS_SESSION_BUS_ADDRESS is set"
                } else {
                    "DBUS_SESSION_BUS_ADDRESS is unset"
                };
                out.push(finding(
                    "dbus",
                    "D-Bus session bus",
                    Status::Off,
                    format!("not available here ({why}; {addr})"),
                    Some("run Sayri inside a desktop session (the keyring, notifications and GNOME screenshots need its bus)".into()),
                ));
                out.push(finding(
                    "notifications",
                    "desktop notifications",
                    Status::Off,
                    "not available here (no session bus)".into(),
                    Some("run Sayri inside a desktop session".into()),
                ));
                return;
            }
        };
        let info = tokio::time::timeout(
            CHECK_TIMEOUT,
            conn.call_method(
                Some("org.freedesktop.Notifications"),
                "/org/freedesktop/Notifications",
                Some("org.freedesktop.Notifications"),
                "GetServerInformation",
                &(),
            ),
        )
        .await;
        match info {
            Ok(Ok(m)) => {
                let name = m
                    .body()
                    .deserialize::<(String, String, String, String)>()
                    .map(|(n, vendor, v, _)| format!("{n} {v} ({vendor})"))
                    .unwrap_or_else(|_| "a notification service".into());
                out.push(finding(
                    "notifications",
                    "desktop notifications",
                    Status::Ok,
                    name,
                    None,
                ));
            }
            other => {
                let why = match other {
                    Ok(Err(e)) => e.to_string(),
                    _ => "timed out".into(),
                };
                out.push(finding(
                    "notifications",
                    "desktop notifications",
                    Status::Off,
                    format!("no notification service on the session bus ({why})"),
                    Some("start your desktop's notification service (or e.g. `dunst`)".into()),
                ));
            }
        }
    }
    #[cfg(not(feature = "dbus"))]
    {
        out.push(finding(
            "dbus",
            "D-Bus session bus",
            Status::Off,
            "this sayri was built without D-Bus support (the `dbus` feature)".into(),
            Some("rebuild with the default features".into()),
        ));
    }
}

/// Free space where models and the database live.
fn disk(paths: &Paths, out: &mut Vec<Finding>) {
    let mut dir: &Path = &paths.state_dir;
    while !dir.exists() {
        match dir.parent() {
            Some(p) => dir = p,
            None => break,
        }
    }
    match nix::sys::statvfs::statvfs(dir) {
        Ok(s) => {
            let free = s.blocks_available().saturating_mul(s.fragment_size());
            let gb = free as f64 / 1e9;
            let enough = free >= MIN_FREE_BYTES;
            out.push(finding(
                "disk",
                "disk space",
                if enough { Status::Ok } else { Status::Fail },
                format!("{gb:.1} GB free on the file system of {}", dir.display()),
                (!enough).then(|| {
                    format!(
                        "free at least {:.1} GB there (models take 0.1–5 GB each; `sayri models list` shows them)",
                        MIN_FREE_BYTES as f64 / 1e9
                    )
                }),
            ));
        }
        Err(e) => out.push(finding(
            "disk",
            "disk space",
            Status::Fail,
            format!("cannot read the free space of {}: {e}", dir.display()),
            Some("check that the directory is readable".into()),
        )),
    }
}

/// The systemd user unit: installed, enabled, active.
fn systemd_unit(out: &mut Vec<Finding>) {
    let unit = crate::cli::install::unit_path();
    let installed = unit.as_ref().is_some_and(|p| p.exists());
    if !installed {
        out.push(finding(
            "systemd",
            "systemd user service",
            Status::Off,
            "sayri.service is not installed".into(),
            Some("sayri install --user".into()),
        ));
        return;
    }
    let state = std::process::Command::new("systemctl")
        .args(["--user", "is-active", "sayri.service"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match state {
        Ok(o) if o.status.success() => out.push(finding(
            "systemd",
            "systemd user service",
            Status::Ok,
            "sayri.service is active".into(),
            None,
        )),
        Ok(o) if !o.stdout.is_empty() && std::env::var_os("XDG_RUNTIME_DIR").is_some() => {
            let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
            out.push(finding(
                "systemd",
                "systemd user service",
                if s == "failed" { Status::Fail } else { Status::Off },
                format!("sayri.service is installed and {s}"),
                Some(if s == "failed" {
                    "journalctl --user -u sayri.service -n 50; then systemctl --user restart sayri.service".into()
                } else {
                    "systemctl --user enable --now sayri.service".into()
                }),
            ));
        }
        _ => out.push(finding(
            "systemd",
            "systemd user service",
            Status::Off,
            "sayri.service is installed, but no systemd user manager answers here".into(),
            Some(
                "log in to a systemd session (then `systemctl --user enable --now sayri.service`)"
                    .into(),
            ),
        )),
    }
}
