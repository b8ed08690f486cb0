//! `asset_download`: a voice model downloaded into the voice model store in the background,
//! with `asset_progress` events — `{token, kind, name, percent, bytes, total}` each time the
//! whole percent grows (0 first; never repeated; below 100 while the file arrives), then
//! `{…, percent: 100, done: true, path}` once its sha256 matched and it is installed, or
//! `{…, done: false, error}` when it failed (nothing is installed then). One download per
//! asset at a time — in the daemon, and with `sayri models download` of the same model in
//! another process (the model's lock: the later one waits, saying so in `waiting`); a download
//! broken off is continued by the next one (`resumed_from`). The voice loop picks a new model
//! up at once.

use crate::assets::{self, Asset};
use crate::daemon::DaemonState;
use crate::daemon::dispatch::Ctx;
use sayri_core::domain::config::Config;
use sayri_protocol::params::{AssetDownloadParams, AssetKind, AssetParams};
use sayri_protocol::{ProtocolError, names};
use sayri_voice::models::{Downloaded, Event, ModelError, ModelKind, ModelStore, Request};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// `asset_download {kind, params}` → `{"started": true, "token", "kind", "name"}`, or
/// `{"started": false, "already_running": true, "token"}` while the same asset downloads.
///
/// # Errors
/// `invalid_params` naming what is missing or wrong in `params` (an unknown size or language,
/// a model without a known checksum and no `sha256`, a bad name or URL).
pub async fn asset_download(p: AssetDownloadParams, ctx: Ctx) -> Result<Value, ProtocolError> {
    let asset = assets::resolve(p.kind, &p.params)
        .map_err(|e| ProtocolError::invalid_params(format!("asset_download: {e}")))?;
    let Some(claim) = ctx.daemon.assets.claim(&asset.token) else {
        return Ok(json!({"started": false, "already_running": true, "token": asset.token}));
    };
    let answer = json!({
        "started": true, "token": asset.token, "kind": asset.kind.name(), "name": asset.name,
    });
    let daemon = ctx.daemon.clone();
    tokio::spawn(async move {
        run(&daemon, &asset).await;
        drop(claim);
    });
    Ok(answer)
}

/// Broadcasts one `asset_progress` event for `asset` with `fields`.
fn progress_event(daemon: &DaemonState, asset: &Asset, fields: Value) {
    let mut payload = Map::new();
    payload.insert("token".into(), json!(asset.token));
    payload.insert("kind".into(), json!(asset.kind.name()));
    payload.insert("name".into(), json!(asset.name));
    if let Value::Object(m) = fields {
        payload.extend(m);
    }
    daemon
        .broadcaster
        .broadcast(names::event::ASSET_PROGRESS, payload);
}

/// Who the daemon's downloads are, as a download of the same model elsewhere is told.
const HOLDER: &str = "the Sayri daemon (asset_download)";

/// The `asset_progress` fields of one download event, when it is one to send: each whole
/// percent once, growing; a wait for another download of the same model; a continuation.
fn event_fields(
    e: Event,
    last: &mut Option<u8>,
    last_bytes: &mut (u64, Option<u64>),
) -> Option<Value> {
    match e {
        Event::Progress(p) => {
            *last_bytes = (p.done, p.total);
            let pct = assets::percent(p.done, p.total).filter(|pct| *pct > 0)?;
            if last.is_some_and(|l| pct <= l) {
                return None;
            }
            *last = Some(pct);
            Some(json!({"percent": pct, "bytes": p.done, "total": p.total}))
        }
        Event::Waiting { holder } => Some(json!({
            "percent": last.unwrap_or(0), "waiting": format!("another download of it runs ({holder}); this one starts when it ends"),
        })),
        Event::Resuming { from, total } => {
            *last_bytes = (from, total);
            Some(
                json!({"percent": last.unwrap_or(0), "bytes": from, "total": total, "resumed_from": from}),
            )
        }
        Event::Restarting { kept, why } => {
            tracing::info!(
                "asset_download: {why}; the {kept} bytes kept are dropped and the file starts again"
            );
            None
        }
    }
}

/// Downloads `asset`, reporting progress, until it is installed, fails or the daemon stops.
async fn run(daemon: &Arc<DaemonState>, asset: &Asset) {
    let store = ModelStore::open_default();
    let mut last: Option<u8> = None;
    let mut last_bytes = (0u64, None);
    progress_event(
        daemon,
        asset,
        json!({"percent": 0, "bytes": 0, "total": null}),
    );
    let result = {
        let mut on_event = |e: Event| {
            if let Some(fields) = event_fields(e, &mut last, &mut last_bytes) {
                progress_event(daemon, asset, fields);
            }
        };
        let req = Request::new(
            asset.model_kind,
            &asset.name,
            &asset.url,
            Some(&asset.sha256),
            HOLDER,
        );
        let download = sayri_voice::models::download(&store, &req, &mut on_event);
        tokio::select! {
            r = download => Some(r),
            _ = daemon.shutdown.cancelled() => None,
        }
    };
    report(daemon, asset, result, last.unwrap_or(0), last_bytes.1);
}

/// The last `asset_progress` event of a download, and the voice loop told of a new model.
fn report(
    daemon: &Arc<DaemonState>,
    asset: &Asset,
    result: Option<Result<Downloaded, ModelError>>,
    percent: u8,
    total: Option<u64>,
) {
    match result {
        Some(Ok(d)) => {
            let m = d.model;
            tracing::info!(
                "asset_download: installed {} {} ({} bytes, sha256 verified{})",
                asset.kind.name(),
                asset.name,
                m.bytes,
                if d.already_installed {
                    "; it was installed already"
                } else {
                    ""
                }
            );
            progress_event(
                daemon,
                asset,
                json!({"percent": 100, "done": true, "path": m.path, "bytes": m.bytes,
                       "total": total, "already_installed": d.already_installed}),
            );
            // A setting that waited for this model (or `auto`) takes it now.
            daemon.voice.reconfigure(&daemon.config());
        }
        Some(Err(e)) => {
            tracing::warn!("asset_download {}: {e}", asset.token);
            progress_event(
                daemon,
                asset,
                json!({"percent": percent, "done": false, "error": e.to_string()}),
            );
        }
        None => progress_event(
            daemon,
            asset,
            json!({"percent": percent, "done": false,
                   "error": "the daemon stopped before the download finished; nothing was installed (what arrived is kept: asking again continues it)"}),
        ),
    }
}

/// Adds an `asset` descriptor to the voice model fields of `settings_schema` (`stt.model_size`
/// → `whisper_model`, `tts.voice` → `piper_voice`, `stt.wake_model` → `wake_word`):
/// `{kind, params, name, label, downloaded, path, size}` — `params` is what `asset_download`
/// takes for the model the current settings name, `size` megabytes when known.
pub fn describe(sections: &mut Value, cfg: &Config) {
    let store = ModelStore::open_default();
    let language = if cfg.stt.language == "auto" {
        "multi"
    } else {
        cfg.stt.language.as_str()
    };
    for field in sections
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter_map(|s| s["fields"].as_array_mut())
        .flatten()
    {
        let (kind, model_kind, params, name) = match field["key"].as_str() {
            Some("stt.model_size") => (
                AssetKind::WhisperModel,
                ModelKind::Whisper,
                json!({"model_size": cfg.stt.model_size, "language": language}),
                assets::whisper_name(&cfg.stt.model_size, language),
            ),
            Some("tts.voice") => (
                AssetKind::PiperVoice,
                ModelKind::PiperVoice,
                json!({"language": cfg.tts.language, "voice": cfg.tts.voice,
                       "quality": cfg.tts.quality}),
                format!("{}-{}-{}", cfg.tts.language, cfg.tts.voice, cfg.tts.quality),
            ),
            Some("stt.wake_model") if cfg.stt.wake_model != "auto" => (
                AssetKind::WakeWord,
                ModelKind::WakeWord,
                json!({"name": cfg.stt.wake_model}),
                cfg.stt.wake_model.clone(),
            ),
            _ => continue,
        };
        let Ok(parsed) = serde_json::from_value::<AssetParams>(params.clone()) else {
            continue;
        };
        let resolved = assets::resolve(kind, &parsed);
        let path = store.path(model_kind, &name);
        let size = resolved.as_ref().ok().and_then(|a| a.megabytes);
        let label = match size {
            Some(mb) => format!("{name} ({mb} MB)"),
            None => name.clone(),
        };
        field["asset"] = json!({
            "kind": kind.name(), "params": params, "name": name, "label": label,
            "downloaded": path.is_file(), "path": path, "size": size,
            // What `asset_download` needs besides these params (e.g. a sha256), when anything.
            "needs": resolved.err(),
        });
    }
}
