//! How an instance is started: which program, with which arguments, environment and secrets.
//!
//! * **Program**: a gateway plugin of the instance's plugin id when one is installed (a folder
//!   with a `manifest.json` of type gateway, see `crate::plugins`; the user's plugins before
//!   the system's), run as `crate::plugins::run` says (`python3 -u` for a `.py` entrypoint,
//!   else the executable itself; working directory the plugin's folder). Otherwise the
//!   built-in program `sayri-gateway-<plugin>`, looked up next to the `sayri` executable first
//!   (an installation puts them side by side), then in the daemon's `PATH`. Plugin `legacy`
//!   has none: its gateway is run by the person and cannot be started. A plugin folder of that
//!   id that cannot be used is an error naming why, never a fall-back to another program.
//! * **Arguments**: the instance's `options`, as `--NAME VALUE` — visible to every local user,
//!   which is why options never hold secrets.
//! * **Environment**: what the supervisor passes to every child (`PATH`, `HOME`, locale, …), plus
//!   `SAYRI_GATEWAY_INSTANCE_ID`, `SAYRI_GATEWAY_SOCKET` (the legacy socket),
//!   `SAYRI_GATEWAY_STATE_DIR` (where it keeps its outbox: replies not yet delivered),
//!   `SAYRI_TARGET_AGENT` and `SAYRI_SANDBOX_LEVEL` (the instance's agent and cap, for the
//!   original gateways; the daemon enforces them whatever a message says). A plugin also gets
//!   what the original gave its gateways: `SAYRI_STATE_DIR` and `SAYRI_CONFIG_DIR` (it finds
//!   `sayri.sock` in the state dir), `SAYRI_ALLOW_RESUME_PREVIOUS` (`1`/`0`) and
//!   `SAYRI_INACTIVITY_TIMEOUT` (seconds) from the instance, `SAYRI_PID_FILE`, `SAYRI_AUTH_FILE` and
//!   `SAYRI_PIN_FILE` (its own files in the config dir; the daemon never reads them).
//! * **Secrets**: exactly the vault keys the instance lists, each under its environment name,
//!   plus for a plugin its `secret_key` under its own name and each of its manifest's
//!   `required_secrets` the instance does not list, from the vault key `secret_key` names, else
//!   from the vault key of that name — all on the secrets descriptor (`SAYRI_SECRETS_FD`, see
//!   `sayri_protocol::child_secrets`; a Python plugin finds them in `os.environ`), never in the
//!   arguments or the environment; a missing one stops the start with a message naming it.

use super::{Host, child_name};
use crate::plugins::{self, PluginDirs, PluginKind};
use crate::supervisor::ChildSpec;
use sayri_core::domain::gateway::GatewayInstance;
use sayri_core::domain::gateway::instance::LEGACY_PLUGIN;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Prefix of every gateway program's file name.
pub const PROGRAM_PREFIX: &str = "sayri-gateway-";

/// Time a gateway gets to finish (e.g. deliver a last reply) between `SIGTERM` and `SIGKILL`.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The built-in program of `plugin` (see the module rules); `dirs` are named in the error.
///
/// # Errors
/// A sentence naming where it was looked for.
pub fn program_for(plugin: &str, dirs: &PluginDirs) -> Result<PathBuf, String> {
    let file = format!("{PROGRAM_PREFIX}{plugin}");
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(&file)));
    if let Some(p) = beside.as_ref().filter(|p| is_executable(p)) {
        return Ok(p.clone());
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(&file);
            if dir.is_absolute() && is_executable(&p) {
                return Ok(p);
            }
        }
    }
    Err(format!(
        "no gateway plugin {plugin} is installed (neither a plugin folder {plugin} with a manifest.json in {} or {}, nor the program {file} next to {} or on PATH); install the plugin there",
        dirs.user.display(),
        dirs.system.display(),
        beside
            .as_ref()
            .and_then(|p| p.parent())
            .map_or_else(|| "sayri".into(), |d| d.display().to_string())
    ))
}

/// The directory instance `id` keeps its outbox in (`$STATE/gateways/<id>`; the gateway
/// creates it, 0700).
pub fn state_dir(paths: &sayri_client::paths::Paths, id: &str) -> PathBuf {
    paths.state_dir.join("gateways").join(id)
}

/// The supervised child that runs `inst`.
///
/// # Errors
/// Its program is missing or its plugin broken, the vault is unavailable, or a secret it needs
/// is not in the vault.
pub fn spec_for(state: &dyn Host, inst: &GatewayInstance) -> Result<ChildSpec, String> {
    if inst.plugin == LEGACY_PLUGIN {
        return Err(format!(
            "gateway instance {} has no program to start: it takes messages from a gateway you run yourself, on {}",
            inst.id,
            state.paths().legacy_socket().display()
        ));
    }
    let dirs = PluginDirs::from_env(state.paths());
    let found = crate::offload::blocking(|| plugins::discover(&dirs));
    let plugin = found
        .find(&inst.plugin)
        .filter(|p| p.kind == PluginKind::Gateway);
    let plugin_used = plugin.is_some();
    let (mut spec, needed) = match plugin {
        Some(p) => (plugin_spec(state, inst, p)?, p.required_secrets().to_vec()),
        None => {
            if let Some(b) = found.broken(&inst.plugin) {
                return Err(format!(
                    "gateway plugin {} in {} cannot be used: {}",
                    inst.plugin,
                    b.dir.display(),
                    b.reason
                ));
            }
            let program = program_for(&inst.plugin, &dirs)?;
            (ChildSpec::new(child_name(&inst.id), program), Vec::new())
        }
    };
    spec = spec
        .env("SAYRI_GATEWAY_INSTANCE_ID", &inst.id)
        .env(
            "SAYRI_GATEWAY_SOCKET",
            state.paths().legacy_socket().to_string_lossy(),
        )
        .env(
            "SAYRI_GATEWAY_STATE_DIR",
            state_dir(state.paths(), &inst.id).to_string_lossy(),
        )
        .env("SAYRI_TARGET_AGENT", &inst.agent)
        .env("SAYRI_SANDBOX_LEVEL", inst.level_cap.name());
    spec.stop_grace = STOP_GRACE;
    for (name, value) in &inst.options {
        spec = spec.arg(format!("--{name}")).arg(value);
    }
    let mut wanted: Vec<(String, String)> = inst
        .secrets
        .iter()
        .map(|(n, k)| (n.clone(), k.clone()))
        .collect();
    if let Some(key) = inst
        .secret_key
        .as_ref()
        .filter(|k| plugin_used && !inst.secrets.contains_key(*k))
    {
        wanted.push((key.clone(), key.clone()));
    }
    for name in needed {
        if !inst.secrets.contains_key(&name) && !wanted.iter().any(|(n, _)| *n == name) {
            let key = inst.secret_key.clone().unwrap_or_else(|| name.clone());
            wanted.push((name, key));
        }
    }
    with_secrets(state, inst, spec, &wanted)
}

/// The program part of a gateway plugin's child: its entrypoint, in its folder, with the
/// variables the original gave its gateways.
fn plugin_spec(
    state: &dyn Host,
    inst: &GatewayInstance,
    plugin: &plugins::Plugin,
) -> Result<ChildSpec, String> {
    let Some(entry) = plugin.entrypoint.as_ref() else {
        return Err(format!(
            "gateway plugin {} in {} has no entrypoint",
            plugin.id,
            plugin.dir.display()
        ));
    };
    let paths = state.paths();
    let config = |file: String| paths.config_dir.join(file).to_string_lossy().into_owned();
    Ok(
        plugins::run::child_spec(child_name(&inst.id), plugin, entry, &[])
            .env("SAYRI_STATE_DIR", paths.state_dir.to_string_lossy())
            .env("SAYRI_CONFIG_DIR", paths.config_dir.to_string_lossy())
            .env(
                "SAYRI_ALLOW_RESUME_PREVIOUS",
                if inst.allow_resume_previous { "1" } else { "0" },
            )
            .env(
                "SAYRI_INACTIVITY_TIMEOUT",
                (u64::from(inst.inactivity_timeout_minutes) * 60).to_string(),
            )
            .env("SAYRI_PID_FILE", config(format!("gateway_{}.pid", inst.id)))
            .env(
                "SAYRI_AUTH_FILE",
                config(format!("authorizations_{}.json", inst.id)),
            )
            .env(
                "SAYRI_PIN_FILE",
                config(format!("pairing_pin_{}.json", inst.id)),
            ),
    )
}

/// `spec` with the secrets `wanted` (environment name, vault key) from the vault.
fn with_secrets(
    state: &dyn Host,
    inst: &GatewayInstance,
    mut spec: ChildSpec,
    wanted: &[(String, String)],
) -> Result<ChildSpec, String> {
    if wanted.is_empty() {
        return Ok(spec);
    }
    let brain = state.brain().map_err(|e| e.message)?;
    let guard = brain.vault();
    let Some(vault) = guard.as_ref() else {
        return Err(format!(
            "gateway {} needs secrets but the vault is unavailable: {} — see `sayri vault status`",
            inst.id,
            brain.vault_error.as_deref().unwrap_or("unknown reason")
        ));
    };
    for (name, key) in wanted {
        let Some(value) = vault.get(key) else {
            return Err(format!(
                "gateway {} needs secret {key} (given to it as {name}), which is not in the vault; set it with `sayri gateway edit {} --token` or `sayri vault set {key}`",
                inst.id, inst.id
            ));
        };
        spec = spec.secret(name, value.as_str());
    }
    Ok(spec)
}
