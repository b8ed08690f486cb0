//! `sayri models` for voice models: the voice section of `list`, and `download`, `import`,
//! `remove`, `import-ct2`, `verify` for whisper ggml models, Piper voices and wake-word models
//! (the store of `sayri_voice::models`). Every download is checked against a sha256 (the
//! catalog's, or `--sha256`) and installed only when it matches; an import without
//! `--sha256` is installed and listed as unverified. Downloads are bounded, continue where an
//! earlier one broke off, and wait for another download of the same model (in any process);
//! progress shows on a terminal.

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use sayri_client::terminal_text::terminal_safe;
use sayri_voice::models::catalog::{self, CATALOG};
use sayri_voice::models::{Event, ModelKind, ModelStore, Progress, Request};
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
    /// Recompute the sha256 of installed voice models and compare it with Sayri's catalog or the
    /// checksum recorded when they were installed (exit status 1 when one is corrupt).
    Verify {
        /// The model (default: every installed voice model).
        name: Option<String>,
        /// Only models of this kind (whisper, piper, wakeword or vad).
        #[arg(long, value_parser = kind)]
        kind: Option<ModelKind>,
        /// Compare with this sha256 instead (and record it when it matches).
        #[arg(long)]
        sha256: Option<String>,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
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
        let (mark, why) = crate::cli::model_checks::mark(&store, m);
        println!(
            "  {:<9} {:<28} {:>7.1} MB  {:<10}  {}",
            m.kind.as_str(),
            terminal_safe(&m.name),
            m.bytes as f64 / 1e6,
            mark,
            m.path.display()
        );
        if let Some(why) = why {
            println!("  {:<9} {}", "", terminal_safe(&why));
        }
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

/// Runs a voice subcommand of `sayri models`; the exit status.
pub(crate) async fn run(action: VoiceModelsAction) -> anyhow::Result<i32> {
    let store = ModelStore::open_default();
    match action {
        VoiceModelsAction::Download {
            kind,
            name,
            url,
            sha256,
        } => download(&store, kind, &name, url, sha256).await.map(|()| 0),
        VoiceModelsAction::Verify {
            name,
            kind,
            sha256,
            json,
        } => crate::cli::model_checks::verify(name.as_deref(), kind, sha256.as_deref(), json),
        action => other(&store, action).map(|()| 0),
    }
}

/// `import`, `remove`, `import-ct2`.
fn other(store: &ModelStore, action: VoiceModelsAction) -> anyhow::Result<()> {
    match action {
        VoiceModelsAction::Download { .. } | VoiceModelsAction::Verify { .. } => Ok(()),
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
            let (mark, why) = crate::cli::model_checks::mark(store, &m);
            println!(
                "installed {} {} ({}; {mark}{})",
                kind.as_str(),
                m.name,
                m.path.display(),
                why.map(|w| format!(": {w}")).unwrap_or_default()
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
    download_verified(store, kind, name, &url, &sha, "sayri models download").await
}

/// Downloads `url` as model `name` of `kind` into `store` with a progress bar (on a terminal),
/// installing it only when its sha256 is `sha`, and prints what was installed; `holder` is who
/// a second download of the same model is told it waits for. `sayri setup` downloads its voice
/// models through this too. The download is bounded (the catalog's size, else the most a model
/// of its kind may have), continues a partial copy an earlier one left, and waits for another
/// download of the same model, saying so. Output and errors name `url` without its
/// credentials.
pub(crate) async fn download_verified(
    store: &ModelStore,
    kind: ModelKind,
    name: &str,
    url: &str,
    sha: &str,
    holder: &str,
) -> anyhow::Result<()> {
    let bar = bar("downloading");
    let started = std::time::Instant::now();
    let what = format!("{} {name}", kind.as_str());
    let req = Request::new(kind, name, url, Some(sha), holder);
    let got = sayri_voice::models::download(store, &req, &mut |e| on_event(&bar, &what, e)).await;
    bar.finish_and_clear();
    let d = got?;
    let m = &d.model;
    if d.already_installed {
        println!(
            "{} {} is already installed (sha256 verified) at {}",
            kind.as_str(),
            m.name,
            m.path.display()
        );
        return Ok(());
    }
    let resumed = match d.resumed_from {
        0 => String::new(),
        from => format!(", continued from {:.1} MB", from as f64 / 1e6),
    };
    println!(
        "installed {} {} ({:.1} MB in {:.1} s{resumed}, sha256 verified) at {}",
        kind.as_str(),
        m.name,
        m.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        m.path.display()
    );
    Ok(())
}

/// Shows one download event: progress on the bar, anything else as a line on stderr.
fn on_event(bar: &ProgressBar, what: &str, e: Event) {
    let say = |line: String| bar.suspend(|| eprintln!("sayri: {line}"));
    match e {
        Event::Progress(p) => show(bar, p),
        Event::Waiting { holder } => say(format!(
            "another download of {what} is running ({}); waiting for it to finish (Ctrl-C stops waiting)",
            terminal_safe(&holder)
        )),
        Event::Resuming { from, total } => say(format!(
            "continuing the earlier download of {what} from {}",
            sayri_http::byte_count(from, total)
        )),
        Event::Restarting { kept, why } => say(format!(
            "the earlier partial download of {what} ({kept} bytes) cannot be continued: {why}; starting again"
        )),
    }
}

/// A progress bar on stderr when it is a terminal (hidden otherwise).
pub(crate) fn bar(what: &str) -> ProgressBar {
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

pub(crate) fn show(bar: &ProgressBar, p: Progress) {
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
