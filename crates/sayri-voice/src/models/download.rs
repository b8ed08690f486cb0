//! Downloads a model over HTTP(S) into the store, with progress and an optional sha256 check.

use super::{
    InstalledModel, ModelError, ModelKind, ModelStore, Progress, check_name, create_parent,
    finish_part, part_path,
};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::time::Duration;

/// How long a download may go without receiving a byte before it is given up.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// `url` without its credentials: the username and password of `http://user:pass@host/`
/// are removed; a string that is no URL is returned unchanged.
pub fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// Downloads `url` as model `name` of `kind` into `store`. The body streams into a `.part`
/// file; with `sha256` the result must match it, else nothing is installed
/// ([`ModelError::Checksum`]). A Piper voice's `.onnx.json` is fetched from `url + ".json"`;
/// when it cannot be, the voice is removed again (a voice without its config cannot speak).
/// `progress` sees bytes done and the `Content-Length` when the server sent one.
pub async fn download(
    store: &ModelStore,
    kind: ModelKind,
    name: &str,
    url: &str,
    sha256: Option<&str>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<InstalledModel, ModelError> {
    download_capped(store, kind, name, url, sha256, None, progress).await
}

/// [`download`] refusing a model file of more than `max_bytes` bytes: as soon as more arrive
/// (or the `Content-Length` announces more), the download fails with
/// [`ModelError::Download`] and its `.part` file is removed. Every download also fails when
/// no byte arrives for [`STALL_TIMEOUT`]. Errors name the URL without its credentials.
pub async fn download_capped(
    store: &ModelStore,
    kind: ModelKind,
    name: &str,
    url: &str,
    sha256: Option<&str>,
    max_bytes: Option<u64>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<InstalledModel, ModelError> {
    check_name(name)?;
    let dest = store.path(kind, name);
    fetch(url, &dest, name, sha256, max_bytes, progress).await?;
    if kind == ModelKind::PiperVoice {
        let mut side = dest.clone().into_os_string();
        side.push(".json");
        let config = fetch(
            &format!("{url}.json"),
            side.as_ref(),
            name,
            None,
            // A voice's config is a small JSON file.
            Some(1 << 20),
            &mut |_| {},
        )
        .await;
        if let Err(e) = config {
            // A voice without its config cannot speak: install neither.
            let _ = std::fs::remove_file(&dest);
            return Err(e);
        }
    }
    store.installed(kind, name)
}

async fn fetch(
    url: &str,
    dest: &std::path::Path,
    name: &str,
    sha256: Option<&str>,
    max_bytes: Option<u64>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<(), ModelError> {
    let fail = |reason: String| ModelError::Download {
        url: without_credentials(url),
        reason,
    };
    // Sayri's TLS setup (rustls with `ring`, the system's CA certificates for `https://`); the
    // workspace's reqwest carries no crypto provider of its own.
    let tls = sayri_llm::tls::client_config(url.starts_with("https://"))
        .map_err(|e| fail(e.to_string()))?;
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .user_agent(concat!("sayri/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let mut resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| fail(e.without_url().to_string()))?;
    if !resp.status().is_success() {
        return Err(fail(format!("HTTP {}", resp.status())));
    }
    let total = resp.content_length();
    if let (Some(t), Some(max)) = (total, max_bytes)
        && t > max
    {
        return Err(fail(format!(
            "the server announces {t} bytes, more than the {max} this model has"
        )));
    }
    let cap = match (total, max_bytes) {
        (Some(t), Some(m)) => Some(t.min(m)),
        (t, m) => t.or(m),
    };
    create_parent(dest)?;
    let part = part_path(dest);
    let io = |e: std::io::Error| ModelError::Io(format!("{}: {e}", part.display()));
    let mut out = std::fs::File::create(&part).map_err(io)?;
    let mut h = Sha256::new();
    let mut done = 0u64;
    loop {
        let chunk = match tokio::time::timeout(STALL_TIMEOUT, resp.chunk()).await {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                let _ = std::fs::remove_file(&part);
                return Err(fail(e.without_url().to_string()));
            }
            Err(_) => {
                let _ = std::fs::remove_file(&part);
                return Err(fail(format!(
                    "no data for {} s after {done} bytes; try again later or another mirror",
                    STALL_TIMEOUT.as_secs()
                )));
            }
        };
        done += chunk.len() as u64;
        if let Some(c) = cap
            && done > c
        {
            drop(out);
            let _ = std::fs::remove_file(&part);
            return Err(fail(format!(
                "the server sent more than the {c} bytes expected; nothing was installed"
            )));
        }
        h.update(&chunk);
        if let Err(e) = out.write_all(&chunk) {
            let _ = std::fs::remove_file(&part);
            return Err(io(e));
        }
        progress(Progress { done, total });
    }
    drop(out);
    if let Some(t) = total
        && t != done
    {
        let _ = std::fs::remove_file(&part);
        return Err(fail(format!("connection closed after {done} of {t} bytes")));
    }
    finish_part(&part, dest, name, &hex::encode(h.finalize()), sha256)
}
