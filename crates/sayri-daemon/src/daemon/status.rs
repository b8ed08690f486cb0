//! The `status` object, built in one place so that every part of the daemon adds its fields here.

use crate::daemon::state::DaemonState;
use sayri_protocol::PROTOCOL_VERSION;
use serde_json::{Value, json};

/// Builds the status object: `version`, `protocol_version`, `state` (a typed turn's, else the
/// voice loop's), `busy` (a turn runs or a spoken answer plays), `session_id`, `agent`,
/// `provider {base_url, model, api_key_set, local}` (while the local model is the
/// provider, `base_url` is its loopback endpoint or `null` while it starts, and `model` its
/// name), `local_model {state, configured, model, port?, error?, log_file}`, `tokens
/// {exact_tokenizer_loaded, bytes_per_token {model: rate}}`, `routines` (count, enabled,
/// running, next fire, system zone, invalid trigger files, monitors), `config_dir`, `state_dir`, `socket`, `pid`,
/// `clients` (connected IPC clients), `uptime_ms`, `supervised` (every supervised child:
/// `name`, `state`, `pid`, `keeper_pid`, `restarts`, `last_error`, `restart_in_ms`,
/// `log_file`), `database` (the session database: `path`, `state` `ok`/`corrupt`, `error` and
/// `fix` while corrupt, `size_bytes`, `wal_bytes`, `wal_limit_bytes`, `free_bytes`, `readers` and
/// `writers` (other processes holding it), `last_checkpoint`), and the voice fields of [`crate::voice::status::fields`] (`stt_ready`,
/// `tts_ready`, `wake_ready` with what to install when false, `stt_mode`, `mic_on`, …).
pub fn build_status(state: &DaemonState) -> Value {
    let cfg = state.config();
    let brain = state.brain.get();
    let core = brain.map(|b| b.core.status());
    let key_set =
        brain.and_then(|b| b.provider_key()).is_some() || !cfg.provider.api_key.is_empty();
    let shown_state = match core.as_ref().map(|c| c.state) {
        Some(s) if s != sayri_core::engine::CoreState::Idle => s,
        _ => state
            .voice
            .state()
            .unwrap_or(sayri_core::engine::CoreState::Idle),
    };
    let mut status = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "protocol_version": PROTOCOL_VERSION,
        "state": shown_state.as_str(),
        "busy": core.as_ref().is_some_and(|c| c.busy) || state.voice.busy(),
        "session_id": core.as_ref().map_or(Value::Null, |c| Value::String(c.session_id.clone())),
        "agent": core.as_ref().map_or(cfg.agent.default_agent.clone(), |c| c.agent_id.clone()),
        "sandbox": brain.map_or(Value::Null, |b| match b.sandbox_report.get() {
            None => json!({"probing": true}),
            Some(Err(e)) => json!({"error": e}),
            Some(Ok(r)) => json!({
                "levels": r.levels.iter().map(|l| json!({
                    "level": l.level, "available": l.guaranteed, "missing": l.missing,
                })).collect::<Vec<_>>(),
                "unavailable": r.levels.iter().filter(|l| !l.guaranteed).map(|l| l.level).collect::<Vec<_>>(),
                "legacy_tiocsti": r.kernel.legacy_tiocsti,
                "terminal_injection": r.kernel.legacy_tiocsti.describe(),
            }),
        }),
        "database": brain.map_or(Value::Null, |b| {
            serde_json::to_value(b.store.status()).unwrap_or(Value::Null)
        }),
        "vault": brain.map_or(Value::Null, |b| match &b.vault_error {
            Some(e) => json!({"available": false, "error": e}),
            None => json!({"available": true}),
        }),
        "provider": provider_json(brain.map(|b| &b.local_model), &cfg, key_set),
        "local_model": brain.map_or(Value::Null, |b| b.local_model.status_json()),
        "tokens": {
            "exact_tokenizer_loaded": sayri_core::domain::tokens::exact::loaded(),
            "bytes_per_token": brain.map_or_else(Default::default, |b| {
                b.core
                    .engine()
                    .token_rates()
                    .into_iter()
                    .map(|(model, rate)| (model, json!(rate)))
                    .collect::<serde_json::Map<_, _>>()
            }),
        },
        "socket_warnings": *state.socket_warnings.lock().unwrap_or_else(|p| p.into_inner()),
        "config_dir": state.paths.config_dir,
        "state_dir": state.paths.state_dir,
        "socket": state.paths.socket(),
        "pid": std::process::id(),
        "clients": state.broadcaster.client_count(),
        "uptime_ms": u64::try_from(state.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "supervised": state.supervisor.list(),
        "routines": state.routines.get().map_or(Value::Null, |r| r.status()),
    });
    if let Value::Object(m) = &mut status {
        m.extend(state.voice.status());
    }
    status
}

/// The `provider` object: the configured endpoint, or the local model while it is the provider.
fn provider_json(
    local: Option<&std::sync::Arc<crate::local_model::LocalModel>>,
    cfg: &sayri_core::domain::config::Config,
    key_set: bool,
) -> Value {
    match local.filter(|l| l.active()) {
        Some(l) => json!({
            "base_url": l.base_url(),
            "model": l.status_json().get("model").cloned().unwrap_or(Value::Null),
            "api_key_set": false,
            "local": true,
        }),
        None => json!({
            "base_url": cfg.provider.base_url,
            "model": cfg.provider.model,
            "api_key_set": key_set,
            "local": false,
        }),
    }
}
