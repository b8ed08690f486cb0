//! How an instance is started: which program, with which arguments, environment and secrets.
//!
//! * **Program**: `sayri-gateway-<plugin>`, looked up next to the `sayri` executable first (an
//!   installation puts them side by side), then in the daemon's `PATH`. Plugin `legacy` has
//!   none: its gateway is run by the person and cannot be started.
//! * **Arguments**: the instance's `options`, as `--NAME VALUE` — visible to every local user,
//!   which is why options never hold secrets.
//! * **Environment**: what the supervisor passes to every child (`PATH`, `HOME`, locale, …), plus
//!   `SAYRI_GATEWAY_INSTANCE_ID`, `SAYRI_GATEWAY_SOCKET` (the legacy socket),
//!   `SAYRI_GATEWAY_STATE_DIR` (where it keeps its outbox: replies not yet delivered),
//!   `SAYRI_TARGET_AGENT` and `SAYRI_SANDBOX_LEVEL` (the instance's agent and cap, for the
//!   original gateways; the daemon enforces them whatever a message says).
//! * **Secrets**: exactly the vault keys the instance lists, each under its environment name,
//!   on the secrets descriptor (`SAYRI_SECRETS_FD`, see `sayri_protocol::child_secrets`) —
//!   never in the arguments or the environment; a missing one stops the start with a message
//!   naming it.

use super::{Host, child_name};
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

/// The program of `plugin` (see the module rules).
///
/// # Errors
/// A sentence naming where it was looked for.
pub fn program_for(plugin: &str) -> Result<PathBuf, String> {
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
        "the gateway program {file} was not found next to {} nor on PATH; install it beside sayri (it is built with it)",
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
/// Its program is missing, the vault is unavailable, or a secret it lists is not in the vault.
pub fn spec_for(state: &dyn Host, inst: &GatewayInstance) -> Result<ChildSpec, String> {
    if inst.plugin == LEGACY_PLUGIN {
        return Err(format!(
            "gateway instance {} has no program to start: it takes messages from a gateway you run yourself, on {}",
            inst.id,
            state.paths().legacy_socket().display()
        ));
    }
    let program = program_for(&inst.plugin)?;
    let mut spec = ChildSpec::new(child_name(&inst.id), program)
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
    if inst.secrets.is_empty() {
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
    for (name, key) in &inst.secrets {
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
