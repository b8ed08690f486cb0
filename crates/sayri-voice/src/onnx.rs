//! ONNX Runtime, loaded at run time from a shared library that a package installed (PyPI
//! `onnxruntime`, unpacked by the setup script). Nothing is downloaded at build or run time.

use crate::models::ModelStore;
use ort::environment::Environment;
use ort::session::Session;
use sayri_core::ports::speech::SpeechError;
use std::path::Path;
use std::sync::OnceLock;

static ENV: OnceLock<Result<Environment, String>> = OnceLock::new();

/// The process-wide ONNX Runtime environment, loading the library found by
/// [`ModelStore::onnxruntime_library`] on first use. The library can be loaded once per
/// process; later calls return the first outcome.
pub fn environment(store: &ModelStore) -> Result<Environment, SpeechError> {
    let loaded = ENV.get_or_init(|| {
        let lib = store.onnxruntime_library().map_err(|e| e.to_string())?;
        let builder =
            ort::init_from(&lib).map_err(|e| format!("cannot load {}: {e}", lib.display()))?;
        builder
            .with_name("sayri-voice")
            .build()
            .map_err(|e| format!("ONNX Runtime from {} failed to start: {e}", lib.display()))
    });
    loaded.clone().map_err(|reason| SpeechError::NotReady {
        what: "ONNX Runtime".into(),
        reason,
        fix: "run ./scripts/setup --voice, or set ORT_DYLIB_PATH to libonnxruntime.so".into(),
    })
}

/// Opens `model` as a single-threaded session (the voice loop runs several small models per
/// 80 ms frame; one thread each keeps them from fighting over the cores), without ONNX
/// Runtime's memory arena and memory patterns: the voice models are tiny and run on fixed
/// small frames, so an arena sized for large tensors would only keep megabytes per session
/// resident while the daemon waits for its wake word.
pub fn session(env: &Environment, model: &Path) -> Result<Session, SpeechError> {
    let fail = |e: ort::Error| SpeechError::NotReady {
        what: format!("ONNX model {}", model.display()),
        reason: e.to_string(),
        fix: "run ./scripts/setup --voice to fetch the voice models again".into(),
    };
    if !model.is_file() {
        return Err(SpeechError::NotReady {
            what: format!("ONNX model {}", model.display()),
            reason: "the file does not exist".into(),
            fix: "run ./scripts/setup --voice, or `sayri models import`".into(),
        });
    }
    Session::builder(env)
        .map_err(fail)?
        .with_intra_threads(1)
        .map_err(|e| fail(e.into()))?
        .with_inter_threads(1)
        .map_err(|e| fail(e.into()))?
        .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(false).build()])
        .map_err(|e| fail(e.into()))?
        .with_memory_pattern(false)
        .map_err(|e| fail(e.into()))?
        .with_prepacking(false)
        .map_err(|e| fail(e.into()))?
        .commit_from_file(model)
        .map_err(fail)
}

/// Maps an inference error to [`SpeechError::Failed`].
pub fn failed(what: &str, e: impl std::fmt::Display) -> SpeechError {
    SpeechError::Failed(format!("{what}: {e}"))
}
