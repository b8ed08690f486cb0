//! Runs the voice loop on real models with a scripted agent: the repository's scripted
//! OpenAI-compatible server (`sayri-testkit`) answers through the real HTTP client
//! (`sayri-llm`), so every "model request" is an HTTP request that the test can count.

use super::support::{HINT, store};
use futures::StreamExt;
use sayri_core::domain::voice::{VoiceEvent, VoiceMode, VoiceSettings};
use sayri_core::engine::events::CoreState;
use sayri_core::ports::audio::{AudioSink, AudioSource};
use sayri_core::ports::{ChatEvent, ChatMessage, ChatModel, ChatRequest, Role};
use sayri_llm::{ClientConfig, OpenAiClient};
use sayri_testkit::{FakeLlm, Reply, Script, sse};
use sayri_voice::stt::WhisperStt;
use sayri_voice::tts::{PiperTts, Variation};
use sayri_voice::vad::SileroVad;
use sayri_voice::voice_loop::{
    Agent, Command, Engines, LoopConfig, LoopStats, TimedEvent, VoiceLoop,
};
use sayri_voice::wake::OpenWakeWord;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// An agent that asks a chat model (the scripted server) and streams its answer.
pub struct ModelAgent {
    client: OpenAiClient,
    rt: tokio::runtime::Handle,
}

impl Agent for ModelAgent {
    fn answer(
        &self,
        query: &str,
        cancel: &CancellationToken,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<String, String> {
        let req = ChatRequest {
            model: "test".into(),
            messages: vec![ChatMessage::new(Role::User, query)],
            temperature: None,
            max_tokens: None,
            tools: None,
        };
        let mut stream = self.client.stream_chat(req);
        let mut text = String::new();
        self.rt.block_on(async {
            while let Some(ev) = stream.next().await {
                if cancel.is_cancelled() {
                    return Err("cancelled".to_string());
                }
                match ev.map_err(|e| e.to_string())? {
                    ChatEvent::Content(c) => {
                        text.push_str(&c);
                        on_text(&c);
                    }
                    ChatEvent::Finish(_) => break,
                    _ => {}
                }
            }
            Ok(text.clone())
        })
    }
}

/// A scripted model server answering each request with the next of `replies` (streamed in
/// word-sized pieces), and an agent that talks to it.
pub struct ScriptedModel {
    pub server: FakeLlm,
    pub agent: Arc<ModelAgent>,
    _rt: tokio::runtime::Runtime,
}

impl ScriptedModel {
    pub fn start(replies: &[&str]) -> ScriptedModel {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let script = Script::queue(replies.iter().map(|r| {
            let pieces: Vec<String> = r.split_inclusive(' ').map(str::to_string).collect();
            let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
            Reply::sse(sse::content_stream(&refs))
        }));
        let server = rt.block_on(FakeLlm::start(script)).unwrap();
        let client = OpenAiClient::new(ClientConfig::new(server.base_url())).unwrap();
        let agent = Arc::new(ModelAgent {
            client,
            rt: rt.handle().clone(),
        });
        ScriptedModel {
            server,
            agent,
            _rt: rt,
        }
    }

    /// The user messages of every request the server received, in order.
    pub fn queries(&self) -> Vec<String> {
        self.server
            .chat_bodies()
            .iter()
            .filter_map(|b| {
                b["messages"].as_array()?.last()?["content"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    }
}

/// The loop's engines on the real models; `veto` adds the playback wake detector.
pub fn engines(veto: bool) -> Engines {
    let s = store();
    let load_wake =
        || OpenWakeWord::load(&s, "hey_jarvis_v0.1").unwrap_or_else(|e| panic!("{HINT} ({e})"));
    Engines {
        vad: Box::new(SileroVad::load(&s).unwrap_or_else(|e| panic!("{HINT} ({e})"))),
        wake: Some(Box::new(load_wake())),
        playback_wake: veto.then(|| Box::new(load_wake()) as Box<_>),
        stt: Box::new(
            WhisperStt::load(&s, "tiny.en", "en").unwrap_or_else(|e| panic!("{HINT} ({e})")),
        ),
        tts: Some(Arc::new(
            PiperTts::load(&s, "en_US-joe-medium", 1.0)
                .unwrap_or_else(|e| panic!("{HINT} ({e})"))
                .with_variation(Variation::Fixed),
        )),
    }
}

/// Loop settings for `mode` with the wake phrase "hey jarvis".
pub fn config(mode: VoiceMode) -> LoopConfig {
    LoopConfig {
        settings: VoiceSettings {
            mode,
            stt_ready: true,
            activation_timeout_ms: 5000,
            wake_phrases: vec!["hey jarvis".into()],
        },
        ..LoopConfig::default()
    }
}

/// Runs a loop to its end and returns its events and counters.
pub fn run(
    engines: Engines,
    cfg: LoopConfig,
    source: Box<dyn AudioSource>,
    sink: Box<dyn AudioSink>,
    agent: Arc<dyn Agent>,
    first: &[Command],
) -> (Vec<TimedEvent>, LoopStats) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink_events = events.clone();
    let (lp, handle) = VoiceLoop::new(
        engines,
        cfg,
        source,
        sink,
        agent,
        Box::new(move |e| {
            if std::env::var_os("SAYRI_TEST_TRACE").is_some()
                && !matches!(e.event, VoiceEvent::AudioLevel(_))
            {
                eprintln!(
                    "[{:>6} ms] {}",
                    e.at / 16,
                    describe(std::slice::from_ref(&e.event))
                );
            }
            sink_events.lock().unwrap().push(e)
        }),
    );
    for c in first {
        handle.send(c.clone());
    }
    let stats = lp.run().expect("voice loop runs");
    let ev = events.lock().unwrap().clone();
    (ev, stats)
}

/// Events without audio levels and partials (which vary with timing), for sequence checks.
pub fn milestones(events: &[TimedEvent]) -> Vec<VoiceEvent> {
    events
        .iter()
        .map(|e| e.event.clone())
        .filter(|e| {
            !matches!(
                e,
                VoiceEvent::AudioLevel(_) | VoiceEvent::Partial(_) | VoiceEvent::Hint(_)
            )
        })
        .collect()
}

/// Short names for readable assertion messages.
pub fn describe(events: &[VoiceEvent]) -> String {
    events
        .iter()
        .map(|e| match e {
            VoiceEvent::State(s) => format!("state:{}", s.as_str()),
            VoiceEvent::Wake { .. } => "wake".into(),
            VoiceEvent::User(t) => format!("user:{t}"),
            other => format!("{}:{other:?}", other.name()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn count(events: &[TimedEvent], pred: impl Fn(&VoiceEvent) -> bool) -> usize {
    events.iter().filter(|e| pred(&e.event)).count()
}

pub fn is_wake(e: &VoiceEvent) -> bool {
    matches!(e, VoiceEvent::Wake { .. })
}

pub fn is_user(e: &VoiceEvent) -> bool {
    matches!(e, VoiceEvent::User(_))
}

pub fn state(s: CoreState) -> VoiceEvent {
    VoiceEvent::State(s)
}
