//! The voice state machine: what the assistant does when the microphone, the wake word, the
//! transcriber, the agent and the speaker report something, or a person presses a button.
//!
//! States are `idle | listening | activated | thinking | speaking`; `armed` means "the next
//! utterance is for me", `busy` that a spoken query is in flight. The machine is fed
//! [`Input`]s and answers with [`Action`]s for the voice loop to carry out (open the mic,
//! transcribe, query the agent, stop speech) and [`VoiceEvent`]s to broadcast. It never
//! touches a device or a clock: time arrives as [`Input::Tick`].
//!
//! Rules (each pinned by a test of the same name below):
//! * `wakeword` mode: nothing is transcribed until the wake word arms the machine; after it,
//!   if no speech starts within the activation timeout, the machine disarms and waits for the
//!   wake word again (`wake_then_silence_disarms_without_transcribing`).
//! * `always` mode: every utterance is a query while not busy; after a reply → `listening`.
//! * `manual` mode: the mic opens on `start_listening` and closes after one query.
//! * `disabled`: `start_listening` refuses and stays `idle`.
//! * Barge-in: a wake word (or, in `always` mode, speech) while thinking or speaking cancels
//!   the turn and the speech at once and arms (`wake_during_speech_barges_in`). The microphone
//!   stays open while speaking: echo is the voice loop's job, not the machine's.
//! * A transcript equal to (part of) the last reply is the assistant's own echo and is dropped
//!   (`echo_of_last_reply_is_not_a_query`).

use super::echo::is_echo_of_reply;
use super::events::VoiceEvent;
use super::hallucination::{SpeechEvidence, clean_transcript, strip_wake_phrase};
use crate::engine::events::CoreState;

/// How speech input is activated (`stt.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoiceMode {
    /// Every utterance is a query.
    Always,
    /// Only speech after the wake word is a query.
    Wakeword,
    /// The microphone opens on request, for one query.
    Manual,
    /// Speech input is off.
    Disabled,
}

impl VoiceMode {
    /// Parses `always | wakeword | manual | disabled`; `None` for anything else.
    pub fn parse(s: &str) -> Option<VoiceMode> {
        match s.trim() {
            "always" => Some(VoiceMode::Always),
            "wakeword" => Some(VoiceMode::Wakeword),
            "manual" => Some(VoiceMode::Manual),
            "disabled" => Some(VoiceMode::Disabled),
            _ => None,
        }
    }

    /// The config word.
    pub fn as_str(self) -> &'static str {
        match self {
            VoiceMode::Always => "always",
            VoiceMode::Wakeword => "wakeword",
            VoiceMode::Manual => "manual",
            VoiceMode::Disabled => "disabled",
        }
    }

    /// True when the microphone runs continuously in this mode.
    pub fn mic_always_on(self) -> bool {
        matches!(self, VoiceMode::Always | VoiceMode::Wakeword)
    }
}

/// What the machine needs to know about its surroundings.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceSettings {
    /// The activation mode.
    pub mode: VoiceMode,
    /// Speech to text can run (model present).
    pub stt_ready: bool,
    /// After a wake word or `start_listening`, how long to wait for speech before disarming,
    /// milliseconds.
    pub activation_timeout_ms: u64,
    /// Wake phrases to strip from the start of a transcript (lowercase).
    pub wake_phrases: Vec<String>,
}

impl Default for VoiceSettings {
    fn default() -> Self {
        VoiceSettings {
            mode: VoiceMode::Wakeword,
            stt_ready: true,
            activation_timeout_ms: 5000,
            wake_phrases: Vec::new(),
        }
    }
}

/// Something that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// `listen` / orb click: arm and listen for one utterance.
    StartListening,
    /// `listen --once`: capture one utterance and report its transcript, without a query.
    ListenOnce,
    /// `stop_listening`.
    StopListening,
    /// `toggle_listening`.
    ToggleListening,
    /// `interrupt`: cancel the turn and the speech.
    Interrupt,
    /// The microphone opened.
    MicOpened,
    /// The microphone could not be opened (or was lost and not reopened).
    MicFailed(String),
    /// The wake-word detector fired (after echo vetting).
    Wake {
        /// The detector's phrase.
        phrase: String,
        /// Its score.
        score: f32,
    },
    /// VAD: an utterance started.
    SpeechStart,
    /// VAD: the utterance ended (silence, or maximum length).
    UtteranceEnd,
    /// A partial transcript of the utterance so far.
    Partial(String),
    /// The final transcript of the utterance, with how much speech the audio held.
    Transcript {
        /// Raw text from the recogniser.
        text: String,
        /// Speech evidence of the audio.
        evidence: SpeechEvidence,
    },
    /// The first sample of the reply reached the speaker.
    PlaybackStarted,
    /// The agent finished its reply. `will_speak`: speech for it is playing or queued.
    ReplyFinished {
        /// The whole reply text (for echo checks).
        reply: String,
        /// A user-facing error, when the turn failed.
        error: Option<String>,
        /// Speech for the reply is playing or about to play.
        will_speak: bool,
    },
    /// The last sample of the reply was played.
    PlaybackFinished,
    /// Time passed; `now_ms` is the loop's audio clock.
    Tick {
        /// Milliseconds since the loop started, on the audio clock.
        now_ms: u64,
    },
    /// Whether a front-end is visible (daemon: a client is connected).
    UiVisible(bool),
    /// A finite microphone source (a file) has no more audio: the microphone is off until the
    /// next `start_listening` opens it again.
    SourceEnded,
    /// The live microphone stopped delivering (it stalled, ended or vanished) while it should
    /// be on; the loop tries to get it back. An utterance being collected is dropped — a cut
    /// utterance never becomes a query — and a wake word heard before is forgotten.
    MicLost,
}

/// What the voice loop must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Broadcast an event.
    Emit(VoiceEvent),
    /// Open the microphone (if closed).
    OpenMic,
    /// Close the microphone.
    CloseMic,
    /// Start the current utterance afresh from now (the wake word fired mid-speech).
    RestartUtterance,
    /// Transcribe the finished utterance.
    Transcribe,
    /// Drop the utterance being collected.
    DiscardUtterance,
    /// Start an agent turn with this query.
    Query(String),
    /// Cancel the agent turn in flight (its later output is stale).
    CancelTurn,
    /// Stop speech now: kill synthesis and drop queued audio.
    StopSpeech,
    /// Clear the wake-word detector's history.
    ResetWake,
}

/// The voice state machine. Create with [`VoiceMachine::new`], feed [`VoiceMachine::handle`].
#[derive(Debug, Clone)]
pub struct VoiceMachine {
    settings: VoiceSettings,
    state: CoreState,
    armed: bool,
    busy: bool,
    speaking: bool,
    mic_on: bool,
    listen_once: bool,
    in_utterance: bool,
    ui_visible: bool,
    last_reply: String,
    now_ms: u64,
    armed_at_ms: u64,
}

impl VoiceMachine {
    /// A machine at rest (`idle`, mic closed). Feed [`Input::MicOpened`] once the loop opened
    /// the microphone for a mode that keeps it on.
    pub fn new(settings: VoiceSettings) -> VoiceMachine {
        VoiceMachine {
            settings,
            state: CoreState::Idle,
            armed: false,
            busy: false,
            speaking: false,
            mic_on: false,
            listen_once: false,
            in_utterance: false,
            ui_visible: true,
            last_reply: String::new(),
            now_ms: 0,
            armed_at_ms: 0,
        }
    }

    /// Current state.
    pub fn state(&self) -> CoreState {
        self.state
    }
    /// The next utterance is for the assistant.
    pub fn armed(&self) -> bool {
        self.armed
    }
    /// A spoken query is in flight.
    pub fn busy(&self) -> bool {
        self.busy
    }
    /// Speech output is playing.
    pub fn speaking(&self) -> bool {
        self.speaking
    }
    /// The microphone should be open.
    pub fn mic_on(&self) -> bool {
        self.mic_on
    }
    /// The settings in force.
    pub fn settings(&self) -> &VoiceSettings {
        &self.settings
    }

    /// True when an utterance starting now would be transcribed.
    pub fn accepting_speech(&self) -> bool {
        !self.busy && (self.armed || self.listen_once || self.settings.mode == VoiceMode::Always)
    }

    /// Replaces the settings (config changed): closes the mic, then reopens it for modes that
    /// keep it on.
    pub fn reconfigure(&mut self, settings: VoiceSettings) -> Vec<Action> {
        let mut out = Vec::new();
        self.stop_listening(&mut out);
        self.settings = settings;
        if self.settings.mode.mic_always_on() && self.settings.stt_ready {
            self.open_mic(&mut out);
        }
        out
    }

    /// Applies one input and returns what to do, in order.
    pub fn handle(&mut self, input: Input) -> Vec<Action> {
        let mut out = Vec::new();
        match input {
            Input::StartListening => self.start_listening(&mut out),
            Input::ListenOnce => {
                self.start_listening(&mut out);
                if self.armed {
                    self.listen_once = true;
                }
            }
            Input::StopListening => self.stop_listening(&mut out),
            Input::ToggleListening => self.toggle(&mut out),
            Input::Interrupt => self.interrupt(&mut out),
            Input::MicOpened => self.mic_opened(&mut out),
            Input::MicFailed(reason) => {
                self.mic_on = false;
                self.armed = false;
                self.in_utterance = false;
                emit(
                    &mut out,
                    VoiceEvent::Error(format!("Could not initialize microphone: {reason}")),
                );
                emit(&mut out, VoiceEvent::Mic(false));
                self.set_state(CoreState::Idle, &mut out);
            }
            Input::Wake { phrase, score } => self.wake(phrase, score, &mut out),
            Input::SpeechStart => self.speech_start(&mut out),
            Input::UtteranceEnd => self.utterance_end(&mut out),
            Input::Partial(text) => {
                if self.in_utterance && self.accepting_speech() {
                    emit(&mut out, VoiceEvent::Partial(text));
                }
            }
            Input::Transcript { text, evidence } => self.transcript(&text, evidence, &mut out),
            Input::PlaybackStarted => {
                if self.busy && !self.speaking {
                    self.speaking = true;
                    self.set_state(CoreState::Speaking, &mut out);
                    emit(&mut out, VoiceEvent::Speaking(true));
                }
            }
            Input::ReplyFinished {
                reply,
                error,
                will_speak,
            } => {
                self.last_reply = reply;
                if let Some(e) = error {
                    emit(&mut out, VoiceEvent::Error(format!("Provider error: {e}")));
                }
                if self.busy && !will_speak {
                    self.after_reply(&mut out);
                }
            }
            Input::PlaybackFinished => {
                if self.busy {
                    self.after_reply(&mut out);
                }
            }
            Input::Tick { now_ms } => self.tick(now_ms, &mut out),
            Input::UiVisible(v) => self.ui_visible = v,
            Input::MicLost => self.mic_lost(&mut out),
            Input::SourceEnded => {
                if self.listen_once {
                    emit(&mut out, VoiceEvent::Transcript(String::new()));
                }
                self.stop_listening(&mut out);
                emit(
                    &mut out,
                    VoiceEvent::Hint("The microphone input ended.".into()),
                );
            }
        }
        out
    }

    fn set_state(&mut self, s: CoreState, out: &mut Vec<Action>) {
        if self.state != s {
            self.state = s;
            emit(out, VoiceEvent::State(s));
        }
    }

    fn open_mic(&mut self, out: &mut Vec<Action>) {
        if !self.mic_on {
            self.mic_on = true;
            out.push(Action::OpenMic);
        }
    }

    fn close_mic(&mut self, out: &mut Vec<Action>) {
        if self.mic_on {
            self.mic_on = false;
            out.push(Action::CloseMic);
            emit(out, VoiceEvent::Mic(false));
        }
    }

    fn arm(&mut self, out: &mut Vec<Action>) {
        self.armed = true;
        self.armed_at_ms = self.now_ms;
        self.set_state(CoreState::Activated, out);
        emit(out, VoiceEvent::Hint("Listening…".into()));
    }

    /// Cancels the turn and the speech in flight (barge-in, interrupt, stop).
    fn cut_turn(&mut self, out: &mut Vec<Action>) {
        if self.busy {
            out.push(Action::CancelTurn);
        }
        if self.speaking || self.busy {
            out.push(Action::StopSpeech);
        }
        if self.speaking {
            self.speaking = false;
            emit(out, VoiceEvent::AudioLevel(0.0));
            emit(out, VoiceEvent::Speaking(false));
        }
        if self.busy {
            self.busy = false;
            emit(out, VoiceEvent::Busy(false));
        }
    }

    fn start_listening(&mut self, out: &mut Vec<Action>) {
        self.cut_turn(out);
        if self.settings.mode == VoiceMode::Disabled || !self.settings.stt_ready {
            self.armed = false;
            self.close_mic(out);
            self.set_state(CoreState::Idle, out);
            let why = if self.settings.mode == VoiceMode::Disabled {
                "Speech input is off (stt.mode = disabled)."
            } else {
                "Speech input is not ready: no speech-to-text model is installed."
            };
            emit(out, VoiceEvent::Hint(why.into()));
            return;
        }
        self.open_mic(out);
        self.arm(out);
    }

    fn stop_listening(&mut self, out: &mut Vec<Action>) {
        self.armed = false;
        self.listen_once = false;
        if self.in_utterance {
            self.in_utterance = false;
            out.push(Action::DiscardUtterance);
        }
        self.cut_turn(out);
        self.close_mic(out);
        emit(out, VoiceEvent::AudioLevel(0.0));
        self.set_state(CoreState::Idle, out);
    }

    fn mic_lost(&mut self, out: &mut Vec<Action>) {
        // An utterance that already ended is being transcribed from audio that arrived whole:
        // it goes on. Only one still being collected, or a wake word still waiting for its
        // question, is cut.
        if self.state == CoreState::Thinking && !self.in_utterance {
            return;
        }
        let cut = self.in_utterance || self.armed || self.listen_once;
        if self.in_utterance {
            self.in_utterance = false;
            out.push(Action::DiscardUtterance);
        }
        if self.listen_once {
            self.listen_once = false;
            emit(out, VoiceEvent::Transcript(String::new()));
        }
        if self.settings.mode != VoiceMode::Always {
            self.armed = false;
        }
        if cut {
            emit(
                out,
                VoiceEvent::Hint(
                    "The microphone stopped while you were speaking; say it again once it is back."
                        .into(),
                ),
            );
        }
        if !self.busy && !self.speaking {
            self.set_state(CoreState::Idle, out);
        }
    }

    fn toggle(&mut self, out: &mut Vec<Action>) {
        let running = self.busy
            || self.speaking
            || matches!(self.state, CoreState::Speaking | CoreState::Thinking)
            || self.armed
            || matches!(self.state, CoreState::Listening | CoreState::Activated)
            || self.mic_on;
        if running {
            self.stop_listening(out);
            emit(out, VoiceEvent::Hint("Microphone off.".into()));
        } else {
            self.start_listening(out);
        }
    }

    fn interrupt(&mut self, out: &mut Vec<Action>) {
        self.cut_turn(out);
        self.stop_listening(out);
        if self.settings.mode.mic_always_on() && self.settings.stt_ready {
            self.open_mic(out);
            self.set_state(self.resting_state(), out);
        }
    }

    fn mic_opened(&mut self, out: &mut Vec<Action>) {
        self.mic_on = true;
        emit(out, VoiceEvent::Mic(true));
        if !self.armed && !self.busy {
            let s = self.resting_state();
            self.set_state(s, out);
        }
    }

    /// Where the machine rests with the mic open: `listening` in `always` mode, else `idle`.
    fn resting_state(&self) -> CoreState {
        if self.settings.mode == VoiceMode::Always && self.mic_on {
            CoreState::Listening
        } else {
            CoreState::Idle
        }
    }

    fn wake(&mut self, phrase: String, score: f32, out: &mut Vec<Action>) {
        if !matches!(self.settings.mode, VoiceMode::Wakeword | VoiceMode::Always)
            || !self.mic_on
            || !self.settings.stt_ready
        {
            return;
        }
        emit(out, VoiceEvent::Wake { phrase, score });
        if !self.ui_visible {
            self.ui_visible = true;
            emit(out, VoiceEvent::Show);
        }
        self.cut_turn(out);
        out.push(Action::ResetWake);
        self.in_utterance = false;
        self.arm(out);
        out.push(Action::RestartUtterance);
    }

    fn speech_start(&mut self, out: &mut Vec<Action>) {
        if self.in_utterance {
            return;
        }
        let barge_in_by_speech = self.settings.mode == VoiceMode::Always && self.speaking;
        if barge_in_by_speech {
            self.cut_turn(out);
        }
        if !self.accepting_speech() {
            return;
        }
        self.in_utterance = true;
        self.set_state(CoreState::Listening, out);
        emit(out, VoiceEvent::Hint("Listening…".into()));
    }

    fn utterance_end(&mut self, out: &mut Vec<Action>) {
        if !self.in_utterance {
            return;
        }
        self.in_utterance = false;
        if self.accepting_speech() {
            out.push(Action::Transcribe);
            self.set_state(CoreState::Thinking, out);
            emit(out, VoiceEvent::Hint("Transcribing…".into()));
        } else {
            out.push(Action::DiscardUtterance);
        }
    }

    /// Back to waiting after an utterance that is not a query.
    fn rest(&mut self, out: &mut Vec<Action>) {
        emit(out, VoiceEvent::Partial(String::new()));
        match self.settings.mode {
            VoiceMode::Always => {}
            VoiceMode::Manual | VoiceMode::Disabled => {
                self.armed = false;
                self.close_mic(out);
            }
            VoiceMode::Wakeword => self.armed = false,
        }
        let s = self.resting_state();
        self.set_state(s, out);
        emit(out, VoiceEvent::Hint("Ask me anything…".into()));
    }

    fn transcript(&mut self, raw: &str, evidence: SpeechEvidence, out: &mut Vec<Action>) {
        let text = clean_transcript(raw, evidence)
            .map(|t| strip_wake_phrase(&t, &self.settings.wake_phrases))
            .unwrap_or_default();
        if self.listen_once {
            self.listen_once = false;
            self.armed = false;
            emit(out, VoiceEvent::Partial(String::new()));
            emit(out, VoiceEvent::Transcript(text));
            if !self.settings.mode.mic_always_on() {
                self.close_mic(out);
            }
            let s = self.resting_state();
            self.set_state(s, out);
            return;
        }
        if text.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
            self.rest(out);
            return;
        }
        if self.busy {
            emit(
                out,
                VoiceEvent::Hint("Please wait for the response to finish.".into()),
            );
            return;
        }
        if is_echo_of_reply(&text, &self.last_reply) {
            self.rest(out);
            return;
        }
        self.send_query(text, out);
    }

    fn send_query(&mut self, text: String, out: &mut Vec<Action>) {
        emit(out, VoiceEvent::Partial(String::new()));
        self.armed = false;
        self.busy = true;
        emit(out, VoiceEvent::Busy(true));
        self.set_state(CoreState::Thinking, out);
        emit(out, VoiceEvent::User(text.clone()));
        out.push(Action::Query(text));
        if self.settings.mode == VoiceMode::Manual {
            self.close_mic(out);
        }
    }

    fn after_reply(&mut self, out: &mut Vec<Action>) {
        self.busy = false;
        emit(out, VoiceEvent::Busy(false));
        emit(out, VoiceEvent::AudioLevel(0.0));
        if self.speaking {
            self.speaking = false;
            emit(out, VoiceEvent::Speaking(false));
        }
        self.armed = false;
        if self.settings.mode.mic_always_on() && self.settings.stt_ready {
            self.open_mic(out);
        }
        let s = self.resting_state();
        self.set_state(s, out);
    }

    fn tick(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        self.now_ms = now_ms;
        let waited = now_ms.saturating_sub(self.armed_at_ms);
        if self.armed
            && !self.busy
            && !self.in_utterance
            && self.state == CoreState::Activated
            && waited >= self.settings.activation_timeout_ms
        {
            if std::mem::take(&mut self.listen_once) {
                // A one-shot capture that heard nothing reports an empty transcript.
                emit(out, VoiceEvent::Transcript(String::new()));
            }
            self.rest(out);
        }
    }
}

fn emit(out: &mut Vec<Action>, e: VoiceEvent) {
    out.push(Action::Emit(e));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(mode: VoiceMode) -> VoiceMachine {
        let mut m = VoiceMachine::new(VoiceSettings {
            mode,
            wake_phrases: vec!["hey jarvis".into()],
            ..VoiceSettings::default()
        });
        if mode.mic_always_on() {
            let a = m.reconfigure(m.settings().clone());
            assert!(a.contains(&Action::OpenMic));
            m.handle(Input::MicOpened);
        }
        m
    }

    fn speech() -> SpeechEvidence {
        SpeechEvidence {
            voiced_ms: 1500,
            total_ms: 2000,
            peak_probability: 0.99,
        }
    }

    fn events(actions: &[Action]) -> Vec<VoiceEvent> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Emit(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    fn wake(m: &mut VoiceMachine) -> Vec<Action> {
        m.handle(Input::Wake {
            phrase: "hey jarvis".into(),
            score: 0.9,
        })
    }

    fn ask(m: &mut VoiceMachine, text: &str) -> Vec<Action> {
        m.handle(Input::SpeechStart);
        m.handle(Input::UtteranceEnd);
        m.handle(Input::Transcript {
            text: text.into(),
            evidence: speech(),
        })
    }

    #[test]
    fn wakeword_mode_rests_idle_and_ignores_speech_before_the_wake_word() {
        let mut m = machine(VoiceMode::Wakeword);
        assert_eq!(m.state(), CoreState::Idle);
        assert!(m.mic_on());
        assert!(m.handle(Input::SpeechStart).is_empty());
        let a = m.handle(Input::UtteranceEnd);
        assert!(!a.contains(&Action::Transcribe));
        assert_eq!(m.state(), CoreState::Idle);
    }

    #[test]
    fn wake_then_question_becomes_a_query() {
        let mut m = machine(VoiceMode::Wakeword);
        let a = wake(&mut m);
        assert!(a.contains(&Action::RestartUtterance));
        assert_eq!(m.state(), CoreState::Activated);
        assert!(m.armed());
        m.handle(Input::SpeechStart);
        assert_eq!(m.state(), CoreState::Listening);
        let a = m.handle(Input::UtteranceEnd);
        assert!(a.contains(&Action::Transcribe));
        assert_eq!(m.state(), CoreState::Thinking);
        let a = m.handle(Input::Transcript {
            text: "Jarvis, what is the capital of France?".into(),
            evidence: speech(),
        });
        assert!(a.contains(&Action::Query("what is the capital of France".into())));
        assert!(events(&a).contains(&VoiceEvent::User("what is the capital of France".into())));
        assert!(m.busy() && !m.armed());
    }

    #[test]
    fn reply_spoken_then_back_to_idle_in_wakeword_mode() {
        let mut m = machine(VoiceMode::Wakeword);
        wake(&mut m);
        ask(&mut m, "what time is it");
        let a = m.handle(Input::PlaybackStarted);
        assert_eq!(
            events(&a),
            vec![
                VoiceEvent::State(CoreState::Speaking),
                VoiceEvent::Speaking(true)
            ]
        );
        let a = m.handle(Input::ReplyFinished {
            reply: "It is noon.".into(),
            error: None,
            will_speak: true,
        });
        assert!(a.is_empty(), "still speaking: {a:?}");
        let a = m.handle(Input::PlaybackFinished);
        let ev = events(&a);
        assert!(ev.contains(&VoiceEvent::Speaking(false)));
        assert!(ev.contains(&VoiceEvent::Busy(false)));
        assert_eq!(m.state(), CoreState::Idle);
        assert!(m.mic_on(), "the loop never goes deaf");
    }

    #[test]
    fn wake_then_silence_disarms_without_transcribing() {
        let mut m = machine(VoiceMode::Wakeword);
        m.handle(Input::Tick { now_ms: 1000 });
        wake(&mut m);
        assert!(m.handle(Input::Tick { now_ms: 5999 }).is_empty());
        let a = m.handle(Input::Tick { now_ms: 6000 });
        assert!(!a.contains(&Action::Transcribe));
        assert!(!m.armed());
        assert_eq!(m.state(), CoreState::Idle);
        // The next wake word still works.
        wake(&mut m);
        assert!(m.armed());
    }

    #[test]
    fn wake_during_speech_barges_in() {
        let mut m = machine(VoiceMode::Wakeword);
        wake(&mut m);
        ask(&mut m, "tell me a story");
        m.handle(Input::PlaybackStarted);
        let a = wake(&mut m);
        let stop = a.iter().position(|x| *x == Action::StopSpeech).unwrap();
        let cancel = a.iter().position(|x| *x == Action::CancelTurn).unwrap();
        assert!(cancel < stop || stop < a.len());
        assert!(events(&a).contains(&VoiceEvent::Speaking(false)));
        assert_eq!(m.state(), CoreState::Activated);
        assert!(m.armed() && !m.busy() && !m.speaking());
        // The stale turn's end changes nothing.
        let a = m.handle(Input::PlaybackFinished);
        assert!(a.is_empty());
        let a = ask(&mut m, "what time is it");
        assert!(a.contains(&Action::Query("what time is it".into())));
    }

    #[test]
    fn always_mode_speech_during_playback_barges_in() {
        let mut m = machine(VoiceMode::Always);
        assert_eq!(m.state(), CoreState::Listening);
        ask(&mut m, "hello there");
        m.handle(Input::PlaybackStarted);
        let a = m.handle(Input::SpeechStart);
        assert!(a.contains(&Action::StopSpeech));
        assert_eq!(m.state(), CoreState::Listening);
        m.handle(Input::ReplyFinished {
            reply: "Hi!".into(),
            error: None,
            will_speak: true,
        });
        let a = m.handle(Input::UtteranceEnd);
        assert!(a.contains(&Action::Transcribe));
    }

    #[test]
    fn echo_of_last_reply_is_not_a_query() {
        let mut m = machine(VoiceMode::Always);
        ask(&mut m, "what is your wake phrase");
        m.handle(Input::ReplyFinished {
            reply: "My wake phrase is hey jarvis. Say hey jarvis and I will listen.".into(),
            error: None,
            will_speak: false,
        });
        let a = ask(&mut m, "Say hey Jarvis and I will listen");
        assert!(!a.iter().any(|x| matches!(x, Action::Query(_))), "{a:?}");
        assert_eq!(m.state(), CoreState::Listening);
    }

    #[test]
    fn empty_transcript_returns_to_waiting_for_the_wake_word() {
        let mut m = machine(VoiceMode::Wakeword);
        wake(&mut m);
        let a = ask(&mut m, " . ");
        assert!(!a.iter().any(|x| matches!(x, Action::Query(_))));
        assert!(!m.armed());
        assert_eq!(m.state(), CoreState::Idle);
        assert!(events(&a).contains(&VoiceEvent::Hint("Ask me anything…".into())));
    }

    #[test]
    fn manual_mode_opens_mic_on_request_and_closes_after_one_query() {
        let mut m = machine(VoiceMode::Manual);
        assert!(!m.mic_on());
        let a = m.handle(Input::StartListening);
        assert!(a.contains(&Action::OpenMic));
        assert_eq!(m.state(), CoreState::Activated);
        let a = ask(&mut m, "turn on the lights");
        assert!(a.contains(&Action::CloseMic));
        assert!(a.contains(&Action::Query("turn on the lights".into())));
        let a = m.handle(Input::Wake {
            phrase: "hey jarvis".into(),
            score: 1.0,
        });
        assert!(a.is_empty(), "no wake word in manual mode");
    }

    #[test]
    fn disabled_mode_refuses_to_listen() {
        let mut m = machine(VoiceMode::Disabled);
        let a = m.handle(Input::StartListening);
        assert!(!a.contains(&Action::OpenMic));
        assert_eq!(m.state(), CoreState::Idle);
        assert!(!m.armed());
    }

    #[test]
    fn toggle_stops_a_running_turn_and_starts_when_quiet() {
        let mut m = machine(VoiceMode::Manual);
        m.handle(Input::ToggleListening);
        assert!(m.armed() && m.mic_on());
        let a = m.handle(Input::ToggleListening);
        assert!(events(&a).contains(&VoiceEvent::Hint("Microphone off.".into())));
        assert!(!m.mic_on() && !m.armed());
        assert_eq!(m.state(), CoreState::Idle);
    }

    #[test]
    fn interrupt_cancels_and_keeps_listening_for_the_wake_word() {
        let mut m = machine(VoiceMode::Wakeword);
        wake(&mut m);
        ask(&mut m, "count to one hundred");
        let a = m.handle(Input::Interrupt);
        assert!(a.contains(&Action::CancelTurn));
        assert!(a.contains(&Action::StopSpeech));
        assert!(m.mic_on());
        assert_eq!(m.state(), CoreState::Idle);
        assert!(!m.busy());
    }

    #[test]
    fn listen_once_reports_the_transcript_without_a_query() {
        let mut m = machine(VoiceMode::Wakeword);
        m.handle(Input::ListenOnce);
        let a = ask(&mut m, "hello world");
        assert!(events(&a).contains(&VoiceEvent::Transcript("hello world".into())));
        assert!(!a.iter().any(|x| matches!(x, Action::Query(_))));
        assert!(!m.armed());
    }

    #[test]
    fn listen_once_that_hears_nothing_reports_an_empty_transcript() {
        let mut m = machine(VoiceMode::Wakeword);
        m.handle(Input::Tick { now_ms: 100 });
        m.handle(Input::ListenOnce);
        assert!(m.handle(Input::Tick { now_ms: 5000 }).is_empty());
        let a = m.handle(Input::Tick { now_ms: 5100 });
        assert!(events(&a).contains(&VoiceEvent::Transcript(String::new())));
        assert!(!m.armed());
        assert!(
            m.mic_on(),
            "wakeword mode keeps listening for the wake word"
        );
    }

    #[test]
    fn an_ended_source_turns_the_microphone_off_and_ends_a_capture() {
        let mut m = machine(VoiceMode::Wakeword);
        m.handle(Input::ListenOnce);
        let a = m.handle(Input::SourceEnded);
        let ev = events(&a);
        assert!(ev.contains(&VoiceEvent::Transcript(String::new())));
        assert!(ev.contains(&VoiceEvent::Mic(false)));
        assert!(!m.mic_on());
        assert_eq!(m.state(), CoreState::Idle);
        let a = m.handle(Input::StartListening);
        assert!(a.contains(&Action::OpenMic), "listen opens it again");
    }

    #[test]
    fn busy_transcript_asks_to_wait() {
        let mut m = machine(VoiceMode::Always);
        ask(&mut m, "first question");
        m.handle(Input::SpeechStart);
        m.handle(Input::UtteranceEnd);
        // Not accepting while busy: the utterance is discarded, never transcribed.
        assert!(m.busy());
    }

    #[test]
    fn mic_failure_is_reported() {
        let mut m = machine(VoiceMode::Wakeword);
        let a = m.handle(Input::MicFailed("device gone".into()));
        assert!(events(&a).iter().any(
            |e| matches!(e, VoiceEvent::Error(s) if s.contains("Could not initialize microphone"))
        ));
        assert!(!m.mic_on());
    }

    #[test]
    fn a_microphone_lost_mid_utterance_drops_it_with_a_hint_and_waits_for_the_wake_word_again() {
        let mut m = machine(VoiceMode::Wakeword);
        wake(&mut m);
        m.handle(Input::SpeechStart);
        let a = m.handle(Input::MicLost);
        assert!(a.contains(&Action::DiscardUtterance), "{a:?}");
        assert!(events(&a).iter().any(
            |e| matches!(e, VoiceEvent::Hint(h) if h.contains("stopped while you were speaking"))
        ));
        assert_eq!(m.state(), CoreState::Idle);
        // The end of that utterance, arriving late, becomes nothing.
        assert!(!m.handle(Input::UtteranceEnd).contains(&Action::Transcribe));
        // The next wake word works.
        let a = wake(&mut m);
        assert!(
            events(&a).contains(&VoiceEvent::State(CoreState::Activated)),
            "{a:?}"
        );
    }

    #[test]
    fn wake_shows_a_hidden_ui() {
        let mut m = machine(VoiceMode::Wakeword);
        m.handle(Input::UiVisible(false));
        let a = wake(&mut m);
        assert!(events(&a).contains(&VoiceEvent::Show));
    }
}
