//! Downloads a model over HTTP(S) into the store, with progress and an optional sha256 check.

use super::{
    InstalledModel, ModelError, ModelKind, ModelStore, Progress, check_name, create_parent,
    finish_part, part_path,
};
use sayri_http::without_credentials;
use sayri_http::{LimitError, Limits};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::time::Duration;

/// How long a download may go without receiving a byte before it is given up.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

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
    let client = sayri_http::client_builder(url.starts_with("https://"))
        .map_err(|e| fail(e.to_string()))?
        .user_agent(sayri_http::USER_AGENT)
        .connect_timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let part = part_path(dest);
    let io = |e: std::io::Error| ModelError::Io(format!("{}: {e}", part.display()));
    // The `.part` file is made when the first byte arrives (an answer refused before that
    // leaves nothing behind), and removed again on any error.
    let mut out: Option<std::fs::File> = None;
    let mut h = Sha256::new();
    let mut sink = |chunk: &[u8]| -> Result<(), ModelError> {
        let file = match &mut out {
            Some(f) => f,
            None => out.insert(open_part(dest, &part)?),
        };
        h.update(chunk);
        file.write_all(chunk).map_err(io)
    };
    let limits = Limits {
        max_bytes,
        deadline: None,
        stall: Some(STALL_TIMEOUT),
    };
    let got = sayri_http::fetch(client.get(url), limits, &mut sink, &mut |done, total| {
        progress(Progress { done, total })
    })
    .await;
    let created = out.is_some();
    drop(out);
    if let Err(e) = got {
        if created {
            let _ = std::fs::remove_file(&part);
        }
        return Err(match e {
            LimitError::Sink(e) => e,
            LimitError::Announced { announced, max } => fail(format!(
                "the server announces {announced} bytes, more than the {max} this model has"
            )),
            LimitError::Stalled { done, stall } => fail(format!(
                "no data for {} s after {done} bytes; try again later or another mirror",
                stall.as_secs()
            )),
            LimitError::TooLong { limit } => fail(format!(
                "the server sent more than the {limit} bytes expected; nothing was installed"
            )),
            other => fail(other.to_string()),
        });
    }
    if !created {
        // An empty body: an empty `.part` file, checked like any other.
        open_part(dest, &part)?;
    }
    finish_part(&part, dest, name, &hex::encode(h.finalize()), sha256)
}

/// Creates the parent directory of `dest` and the `.part` file `part`.
fn open_part(dest: &std::path::Path, part: &std::path::Path) -> Result<std::fs::File, ModelError> {
    create_parent(dest)?;
    std::fs::File::create(part).map_err(|e| ModelError::Io(format!("{}: {e}", part.display())))
}
