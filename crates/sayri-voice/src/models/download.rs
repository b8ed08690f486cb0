//! Downloads a model over HTTP(S) into the store.
//!
//! * **Bounded.** Every model file has a size cap: its catalog size plus a tenth when Sayri's
//!   catalog knows the file, else the most a model of its kind may have
//!   ([`ModelKind::max_download_bytes`]); the server's own length bounds it further. A body
//!   going past either is cut off at once and nothing is installed.
//! * **Resumable.** The body goes to `<model>.part`, with `<model>.part.json` saying what it is
//!   a part of (the URL without credentials, the sha256 expected, the length and validators
//!   the server gave). A transfer that breaks, stalls or runs out of time keeps both, and the
//!   next download of the same model from the same URL with the same sha256 continues with
//!   `Range` where the server allows it (see `sayri_http::fetch_resumable`), else starts again.
//! * **One at a time.** A download holds its model's lock (`<model>.lock`, see `lock`) from
//!   start to install; a second download of it — from another process too — waits, told who
//!   holds it, and finds the model installed when the first succeeded.
//! * **Checked and recorded.** With a sha256 the file must match it, else nothing is installed
//!   ([`ModelError::Checksum`]); what was installed is recorded (`records`) with what its
//!   sha256 was checked against.
//!
//! Errors name the URL without its credentials and say how many bytes of how many arrived.

use super::records::Reference;
use super::{InstalledModel, ModelError, ModelKind, ModelStore, Progress, catalog};
use super::{check_name, create_parent, finish_part, lock, part_path};
use sayri_http::{LimitError, Limits, Partial, Start, Validators, without_credentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a download may go without receiving a byte before it is given up (what
/// [`Request::new`] sets).
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes a Piper voice's `.onnx.json` config may have.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// One model download (see [`download`]).
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The model's kind.
    pub kind: ModelKind,
    /// Its name in the store.
    pub name: &'a str,
    /// Where from (a Piper voice's config comes from `url + ".json"`).
    pub url: &'a str,
    /// The sha256 the file must have; `None` installs it unverified.
    pub sha256: Option<&'a str>,
    /// The most bytes the model file may have; `None`: [`max_bytes`].
    pub max_bytes: Option<u64>,
    /// Who downloads (`sayri models download`, `the Sayri daemon`), as a second download of
    /// the same model is told while it waits.
    pub holder: &'a str,
    /// How long the body may go without a byte.
    pub stall: Duration,
}

impl<'a> Request<'a> {
    /// A download of `url` as model `name` of `kind`, checked against `sha256`, by `holder`,
    /// with the default cap ([`max_bytes`]) and stall timeout ([`STALL_TIMEOUT`]).
    pub fn new(
        kind: ModelKind,
        name: &'a str,
        url: &'a str,
        sha256: Option<&'a str>,
        holder: &'a str,
    ) -> Request<'a> {
        Request {
            kind,
            name,
            url,
            sha256,
            max_bytes: None,
            holder,
            stall: STALL_TIMEOUT,
        }
    }
}

/// What a download tells its display as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Another download of the same model runs (`holder`: `pid <pid>: <who>`); this one waits.
    Waiting {
        /// Who holds the model's lock.
        holder: String,
    },
    /// A partial copy is continued from byte `from`.
    Resuming {
        /// Bytes already there.
        from: u64,
        /// The whole file's length, when known.
        total: Option<u64>,
    },
    /// A partial copy of `kept` bytes could not be continued; the file starts again.
    Restarting {
        /// The bytes that are dropped.
        kept: u64,
        /// Why (the server ignores ranges, the file changed, …).
        why: String,
    },
    /// Bytes of the model file there are, and its length when known.
    Progress(Progress),
}

/// A finished download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// The installed model.
    pub model: InstalledModel,
    /// Nothing was fetched: the model was installed already with this sha256 (possibly by a
    /// download this one waited for).
    pub already_installed: bool,
    /// The offset the transfer continued from (0: from the start).
    pub resumed_from: u64,
}

/// The most bytes a download of model `name` of `kind` with `sha256` may bring: when the
/// catalog has that file (by name and checksum, or by checksum alone), its size plus a tenth;
/// otherwise [`ModelKind::max_download_bytes`].
pub fn max_bytes(kind: ModelKind, name: &str, sha256: Option<&str>) -> u64 {
    let same = |e: &&catalog::CatalogEntry| sha256.is_none_or(|s| e.sha256.eq_ignore_ascii_case(s));
    catalog::lookup(kind, name)
        .filter(same)
        .or_else(|| {
            let s = sha256?;
            catalog::CATALOG
                .iter()
                .find(|e| e.kind == kind && e.sha256.eq_ignore_ascii_case(s))
        })
        .map_or(kind.max_download_bytes(), |e| {
            u64::from(e.megabytes) * (1 << 20) * 11 / 10
        })
}

/// What `sha256` is for a model of `kind`: a checksum of Sayri's catalog, one given, or none.
pub(super) fn reference_of(kind: ModelKind, sha256: Option<&str>) -> Reference {
    match sha256 {
        None => Reference::None,
        Some(s)
            if catalog::CATALOG
                .iter()
                .any(|e| e.kind == kind && e.sha256.eq_ignore_ascii_case(s)) =>
        {
            Reference::Catalog
        }
        Some(_) => Reference::Given,
    }
}

/// Downloads `req` into `store` (the rules are in the module notes); `on_event` sees the
/// waiting, resuming and progress.
///
/// # Errors
/// [`ModelError::Download`] saying what broke and how many bytes of how many arrived,
/// [`ModelError::Checksum`], or a file error naming the file.
pub async fn download(
    store: &ModelStore,
    req: &Request<'_>,
    on_event: &mut (dyn FnMut(Event) + Send),
) -> Result<Downloaded, ModelError> {
    check_name(req.name)?;
    let dest = store.path(req.kind, req.name);
    let _lock = lock::wait_for(&dest, req.holder, &mut |holder| {
        on_event(Event::Waiting { holder })
    })
    .await?;
    if let Some(model) = installed_with(store, req) {
        return Ok(Downloaded {
            model,
            already_installed: true,
            resumed_from: 0,
        });
    }
    let client = client(req.url)?;
    let cap = req
        .max_bytes
        .unwrap_or_else(|| max_bytes(req.kind, req.name, req.sha256));
    let file = Target {
        url: req.url,
        dest: &dest,
        name: req.name,
        sha256: req.sha256,
        cap,
        stall: req.stall,
    };
    let got = fetch_file(&client, &file, on_event).await?;
    if req.kind == ModelKind::PiperVoice {
        let side = super::sidecar(&dest);
        let config_url = format!("{}.json", req.url);
        let config = Target {
            url: &config_url,
            dest: &side,
            sha256: None,
            cap: MAX_CONFIG_BYTES,
            ..file
        };
        if let Err(e) = fetch_file(&client, &config, &mut |_| {}).await {
            // A voice without its config cannot speak: install neither.
            let _ = std::fs::remove_file(&dest);
            return Err(e);
        }
    }
    let reference = reference_of(req.kind, req.sha256);
    store.record_install(
        req.kind,
        req.name,
        &dest,
        &got.sha256,
        reference,
        without_credentials(req.url),
    )?;
    Ok(Downloaded {
        model: store.installed(req.kind, req.name)?,
        already_installed: false,
        resumed_from: got.resumed_from,
    })
}

/// The model `req` names when it is installed already with the sha256 `req` expects, checked
/// then and unchanged in size since.
fn installed_with(store: &ModelStore, req: &Request<'_>) -> Option<InstalledModel> {
    let sha = req.sha256?;
    let record = store.record(req.kind, req.name)?;
    if !record.sha256.eq_ignore_ascii_case(sha) || record.reference == Reference::None {
        return None;
    }
    let m = store.installed(req.kind, req.name).ok()?;
    matches!(store.integrity(&m), super::Integrity::Verified { .. }).then_some(m)
}

fn client(url: &str) -> Result<sayri_http::Client, ModelError> {
    let fail = |reason: String| ModelError::Download {
        url: without_credentials(url),
        reason,
    };
    // Sayri's TLS setup (rustls with `ring`, the system's CA certificates for `https://`).
    sayri_http::client_builder(url.starts_with("https://"))
        .map_err(|e| fail(e.to_string()))?
        .user_agent(sayri_http::USER_AGENT)
        .connect_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| fail(e.without_url().to_string()))
}

/// One file to fetch.
#[derive(Debug, Clone, Copy)]
struct Target<'a> {
    url: &'a str,
    dest: &'a Path,
    name: &'a str,
    sha256: Option<&'a str>,
    cap: u64,
    stall: Duration,
}

/// What a fetched file turned out to be.
struct FileFetched {
    sha256: String,
    resumed_from: u64,
}

/// What `<model>.part.json` says of the `.part` file beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PartMeta {
    url: String,
    sha256: Option<String>,
    total: Option<u64>,
    etag: Option<String>,
    last_modified: Option<String>,
}

fn meta_path(part: &Path) -> PathBuf {
    let mut s = part.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

/// Where an earlier attempt at `t` left off, when its `.part` is of the same URL and sha256
/// (a part of anything else is removed).
fn resume_point(t: &Target<'_>, part: &Path, meta: &Path) -> Option<Partial> {
    let bytes = std::fs::metadata(part).ok()?.len();
    let m = std::fs::read_to_string(meta)
        .ok()
        .and_then(|s| serde_json::from_str::<PartMeta>(&s).ok());
    let same = m.as_ref().is_some_and(|m| {
        m.url == without_credentials(t.url)
            && m.sha256.as_deref().map(str::to_ascii_lowercase)
                == t.sha256.map(str::to_ascii_lowercase)
            && m.total.is_none_or(|total| bytes <= total)
    });
    let Some(m) = m.filter(|_| same && bytes > 0) else {
        let _ = std::fs::remove_file(part);
        let _ = std::fs::remove_file(meta);
        return None;
    };
    Some(Partial {
        bytes,
        total: m.total,
        validators: Validators {
            etag: m.etag,
            last_modified: m.last_modified,
        },
    })
}

/// The `.part` file as a download's sink: truncated or continued as the answer says, hashed
/// on the way, described by its `.part.json`.
struct PartSink<'a, 'e> {
    target: &'a Target<'a>,
    part: PathBuf,
    meta: PathBuf,
    partial: Option<Partial>,
    file: Option<std::fs::File>,
    hash: Sha256,
    start: Option<Start>,
    on_event: &'e mut (dyn FnMut(Event) + Send),
}

impl PartSink<'_, '_> {
    fn io(&self, e: std::io::Error) -> ModelError {
        ModelError::Io(format!("{}: {e}", self.part.display()))
    }

    /// Opens the `.part` file at `offset`, hashing what it holds before it.
    fn open_at(&mut self, offset: u64) -> Result<std::fs::File, ModelError> {
        create_parent(&self.part)?;
        self.hash = Sha256::new();
        if offset == 0 {
            return std::fs::File::create(&self.part).map_err(|e| self.io(e));
        }
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.part)
            .map_err(|e| self.io(e))?;
        let mut head = (&mut f).take(offset);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = head.read(&mut buf).map_err(|e| self.io(e))?;
            if n == 0 {
                break;
            }
            self.hash.update(&buf[..n]);
        }
        f.set_len(offset).map_err(|e| self.io(e))?;
        Ok(f)
    }

    fn write_meta(&self, start: &Start) -> Result<(), ModelError> {
        let meta = PartMeta {
            url: without_credentials(self.target.url),
            sha256: self.target.sha256.map(str::to_ascii_lowercase),
            total: start.total,
            etag: start.validators.etag.clone(),
            last_modified: start.validators.last_modified.clone(),
        };
        let text = serde_json::to_string(&meta).map_err(|e| ModelError::Io(e.to_string()))?;
        std::fs::write(&self.meta, text)
            .map_err(|e| ModelError::Io(format!("{}: {e}", self.meta.display())))
    }

    /// Whether what the sink holds can be continued by a later download.
    fn resumable(&self) -> bool {
        self.start
            .as_ref()
            .is_some_and(|s| s.validators.if_range().is_some())
    }

    /// Bytes the `.part` file holds now.
    fn kept(&self) -> u64 {
        std::fs::metadata(&self.part).map_or(0, |m| m.len())
    }
}

impl sayri_http::Sink for PartSink<'_, '_> {
    type Error = ModelError;

    fn start(&mut self, start: &Start) -> Result<(), ModelError> {
        let file = self.open_at(start.offset)?;
        self.file = Some(file);
        self.write_meta(start)?;
        if start.offset > 0 {
            (self.on_event)(Event::Resuming {
                from: start.offset,
                total: start.total,
            });
        } else if let (Some(why), Some(p)) = (&start.restarted, &self.partial) {
            (self.on_event)(Event::Restarting {
                kept: p.bytes,
                why: why.to_string(),
            });
        }
        self.start = Some(start.clone());
        Ok(())
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), ModelError> {
        self.hash.update(chunk);
        let written = match &mut self.file {
            Some(f) => f.write_all(chunk),
            None => Ok(()),
        };
        written.map_err(|e| self.io(e))
    }

    fn progress(&mut self, done: u64, total: Option<u64>) {
        (self.on_event)(Event::Progress(Progress { done, total }));
    }
}

/// Fetches `t` into its `.part` file and installs it (see the module notes).
async fn fetch_file(
    client: &sayri_http::Client,
    t: &Target<'_>,
    on_event: &mut (dyn FnMut(Event) + Send),
) -> Result<FileFetched, ModelError> {
    let part = part_path(t.dest);
    let meta = meta_path(&part);
    let partial = resume_point(t, &part, &meta);
    let mut sink = PartSink {
        target: t,
        part: part.clone(),
        meta: meta.clone(),
        partial: partial.clone(),
        file: None,
        hash: Sha256::new(),
        start: None,
        on_event,
    };
    let limits = Limits {
        max_bytes: Some(t.cap),
        deadline: None,
        stall: Some(t.stall),
    };
    let got = sayri_http::fetch_resumable(client, t.url, partial.as_ref(), limits, &mut sink).await;
    let (resumable, kept) = (sink.resumable(), sink.kept());
    let started = sink.start.is_some();
    let digest = hex::encode(std::mem::take(&mut sink.hash).finalize());
    drop(sink);
    let fetched = match got {
        Ok(f) => f,
        Err(e) => {
            let keep = match &e {
                LimitError::Broken { .. }
                | LimitError::Stalled { .. }
                | LimitError::Deadline { .. }
                | LimitError::Truncated { .. } => resumable,
                // Nothing of this answer reached the file: an earlier part stays as it was.
                LimitError::Transport(_) | LimitError::Status(_) => !started,
                _ => false,
            };
            if !keep {
                let _ = std::fs::remove_file(&part);
                let _ = std::fs::remove_file(&meta);
            }
            return Err(failure(t, e, keep.then_some(kept)));
        }
    };
    let _ = std::fs::remove_file(&meta);
    if !started {
        // An empty body: an empty `.part` file, checked like any other.
        create_parent(&part)?;
        std::fs::File::create(&part)
            .map_err(|e| ModelError::Io(format!("{}: {e}", part.display())))?;
    }
    finish_part(&part, t.dest, t.name, &digest, t.sha256)?;
    Ok(FileFetched {
        sha256: digest,
        resumed_from: fetched.resumed_from,
    })
}

/// The error of a failed fetch of `t` in words; `kept`: the bytes kept for the next attempt.
fn failure(t: &Target<'_>, e: LimitError<ModelError>, kept: Option<u64>) -> ModelError {
    let reason = match e {
        LimitError::Sink(e) => return e,
        LimitError::Announced { announced, max } => format!(
            "the server announces {announced} bytes, more than the {max} this model may have; nothing was installed"
        ),
        LimitError::TooLong { limit } => format!(
            "the server sent more than the {limit} bytes this model may have; nothing was installed"
        ),
        other => {
            let next = match kept {
                Some(n) if n > 0 => format!(
                    "the {n} bytes that arrived are kept, and the next download of it continues from there"
                ),
                _ => "nothing was installed; try again later or from another mirror".into(),
            };
            format!("{other}; {next}")
        }
    };
    ModelError::Download {
        url: without_credentials(t.url),
        reason,
    }
}
