//! `sayri listen`, `sayri say`, `sayri voice status`.
//!
//! * `listen` asks the daemon for one utterance (`listen` command); `listen --file WAV` runs
//!   the same VAD, wake-word and speech-to-text pipeline on a file, in this process, with the
//!   models the settings choose (`--wake` waits for the wake word first, as the daemon does in
//!   `wakeword` mode). Prints the transcript, or exits 1 with "no speech detected".
//! * `say TEXT` speaks on the configured speaker; `say --to-file WAV TEXT` writes the speech
//!   to a WAV file (16 kHz mono). Markdown is spoken as the daemon speaks replies.
//! * `voice status` shows what the settings choose, what is installed and what is missing,
//!   and what the running daemon's voice is doing.

use anyhow::{Context, bail};
use sayri_client::autostart::connect_or_start;
use sayri_client::client::{Client, ClientError};
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_core::domain::voice::speakable_text;
use sayri_daemon::voice::status::{LoopState, fill, not_built};
use sayri_protocol::event::AnyEvent;
use sayri_protocol::params::{ListenParams, StatusParams};
use sayri_protocol::reply::runtime::{StatusReply, VoiceStatus};
use sayri_voice::models::ModelStore;
use sayri_voice::plan::VoicePlan;
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

/// `sayri listen` options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ListenArgs {
    /// Transcribe this WAV file (any PCM format) with the same VAD, wake-word and
    /// speech-to-text pipeline, in this process (no daemon, no microphone).
    #[arg(long, value_name = "WAV")]
    pub file: Option<PathBuf>,
    /// With --file: wait for the wake word first, as the daemon does in wakeword mode; the
    /// transcript is what follows it.
    #[arg(long, requires = "file")]
    pub wake: bool,
    /// Seconds to wait for an utterance.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Print a JSON object (`text`, and with --file `wake` and `audio_ms`).
    #[arg(long)]
    pub json: bool,
}

/// `sayri say` options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SayArgs {
    /// Write the speech to this WAV file (16 kHz mono) instead of playing it.
    #[arg(long, value_name = "WAV")]
    pub to_file: Option<PathBuf>,
    /// Render without Piper's random variation, so the same text always gives the same audio
    /// (for tests, benchmarks and before/after comparisons; the voice sounds a little flatter).
    #[arg(long)]
    pub reproducible: bool,
    /// What to say (markdown is spoken as replies are).
    #[arg(required = true, num_args = 1..)]
    pub text: Vec<String>,
}

/// `sayri voice …`.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum VoiceAction {
    /// What the settings choose, what is installed and missing, and the daemon's voice state.
    Status {
        /// Print the status fields as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The plan of the current settings, with the store it was resolved against.
fn local_plan(paths: &Paths) -> anyhow::Result<(VoicePlan, ModelStore)> {
    let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
    let store = ModelStore::open_default();
    Ok((VoicePlan::resolve(&cfg, &store), store))
}

/// `sayri listen` through the daemon.
pub(crate) async fn listen(
    paths: &Paths,
    allow_start: bool,
    args: &ListenArgs,
) -> anyhow::Result<i32> {
    let mut client = connect_or_start(paths, allow_start).await?;
    let timeout = args.timeout.max(0.1);
    let live = std::io::stderr().is_terminal() && !args.json;
    if live {
        eprint!("Listening… (Ctrl-C to stop)");
    }
    let show = |ev: &AnyEvent| {
        if live && let AnyEvent::Partial(p) = ev {
            eprint!("\r\x1b[K… {}", terminal_safe(&p.text));
        }
    };
    let params = ListenParams {
        timeout: Some(timeout),
    };
    let call = client.call_with(&params, Duration::from_secs_f64(timeout + 10.0), show);
    let result = tokio::select! {
        r = call => r,
        _ = tokio::signal::ctrl_c() => {
            if let Ok(mut c) = Client::connect(&paths.socket(), sayri_client::client::CONNECT_TIMEOUT).await {
                let _ = c.request_with(&sayri_protocol::params::StopListeningParams {}).await;
            }
            eprintln!("\nsayri: interrupted");
            return Ok(crate::cli::ask::EXIT_INTERRUPTED);
        }
    };
    if live {
        eprint!("\r\x1b[K");
    }
    let result = result.map_err(|e| match e {
        ClientError::Remote(p) => anyhow::anyhow!("{}", p.message),
        other => anyhow::anyhow!("{other}"),
    })?;
    report_transcript(&result.text, args.json, json!({ "text": result.text }))
}

fn report_transcript(text: &str, json_mode: bool, object: Value) -> anyhow::Result<i32> {
    if json_mode {
        println!("{}", serde_json::to_string_pretty(&object)?);
    } else if !text.is_empty() {
        println!("{}", terminal_safe(text));
    }
    if text.is_empty() {
        eprintln!("sayri: no speech detected");
        return Ok(1);
    }
    Ok(0)
}

/// `sayri listen --file WAV [--wake]`: the pipeline on a file, in this process.
pub(crate) fn listen_file(paths: &Paths, args: &ListenArgs) -> anyhow::Result<i32> {
    let Some(file) = &args.file else {
        bail!("listen_file needs --file");
    };
    if !sayri_daemon::voice::BUILT {
        bail!("{}", not_built());
    }
    let (plan, store) = local_plan(paths)?;
    let heard = file_pipeline::run(&plan, &store, file, args.wake)?;
    let object = json!({
        "text": heard.text,
        "wake": heard.wake.iter().map(|(phrase, score, at_ms)| json!({
            "phrase": phrase, "score": score, "at_ms": at_ms,
        })).collect::<Vec<_>>(),
        "audio_ms": heard.audio_ms,
        "whisper_model": plan.whisper.name,
    });
    if args.wake && heard.wake.is_empty() {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&object)?);
        }
        eprintln!(
            "sayri: no wake word heard in {} (listening for \"{}\")",
            file.display(),
            plan.wake_phrase.as_deref().unwrap_or("-")
        );
        return Ok(1);
    }
    report_transcript(&heard.text, args.json, object)
}

#[cfg(feature = "voice")]
mod file_pipeline {
    //! One utterance from a WAV file through the voice loop.

    use anyhow::Context;
    use sayri_core::domain::voice::{VoiceEvent, VoiceMode};
    use sayri_core::ports::audio::samples_to_ms;
    use sayri_core::sync::lock;
    use sayri_voice::audio::{NullSink, WavSource};
    use sayri_voice::models::ModelStore;
    use sayri_voice::plan::VoicePlan;
    use sayri_voice::voice_loop::{Agent, Command, LoopConfig, VoiceLoop};
    use std::path::Path;
    use std::sync::{Arc, Mutex};
    use tokio_util::sync::CancellationToken;

    /// What the pipeline heard.
    pub(crate) struct Heard {
        pub text: String,
        /// Wake-word detections: phrase, score, milliseconds into the file.
        pub wake: Vec<(String, f32, u64)>,
        pub audio_ms: u64,
    }

    /// Takes the query the loop would send, and answers nothing.
    #[derive(Default)]
    struct Recorder(Mutex<Option<String>>);

    impl Agent for Recorder {
        fn answer(
            &self,
            query: &str,
            _cancel: &CancellationToken,
            _on_text: &mut dyn FnMut(&str),
        ) -> Result<String, String> {
            let mut q = lock(&self.0);
            q.get_or_insert_with(|| query.to_string());
            Ok(String::new())
        }
    }

    pub(crate) fn run(
        plan: &VoicePlan,
        store: &ModelStore,
        file: &Path,
        wake: bool,
    ) -> anyhow::Result<Heard> {
        let source = WavSource::open(file)?;
        let audio_ms = samples_to_ms(sayri_voice::audio::read_wav_16k(file)?.len() as u64);
        let mut plan = plan.clone();
        plan.speak = false;
        let built = sayri_voice::engines::build(&plan, store).context("speech to text")?;
        if wake && built.engines.wake.is_none() {
            anyhow::bail!(
                "--wake needs a wake-word model: {}",
                plan.wake_missing().join("; ")
            );
        }
        let mut cfg = LoopConfig {
            speak_replies: false,
            ..plan.loop_config.clone()
        };
        // The wake word is heard in the file; a one-shot capture waits the whole file.
        cfg.settings.mode = VoiceMode::Wakeword;
        cfg.settings.activation_timeout_ms = audio_ms + 1000;
        let recorder = Arc::new(Recorder::default());
        let events: Arc<Mutex<Vec<(u64, VoiceEvent)>>> = Arc::default();
        let sink_events = events.clone();
        let (lp, handle) = VoiceLoop::new(
            built.engines,
            cfg,
            Box::new(source),
            Box::new(NullSink::default()),
            recorder.clone(),
            Box::new(move |e| {
                let mut ev = lock(&sink_events);
                ev.push((samples_to_ms(e.at), e.event));
            }),
        );
        if !wake {
            handle.send(Command::ListenOnce);
        }
        drop(handle);
        lp.run().context("the voice pipeline")?;
        let events = lock(&events);
        let wakes = events
            .iter()
            .filter_map(|(at, e)| match e {
                VoiceEvent::Wake { phrase, score } => Some((phrase.clone(), *score, *at)),
                _ => None,
            })
            .collect();
        let text = if wake {
            lock(&recorder.0).clone().unwrap_or_default()
        } else {
            events
                .iter()
                .find_map(|(_, e)| match e {
                    VoiceEvent::Transcript(t) => Some(t.clone()),
                    _ => None,
                })
                .unwrap_or_default()
        };
        Ok(Heard {
            text,
            wake: wakes,
            audio_ms,
        })
    }
}

#[cfg(not(feature = "voice"))]
mod file_pipeline {
    //! Without voice there is no speech to text: [`super::listen_file`] refuses first.

    use sayri_voice::models::ModelStore;
    use sayri_voice::plan::VoicePlan;
    use std::path::Path;

    pub(crate) struct Heard {
        pub text: String,
        pub wake: Vec<(String, f32, u64)>,
        pub audio_ms: u64,
    }

    pub(crate) fn run(_: &VoicePlan, _: &ModelStore, _: &Path, _: bool) -> anyhow::Result<Heard> {
        anyhow::bail!("{}", sayri_daemon::voice::status::not_built())
    }
}

/// `sayri say [--to-file WAV] TEXT`.
pub(crate) fn say(paths: &Paths, args: &SayArgs) -> anyhow::Result<i32> {
    let text = speakable_text(&args.text.join(" "));
    if text.trim().is_empty() {
        bail!("nothing to say: the text has no speakable words");
    }
    let (plan, store) = local_plan(paths)?;
    let variation = if args.reproducible {
        sayri_voice::tts::Variation::Fixed
    } else {
        sayri_voice::tts::Variation::Natural
    };
    let tts = sayri_voice::engines::build_tts(&plan, &store, variation)?;
    let engine = tts.name();
    match &args.to_file {
        Some(path) => {
            let audio = sayri_voice::tts::render(tts.as_ref(), &text)?;
            sayri_voice::audio::write_wav_16k(path, &audio)
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "sayri: wrote {:.1} s of speech ({engine}) to {}",
                audio.len() as f64 / 16_000.0,
                path.display()
            );
        }
        None => play(&plan, tts.as_ref(), &text)?,
    }
    Ok(0)
}

/// Speaks `text` on the configured speaker as it is synthesised, and waits until it played.
fn play(
    plan: &VoicePlan,
    tts: &dyn sayri_core::ports::speech::TextToSpeech,
    text: &str,
) -> anyhow::Result<()> {
    let mut sink = sayri_voice::engines::open_output(&plan.output).map_err(|e| {
        anyhow::anyhow!("{e} — or write the speech to a file with `sayri say --to-file out.wav …`")
    })?;
    let stream = tts.start(text)?;
    stream.finish();
    let mut written = 0u64;
    while let Some(chunk) = stream.next_chunk()? {
        sink.write(&chunk)?;
        written += chunk.len() as u64;
    }
    // Let the speaker play what is queued (its clock counts played samples).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while sink.position() < written && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// `sayri voice status [--json]`: local readiness, and the daemon's voice when it runs.
pub(crate) async fn status(paths: &Paths, json_mode: bool) -> anyhow::Result<()> {
    let (plan, _store) = local_plan(paths)?;
    let daemon = match Client::connect(&paths.socket(), sayri_client::client::CONNECT_TIMEOUT).await
    {
        Ok(mut c) => c.request_with(&StatusParams {}).await.ok(),
        Err(_) => None,
    };
    let mut local = StatusReply::default();
    fill(
        &mut local,
        &plan,
        sayri_daemon::voice::BUILT,
        &LoopState::default(),
    );
    if json_mode {
        return crate::cli::print_json(&LocalVoice::new(local, daemon));
    }
    print_status(&plan, &local, daemon.as_ref());
    Ok(())
}

/// What `sayri voice status --json` prints: the voice members of `status` as this process
/// sees them, the running daemon's whole status, and the sound devices.
#[derive(serde::Serialize)]
struct LocalVoice {
    stt_ready: bool,
    stt_missing: Vec<String>,
    tts_ready: bool,
    tts_missing: Vec<String>,
    wake_ready: bool,
    wake_missing: Vec<String>,
    stt_mode: String,
    mic_on: bool,
    armed: bool,
    speaking: bool,
    wake_phrase: Option<String>,
    voice: VoiceStatus,
    daemon: Option<StatusReply>,
    input_devices: Vec<String>,
    output_devices: Vec<String>,
}

impl LocalVoice {
    fn new(s: StatusReply, daemon: Option<StatusReply>) -> LocalVoice {
        LocalVoice {
            stt_ready: s.stt_ready,
            stt_missing: s.stt_missing,
            tts_ready: s.tts_ready,
            tts_missing: s.tts_missing,
            wake_ready: s.wake_ready,
            wake_missing: s.wake_missing,
            stt_mode: s.stt_mode,
            mic_on: s.mic_on,
            armed: s.armed,
            speaking: s.speaking,
            wake_phrase: s.wake_phrase,
            voice: s.voice,
            daemon,
            input_devices: devices(true),
            output_devices: devices(false),
        }
    }
}

fn print_status(plan: &VoicePlan, f: &StatusReply, daemon: Option<&StatusReply>) {
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "voice:          {}",
        if sayri_daemon::voice::BUILT {
            "built in"
        } else {
            "NOT built in"
        }
    );
    let _ = writeln!(out, "mode:           {} (stt.mode)", plan.mode.as_str());
    let line =
        |out: &mut std::io::Stdout, label: &str, ok: bool, what: String, missing: Vec<String>| {
            let _ = writeln!(
                out,
                "{label:<16}{} — {what}",
                if ok { "ready" } else { "NOT READY" }
            );
            for m in missing {
                let _ = writeln!(out, "{:<16}  install: {m}", "");
            }
        };
    line(
        &mut out,
        "speech to text:",
        f.stt_ready,
        format!(
            "whisper {} (language {})",
            plan.whisper.name.as_deref().unwrap_or(&plan.whisper.wanted),
            plan.language
        ),
        f.stt_missing.clone(),
    );
    line(
        &mut out,
        "speech output:",
        f.tts_ready,
        plan.tts_engine().unwrap_or_else(|| "no voice".into()),
        f.tts_missing.clone(),
    );
    let phrase = plan
        .wake_phrase
        .as_deref()
        .map_or("no wake word".to_string(), |p| format!("say \"{p}\""));
    line(
        &mut out,
        "wake word:",
        f.wake_ready,
        format!(
            "{phrase} ({}, threshold {})",
            plan.wake.name.as_deref().unwrap_or(&plan.wake.wanted),
            plan.loop_config.wake_threshold
        ),
        f.wake_missing.clone(),
    );
    let _ = writeln!(
        out,
        "VAD:            {}",
        if plan.vad_ready {
            "Silero"
        } else {
            "energy (Silero VAD is not installed: ./scripts/setup --voice)"
        }
    );
    let _ = writeln!(
        out,
        "microphone:     {}   speaker: {}",
        plan.input.describe(),
        plan.output.describe()
    );
    for (label, input) in [("input devices:", true), ("output devices:", false)] {
        let d = devices(input);
        if !d.is_empty() {
            let _ = writeln!(out, "{label:<16}{}", d.join(", "));
        }
    }
    for n in plan.notes() {
        let _ = writeln!(out, "note:           {n}");
    }
    daemon_lines(daemon, &mut out);
}

/// The daemon's voice state (or that it is not running) and its microphone's problem.
fn daemon_lines(daemon: Option<&StatusReply>, out: &mut std::io::Stdout) {
    match daemon {
        Some(s) => {
            let _ = writeln!(
                out,
                "daemon:         state {}, microphone {}, speaking {}{}",
                s.state,
                if s.mic_on { "on" } else { "off" },
                s.speaking,
                s.voice
                    .error
                    .as_deref()
                    .map(|e| format!(" — {e}"))
                    .unwrap_or_default()
            );
            mic_problem_line(s, out);
        }
        None => {
            let _ = writeln!(out, "daemon:         not running");
        }
    }
}

/// `microphone: DEVICE: PROBLEM` while the daemon's microphone has one.
fn mic_problem_line(s: &StatusReply, out: &mut impl std::io::Write) {
    if let Some(p) = &s.voice.mic_problem {
        let device = s.voice.mic_device.as_deref().unwrap_or("the microphone");
        let _ = writeln!(out, "microphone:     {device}: {p}");
    }
}

/// Sound card devices (input or output), default first; empty without sound card support.
pub(crate) fn devices(input: bool) -> Vec<String> {
    #[cfg(feature = "voice")]
    {
        if input {
            sayri_voice::audio::device::input_devices()
        } else {
            sayri_voice::audio::device::output_devices()
        }
    }
    #[cfg(not(feature = "voice"))]
    {
        let _ = input;
        Vec::new()
    }
}
