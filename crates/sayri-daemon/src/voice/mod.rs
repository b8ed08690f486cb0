//! Voice in the daemon: one voice loop (its own thread, from `sayri-voice`) between the
//! microphone and the speaker, with the core's turns as its agent.
//!
//! * **Commands.** `listen` (one utterance → its transcript), `stop_listening`,
//!   `toggle_listening` and `interrupt` reach the loop as commands; `status` shows whether
//!   speech input, speech output and the wake word are ready and, when not, what to install.
//! * **Events.** The loop's events (`state`, `audio_level` at most every 50 ms, `mic`,
//!   `partial`, `user`, `speaking`, `busy`, `hint`, `error`, `show`, `wake`, `transcript`) go
//!   to every client, redacted like the core's. A spoken query runs as a core turn
//!   (`SayriCore::start_local_turn` without announcement: the loop already said `user`,
//!   `busy` and `thinking`), so its answer streams as `assistant_delta`/`assistant_done` to
//!   every client while the loop speaks it sentence by sentence.
//! * **Settings.** `stt.*` and `tts.*` are resolved against the voice model store
//!   (`sayri_voice::plan`). A change of model, language, voice or device rebuilds the loop;
//!   any other change (mode, thresholds, timeouts) is applied to the running loop.
//! * **Microphone.** Opened only while the mode or a request needs it; closing it releases the
//!   device. `always`/`wakeword` open it when the daemon starts (once speech to text is
//!   ready); `manual` on `listen`/`toggle_listening`; `disabled` never.
//!
//! Built without the `voice` feature, the same API answers every voice command with what to
//! rebuild, and `status` says so.

#[cfg(feature = "voice")]
mod agent;
// Compiled in every build so its refusals are tested where voice is built too.
#[cfg_attr(feature = "voice", allow(dead_code))]
mod disabled;
#[cfg(feature = "voice")]
mod service;
pub mod status;

#[cfg(not(feature = "voice"))]
pub use disabled::VoiceService;
#[cfg(feature = "voice")]
pub use service::VoiceService;

/// Whether this build has voice (the `voice` cargo feature).
pub const BUILT: bool = cfg!(feature = "voice");

/// What a changed voice setting needs on this machine (for `settings_check`): a `file:`
/// microphone is a readable WAV file, a `file:` speaker a writable path, and a model named
/// instead of `auto` is installed in the voice model store. `None` for keys that need nothing;
/// an error is `(what is expected, what is wrong)`.
pub fn check_setting(
    key: &str,
    cfg: &sayri_core::domain::config::Config,
) -> Option<Result<(), (&'static str, String)>> {
    use sayri_voice::models::{ModelKind, ModelStore};
    use sayri_voice::plan::Device;
    let model = |kind: ModelKind, name: &str| {
        if name == "auto" {
            return Ok(());
        }
        let store = ModelStore::open_default();
        store
            .require(kind, name)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    const FILE_IN: &str = "a device name, empty, file:/absolute/path.wav (live-file:… to hear it in real time) of a readable WAV file, or pipe:/absolute/path of raw 16 kHz mono s16le audio";
    const FILE_OUT: &str =
        "a device name, empty, or file:/absolute/path.wav in a directory that exists";
    const MODEL: &str = "auto or an installed model (`sayri models list`)";
    let result = match key {
        "stt.mic_device" => match Device::parse(&cfg.stt.mic_device) {
            Device::File(p) | Device::LiveFile(p) | Device::Pipe(p) if !p.is_absolute() => {
                Err(format!("{} is not an absolute path", p.display()))
            }
            Device::File(p) | Device::LiveFile(p) => sayri_voice::audio::read_wav_16k(&p)
                .map(drop)
                .map_err(|e| e.to_string()),
            _ => Ok(()),
        }
        .map_err(|e| (FILE_IN, e)),
        "tts.output_device" => match Device::parse(&cfg.tts.output_device) {
            Device::File(p) if !p.is_absolute() => {
                Err(format!("{} is not an absolute path", p.display()))
            }
            Device::LiveFile(_) | Device::Pipe(_) => {
                Err("live-file: and pipe: are for microphones only; use file:PATH".into())
            }
            Device::File(p) if p.is_dir() => Err(format!("{} is a directory", p.display())),
            Device::File(p) if !p.parent().is_some_and(std::path::Path::is_dir) => {
                Err(format!("the directory of {} does not exist", p.display()))
            }
            _ => Ok(()),
        }
        .map_err(|e| (FILE_OUT, e)),
        "stt.whisper_model" => {
            model(ModelKind::Whisper, &cfg.stt.whisper_model).map_err(|e| (MODEL, e))
        }
        "tts.piper_voice" => {
            model(ModelKind::PiperVoice, &cfg.tts.piper_voice).map_err(|e| (MODEL, e))
        }
        "stt.wake_model" => model(ModelKind::WakeWord, &cfg.stt.wake_model).map_err(|e| (MODEL, e)),
        _ => return None,
    };
    Some(result)
}
