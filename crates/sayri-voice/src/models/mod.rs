//! Voice model management: where whisper ggml models, Piper voices, wake-word models, the
//! Silero VAD model and the ONNX Runtime library live, and how they are listed, downloaded,
//! imported (including a CTranslate2 → ggml conversion) and removed.
//!
//! Layout under the store root (`$SAYRI_VOICE_MODELS_DIR`, default
//! `~/.cache/sayri/voice-models`):
//!
//! | kind | files |
//! |---|---|
//! | [`ModelKind::Whisper`] | `whisper/ggml-<name>.bin` |
//! | [`ModelKind::PiperVoice`] | `piper/<name>.onnx` + `piper/<name>.onnx.json` |
//! | [`ModelKind::WakeWord`] | `wakeword/<name>.onnx` (+ the shared `melspectrogram.onnx`, `embedding_model.onnx`) |
//! | [`ModelKind::Vad`] | `vad/<name>.onnx` |
//! | ONNX Runtime | `onnxruntime/libonnxruntime.so*` |
//! | whisper assets | `whisper-assets/{mel_80.npy,gpt2.tiktoken,multilingual.tiktoken}` |
//! | Piper program | `piper-venv/bin/piper` |
//!
//! Every write goes to a `.part` file that is renamed into place only after its sha256 (when
//! one is expected) matched, so a failed download or import never leaves a broken model. One
//! writer at a time holds a model's lock (`<model file>.lock`, in every process; see
//! [`lock`]); each installed model has a record (`.records/<kind>/<name>.json`, see
//! [`records`]) saying what its sha256 was checked against, which listings and
//! [`ModelStore::verify`] read. Downloads are bounded and resumable ([`download()`]).

pub mod catalog;
pub mod ct2;
mod download;
pub mod lock;
pub mod npy;
mod readiness;
pub mod records;

pub use ct2::{ConvertReport, WhisperAssets, convert_ct2_to_ggml};
pub use download::{
    Downloaded, Event, MAX_CONFIG_BYTES, Request, STALL_TIMEOUT, download, max_bytes,
};
pub use readiness::{Readiness, VoiceModels};
pub use records::{Integrity, Record, Reference, Verdict};

use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a model operation failed, with what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A model or program is not installed.
    #[error("{what} is not installed ({reason}) — {fix}")]
    NotInstalled {
        /// The missing thing.
        what: String,
        /// Why it counts as missing.
        reason: String,
        /// How to install it.
        fix: String,
    },
    /// The file is not a usable model of that kind.
    #[error("{0}")]
    BadModel(String),
    /// The sha256 of the data differs from the expected one; nothing was installed.
    #[error(
        "sha256 mismatch for {name}: expected {expected}, got {actual} — the file is corrupt or not the one intended; nothing was installed"
    )]
    Checksum {
        /// The model name.
        name: String,
        /// The sha256 asked for.
        expected: String,
        /// The sha256 of what arrived.
        actual: String,
    },
    /// A download failed.
    #[error("download of {url} failed: {reason}")]
    Download {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// Another process writes this model now (downloads, imports or removes it).
    #[error(
        "{what} is being written by another process ({holder}); try again once it has finished"
    )]
    Busy {
        /// The model.
        what: String,
        /// Who holds its lock (`pid <pid>: <who>`).
        holder: String,
    },
    /// A file operation failed.
    #[error("{0}")]
    Io(String),
}

/// What a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// whisper.cpp ggml speech-to-text model.
    Whisper,
    /// Piper voice (`.onnx` + `.onnx.json`).
    PiperVoice,
    /// openWakeWord classifier.
    WakeWord,
    /// Silero VAD.
    Vad,
}

impl ModelKind {
    /// Every kind, in listing order.
    pub const ALL: [ModelKind; 4] = [
        ModelKind::Whisper,
        ModelKind::PiperVoice,
        ModelKind::WakeWord,
        ModelKind::Vad,
    ];

    /// Parses `whisper | piper | wakeword | vad` (as typed on the command line).
    pub fn parse(s: &str) -> Option<ModelKind> {
        match s {
            "whisper" | "stt" => Some(ModelKind::Whisper),
            "piper" | "voice" | "tts" => Some(ModelKind::PiperVoice),
            "wakeword" | "wake" => Some(ModelKind::WakeWord),
            "vad" => Some(ModelKind::Vad),
            _ => None,
        }
    }

    /// The command-line word.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Whisper => "whisper",
            ModelKind::PiperVoice => "piper",
            ModelKind::WakeWord => "wakeword",
            ModelKind::Vad => "vad",
        }
    }

    /// The most bytes a downloaded model file of this kind may have when Sayri's catalog does
    /// not know the file: whisper 4 GiB (the largest ggml model, large-v3, is 3.1 GB), a Piper
    /// voice 256 MiB (a high-quality voice is about 120 MB), a wake-word or VAD model 32 MiB
    /// (they are a few MB).
    pub fn max_download_bytes(self) -> u64 {
        match self {
            ModelKind::Whisper => 4 << 30,
            ModelKind::PiperVoice => 256 << 20,
            ModelKind::WakeWord | ModelKind::Vad => 32 << 20,
        }
    }

    fn dir(self) -> &'static str {
        match self {
            ModelKind::Whisper => "whisper",
            ModelKind::PiperVoice => "piper",
            ModelKind::WakeWord => "wakeword",
            ModelKind::Vad => "vad",
        }
    }

    /// File name of model `name` of this kind.
    fn file_name(self, name: &str) -> String {
        match self {
            ModelKind::Whisper => format!("ggml-{name}.bin"),
            _ => format!("{name}.onnx"),
        }
    }

    /// The model name of a file of this kind, if it is one.
    fn name_of(self, file: &str) -> Option<String> {
        let name = match self {
            ModelKind::Whisper => file.strip_prefix("ggml-")?.strip_suffix(".bin")?,
            ModelKind::WakeWord if SHARED_WAKE_FILES.contains(&file) => return None,
            _ => file.strip_suffix(".onnx")?,
        };
        Some(name.to_string())
    }
}

/// The openWakeWord feature models every classifier needs.
pub const SHARED_WAKE_FILES: [&str; 2] = ["melspectrogram.onnx", "embedding_model.onnx"];

/// One installed model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InstalledModel {
    /// Its kind.
    pub kind: ModelKind,
    /// Its name (`tiny.en`, `en_US-joe-medium`, `hey_jarvis_v0.1`).
    pub name: String,
    /// The main file.
    pub path: PathBuf,
    /// Size of its files, bytes.
    pub bytes: u64,
}

/// Progress of a long operation: bytes done and, when known, the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes processed so far.
    pub done: u64,
    /// Total bytes, when known.
    pub total: Option<u64>,
}

/// The model store: one directory tree (layout in the module docs).
#[derive(Debug, Clone)]
pub struct ModelStore {
    root: PathBuf,
}

impl ModelStore {
    /// The store at `$SAYRI_VOICE_MODELS_DIR`, else `~/.cache/sayri/voice-models`.
    pub fn open_default() -> ModelStore {
        if let Some(dir) = std::env::var_os("SAYRI_VOICE_MODELS_DIR").filter(|d| !d.is_empty()) {
            return ModelStore::at(PathBuf::from(dir));
        }
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/tmp".into());
        ModelStore::at(home.join(".cache/sayri/voice-models"))
    }

    /// The store rooted at `root` (created on first write).
    pub fn at(root: impl Into<PathBuf>) -> ModelStore {
        ModelStore { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where model `name` of `kind` lives (whether or not it exists).
    pub fn path(&self, kind: ModelKind, name: &str) -> PathBuf {
        self.root.join(kind.dir()).join(kind.file_name(name))
    }

    /// The installed model `name` of `kind`, or [`ModelError::NotInstalled`] saying how to get it.
    pub fn require(&self, kind: ModelKind, name: &str) -> Result<PathBuf, ModelError> {
        let p = self.path(kind, name);
        if p.is_file() {
            Ok(p)
        } else {
            Err(ModelError::NotInstalled {
                what: format!("{} model {name}", kind.as_str()),
                reason: format!("{} does not exist", p.display()),
                fix: format!(
                    "run ./scripts/setup --voice, or `sayri models download {} {name}` / `sayri models import {} FILE`",
                    kind.as_str(),
                    kind.as_str()
                ),
            })
        }
    }

    /// The directory of the openWakeWord feature models and classifiers.
    pub fn wakeword_dir(&self) -> PathBuf {
        self.root.join("wakeword")
    }

    /// The directory of openai-whisper's assets (mel filters, vocabularies).
    pub fn whisper_assets_dir(&self) -> PathBuf {
        self.root.join("whisper-assets")
    }

    /// The ONNX Runtime shared library: `$ORT_DYLIB_PATH` when set, else the newest
    /// `onnxruntime/libonnxruntime.so*` in the store.
    pub fn onnxruntime_library(&self) -> Result<PathBuf, ModelError> {
        if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(p));
        }
        let dir = self.root.join("onnxruntime");
        let mut libs: Vec<PathBuf> = fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libonnxruntime.so"))
            })
            .collect();
        libs.sort();
        libs.pop().ok_or_else(|| ModelError::NotInstalled {
            what: "ONNX Runtime (libonnxruntime.so)".into(),
            reason: format!("nothing in {} and ORT_DYLIB_PATH is unset", dir.display()),
            fix: "run ./scripts/setup --voice (it unpacks the library from PyPI onnxruntime), or set ORT_DYLIB_PATH".into(),
        })
    }

    /// The `piper` program: `$SAYRI_PIPER` when set, else the store's private venv, else `piper`
    /// on `PATH`.
    pub fn piper_program(&self) -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("SAYRI_PIPER").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let venv = self.root.join("piper-venv/bin/piper");
        if venv.is_file() {
            return Some(venv);
        }
        find_in_path("piper")
    }

    /// Every installed model, by kind then name.
    pub fn list(&self) -> Vec<InstalledModel> {
        let mut out = Vec::new();
        for kind in ModelKind::ALL {
            let dir = self.root.join(kind.dir());
            let mut files: Vec<_> = fs::read_dir(&dir).into_iter().flatten().flatten().collect();
            files.sort_by_key(|e| e.file_name());
            for e in files {
                let file = e.file_name().to_string_lossy().into_owned();
                let Some(name) = kind.name_of(&file) else {
                    continue;
                };
                let mut bytes = e.metadata().map(|m| m.len()).unwrap_or(0);
                if kind == ModelKind::PiperVoice {
                    bytes += fs::metadata(sidecar(&e.path()))
                        .map(|m| m.len())
                        .unwrap_or(0);
                }
                out.push(InstalledModel {
                    kind,
                    name,
                    path: e.path(),
                    bytes,
                });
            }
        }
        out
    }

    /// Copies the model file `src` into the store as `name` (a Piper voice brings its
    /// `.onnx.json` along; it must exist). With `sha256`, the copy must match it.
    pub fn import(
        &self,
        kind: ModelKind,
        name: &str,
        src: &Path,
        sha256: Option<&str>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<InstalledModel, ModelError> {
        check_name(name)?;
        let dest = self.path(kind, name);
        let _lock = lock::take_now(&dest, "sayri models import", &self.what(kind, name))?;
        if kind == ModelKind::PiperVoice {
            let side = sidecar(src);
            if !side.is_file() {
                return Err(ModelError::BadModel(format!(
                    "a Piper voice needs its config beside it: {} is missing",
                    side.display()
                )));
            }
        }
        let digest = copy_checked(src, &dest, name, sha256, progress)?;
        if kind == ModelKind::PiperVoice {
            copy_checked(&sidecar(src), &sidecar(&dest), name, None, &mut |_| {})?;
        }
        let source = format!("import of {}", src.display());
        let reference = download::reference_of(kind, sha256);
        self.record_install(kind, name, &dest, &digest, reference, source)?;
        self.installed(kind, name)
    }

    /// `whisper model tiny.en`: model `name` of `kind` as messages name it.
    fn what(&self, kind: ModelKind, name: &str) -> String {
        format!("{} model {name}", kind.as_str())
    }

    /// Converts a faster-whisper (CTranslate2) model directory to ggml and installs it as
    /// whisper model `name` (`tiny.en`). Needs the whisper assets in the store.
    pub fn import_ct2(
        &self,
        dir: &Path,
        name: &str,
        progress: &mut dyn FnMut(f32),
    ) -> Result<(InstalledModel, ConvertReport), ModelError> {
        check_name(name)?;
        let assets = WhisperAssets::load(&self.whisper_assets_dir())?;
        let dest = self.path(ModelKind::Whisper, name);
        create_parent(&dest)?;
        let what = self.what(ModelKind::Whisper, name);
        let _lock = lock::take_now(&dest, "sayri models import-ct2", &what)?;
        let report = convert_ct2_to_ggml(dir, &assets, &dest, progress)?;
        let source = format!("conversion of {}", dir.display());
        let digest = sha256_file(&dest)?;
        self.record_install(
            ModelKind::Whisper,
            name,
            &dest,
            &digest,
            Reference::None,
            source,
        )?;
        Ok((self.installed(ModelKind::Whisper, name)?, report))
    }

    /// Removes model `name` of `kind` (and a voice's config). Errors when it is not installed.
    pub fn remove(&self, kind: ModelKind, name: &str) -> Result<(), ModelError> {
        check_name(name)?;
        let p = self.require(kind, name)?;
        let _lock = lock::take_now(&p, "sayri models remove", &self.what(kind, name))?;
        fs::remove_file(&p).map_err(|e| ModelError::Io(format!("{}: {e}", p.display())))?;
        if kind == ModelKind::PiperVoice {
            let _ = fs::remove_file(sidecar(&p));
        }
        self.forget_record(kind, name);
        Ok(())
    }

    fn installed(&self, kind: ModelKind, name: &str) -> Result<InstalledModel, ModelError> {
        self.list()
            .into_iter()
            .find(|m| m.kind == kind && m.name == name)
            .ok_or_else(|| {
                ModelError::Io(format!("{} {name} vanished after install", kind.as_str()))
            })
    }
}

/// A model name is one path component of letters, digits, `.`, `_`, `-`.
fn check_name(name: &str) -> Result<(), ModelError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ModelError::BadModel(format!(
            "bad model name {name:?}: use letters, digits, '.', '_' and '-' only"
        )))
    }
}

/// A Piper voice's config file: `<voice>.onnx.json`.
fn sidecar(onnx: &Path) -> PathBuf {
    let mut s = onnx.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

fn create_parent(p: &Path) -> Result<(), ModelError> {
    if let Some(dir) = p.parent() {
        fs::create_dir_all(dir).map_err(|e| ModelError::Io(format!("{}: {e}", dir.display())))?;
    }
    Ok(())
}

/// The sha256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    sha256_file_with(path, &mut |_| {})
}

/// [`sha256_file`], telling `progress` the bytes read.
pub fn sha256_file_with(
    path: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<String, ModelError> {
    let io = |e: std::io::Error| ModelError::Io(format!("{}: {e}", path.display()));
    let mut f = fs::File::open(path).map_err(io)?;
    let total = f.metadata().ok().map(|m| m.len());
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut done = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        done += n as u64;
        progress(Progress { done, total });
    }
    Ok(hex::encode(h.finalize()))
}

/// Copies `src` to `dest` through `dest.part`, hashing on the way; renames only when the
/// hash matches `sha256` (if given). Returns the sha256.
fn copy_checked(
    src: &Path,
    dest: &Path,
    name: &str,
    sha256: Option<&str>,
    progress: &mut dyn FnMut(Progress),
) -> Result<String, ModelError> {
    let io = |p: &Path, e: std::io::Error| ModelError::Io(format!("{}: {e}", p.display()));
    let mut input = fs::File::open(src).map_err(|e| io(src, e))?;
    let total = input.metadata().ok().map(|m| m.len());
    create_parent(dest)?;
    let part = part_path(dest);
    let mut out = fs::File::create(&part).map_err(|e| io(&part, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut done = 0u64;
    loop {
        let n = input.read(&mut buf).map_err(|e| io(src, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        std::io::Write::write_all(&mut out, &buf[..n]).map_err(|e| io(&part, e))?;
        done += n as u64;
        progress(Progress { done, total });
    }
    drop(out);
    let digest = hex::encode(h.finalize());
    finish_part(&part, dest, name, &digest, sha256)?;
    Ok(digest)
}

fn part_path(dest: &Path) -> PathBuf {
    let mut s = dest.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

/// Renames `part` to `dest` when `actual` matches `expected` (if any); deletes it otherwise.
fn finish_part(
    part: &Path,
    dest: &Path,
    name: &str,
    actual: &str,
    expected: Option<&str>,
) -> Result<(), ModelError> {
    if let Some(exp) = expected
        && !exp.eq_ignore_ascii_case(actual)
    {
        let _ = fs::remove_file(part);
        return Err(ModelError::Checksum {
            name: name.into(),
            expected: exp.to_lowercase(),
            actual: actual.into(),
        });
    }
    fs::rename(part, dest).map_err(|e| ModelError::Io(format!("{}: {e}", dest.display())))
}

/// The first `program` on `PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    find_in_path(program)
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}
