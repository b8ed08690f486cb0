//! Plugin background services: a manifest's `service` block run under the daemon's
//! supervisor.
//!
//! How the block's commands map onto supervision:
//! * **`start`** is the service itself: its first word is a program inside the plugin's folder
//!   (see `super::confine`), run as `super::run` says, with the other words as arguments. It
//!   must stay in the foreground while the service runs. It is a supervised child named
//!   `service-<plugin id>`: its own process group, its log `$STATE/logs/service-<id>.log`,
//!   restarted with backoff after it exits (a `start` that forks a daemon and exits is
//!   therefore restarted, and after 5 quick exits marked failed — write it to stay in the
//!   foreground), stopped with the daemon (its whole tree).
//! * **`stop`** runs when the person turns the service off, after the supervised program and
//!   its tree are gone, to clean up what it left outside its tree. It gets
//!   [`STOP_COMMAND_TIMEOUT`], then its process group is killed; its output goes to the same
//!   log. A failing `stop` is reported but the service is off all the same. The daemon's own
//!   shutdown does not run it.
//! * **`status`** is never run: the supervisor knows whether the service runs.
//!
//! The enable flag lives in the plugin's settings file (`super::settings_file`), under
//! `service.enabled_key` (default `enabled`); until the file says, it is `service.enabled`, else
//! `service.auto_start`, else true. When the daemon starts, every service with `auto_start`
//! (default true) that is enabled is started. Turning a service on or off writes the flag
//! first, so the choice holds across restarts even when starting fails.
//!
//! A start that fails before the program runs (a required secret missing from the vault, the
//! settings file unreadable) is kept in [`StartErrors`] until the next start or stop, so the
//! service is listed as `failed` with that reason; a program that keeps exiting is `backoff`,
//! then `failed` once the supervisor's crash-loop breaker trips, with its last exit as reason
//! ([`listed_state`]).
//!
//! The program's environment is the supervisor's plus `SAYRI_CONFIG_DIR`, `SAYRI_STATE_DIR`,
//! `SAYRI_PLUGIN_ID`, `SAYRI_PLUGIN_DIR` and `SAYRI_SETTINGS_FILE`. The plugin's
//! `required_secrets` come from the vault keys of those names on the secrets descriptor (a
//! Python program finds them in `os.environ`), never on its command line or in its
//! environment.

use super::settings_file::{self, SettingsFileError};
use super::{Command, Plugin, Runner, Service};
use crate::supervisor::{ChildSpec, ChildState, ChildStatus, INHERITED_ENV, Supervisor};
use sayri_client::paths::Paths;
use sayri_core::sync::lock;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zeroize::Zeroizing;

/// Prefix of a service's supervised child (`service-<id>`).
pub const CHILD_PREFIX: &str = "service-";
/// How long a service's `stop` command may run before its process group is killed.
pub const STOP_COMMAND_TIMEOUT: Duration = Duration::from_secs(20);
/// Time a service gets between `SIGTERM` and `SIGKILL` when stopped.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// The supervised child's name of plugin `id`'s service.
pub fn child_name(id: &str) -> String {
    format!("{CHILD_PREFIX}{id}")
}

/// Whether a supervised child in this state counts as running.
pub fn is_running(status: &ChildStatus) -> bool {
    matches!(
        status.state,
        ChildState::Starting | ChildState::Running | ChildState::Backoff
    )
}

/// Why each plugin's service last failed to start before its program ran, by plugin id. Kept
/// in memory only; shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct StartErrors(Arc<Mutex<HashMap<String, String>>>);

impl StartErrors {
    /// Records why the service of plugin `id` did not start.
    pub fn record(&self, id: &str, why: String) {
        lock(&self.0).insert(id.to_string(), why);
    }

    /// Forgets the failed start of plugin `id` (it was started or stopped since).
    pub fn clear(&self, id: &str) {
        lock(&self.0).remove(id);
    }

    /// Why the service of plugin `id` last failed to start, if its last start failed so.
    pub fn get(&self, id: &str) -> Option<String> {
        lock(&self.0).get(id).cloned()
    }
}

/// A service's state and last error as listed, from its supervised child (if it ever ran) and
/// the failed start recorded since: such a failure is newer than the child's record, so it
/// wins (`failed`, with its reason); a service that never ran is `stopped`.
pub fn listed_state(
    status: Option<&ChildStatus>,
    start_error: Option<String>,
) -> (ChildState, Option<String>) {
    match (status, start_error) {
        (_, Some(e)) => (ChildState::Failed, Some(e)),
        (Some(s), None) => (s.state, s.last_error.clone()),
        (None, None) => (ChildState::Stopped, None),
    }
}

/// Whether the service of `plugin` is enabled: the flag in its settings file, else the
/// manifest's default.
///
/// # Errors
/// The settings file is refused where it is, cannot be read, or is not a JSON object.
pub fn enabled(
    plugin: &Plugin,
    service: &Service,
    config_dir: &Path,
) -> Result<bool, SettingsFileError> {
    let values = plugin.settings(config_dir)?.read()?.unwrap_or_default();
    Ok(values
        .get(&service.enabled_key)
        .map_or(service.enabled_by_default, settings_file::truthy))
}

/// Writes the enable flag of `plugin`'s service, every other key of the file kept.
///
/// # Errors
/// The settings file is refused where it is, cannot be read back, or cannot be written (it is
/// then unchanged).
pub fn set_enabled(
    plugin: &Plugin,
    service: &Service,
    config_dir: &Path,
    on: bool,
) -> Result<(), SettingsFileError> {
    plugin
        .settings(config_dir)?
        .write_key(&service.enabled_key, Some(serde_json::Value::Bool(on)))
        .map(drop)
}

/// The supervised child running `plugin`'s service, with `secrets` (name, value) on its
/// secrets descriptor.
///
/// # Errors
/// The service has no `start` command.
pub fn spec_for(
    plugin: &Plugin,
    service: &Service,
    paths: &Paths,
    secrets: Vec<(String, Zeroizing<String>)>,
) -> Result<ChildSpec, String> {
    let start = service.start.as_ref().ok_or_else(|| {
        format!(
            "plugin {} declares no service.start command, so the daemon has nothing to run",
            plugin.id
        )
    })?;
    let mut spec =
        super::run::child_spec(child_name(&plugin.id), plugin, &start.program, &start.args);
    for (k, v) in env_of(plugin, paths) {
        spec = spec.env(k, v);
    }
    spec.secrets = secrets;
    spec.stop_grace = STOP_GRACE;
    Ok(spec)
}

/// The variables a service's programs get besides the supervisor's.
fn env_of(plugin: &Plugin, paths: &Paths) -> Vec<(&'static str, String)> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    vec![
        ("SAYRI_CONFIG_DIR", s(&paths.config_dir)),
        ("SAYRI_STATE_DIR", s(&paths.state_dir)),
        ("SAYRI_PLUGIN_ID", plugin.id.clone()),
        ("SAYRI_PLUGIN_DIR", s(&plugin.dir)),
        (
            "SAYRI_SETTINGS_FILE",
            s(&plugin.settings_file(&paths.config_dir)),
        ),
    ]
}

/// Starts `plugin`'s service unless it runs already; returns its status and whether it was
/// running before.
///
/// # Errors
/// No `start` command, or the supervisor refused (the daemon shuts down, …).
pub fn start(
    supervisor: &Supervisor,
    plugin: &Plugin,
    service: &Service,
    paths: &Paths,
    secrets: Vec<(String, Zeroizing<String>)>,
) -> Result<(ChildStatus, bool), String> {
    let name = child_name(&plugin.id);
    if let Some(s) = supervisor.status(&name).filter(is_running) {
        return Ok((s, true));
    }
    let spec = spec_for(plugin, service, paths, secrets)?;
    let status = supervisor.start(spec).map_err(|e| e.to_string())?;
    tracing::info!("plugin service {}: started", plugin.id);
    Ok((status, false))
}

/// Stops `plugin`'s service (its whole tree), then runs its `stop` command. Returns whether it
/// was running, and the `stop` command's failure when it failed.
pub async fn stop(
    supervisor: &Supervisor,
    plugin: &Plugin,
    service: &Service,
    paths: &Paths,
) -> (bool, Option<String>) {
    let name = child_name(&plugin.id);
    let was = supervisor.status(&name).is_some_and(|s| is_running(&s));
    if supervisor.status(&name).is_some() {
        let _ = supervisor.stop(&name).await;
    }
    let failure = match &service.stop {
        Some(cmd) => run_stop_command(plugin, cmd, paths).await.err(),
        None => None,
    };
    if was {
        tracing::info!("plugin service {}: stopped", plugin.id);
    }
    (was, failure)
}

/// Runs a service's `stop` command to its end or [`STOP_COMMAND_TIMEOUT`], its output appended
/// to the service's log, in a process group of its own that is killed after the timeout.
async fn run_stop_command(plugin: &Plugin, cmd: &Command, paths: &Paths) -> Result<(), String> {
    let log_path = paths
        .logs_dir()
        .join(format!("{}.log", child_name(&plugin.id)));
    let log = crate::supervisor::RotatingLog::open(log_path.clone(), Default::default())
        .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
    drop(log);
    let open = || {
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))
    };
    let mut c = match cmd.program.runner {
        Runner::Python => {
            let mut c = tokio::process::Command::new(super::run::PYTHON);
            c.arg("-u").arg(&cmd.program.path);
            c
        }
        Runner::Direct => tokio::process::Command::new(&cmd.program.path),
    };
    c.args(&cmd.args)
        .current_dir(&plugin.dir)
        .env_clear()
        .envs(
            std::env::vars_os()
                .filter(|(k, _)| k.to_str().is_some_and(|k| INHERITED_ENV.contains(&k))),
        )
        .envs(env_of(plugin, paths))
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(open()?))
        .stderr(Stdio::from(open()?))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot run the service's stop command: {e}"))?;
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    match tokio::time::timeout(STOP_COMMAND_TIMEOUT, child.wait()).await {
        Ok(Ok(st)) if st.success() => Ok(()),
        Ok(Ok(st)) => Err(format!(
            "the service's stop command ended with {st} (see {})",
            log_path.display()
        )),
        Ok(Err(e)) => Err(format!("the service's stop command was lost: {e}")),
        Err(_) => {
            if let Some(g) = pgid {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(g),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.wait().await;
            Err(format!(
                "the service's stop command did not end within {} s and was killed",
                STOP_COMMAND_TIMEOUT.as_secs()
            ))
        }
    }
}

/// The plugin's `required_secrets` from the vault keys of those names.
///
/// # Errors
/// The vault is unavailable, or a secret is not in it (named, with how to set it).
pub fn secrets_for(
    brain: Option<&Arc<crate::brain::Brain>>,
    plugin: &Plugin,
) -> Result<Vec<(String, Zeroizing<String>)>, String> {
    let needed = plugin.required_secrets();
    if needed.is_empty() {
        return Ok(Vec::new());
    }
    let brain = brain.ok_or_else(|| {
        format!(
            "plugin {} needs secrets and this daemon runs without a vault",
            plugin.id
        )
    })?;
    let guard = brain.vault();
    let vault = guard.as_ref().ok_or_else(|| {
        format!(
            "plugin {} needs secrets but the vault is unavailable: {} — see `sayri vault status`",
            plugin.id,
            brain.vault_error.as_deref().unwrap_or("unknown reason")
        )
    })?;
    needed
        .iter()
        .map(|name| {
            vault
                .get(name)
                .map(|v| (name.clone(), v))
                .ok_or_else(|| {
                    format!(
                        "plugin {} needs secret {name}, which is not in the vault; set it with `sayri vault set {name}`",
                        plugin.id
                    )
                })
        })
        .collect()
}

/// Starts every enabled service whose `auto_start` is on (the daemon calls it once, at
/// start). A service that cannot be started is written to the daemon's log and recorded in
/// `errors`, so that it is listed as failed with the reason.
pub async fn auto_start(
    supervisor: Supervisor,
    paths: Paths,
    brain: Option<Arc<crate::brain::Brain>>,
    errors: StartErrors,
) {
    let dirs = super::PluginDirs::from_env(&paths);
    let found = crate::offload::blocking(|| super::discover(&dirs));
    for b in &found.broken {
        tracing::warn!(
            "plugin folder {} is not used: {}",
            b.dir.display(),
            b.reason
        );
    }
    for (plugin, service) in found.services() {
        if !service.auto_start || service.start.is_none() {
            continue;
        }
        let on = crate::offload::blocking(|| enabled(plugin, service, &paths.config_dir))
            .map_err(|e| format!("whether it is turned on cannot be read: {e}"));
        let started = match on {
            Ok(false) => continue,
            Ok(true) => secrets_for(brain.as_ref(), plugin)
                .and_then(|s| start(&supervisor, plugin, service, &paths, s)),
            Err(e) => Err(e),
        };
        match started {
            Ok(_) => errors.clear(&plugin.id),
            Err(e) => {
                tracing::error!("plugin service {} was not started: {e}", plugin.id);
                errors.record(&plugin.id, e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn child(state: ChildState, last_error: Option<&str>) -> ChildStatus {
        ChildStatus {
            name: child_name("p"),
            state,
            pid: None,
            keeper_pid: None,
            restarts: 4,
            last_error: last_error.map(str::to_string),
            restart_in_ms: None,
            log_file: PathBuf::from("/state/logs/service-p.log"),
        }
    }

    #[test]
    fn a_failed_start_is_listed_as_failed_with_its_reason_until_it_is_cleared() {
        let errors = StartErrors::default();
        assert_eq!(
            listed_state(None, errors.get("p")),
            (ChildState::Stopped, None)
        );
        errors.record(
            "p",
            "plugin p needs secret T, which is not in the vault".into(),
        );
        let shared = errors.clone();
        let (state, why) = listed_state(None, shared.get("p"));
        assert_eq!(state, ChildState::Failed);
        assert!(why.unwrap().contains("needs secret T"));
        // Newer than what the supervisor last knew of an earlier run.
        let old_run = child(ChildState::Stopped, None);
        assert_eq!(
            listed_state(Some(&old_run), errors.get("p")).0,
            ChildState::Failed
        );
        assert_eq!(errors.get("other"), None);
        errors.clear("p");
        assert_eq!(shared.get("p"), None);
        assert_eq!(
            listed_state(Some(&old_run), errors.get("p")),
            (ChildState::Stopped, None)
        );
    }

    #[test]
    fn a_program_that_keeps_exiting_is_listed_with_its_last_exit() {
        let why = "exited with status 3 (see /state/logs/service-p.log)";
        for state in [ChildState::Backoff, ChildState::Failed] {
            let st = child(state, Some(why));
            assert_eq!(
                listed_state(Some(&st), None),
                (state, Some(why.to_string()))
            );
        }
    }
}
