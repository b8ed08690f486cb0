//! Front-ends the daemon can run: `ui_list`, `ui_start`, `ui_stop`, `ui_status`.
//!
//! * **UIs.** Sayri's own front-ends: `orb` (the GTK4 orb, program `sayri-orb`; also reached
//!   as `desktop`, `sayri-ui-orb`, `legacy`) and `web` (the web bubble, `sayri web --port 0
//!   --login-file-only`: a free loopback port, its login address in `$RUNTIME/sayri-web.url`
//!   and nowhere else, never in its log); then the UI plugins found (`crate::ui_plugins`: a
//!   plugin folder of type `ui`, run as `python3 <entrypoint>`, its pid in `$STATE/<id>.pid`
//!   while it runs). Sayri's own win over a plugin of the same name. A started UI is a
//!   supervised program named `ui-<id>` (log `$STATE/logs/ui-<id>.log`, restarted after a
//!   crash, stopped with the daemon); `ui_stop` stops exactly that one, `killall` keeps the
//!   one it names. Nothing is ever found or signalled by its process name. Its connections
//!   count as the person's ([`front_end_keepers`]): only the person can start one (`ui_start`
//!   is management), and it must be able to answer permission cards.
//! * **Plugins** (`plugins_list`, `plugin_set_enabled`) are in `super::plugin_services`.

use crate::daemon::DaemonState;
use crate::daemon::dispatch::Ctx;
use crate::supervisor::{ChildSpec, ChildState, ChildStatus};
use crate::ui_plugins::{UiPlugin, UiPlugins};
use sayri_protocol::params::{UiListParams, UiStartParams, UiStatusParams, UiStopParams};
use sayri_protocol::reply::desktop::{
    UiEntry, UiListReply, UiStartReply, UiStatusReply, UiStopReply,
};
use sayri_protocol::{ErrorCode, ProtocolError};
use std::path::PathBuf;

/// One front-end Sayri can run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ui {
    pub(super) id: &'static str,
    pub(super) name: &'static str,
    pub(super) kind: &'static str,
    pub(super) description: &'static str,
}

/// Every front-end, in listing order.
pub(super) const UIS: [Ui; 2] = [
    Ui {
        id: "orb",
        name: "Sayri orb",
        kind: "orb",
        description: "The desktop orb and its card (GTK4); needs a graphical session.",
    },
    Ui {
        id: "web",
        name: "Web bubble",
        kind: "web",
        description: "The assistant in a browser tab on 127.0.0.1; its login address is written to sayri-web.url in the runtime folder.",
    },
];

/// The UI an id names: the id itself, `sayri-ui-<id>`, `sayri-<id>`, its display name, and
/// for the orb the original's built-in names (`desktop`, `legacy`, `default`).
fn find(id: &str) -> Option<Ui> {
    let id = id.trim();
    let bare = id
        .strip_prefix("sayri-ui-")
        .or_else(|| id.strip_prefix("sayri-"))
        .unwrap_or(id);
    let bare = match bare {
        "desktop" | "legacy" | "default" => "orb",
        other => other,
    };
    UIS.iter()
        .find(|u| u.id == bare || u.name.eq_ignore_ascii_case(id))
        .copied()
}

fn unknown_ui(id: &str, plugins: &[UiPlugin], user_dir: &std::path::Path) -> ProtocolError {
    let ids: Vec<&str> = UIS
        .iter()
        .map(|u| u.id)
        .chain(plugins.iter().map(|p| p.id.as_str()))
        .collect();
    ProtocolError::new(
        ErrorCode::NotFound,
        format!(
            "no UI named {id:?}; the UIs are {} (`ui_list` shows them; a UI plugin is a folder with a manifest.json of type \"ui\" in {})",
            ids.join(", "),
            user_dir.display()
        ),
    )
}

fn child_name(ui: &Ui) -> String {
    format!("ui-{}", ui.id)
}

/// Whether a supervised program of this state counts as running.
fn is_running(s: &ChildStatus) -> bool {
    matches!(
        s.state,
        ChildState::Starting | ChildState::Running | ChildState::Backoff
    )
}

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `program` beside the `sayri` executable, else on `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(program)));
    beside.filter(|p| is_executable(p)).or_else(|| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .filter(|d| d.is_absolute())
                .map(|d| d.join(program))
                .find(|p| is_executable(p))
        })
    })
}

/// The supervised program that runs `ui`.
///
/// # Errors
/// Its program is missing, or (the orb) the daemon has no graphical session to show it in.
fn spec_for(state: &DaemonState, ui: &Ui) -> Result<ChildSpec, ProtocolError> {
    let paths = &state.paths;
    let mut spec = match ui.id {
        "orb" => {
            let program = find_program("sayri-orb").ok_or_else(|| {
                ProtocolError::new(
                    ErrorCode::NotFound,
                    "the orb is not installed: sayri-orb is neither beside sayri nor on PATH (it is built with `cargo build -p sayri-orb`)",
                )
            })?;
            let display = ["DISPLAY", "WAYLAND_DISPLAY"]
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
            if !display {
                return Err(ProtocolError::invalid_params(
                    "the orb needs a graphical session, and the daemon has none (neither DISPLAY nor WAYLAND_DISPLAY is set in its environment); start the daemon from your desktop session",
                ));
            }
            let mut spec = ChildSpec::new(child_name(ui), program);
            for var in [
                "DISPLAY",
                "WAYLAND_DISPLAY",
                "XDG_SESSION_TYPE",
                "DBUS_SESSION_BUS_ADDRESS",
                "XAUTHORITY",
            ] {
                if let Some(v) = std::env::var_os(var) {
                    spec = spec.env(var, v.to_string_lossy());
                }
            }
            spec
        }
        _ => {
            let exe = std::env::current_exe().map_err(|e| {
                ProtocolError::internal(format!("cannot find the sayri program: {e}"))
            })?;
            // The login address holds the launch secret: into the 0600 url file only, never
            // onto stdout, which the supervisor copies into the UI's log.
            ChildSpec::new(child_name(ui), exe)
                .arg("web")
                .arg("--port")
                .arg("0")
                .arg("--login-file-only")
        }
    };
    spec = spec
        .env("SAYRI_CONFIG_DIR", paths.config_dir.to_string_lossy())
        .env("SAYRI_STATE_DIR", paths.state_dir.to_string_lossy());
    Ok(spec)
}

/// The keeper pids of the UIs running now: a process of their trees is the person's front-end
/// (see `command_peer::peer_is_command_outside`), so the orb, the web bubble or a UI plugin
/// started with `ui_start` may answer permission cards like one the person started.
pub fn front_end_keepers(state: &DaemonState) -> Vec<i32> {
    state
        .supervisor
        .list()
        .into_iter()
        .filter(|s| s.name.starts_with("ui-") && is_running(s))
        .filter_map(|s| i32::try_from(s.keeper_pid?).ok())
        .collect()
}

/// A UI `ui_*` can name: one of Sayri's own or a UI plugin.
enum Target {
    Own(Ui),
    Plugin(Box<UiPlugin>),
}

impl Target {
    fn id(&self) -> &str {
        match self {
            Target::Own(u) => u.id,
            Target::Plugin(p) => &p.id,
        }
    }

    fn child_name(&self) -> String {
        match self {
            Target::Own(u) => child_name(u),
            Target::Plugin(p) => p.child_name(),
        }
    }
}

/// The UI plugins found now, without those whose id names one of Sayri's own UIs (the
/// original's `sayri-ui-orb` is the orb: Sayri's own wins).
pub(crate) async fn ui_plugins(state: &DaemonState) -> UiPlugins {
    let paths = state.paths.clone();
    let found = tokio::task::spawn_blocking(move || crate::ui_plugins::discover(&paths)).await;
    match found {
        Ok(mut found) => {
            found.plugins.retain(|p| find(&p.id).is_none());
            found
        }
        Err(e) => {
            tracing::warn!("UI plugins not listed: {e}");
            UiPlugins::default()
        }
    }
}

/// The UI `id` names: Sayri's own first, then the UI plugins.
///
/// # Errors
/// `invalid_params` naming why, for a plugin folder of that id that cannot be used;
/// `not_found` listing the UIs otherwise.
async fn target(state: &DaemonState, id: &str) -> Result<Target, ProtocolError> {
    if let Some(ui) = find(id) {
        return Ok(Target::Own(ui));
    }
    let found = ui_plugins(state).await;
    if let Some(p) = crate::ui_plugins::find(&found.plugins, id) {
        return Ok(Target::Plugin(Box::new(p.clone())));
    }
    if let Some(why) = found.why_unusable(id) {
        return Err(ProtocolError::invalid_params(why.to_string()));
    }
    Err(unknown_ui(
        id,
        &found.plugins,
        &state.paths.config_dir.join("plugins"),
    ))
}

/// Whether the `ui.default_ui` setting names `target`.
fn is_default(state: &DaemonState, target: &Target, plugins: &[UiPlugin]) -> bool {
    let default = state.config().ui.default_ui;
    match (find(&default), target) {
        (Some(d), Target::Own(u)) => d.id == u.id,
        (None, Target::Own(u)) => default.is_empty() && u.id == "orb",
        (Some(_), Target::Plugin(_)) => false,
        (None, Target::Plugin(p)) => {
            crate::ui_plugins::find(plugins, &default).is_some_and(|d| d.id == p.id)
        }
    }
}

/// A UI as listed: `{id, name, version, description, author, kind, xui_renderer, scope, path,
/// entrypoint, running, pid, is_default, state, last_error, log_file}` (`state`, `pid`,
/// `log_file` null when it was never started).
fn describe(state: &DaemonState, target: &Target, plugins: &[UiPlugin]) -> UiEntry {
    let status = state.supervisor.status(&target.child_name());
    let mut entry = UiEntry {
        id: target.id().into(),
        name: String::new(),
        version: env!("CARGO_PKG_VERSION").into(),
        description: String::new(),
        author: "Sayri".into(),
        kind: String::new(),
        xui_renderer: None,
        scope: "builtin".into(),
        path: None,
        entrypoint: None,
        running: status.as_ref().is_some_and(is_running),
        pid: status.as_ref().and_then(|s| s.pid),
        state: status.as_ref().map(|s| s.state.as_str().to_string()),
        last_error: status.as_ref().and_then(|s| s.last_error.clone()),
        log_file: status.as_ref().map(|s| s.log_file.clone()),
        is_default: is_default(state, target, plugins),
    };
    match target {
        Target::Own(ui) => {
            entry.name = ui.name.into();
            entry.description = ui.description.into();
            entry.kind = ui.kind.into();
            entry.xui_renderer = (ui.id == "orb").then(|| "cajita-gtk".to_string());
        }
        Target::Plugin(p) => {
            entry.name.clone_from(&p.name);
            entry.version.clone_from(&p.version);
            entry.description.clone_from(&p.description);
            entry.author.clone_from(&p.author);
            entry.kind.clone_from(&p.kind);
            entry.xui_renderer.clone_from(&p.xui_renderer);
            entry.scope = p.scope.as_str().into();
            entry.path = Some(p.dir.clone());
            entry.entrypoint = Some(p.entrypoint.path.clone());
        }
    }
    entry
}

/// `ui_list` → Sayri's own UIs, then the UI plugins found, with whether each runs.
pub async fn ui_list(_: UiListParams, ctx: Ctx) -> Result<UiListReply, ProtocolError> {
    let plugins = ui_plugins(&ctx.daemon).await.plugins;
    let mut out: Vec<UiEntry> = UIS
        .iter()
        .map(|u| describe(&ctx.daemon, &Target::Own(*u), &plugins))
        .collect();
    for p in &plugins {
        out.push(describe(
            &ctx.daemon,
            &Target::Plugin(Box::new(p.clone())),
            &plugins,
        ));
    }
    Ok(out)
}

/// The supervised program of a UI plugin, after creating its settings file with the declared
/// defaults when it has none yet (the original companions cannot start without it).
async fn plugin_spec(state: &DaemonState, plugin: &UiPlugin) -> Result<ChildSpec, ProtocolError> {
    if !plugin.declared().is_empty() {
        let file = plugin.settings_file(&state.paths.config_dir).map_err(|e| {
            ProtocolError::invalid_params(format!("cannot start {}: {e}", plugin.id))
        })?;
        let specs = plugin.declared().to_vec();
        tokio::task::spawn_blocking(move || file.ensure(&specs))
            .await
            .map_err(|e| ProtocolError::internal(format!("ui_start stopped: {e}")))?
            .map_err(|e| {
                ProtocolError::invalid_params(format!("cannot start {}: {e}", plugin.id))
            })?;
    }
    let shared_lib = crate::ui_plugins::shared_lib(&state.paths);
    let spec = crate::ui_plugins::launch::spec(plugin, &state.paths, shared_lib.as_deref())
        .map_err(|e| ProtocolError::new(ErrorCode::NotFound, e.to_string()))?;
    Ok(super::plugins::with_ui_plugin_secrets(state, plugin, spec))
}

/// `ui_start {ui_id}` → `{ui_id, running, already_running, pid, log_file}` (`already_running`
/// when it ran before the call; nothing is started twice).
///
/// # Errors
/// `not_found` for an unknown UI or a missing program; `invalid_params` for the orb without a
/// graphical session, or a UI plugin that cannot be used (its folder refused by the loader, its
/// settings file refused).
pub async fn ui_start(p: UiStartParams, ctx: Ctx) -> Result<UiStartReply, ProtocolError> {
    let target = target(&ctx.daemon, &p.ui_id).await?;
    let name = target.child_name();
    if let Some(s) = ctx.daemon.supervisor.status(&name).filter(is_running) {
        return Ok(UiStartReply {
            ui_id: target.id().into(),
            running: true,
            already_running: true,
            pid: s.pid,
            log_file: s.log_file,
        });
    }
    let spec = match &target {
        Target::Own(ui) => spec_for(&ctx.daemon, ui)?,
        Target::Plugin(plugin) => plugin_spec(&ctx.daemon, plugin).await?,
    };
    let s = ctx
        .daemon
        .supervisor
        .start(spec)
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(UiStartReply {
        ui_id: target.id().into(),
        running: is_running(&s),
        already_running: false,
        pid: s.pid,
        log_file: s.log_file,
    })
}

/// `ui_stop {ui_id}` → `{ui_id, stopped}`: stops exactly that UI (and waits until it is gone;
/// a UI plugin's pid file is removed); `stopped` is false when it was not running.
///
/// # Errors
/// `not_found` for an unknown UI.
pub async fn ui_stop(p: UiStopParams, ctx: Ctx) -> Result<UiStopReply, ProtocolError> {
    let target = target(&ctx.daemon, &p.ui_id).await?;
    let name = target.child_name();
    let was = ctx
        .daemon
        .supervisor
        .status(&name)
        .is_some_and(|s| is_running(&s));
    if was {
        ctx.daemon
            .supervisor
            .stop(&name)
            .await
            .map_err(|e| ProtocolError::internal(e.to_string()))?;
    }
    Ok(UiStopReply {
        ui_id: target.id().into(),
        stopped: was,
    })
}

/// `ui_status {ui_id}` → `{ui_id, running, pid, state, last_error, log_file}`.
///
/// # Errors
/// `not_found` for an unknown UI.
pub async fn ui_status(p: UiStatusParams, ctx: Ctx) -> Result<UiStatusReply, ProtocolError> {
    let target = target(&ctx.daemon, &p.ui_id).await?;
    let d = describe(&ctx.daemon, &target, &[]);
    Ok(UiStatusReply {
        ui_id: target.id().into(),
        running: d.running,
        pid: d.pid,
        state: d.state,
        last_error: d.last_error,
        log_file: d.log_file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_ids_accept_the_original_names() {
        for id in ["orb", "desktop", "sayri-ui-orb", "legacy", "Sayri orb"] {
            assert_eq!(find(id).map(|u| u.id), Some("orb"), "{id}");
        }
        assert_eq!(find("sayri-web").map(|u| u.id), Some("web"));
        assert!(find("clippy").is_none());
    }
}
