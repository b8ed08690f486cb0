//! Converts a faster-whisper (CTranslate2) Whisper model directory to a whisper.cpp ggml file.
//!
//! ```text
//! cargo run -p sayri-voice --no-default-features --example ct2-to-ggml -- MODEL_DIR ASSETS_DIR OUT.bin
//! cargo run -p sayri-voice --no-default-features --example ct2-to-ggml -- --store ROOT MODEL_DIR NAME
//! ```
//! `ASSETS_DIR` holds openai-whisper's `mel_80.npy` and `gpt2.tiktoken` /
//! `multilingual.tiktoken`. With `--store`, the model is installed into the voice model store at
//! `ROOT` as whisper model `NAME` (assets from `ROOT/whisper-assets`), recorded as a conversion
//! as `sayri models import-ct2` does. Prints one summary line; exits 1 with the reason on
//! failure.

use sayri_voice::models::{ModelStore, WhisperAssets, convert_ct2_to_ggml};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if let [flag, root, model, name] = &args[..]
        && flag.as_os_str() == "--store"
    {
        let name = name.to_string_lossy();
        return match ModelStore::at(root).import_ct2(model, &name, &mut |_| {}) {
            Ok((m, r)) => {
                println!(
                    "installed whisper {} at {} ({} tensors, {} bytes)",
                    m.name,
                    m.path.display(),
                    r.tensors,
                    r.bytes
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ct2-to-ggml: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let [model, assets, out] = &args[..] else {
        eprintln!(
            "usage: ct2-to-ggml MODEL_DIR ASSETS_DIR OUT.bin | ct2-to-ggml --store ROOT MODEL_DIR NAME"
        );
        return ExitCode::from(2);
    };
    let result =
        WhisperAssets::load(assets).and_then(|a| convert_ct2_to_ggml(model, &a, out, &mut |_| {}));
    match result {
        Ok(r) => {
            println!(
                "converted {} → {} ({} model{}, {} tensors, {} bytes)",
                model.display(),
                r.path.display(),
                r.model_type,
                if r.english_only { ", English only" } else { "" },
                r.tensors,
                r.bytes
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ct2-to-ggml: {e}");
            ExitCode::FAILURE
        }
    }
}
