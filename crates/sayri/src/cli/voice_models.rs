//! `sayri models` for voice models: the voice section of `list`, and `download`, `import`,
//! `remove`, `import-ct2` for whisper ggml models, Piper voices and wake-word models (the
//! store of `sayri_voice::models`). Every download and import is checked against a sha256
//! (the catalog's, or `--sha256`) and installed only when it matches; progress shows on a
//! terminal.

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use sayri_voice::models::catalog::{self, CATALOG};
use sayri_voice::models::{ModelKind, ModelStore, Progress};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// A model kind as typed on the command line.
fn kind(s: &str) -> Result<ModelKind, String> {
    ModelKind::parse(s)
        .ok_or_else(|| format!("unknown model kind {s:?}: use whisper, piper, wakeword or vad"))
}

/// The voice subcommands of `sayri models`.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum VoiceModelsAction {
    /// Download a voice model into the store (whisper ggml models from the catalog by name;
    /// anything else with --url and --sha256).
    Download {
        /// whisper, piper, wakeword or vad.
        #[arg(value_parser = kind)]
        kind: ModelKind,
        /// Its name in the store (`tiny.en`, `en_US-lessac-medium`, `hey_jarvis_v0.1`).
        name: String,
        /// Where to download it from (a Piper voice's .onnx.json is fetched from URL.json).
        #[arg(long)]
        url: Option<String>,
        /// The file's sha256 (required with --url; the catalog's otherwise).
        #[arg(long)]
        sha256: Option<String>,
    },
    /// Copy a model file into the store (a Piper voice brings its .onnx.json along).
    Import {
        /// whisper, piper, wakeword or vad.
        #[arg(value_parser = kind)]
        kind: ModelKind,
        /// The model file (`ggml-*.bin` for whisper, `.onnx` otherwise).
        file: PathBuf,
        /// Its name in the store (default: from the file name).
        #[arg(long)]
        name: Option<String>,
        /// Install only if the file has this sha256.
        #[arg(long)]
        sha256: Option<String>,
    },
    /// Remove a model from the store.
    Remove {
        /// whisper, piper, wakeword or vad.
        #[arg(value_parser = kind)]
        kind: ModelKind,
        /// Its name in the store.
        name: String,
    },
    /// Convert a faster-whisper (CTranslate2) model directory to whisper.cpp's ggml format and
    /// install it.
    #[command(name = "import-ct2")]
    ImportCt2 {
        /// The directory with model.bin and config.json.
        dir: PathBuf,
        /// Its name in the store (default: from the directory name, e.g.
        /// faster-whisper-tiny.en → tiny.en).
        #[arg(long)]
        name: Option<String>,
    },
}

/// Prints the voice section of `sayri models list`: installed models, then what the catalog
/// offers.
pub(crate) fn print_list() {
    let store = ModelStore::open_default();
    println!("Voice models ({}):", store.root().display());
    let installed = store.list();
    if installed.is_empty() {
        println!(
            "  none installed — ./scripts/setup --voice installs whisper tiny.en, a Piper voice and openWakeWord"
        );
    }
    for m in &installed {
        println!(
            "  {:<9} {:<28} {:>7.1} MB  {}",
            m.kind.as_str(),
            m.name,
            m.bytes as f64 / 1e6,
            m.path.display()
        );
    }
    let offered: Vec<String> = CATALOG
        .iter()
        .filter(|e| {
            !installed
                .iter()
                .any(|m| m.kind == e.kind && m.name == e.name)
        })
        .map(|e| format!("{} ({} MB)", e.name, e.megabytes))
        .collect();
    if !offered.is_empty() {
        println!(
            "  downloadable whisper models (`sayri models download whisper NAME`): {}",
            offered.join(", ")
        );
    }
    for k in [ModelKind::PiperVoice, ModelKind::WakeWord] {
        println!("  more {}: {}", k.as_str(), catalog::sources(k));
    }
}

/// Runs a voice subcommand of `sayri models`.
pub(crate) async fn run(action: VoiceModelsAction) -> anyhow::Result<()> {
    let store = ModelStore::open_default();
    match action {
        VoiceModelsAction::Download {
            kind,
            name,
            url,
            sha256,
        } => download(&store, kind, &name, url, sha256).await,
        VoiceModelsAction::Import {
            kind,
            file,
            name,
            sha256,
        } => {
            let name = match name {
                Some(n) => n,
                None => name_from_file(kind, &file)?,
            };
            let bar = bar("importing");
            let m = store
                .import(kind, &name, &file, sha256.as_deref(), &mut |p| {
                    show(&bar, p)
                })
                .with_context(|| format!("importing {}", file.display()))?;
            bar.finish_and_clear();
            println!(
                "installed {} {} ({})",
                kind.as_str(),
                m.name,
                m.path.display()
            );
            Ok(())
        }
        VoiceModelsAction::Remove { kind, name } => {
            store.remove(kind, &name)?;
            println!("removed {} {name}", kind.as_str());
            Ok(())
        }
        VoiceModelsAction::ImportCt2 { dir, name } => {
            let name = match name {
                Some(n) => n,
                None => name_from_ct2_dir(&dir)?,
            };
            let bar = bar("converting");
            bar.set_length(1000);
            let (m, report) = store
                .import_ct2(&dir, &name, &mut |f| bar.set_position((f * 1000.0) as u64))
                .with_context(|| format!("converting {}", dir.display()))?;
            bar.finish_and_clear();
            println!(
                "installed whisper {} ({}; {} tensors, {:.1} MB)",
                m.name,
                m.path.display(),
                report.tensors,
                m.bytes as f64 / 1e6
            );
            Ok(())
        }
    }
}

async fn download(
    store: &ModelStore,
    kind: ModelKind,
    name: &str,
    url: Option<String>,
    sha256: Option<String>,
) -> anyhow::Result<()> {
    let entry = catalog::lookup(kind, name);
    let (url, sha) = match (url, sha256, entry) {
        (Some(u), Some(s), _) => (u, s),
        (None, None, Some(e)) => (e.url.to_string(), e.sha256.to_string()),
        (None, Some(s), Some(e)) => (e.url.to_string(), s),
        (Some(_), None, _) => bail!(
            "--url needs --sha256 HEX: nothing is installed without a checksum ({} lists where to find models and their checksums)",
            catalog::sources(kind)
        ),
        (None, _, None) => bail!(
            "{} {name} is not in Sayri's catalog: give --url URL --sha256 HEX (see {}), or `sayri models import {} FILE`",
            kind.as_str(),
            catalog::sources(kind),
            kind.as_str()
        ),
    };
    download_verified(store, kind, name, &url, &sha).await
}

/// Downloads `url` as model `name` of `kind` into `store` with a progress bar (on a terminal),
/// installing it only when its sha256 is `sha`, and prints what was installed. `sayri setup`
/// downloads its voice models through this too. A file whose sha256 is a catalog entry's may
/// not be bigger than that entry's size (its approximate megabytes plus a tenth): a server
/// sending more is refused as soon as it does. Output and errors name `url` without its
/// credentials.
pub(crate) async fn download_verified(
    store: &ModelStore,
    kind: ModelKind,
    name: &str,
    url: &str,
    sha: &str,
) -> anyhow::Result<()> {
    let bar = bar("downloading");
    let started = std::time::Instant::now();
    let max_bytes = catalog::CATALOG
        .iter()
        .find(|e| e.kind == kind && e.sha256.eq_ignore_ascii_case(sha))
        .map(|e| u64::from(e.megabytes) * (1 << 20) * 11 / 10);
    let m = sayri_voice::models::download_capped(
        store,
        kind,
        name,
        url,
        Some(sha),
        max_bytes,
        &mut |p| show(&bar, p),
    )
    .await;
    bar.finish_and_clear();
    let m = m?;
    println!(
        "installed {} {} ({:.1} MB in {:.1} s, sha256 verified) at {}",
        kind.as_str(),
        m.name,
        m.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        m.path.display()
    );
    Ok(())
}

/// A progress bar on stderr when it is a terminal (hidden otherwise).
fn bar(what: &str) -> ProgressBar {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

fn show(bar: &ProgressBar, p: Progress) {
    if let Some(t) = p.total {
        bar.set_length(t);
    }
    bar.set_position(p.done);
}

/// The store name of a model file: `ggml-NAME.bin` → NAME, `NAME.onnx` → NAME.
fn name_from_file(kind: ModelKind, file: &Path) -> anyhow::Result<String> {
    let f = file
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match kind {
        ModelKind::Whisper => f
            .strip_prefix("ggml-")
            .and_then(|n| n.strip_suffix(".bin"))
            .map(str::to_string),
        _ => f.strip_suffix(".onnx").map(str::to_string),
    };
    name.ok_or_else(|| {
        anyhow::anyhow!(
            "cannot tell the model's name from {f:?} (expected {}): give --name NAME",
            match kind {
                ModelKind::Whisper => "ggml-NAME.bin",
                _ => "NAME.onnx",
            }
        )
    })
}

/// The store name of a faster-whisper directory: `faster-whisper-tiny.en` → `tiny.en`.
fn name_from_ct2_dir(dir: &Path) -> anyhow::Result<String> {
    let base = dir
        .canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = ["faster-whisper-", "faster_whisper_", "whisper-"]
        .iter()
        .find_map(|p| base.strip_prefix(p))
        .unwrap_or(&base)
        .to_string();
    let known = name.split('.').next().is_some_and(|s| {
        [
            "tiny",
            "base",
            "small",
            "medium",
            "large-v3",
            "large-v3-turbo",
        ]
        .contains(&s)
    });
    if known {
        Ok(name)
    } else {
        bail!(
            "cannot tell the model's name from the directory {base:?}: give --name NAME (e.g. --name tiny.en)"
        )
    }
}
