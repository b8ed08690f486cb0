//! The `status` object, built in one place so that every part of the daemon adds its fields here.

use crate::daemon::state::DaemonState;
use crate::wire;
use sayri_core::engine::CoreState;
use sayri_protocol::PROTOCOL_VERSION;
use sayri_protocol::reply::runtime::{
    LevelStatus, ProviderStatus, SandboxStatus, StatusReply, TokensStatus, VaultStatus,
};
use sayri_sandbox::CapabilityReport;

/// Builds the status object: `version`, `protocol_version`, `state` (a typed turn's, else the
/// voice loop's), `busy` (a turn runs or a spoken answer plays), `session_id`, `agent`,
/// `provider {base_url, model, api_key_set, local}` (while the local model is the
/// provider, `base_url` is its loopback endpoint or `null` while it starts, and `model` its
/// name), `local_model {state, configured, model, port?, error?, log_file}`, `tokens
/// {exact_tokenizer_loaded, bytes_per_token {model: rate}}`, `routines` (count, enabled,
/// running, next fire, system zone, invalid trigger files, monitors), `config_dir`,
/// `state_dir`, `socket`, `pid`, `clients` (connected IPC clients), `uptime_ms`, `supervised`
/// (every supervised child), `database` (the session database: path, state, sizes of the file
/// and its log, free space, other processes holding it, the last checkpoint),
/// `socket_warnings`, and the voice fields of [`crate::voice::status::fill`] (`stt_ready`,
/// `tts_ready`, `wake_ready` with what to install when false, `stt_mode`, `mic_on`, …).
pub fn build_status(state: &DaemonState) -> StatusReply {
    let cfg = state.config();
    let brain = state.brain.get();
    let core = brain.map(|b| b.core.status());
    let key_set =
        brain.and_then(|b| b.provider_key()).is_some() || !cfg.provider.api_key.is_empty();
    let shown_state = match core.as_ref().map(|c| c.state) {
        Some(s) if s != CoreState::Idle => s,
        _ => state.voice.state().unwrap_or(CoreState::Idle),
    };
    let mut status = StatusReply {
        version: env!("CARGO_PKG_VERSION").into(),
        protocol_version: PROTOCOL_VERSION,
        state: shown_state.as_str().into(),
        busy: core.as_ref().is_some_and(|c| c.busy) || state.voice.busy(),
        session_id: core.as_ref().map(|c| c.session_id.clone()),
        agent: core
            .as_ref()
            .map_or(cfg.agent.default_agent.clone(), |c| c.agent_id.clone()),
        sandbox: brain.map(|b| match b.sandbox_report.get() {
            None => SandboxStatus::Probing { probing: true },
            Some(Err(e)) => SandboxStatus::Failed { error: e.clone() },
            Some(Ok(r)) => probed(r),
        }),
        database: brain.map(|b| b.db(|s| s.status())),
        vault: brain.map(|b| VaultStatus {
            available: b.vault_error.is_none(),
            error: b.vault_error.clone(),
        }),
        provider: provider(brain.map(|b| &b.local_model), &cfg, key_set),
        local_model: brain.map(|b| b.local_model.status()),
        tokens: TokensStatus {
            exact_tokenizer_loaded: sayri_core::domain::tokens::exact::loaded(),
            bytes_per_token: brain
                .map(|b| b.core.engine().token_rates().into_iter().collect())
                .unwrap_or_default(),
        },
        socket_warnings: state
            .socket_warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone(),
        config_dir: state.paths.config_dir.clone(),
        state_dir: state.paths.state_dir.clone(),
        socket: state.paths.socket(),
        pid: std::process::id(),
        clients: state.broadcaster.client_count() as u64,
        ui_visible: state.broadcaster.client_count() > 0,
        uptime_ms: u64::try_from(state.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        supervised: state.supervisor.list().iter().map(wire::child).collect(),
        routines: state.routines.get().map(|r| r.status()),
        mcp: brain.map(|b| mcp_states(b)).unwrap_or_default(),
        ..StatusReply::default()
    };
    state.voice.fill_status(&mut status);
    status
}

/// `status.sandbox` once the probe ran.
fn probed(r: &CapabilityReport) -> SandboxStatus {
    SandboxStatus::Probed {
        levels: r
            .levels
            .iter()
            .map(|l| LevelStatus {
                level: l.level,
                available: l.guaranteed,
                missing: l.missing.clone(),
            })
            .collect(),
        unavailable: r
            .levels
            .iter()
            .filter(|l| !l.guaranteed)
            .map(|l| l.level)
            .collect(),
        legacy_tiocsti: r.kernel.legacy_tiocsti.name().into(),
        terminal_injection: r.kernel.legacy_tiocsti.describe(),
    }
}

/// The `provider` object: the configured endpoint, or the local model while it is the provider.
fn provider(
    local: Option<&std::sync::Arc<crate::local_model::LocalModel>>,
    cfg: &sayri_core::domain::config::Config,
    key_set: bool,
) -> ProviderStatus {
    match local.filter(|l| l.active()) {
        Some(l) => ProviderStatus {
            base_url: l.base_url(),
            model: l.status().model,
            api_key_set: false,
            local: true,
        },
        None => ProviderStatus {
            base_url: Some(cfg.provider.base_url.clone()),
            model: Some(cfg.provider.model.clone()),
            api_key_set: key_set,
            local: false,
        },
    }
}

/// The MCP servers as the daemon last saw them; a failure may quote what a server wrote (its
/// stderr, which can hold a secret it was given), so it is redacted like any outside text.
fn mcp_states(b: &crate::brain::Brain) -> Vec<sayri_protocol::reply::runtime::McpServerState> {
    use sayri_core::ports::Redactor;
    let mut states = b.mcp.states();
    for s in &mut states {
        s.last_error = s.last_error.take().map(|e| b.redactor.redact(&e));
    }
    states
}
