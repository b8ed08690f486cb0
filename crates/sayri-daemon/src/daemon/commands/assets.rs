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
use sayri_protocol::ProtocolError;
use sayri_protocol::event::settings::AssetProgress;
use sayri_protocol::params::{AssetDownloadParams, AssetKind, AssetParams};
use sayri_protocol::reply::config::{AssetDescriptor, SettingsSection};
use sayri_protocol::reply::voice::AssetDownloadReply;
use sayri_voice::models::{Downloaded, Event, ModelError, ModelKind, ModelStore, Request};
use std::sync::Arc;

/// `asset_download {kind, params}` → `{"started": true, "token", "kind", "name"}`, or
/// `{"started": false, "already_running": true, "token"}` while the same asset downloads.
///
/// # Errors
/// `invalid_params` naming what is missing or wrong in `params` (an unknown size or language,
/// a model without a known checksum and no `sha256`, a bad name or URL).
pub async fn asset_download(
    p: AssetDownloadParams,
    ctx: Ctx,
) -> Result<AssetDownloadReply, ProtocolError> {
    let asset = assets::resolve(p.kind, &p.params)
        .map_err(|e| ProtocolError::invalid_params(format!("asset_download: {e}")))?;
    let Some(claim) = ctx.daemon.assets.claim(&asset.token) else {
        return Ok(AssetDownloadReply {
            started: false,
            token: asset.token,
            already_running: Some(true),
            kind: None,
            name: None,
        });
    };
    let answer = AssetDownloadReply {
        started: true,
        token: asset.token.clone(),
        already_running: None,
        kind: Some(asset.kind.name().into()),
        name: Some(asset.name.clone()),
    };
    let daemon = ctx.daemon.clone();
    tokio::spawn(async move {
        run(&daemon, &asset).await;
        drop(claim);
    });
    Ok(answer)
}

/// The `asset_progress` event of `asset` at `percent`; the caller adds what else it knows.
fn progress(asset: &Asset, percent: u8) -> AssetProgress {
    AssetProgress {
        token: asset.token.clone(),
        kind: asset.kind.name().into(),
        name: asset.name.clone(),
        percent,
        bytes: None,
        total: None,
        done: None,
        path: None,
        error: None,
        waiting: None,
        resumed_from: None,
        already_installed: None,
    }
}

/// `asset_progress` while the file arrives: `bytes` received of `total` (null when unknown).
fn arriving(asset: &Asset, percent: u8, bytes: u64, total: Option<u64>) -> AssetProgress {
    AssetProgress {
        bytes: Some(bytes),
        total: Some(total),
        ..progress(asset, percent)
    }
}

/// The last `asset_progress`: failed (`done: false`) with `error`; nothing was installed.
fn failed(asset: &Asset, percent: u8, error: String) -> AssetProgress {
    AssetProgress {
        done: Some(false),
        error: Some(error),
        ..progress(asset, percent)
    }
}

/// Who the daemon's downloads are, as a download of the same model elsewhere is told.
const HOLDER: &str = "the Sayri daemon (asset_download)";

/// The `asset_progress` event of one download event, when it is one to send: each whole
/// percent once, growing; a wait for another download of the same model; a continuation.
fn event_progress(
    asset: &Asset,
    e: Event,
    last: &mut Option<u8>,
    last_bytes: &mut (u64, Option<u64>),
) -> Option<AssetProgress> {
    match e {
        Event::Progress(p) => {
            *last_bytes = (p.done, p.total);
            let pct = assets::percent(p.done, p.total).filter(|pct| *pct > 0)?;
            if last.is_some_and(|l| pct <= l) {
                return None;
            }
            *last = Some(pct);
            Some(arriving(asset, pct, p.done, p.total))
        }
        Event::Waiting { holder } => Some(AssetProgress {
            waiting: Some(format!(
                "another download of it runs ({holder}); this one starts when it ends"
            )),
            ..progress(asset, last.unwrap_or(0))
        }),
        Event::Resuming { from, total } => {
            *last_bytes = (from, total);
            Some(AssetProgress {
                resumed_from: Some(from),
                ..arriving(asset, last.unwrap_or(0), from, total)
            })
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
    daemon.broadcaster.emit(&arriving(asset, 0, 0, None));
    let result = {
        let mut on_event = |e: Event| {
            if let Some(progress) = event_progress(asset, e, &mut last, &mut last_bytes) {
                daemon.broadcaster.emit(&progress);
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
            daemon.broadcaster.emit(&AssetProgress {
                done: Some(true),
                path: Some(m.path.clone()),
                already_installed: Some(d.already_installed),
                ..arriving(asset, 100, m.bytes, total)
            });
            // A setting that waited for this model (or `auto`) takes it now.
            daemon.voice.reconfigure(&daemon.config());
        }
        Some(Err(e)) => {
            tracing::warn!("asset_download {}: {e}", asset.token);
            daemon
                .broadcaster
                .emit(&failed(asset, percent, e.to_string()));
        }
        None => {
            daemon.broadcaster.emit(&failed(
                asset,
                percent,
                "the daemon stopped before the download finished; nothing was installed (what arrived is kept: asking again continues it)".into(),
            ));
        }
    }
}

/// Adds an `asset` descriptor to the voice model fields of `settings_schema` (`stt.model_size`
/// → `whisper_model`, `tts.voice` → `piper_voice`, `stt.wake_model` → `wake_word`):
/// `{kind, params, name, label, downloaded, path, size, needs}` — `params` is what
/// `asset_download` takes for the model the current settings name, `size` megabytes when known.
pub fn describe(sections: &mut [SettingsSection], cfg: &Config) {
    let store = ModelStore::open_default();
    let language = if cfg.stt.language == "auto" {
        "multi"
    } else {
        cfg.stt.language.as_str()
    };
    let given = |v: &str| Some(v.to_string());
    for field in sections.iter_mut().flat_map(|s| s.fields.iter_mut()) {
        let (kind, model_kind, params, name) = match field.key.as_str() {
            "stt.model_size" => (
                AssetKind::WhisperModel,
                ModelKind::Whisper,
                AssetParams {
                    model_size: given(&cfg.stt.model_size),
                    language: given(language),
                    ..AssetParams::default()
                },
                assets::whisper_name(&cfg.stt.model_size, language),
            ),
            "tts.voice" => (
                AssetKind::PiperVoice,
                ModelKind::PiperVoice,
                AssetParams {
                    language: given(&cfg.tts.language),
                    voice: given(&cfg.tts.voice),
                    quality: given(&cfg.tts.quality),
                    ..AssetParams::default()
                },
                format!("{}-{}-{}", cfg.tts.language, cfg.tts.voice, cfg.tts.quality),
            ),
            "stt.wake_model" if cfg.stt.wake_model != "auto" => (
                AssetKind::WakeWord,
                ModelKind::WakeWord,
                AssetParams {
                    name: given(&cfg.stt.wake_model),
                    ..AssetParams::default()
                },
                cfg.stt.wake_model.clone(),
            ),
            _ => continue,
        };
        let Ok(serde_json::Value::Object(wire_params)) = serde_json::to_value(&params) else {
            continue;
        };
        let resolved = assets::resolve(kind, &params);
        let path = store.path(model_kind, &name);
        let size = resolved.as_ref().ok().and_then(|a| a.megabytes);
        let label = match size {
            Some(mb) => format!("{name} ({mb} MB)"),
            None => name.clone(),
        };
        field.asset = Some(AssetDescriptor {
            kind: kind.name().into(),
            params: wire_params,
            name,
            label,
            downloaded: path.is_file(),
            path,
            size,
            // What `asset_download` needs besides these params (e.g. a sha256), when anything.
            needs: resolved.err(),
        });
    }
}
