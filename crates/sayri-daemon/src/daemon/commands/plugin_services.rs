//! The plugins Sayri has, and their background services: `plugins_list`,
//! `plugin_set_enabled`.
//!
//! * **Plugins** are the plugin folders `crate::plugins` discovers (the user's, then the
//!   system's; broken ones listed with the reason, nothing of them run), then the built-in
//!   gateway programs (`sayri-gateway-<id>` beside `sayri` or on `PATH`) that no plugin of the
//!   same id hides, then Sayri's own UIs (`orb`, `web`).
//! * **Services**: a plugin whose manifest has a `service` block runs it as a supervised child
//!   `service-<id>` (see `crate::plugins::services` for how `start`, `stop` and `status` map
//!   onto supervision). `plugin_set_enabled` writes the enable flag into the plugin's settings
//!   file, then starts or stops the service.

use crate::daemon::DaemonState;
use crate::daemon::dispatch::Ctx;
use crate::plugins::{self, Discovery, Plugin as Found, PluginDirs, Service, services};
use sayri_protocol::params::{PluginSetEnabledParams, PluginsListParams};
use sayri_protocol::reply::desktop::{
    Plugin, PluginService, PluginSetEnabledReply, PluginsListReply,
};
use sayri_protocol::{ErrorCode, ProtocolError};
use std::path::PathBuf;

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The plugin folders found now.
fn discover(state: &DaemonState) -> Discovery {
    let dirs = PluginDirs::from_env(&state.paths);
    crate::offload::blocking(|| plugins::discover(&dirs))
}

/// The built-in gateway programs found (`sayri-gateway-<id>` beside `sayri`, then on `PATH`),
/// by id.
fn gateway_programs() -> Vec<(String, PathBuf)> {
    let prefix = crate::gateways::launch::PROGRAM_PREFIX;
    let mut dirs: Vec<PathBuf> = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(PathBuf::from))
        .into_iter()
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|d| d.is_absolute()));
    }
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut here: Vec<(String, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_prefix(prefix)?.to_string();
                let valid = !id.is_empty()
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                (valid && is_executable(&e.path())).then(|| (id, e.path()))
            })
            .collect();
        here.sort();
        for (id, path) in here {
            if !found.iter().any(|(f, _)| *f == id) {
                found.push((id, path));
            }
        }
    }
    found
}

/// A service as listed: its process (state `stopped` when it never ran, `failed` with the
/// reason when its last start failed before a process ran) and its flag's key.
fn service_entry(state: &DaemonState, p: &Found, s: &Service) -> PluginService {
    let name = services::child_name(&p.id);
    let status = state.supervisor.status(&name);
    let (listed, last_error) =
        services::listed_state(status.as_ref(), state.service_start_errors.get(&p.id));
    PluginService {
        state: listed.as_str().into(),
        pid: status.as_ref().and_then(|s| s.pid),
        restarts: status.as_ref().map_or(0, |s| s.restarts),
        last_error,
        restart_in_ms: status.as_ref().and_then(|s| s.restart_in_ms),
        log_file: state.paths.logs_dir().join(format!("{name}.log")),
        enabled_key: s.enabled_key.clone(),
        enabled_label: s.enabled_label.clone(),
        auto_start: s.auto_start,
        settings_file: p.settings_file(&state.paths.config_dir),
    }
}

/// An installed plugin as listed.
fn installed(state: &DaemonState, p: &Found) -> Plugin {
    let service = p.service.as_ref().map(|s| service_entry(state, p, s));
    let enabled = p.service.as_ref().map(|s| {
        crate::offload::blocking(|| services::enabled(p, s, &state.paths.config_dir))
            .unwrap_or(s.enabled_by_default)
    });
    Plugin {
        id: p.id.clone(),
        name: p.name.clone(),
        description: p.description.clone(),
        version: Some(p.version.clone()),
        kind: p.kind.as_str().into(),
        plugin_type: p.kind.as_str().into(),
        author: p.author.clone(),
        scope: p.scope.as_str().into(),
        auth_mode: p.auth_mode().into(),
        required_secrets: p.required_secrets().to_vec(),
        path: Some(p.dir.clone()),
        entrypoint: p.entrypoint.as_ref().map(|e| e.path.clone()),
        error: None,
        has_service: p.service.is_some(),
        service_enabled: enabled,
        service_running: service
            .as_ref()
            .map(|s| matches!(s.state.as_str(), "starting" | "running" | "backoff")),
        service,
    }
}

/// A built-in plugin (a gateway program or a UI) as listed.
fn builtin(id: &str, name: &str, description: &str, kind: &str, path: Option<PathBuf>) -> Plugin {
    let telegram = id == "telegram";
    Plugin {
        id: id.into(),
        name: name.into(),
        description: description.into(),
        version: (kind == "ui" || telegram).then(|| env!("CARGO_PKG_VERSION").to_string()),
        kind: kind.into(),
        plugin_type: kind.into(),
        author: "Sayri".into(),
        scope: "builtin".into(),
        auth_mode: if kind == "gateway" {
            "pairing_otp"
        } else {
            "none"
        }
        .into(),
        required_secrets: if telegram {
            vec!["TELEGRAM_BOT_TOKEN".into()]
        } else {
            Vec::new()
        },
        path,
        entrypoint: None,
        error: None,
        has_service: false,
        service_enabled: None,
        service_running: None,
        service: None,
    }
}

/// `plugins_list` → `[{id, name, description, version, type, plugin_type, author, scope,
/// auth_mode, required_secrets, path, entrypoint, error, has_service, service_enabled,
/// service_running, service}]`, in the order of the module's rules.
pub async fn plugins_list(
    _: PluginsListParams,
    ctx: Ctx,
) -> Result<PluginsListReply, ProtocolError> {
    let state = &ctx.daemon;
    let found = discover(state);
    let mut out: Vec<Plugin> = found.plugins.iter().map(|p| installed(state, p)).collect();
    for b in &found.broken {
        let mut entry = builtin(&b.id, &b.id, "", "tool", Some(b.dir.clone()));
        entry.author = String::new();
        entry.version = None;
        entry.scope = b.scope.as_str().into();
        entry.error = Some(b.reason.clone());
        out.push(entry);
    }
    for (id, path) in crate::offload::blocking(gateway_programs) {
        if found.find(&id).is_some() {
            continue;
        }
        let telegram = id == "telegram";
        out.push(builtin(
            &id,
            if telegram { "Telegram" } else { &id },
            if telegram {
                "Answers paired Telegram chats (a gateway instance runs it; see gateway_save)."
            } else {
                "A channel gateway program (a gateway instance with this plugin runs it)."
            },
            "gateway",
            Some(path),
        ));
    }
    for ui in &super::ui::UIS {
        out.push(builtin(ui.id, ui.name, ui.description, "ui", None));
    }
    Ok(out)
}

/// What `plugin_set_enabled` does once the plugin and its service are known: the flag first,
/// then the process.
async fn set_enabled(
    state: &DaemonState,
    p: &Found,
    s: &Service,
    on: bool,
) -> Result<(bool, String), ProtocolError> {
    let config_dir = state.paths.config_dir.clone();
    crate::offload::blocking(|| services::set_enabled(p, s, &config_dir, on)).map_err(|e| {
        ProtocolError::internal(format!(
            "the service of {} was left as it was: its enable flag cannot be stored: {e}",
            p.id
        ))
    })?;
    let errors = &state.service_start_errors;
    if !on {
        errors.clear(&p.id);
        let (was, failure) = services::stop(&state.supervisor, p, s, &state.paths).await;
        let mut message = if was {
            format!("Stopped the service of {} and turned it off", p.id)
        } else {
            format!("The service of {} is off (it was not running)", p.id)
        };
        if let Some(f) = &failure {
            message.push_str(&format!("; {f}"));
        }
        return Ok((true, message));
    }
    let brain = state.brain.get();
    let started = services::secrets_for(brain, p)
        .and_then(|secrets| services::start(&state.supervisor, p, s, &state.paths, secrets));
    if started.is_ok() {
        errors.clear(&p.id);
    }
    Ok(match started {
        Ok((_, true)) => (true, format!("The service of {} was already running", p.id)),
        Ok((_, false)) => (true, format!("Started the service of {}", p.id)),
        Err(e) => {
            errors.record(&p.id, e.clone());
            (
                false,
                format!(
                    "The service of {} is turned on but did not start: {e}",
                    p.id
                ),
            )
        }
    })
}

/// `plugin_set_enabled {plugin_id, enabled}` → `{plugin_id, enabled, ok, message, service}`:
/// stores the flag in the plugin's settings file, then starts the service (on) or stops it and
/// runs its `stop` command (off). `ok` is false when it was turned on but could not start
/// (`message` says why; the flag stays on, so it starts with the next daemon).
///
/// # Errors
/// `not_found` for an unknown plugin; `invalid_params` for a plugin without a background
/// service (and how to start it instead) or a broken one (why); `internal` when the flag
/// cannot be stored (nothing changed).
pub async fn plugin_set_enabled(
    p: PluginSetEnabledParams,
    ctx: Ctx,
) -> Result<PluginSetEnabledReply, ProtocolError> {
    let state = &ctx.daemon;
    let found = discover(state);
    let Some(plugin) = found.find(&p.plugin_id) else {
        if let Some(b) = found.broken(&p.plugin_id) {
            return Err(ProtocolError::invalid_params(format!(
                "plugin {} in {} cannot be used: {}",
                b.id,
                b.dir.display(),
                b.reason
            )));
        }
        let listed = plugins_list(PluginsListParams {}, ctx.clone()).await?;
        return Err(match listed.into_iter().find(|v| v.id == p.plugin_id) {
            None => ProtocolError::new(
                ErrorCode::NotFound,
                format!(
                    "plugin not found: {} (`plugins_list` shows the plugins)",
                    p.plugin_id
                ),
            ),
            Some(v) => no_service(&p.plugin_id, &v.kind),
        });
    };
    let Some(service) = plugin.service.as_ref() else {
        return Err(no_service(&plugin.id, plugin.kind.as_str()));
    };
    let (ok, message) = set_enabled(state, plugin, service, p.enabled).await?;
    Ok(PluginSetEnabledReply {
        plugin_id: plugin.id.clone(),
        enabled: p.enabled,
        ok,
        message,
        service: service_entry(state, plugin, service),
    })
}

fn no_service(id: &str, kind: &str) -> ProtocolError {
    ProtocolError::invalid_params(format!(
        "{id} has no background service; {}",
        match kind {
            "ui" => "start or stop the UI with ui_start / ui_stop",
            "gateway" => "start or stop a gateway instance with gateway_start / gateway_stop",
            _ => "its manifest declares no service block",
        }
    ))
}
