//! Voice model downloads for front-ends (`asset_download`): which file an asset request
//! names, and the set of downloads running, so one asset is never downloaded twice at once.
//!
//! An asset is a model of the voice model store (`sayri_voice::models`): a whisper.cpp model
//! (`whisper_model`), a Piper voice (`piper_voice`) or an openWakeWord model (`wake_word`).
//! Every download is checked against a sha256 before it is installed — the catalog's for the
//! whisper models Sayri knows, else the one the request gives — so nothing unverified is ever
//! installed. The transfer (`sayri_voice::models::download`) writes `<model>.part` and renames
//! it into place only after the check; an interrupted download leaves no model, and the next
//! one continues what arrived where the server allows it. `Downloads` keeps one download per
//! asset in the daemon; the model's lock keeps one across processes.

use sayri_core::sync::lock;
use sayri_protocol::params::{AssetKind, AssetParams};
use sayri_voice::models::ModelKind;
use sayri_voice::models::catalog::{self, CATALOG};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Where Piper voices are published (path layout `<lang2>/<lang>/<voice>/<quality>/<name>.onnx`).
pub const PIPER_VOICES: &str = "https://huggingface.co/rhasspy/piper-voices/resolve/v1.0.0";

/// One asset to download: where from, what it must hash to, and its name in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// The kind as the protocol names it.
    pub kind: AssetKind,
    /// The store's kind.
    pub model_kind: ModelKind,
    /// The model's name in the store (`tiny.en`, `en_US-joe-medium`, `hey_jarvis_v0.1`).
    pub name: String,
    /// `<kind>:<name>`: names the download in `asset_progress` events.
    pub token: String,
    /// Where it is downloaded from.
    pub url: String,
    /// The sha256 it must have (lowercase hex).
    pub sha256: String,
    /// Its approximate size in megabytes, when the catalog knows it.
    pub megabytes: Option<u32>,
}

/// The whisper sizes of the catalog (`tiny`, `base`, …, without the `.en` variants).
pub fn whisper_sizes() -> Vec<&'static str> {
    CATALOG
        .iter()
        .filter(|e| e.kind == ModelKind::Whisper && !e.name.ends_with(".en"))
        .map(|e| e.name)
        .collect()
}

/// The whisper model for `size` and `language`: the English-only model of that size for `en`
/// when the catalog has one, else the multilingual one.
pub fn whisper_name(size: &str, language: &str) -> String {
    let english = format!("{size}.en");
    if language == "en" && catalog::lookup(ModelKind::Whisper, &english).is_some() {
        english
    } else {
        size.to_string()
    }
}

/// A given, non-blank parameter, trimmed.
fn given(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Which file an `asset_download` request names.
///
/// * `whisper_model`: `name`, or `model_size` (a catalog size) with `language` (default `en`);
///   from the catalog unless `url` (with `sha256`) is given.
/// * `piper_voice`: `name`, or `language` (`en_US`), `voice` and `quality` (default `medium`);
///   needs `sha256` (Sayri knows no Piper voice's checksum); `url` defaults to the Piper voices
///   repository.
/// * `wake_word`: `name`, `url` and `sha256`.
///
/// # Errors
/// A sentence naming the parameter that is missing or wrong and what to give.
pub fn resolve(kind: AssetKind, p: &AssetParams) -> Result<Asset, String> {
    let model_kind = match kind {
        AssetKind::WhisperModel => ModelKind::Whisper,
        AssetKind::PiperVoice => ModelKind::PiperVoice,
        AssetKind::WakeWord => ModelKind::WakeWord,
    };
    let (name, default_url) = requested_name(kind, p)?;
    if !valid_name(&name) {
        return Err(format!(
            "bad model name {name:?}: use letters, digits, '.', '_' and '-' only"
        ));
    }
    let entry = catalog::lookup(model_kind, &name);
    let url = given(&p.url)
        .map(str::to_string)
        .or_else(|| entry.map(|e| e.url.to_string()))
        .or(default_url);
    let sha = given(&p.sha256)
        .map(str::to_ascii_lowercase)
        .or_else(|| entry.map(|e| e.sha256.to_string()));
    let Some(url) = url else {
        return Err(format!(
            "params.url is missing: Sayri does not know where {} {name} is published; give params.url and params.sha256 ({})",
            kind.name(),
            catalog::sources(model_kind)
        ));
    };
    match url::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
        _ => {
            return Err(format!(
                "params.url {url:?} is not an http:// or https:// URL"
            ));
        }
    }
    let Some(sha256) = sha else {
        return Err(format!(
            "params.sha256 is missing: no checksum is known for {} {name}, and nothing is installed without one; give the file's sha256 ({}), or install a file you have with `sayri models import`",
            kind.name(),
            catalog::sources(model_kind)
        ));
    };
    if sha256.len() != 64 || !sha256.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "params.sha256 must be 64 hexadecimal digits (got {} characters)",
            sha256.len()
        ));
    }
    Ok(Asset {
        kind,
        model_kind,
        token: format!("{}:{name}", kind.name()),
        name,
        url,
        sha256,
        megabytes: entry.map(|e| e.megabytes),
    })
}

/// The model name an `asset_download` request names, with the URL it is published at when
/// Sayri builds one (Piper voices) rather than taking it from the catalog or `params.url`.
fn requested_name(kind: AssetKind, p: &AssetParams) -> Result<(String, Option<String>), String> {
    Ok(match kind {
        AssetKind::WhisperModel => match (given(&p.name), given(&p.model_size)) {
            (Some(n), _) => (n.to_string(), None),
            (None, Some(size)) if whisper_sizes().contains(&size) => {
                (whisper_name(size, given(&p.language).unwrap_or("en")), None)
            }
            (None, Some(size)) => {
                return Err(format!(
                    "unknown whisper model: {size} (params.model_size is one of {})",
                    whisper_sizes().join(", ")
                ));
            }
            (None, None) => {
                return Err(format!(
                    "params.model_size is missing: give one of {} (or params.name)",
                    whisper_sizes().join(", ")
                ));
            }
        },
        AssetKind::PiperVoice => match given(&p.name) {
            Some(n) => (n.to_string(), None),
            None => piper_voice(p)?,
        },
        AssetKind::WakeWord => match given(&p.name) {
            Some(n) => (n.to_string(), None),
            None => {
                return Err(
                    "params.name is missing: give the wake-word model's name, e.g. hey_jarvis_v0.1"
                        .into(),
                );
            }
        },
    })
}

/// A Piper voice named by `language`, `voice` and `quality`, each checked, with its URL in the
/// Piper voices repository.
fn piper_voice(p: &AssetParams) -> Result<(String, Option<String>), String> {
    let language = given(&p.language)
        .ok_or("params.language is missing: give the voice's language key, e.g. en_US")?;
    let lang_ok = language.split_once('_').is_some_and(|(l, c)| {
        (2..=3).contains(&l.len())
            && l.chars().all(|x| x.is_ascii_lowercase())
            && c.len() == 2
            && c.chars().all(|x| x.is_ascii_uppercase())
    });
    if !lang_ok {
        return Err(format!(
            "unknown voice language: {language} (params.language is a key like en_US or es_ES)"
        ));
    }
    let voice =
        given(&p.voice).ok_or("params.voice is missing: give the voice's name, e.g. joe")?;
    if !word(voice) {
        return Err(format!(
            "params.voice {voice:?} is not a voice name (letters, digits, _ and -)"
        ));
    }
    let quality = given(&p.quality).unwrap_or("medium");
    if !["x_low", "low", "medium", "high"].contains(&quality) {
        return Err(format!(
            "params.quality {quality:?} is not one of x_low, low, medium, high"
        ));
    }
    let name = format!("{language}-{voice}-{quality}");
    let lang2 = language.split('_').next().unwrap_or(language);
    let url = format!("{PIPER_VOICES}/{lang2}/{language}/{voice}/{quality}/{name}.onnx");
    Ok((name, Some(url)))
}

/// The downloads running now, by token. One asset downloads at most once at a time.
#[derive(Debug, Clone, Default)]
pub struct Downloads(Arc<Mutex<HashSet<String>>>);

/// A running download's claim on its token; released when dropped.
#[derive(Debug)]
pub struct Claim {
    running: Downloads,
    token: String,
}

impl Drop for Claim {
    fn drop(&mut self) {
        lock(&self.running.0).remove(&self.token);
    }
}

impl Downloads {
    /// Claims `token`; `None` while a download of it runs.
    pub fn claim(&self, token: &str) -> Option<Claim> {
        let fresh = lock(&self.0).insert(token.to_string());
        fresh.then(|| Claim {
            running: self.clone(),
            token: token.to_string(),
        })
    }

    /// Whether a download of `token` runs.
    pub fn running(&self, token: &str) -> bool {
        lock(&self.0).contains(token)
    }
}

/// Whole percent of `done` out of `total`, below 100 until the model is installed.
pub fn percent(done: u64, total: Option<u64>) -> Option<u8> {
    let total = total.filter(|t| *t > 0)?;
    let p = (u128::from(done) * 100 / u128::from(total)).min(99);
    u8::try_from(p).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: serde_json::Value) -> AssetParams {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn whisper_sizes_pick_the_english_model_and_the_catalog_checksum() {
        let a = resolve(
            AssetKind::WhisperModel,
            &params(serde_json::json!({"model_size": "base", "language": "en"})),
        )
        .unwrap();
        assert_eq!(a.name, "base.en");
        assert_eq!(a.token, "whisper_model:base.en");
        assert_eq!(a.sha256.len(), 64);
        let multi = resolve(
            AssetKind::WhisperModel,
            &params(serde_json::json!({"model_size": "large-v3", "language": "en"})),
        )
        .unwrap();
        assert_eq!(multi.name, "large-v3");
        let e = resolve(
            AssetKind::WhisperModel,
            &params(serde_json::json!({"model_size": "huge"})),
        )
        .unwrap_err();
        assert!(e.contains("unknown whisper model: huge"), "{e}");
    }

    #[test]
    fn a_piper_voice_or_wake_word_needs_a_checksum_and_names_are_checked() {
        let e = resolve(
            AssetKind::PiperVoice,
            &params(serde_json::json!({"language": "en_US", "voice": "joe"})),
        )
        .unwrap_err();
        assert!(e.contains("params.sha256 is missing"), "{e}");
        let sha = "ab".repeat(32);
        let a = resolve(
            AssetKind::PiperVoice,
            &params(serde_json::json!({"language": "en_US", "voice": "joe", "sha256": sha})),
        )
        .unwrap();
        assert_eq!(a.name, "en_US-joe-medium");
        assert!(
            a.url
                .ends_with("/en/en_US/joe/medium/en_US-joe-medium.onnx"),
            "{}",
            a.url
        );
        for (bad, says) in [
            (
                serde_json::json!({"language": "english", "voice": "joe"}),
                "unknown voice language",
            ),
            (
                serde_json::json!({"language": "en_US", "voice": "../x"}),
                "not a voice name",
            ),
            (
                serde_json::json!({"language": "en_US", "voice": "j", "quality": "max"}),
                "quality",
            ),
        ] {
            let e = resolve(AssetKind::PiperVoice, &params(bad)).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let e = resolve(
            AssetKind::WakeWord,
            &params(serde_json::json!({"name": "x"})),
        )
        .unwrap_err();
        assert!(e.contains("params.url is missing"), "{e}");
        let e = resolve(
            AssetKind::WakeWord,
            &params(serde_json::json!({"name": "../x", "url": "http://h/x", "sha256": sha})),
        )
        .unwrap_err();
        assert!(e.contains("bad model name"), "{e}");
        let e = resolve(
            AssetKind::WakeWord,
            &params(serde_json::json!({"name": "x", "url": "file:///etc/passwd", "sha256": sha})),
        )
        .unwrap_err();
        assert!(e.contains("not an http"), "{e}");
    }

    #[test]
    fn one_download_per_token_and_percent_stays_below_100_until_installed() {
        let d = Downloads::default();
        let claim = d.claim("t").unwrap();
        assert!(d.claim("t").is_none());
        assert!(d.running("t"));
        drop(claim);
        assert!(d.claim("t").is_some());
        assert_eq!(percent(50, Some(100)), Some(50));
        assert_eq!(percent(100, Some(100)), Some(99));
        assert_eq!(percent(5, None), None);
    }
}
