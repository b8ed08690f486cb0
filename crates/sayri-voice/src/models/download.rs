//! Downloads a model over HTTP(S) into the store, with progress and an optional sha256 check.

use super::{
    InstalledModel, ModelError, ModelKind, ModelStore, Progress, check_name, create_parent,
    finish_part, part_path,
};
use sha2::{Digest, Sha256};
use std::io::Write;

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
    check_name(name)?;
    let dest = store.path(kind, name);
    fetch(url, &dest, name, sha256, progress).await?;
    if kind == ModelKind::PiperVoice {
        let mut side = dest.clone().into_os_string();
        side.push(".json");
        let config = fetch(
            &format!("{url}.json"),
            side.as_ref(),
            name,
            None,
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
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<(), ModelError> {
    let fail = |reason: String| ModelError::Download {
        url: url.into(),
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
        .map_err(|e| fail(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(fail(format!("HTTP {}", resp.status())));
    }
    let total = resp.content_length();
    create_parent(dest)?;
    let part = part_path(dest);
    let io = |e: std::io::Error| ModelError::Io(format!("{}: {e}", part.display()));
    let mut out = std::fs::File::create(&part).map_err(io)?;
    let mut h = Sha256::new();
    let mut done = 0u64;
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return Err(fail(e.to_string()));
            }
        };
        h.update(&chunk);
        out.write_all(&chunk).map_err(io)?;
        done += chunk.len() as u64;
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
