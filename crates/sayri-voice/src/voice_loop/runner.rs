//! The tick loop behind [`super::VoiceLoop`].

mod mic_watch;
use super::workers::{
    STT_REST_AFTER, SttJob, SttKind, SttRequest, Work, spawn_agent, spawn_speech_reader, spawn_stt,
};
use super::{Agent, Command, Engines, LoopConfig, LoopStats, TimedEvent, VoiceError};
use crate::audio::level::LevelMeter;
use crate::echo::{EchoCanceller, EchoTracker};
use sayri_core::domain::voice::{
    Action, Input, Segment, Segmenter, SentenceSplitter, SpeechEvidence, VoiceEvent, VoiceMachine,
    VoiceMode, WakeEvidence, looks_complete, speech_is_echo, wake_is_echo, wake_threshold,
};
use sayri_core::ports::audio::{
    AudioError, AudioSink, AudioSource, FRAME_SAMPLES, ms_to_samples, samples_to_ms,
};
use sayri_core::ports::speech::{
    SpeechError, SpeechStream, TextToSpeech, Transcript, VoiceActivity, WakeWord,
};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Frames of echo-tracker history for wake-word decisions (~1 s: a whole wake phrase).
const WAKE_WINDOW_FRAMES: usize = 12;
/// Frames of echo-tracker history for VAD decisions.
const VAD_WINDOW_FRAMES: usize = 3;
/// Frames of playback wake scores compared with a microphone detection (covers the acoustic
/// delay and the detector's own lag).
const PLAYBACK_SCORE_FRAMES: usize = 10;
/// Longest an offline run waits for one worker result.
const WORKER_TIMEOUT: Duration = Duration::from_secs(300);
/// One frame of audio in wall time (how a live loop paces itself while the microphone is off).
const FRAME_TIME: Duration = Duration::from_millis(80);

/// One reply being spoken.
struct Reply {
    splitter: SentenceSplitter,
    stream: Option<Arc<dyn SpeechStream>>,
    text: String,
    text_done: bool,
    tts_done: bool,
    started: bool,
}

struct Pending {
    id: u64,
    kind: SttKind,
    cancel: CancellationToken,
}

/// A transcription started at a pause, before the utterance ended: if no speech follows the
/// cut, it is the utterance's transcript (and, when it reads as a finished sentence, it ends
/// the utterance at once).
struct Speculative {
    /// Start of the utterance it transcribes.
    start: u64,
    /// One past the last sample it transcribes.
    cut: u64,
    /// Its job id.
    id: u64,
    /// Its result, once in.
    result: Option<Result<Transcript, SpeechError>>,
    /// The utterance ended and waits for this result as its transcript.
    awaited: Option<SpeechEvidence>,
}

pub struct Runner {
    cfg: LoopConfig,
    machine: VoiceMachine,
    segmenter: Segmenter,
    vad: Box<dyn VoiceActivity>,
    wake: Option<Box<dyn WakeWord>>,
    playback_wake: Option<Box<dyn WakeWord>>,
    tts: Option<Arc<dyn TextToSpeech>>,
    stt_tx: Sender<SttRequest>,
    /// Why the speech-to-text thread did not start, if it did not.
    no_stt_thread: Option<std::io::Error>,
    work_tx: Sender<Work>,
    work_rx: Receiver<Work>,
    commands: Receiver<Command>,
    source: Box<dyn AudioSource>,
    sink: Box<dyn AudioSink>,
    agent: Arc<dyn Agent>,
    on_event: Box<dyn FnMut(TimedEvent) + Send>,
    aec: EchoCanceller,
    wake_echo: EchoTracker,
    vad_echo: EchoTracker,
    meter: LevelMeter,
    clock: u64,
    history: VecDeque<i16>,
    history_start: u64,
    playback: VecDeque<i16>,
    playback_scores: VecDeque<f32>,
    played_recently: u32,
    wake_quiet_until: u64,
    turn: u64,
    turn_cancel: Option<CancellationToken>,
    reply: Option<Reply>,
    stt_pending: Option<Pending>,
    job_seq: u64,
    last_partial_at: u64,
    last_segment: Option<(u64, u64, SpeechEvidence)>,
    speculative: Option<Speculative>,
    /// Inputs produced while actions were being carried out, fed to the machine after them
    /// (so events keep the machine's order).
    deferred: VecDeque<Input>,
    applying: u32,
    last_voice_at: u64,
    mic_open: bool,
    last_tick: Instant,
    source_ended: bool,
    drained_ms: u64,
    stats: LoopStats,
    stop: bool,
    /// The live microphone stopped delivering; the loop waits for it ([`mic_watch`]).
    lost: Option<mic_watch::Lost>,
    /// Exact zeros seen in a row.
    zeros: mic_watch::ZeroRun,
}

impl Runner {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engines: Engines,
        cfg: LoopConfig,
        source: Box<dyn AudioSource>,
        sink: Box<dyn AudioSink>,
        agent: Arc<dyn Agent>,
        on_event: Box<dyn FnMut(TimedEvent) + Send>,
        commands: Receiver<Command>,
        aec: EchoCanceller,
    ) -> Runner {
        let (work_tx, work_rx) = channel();
        // Without its thread the loop cannot transcribe; `run` reports why before it starts.
        let (stt_tx, no_stt_thread) = match spawn_stt(engines.stt, work_tx.clone(), STT_REST_AFTER)
        {
            Ok(tx) => (tx, None),
            Err(e) => (channel().0, Some(e)),
        };
        Runner {
            machine: VoiceMachine::new(cfg.settings.clone()),
            segmenter: Segmenter::new(cfg.segmenter.clone()),
            cfg,
            vad: engines.vad,
            wake: engines.wake,
            playback_wake: engines.playback_wake,
            tts: engines.tts,
            stt_tx,
            no_stt_thread,
            work_tx,
            work_rx,
            commands,
            source,
            sink,
            agent,
            on_event,
            aec,
            wake_echo: EchoTracker::new(WAKE_WINDOW_FRAMES),
            vad_echo: EchoTracker::new(VAD_WINDOW_FRAMES),
            meter: LevelMeter::new(),
            clock: 0,
            history: VecDeque::new(),
            history_start: 0,
            playback: VecDeque::new(),
            playback_scores: VecDeque::new(),
            played_recently: 0,
            wake_quiet_until: 0,
            turn: 0,
            turn_cancel: None,
            reply: None,
            stt_pending: None,
            job_seq: 0,
            last_partial_at: 0,
            last_segment: None,
            speculative: None,
            deferred: VecDeque::new(),
            applying: 0,
            last_voice_at: 0,
            mic_open: false,
            last_tick: Instant::now(),
            source_ended: false,
            drained_ms: 0,
            stats: LoopStats::default(),
            stop: false,
            lost: None,
            zeros: mic_watch::ZeroRun::default(),
        }
    }

    pub fn run(mut self) -> Result<LoopStats, VoiceError> {
        if let Some(e) = self.no_stt_thread.take() {
            return Err(VoiceError::NoThread(e));
        }
        let settings = self.cfg.settings.clone();
        if settings.mode.mic_always_on() && settings.stt_ready {
            let actions = self.machine.reconfigure(settings);
            self.apply(actions);
        }
        while !self.stop {
            self.handle_commands();
            if self.stop {
                break;
            }
            self.collect_work()?;
            if !self.mic_open && self.idle() {
                // Nothing to hear and nothing to say: wait for a command instead of ticking.
                if !self.wait_for_command() {
                    break;
                }
                continue;
            }
            let play = self.next_playback_frame();
            self.write_sink(&play)?;
            let mic = if self.mic_open {
                match self.read_mic()? {
                    Some(m) => m,
                    None => break,
                }
            } else {
                self.pace();
                vec![0; FRAME_SAMPLES]
            };
            self.process_frame(&mic, &play)?;
            self.clock += FRAME_SAMPLES as u64;
            self.stats.frames += 1;
            let now_ms = samples_to_ms(self.clock);
            let actions = self.machine.handle(Input::Tick { now_ms });
            self.apply(actions);
        }
        self.shutdown();
        Ok(self.stats)
    }

    /// Nothing pending: no transcription, no turn, no reply, no utterance being collected.
    fn idle(&self) -> bool {
        self.stt_pending.is_none()
            && self.reply.is_none()
            && self.playback.is_empty()
            && !self.machine.busy()
            && !self.segmenter.in_speech()
    }

    /// Blocks until a command arrives (and handles it) or worker results may be waiting.
    /// False when no command can come any more (every handle dropped): the loop ends.
    fn wait_for_command(&mut self) -> bool {
        match self.commands.recv_timeout(Duration::from_millis(500)) {
            Ok(cmd) => {
                self.handle_command(cmd);
                true
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => false,
        }
    }

    /// With the microphone off, a live loop keeps real time by itself (one tick per 80 ms).
    fn pace(&mut self) {
        if self.source.is_live() {
            let next = self.last_tick + FRAME_TIME;
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
        }
        self.last_tick = Instant::now();
    }

    fn shutdown(&mut self) {
        if let Some(t) = self.turn_cancel.take() {
            t.cancel();
        }
        if let Some(p) = self.stt_pending.take() {
            p.cancel.cancel();
        }
        if let Some(r) = self.reply.take()
            && let Some(s) = r.stream
        {
            s.cancel();
        }
        self.source.close();
        self.mic_open = false;
    }

    fn emit(&mut self, event: VoiceEvent) {
        let ev = TimedEvent {
            at: self.clock,
            sink_position: self.sink.position(),
            event,
        };
        (self.on_event)(ev);
    }

    fn handle_commands(&mut self) {
        loop {
            match self.commands.try_recv() {
                Ok(cmd) => self.handle_command(cmd),
                // Disconnected: nobody can send commands any more; run on (a file still ends
                // by itself, and an idle loop ends in `wait_for_command`).
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            }
            if self.stop {
                return;
            }
        }
    }

    /// A query is about to be spoken: the transcription thread loads its engine if it rests,
    /// while the person talks.
    fn prepare_stt(&mut self) {
        let _ = self.stt_tx.send(SttRequest::Prepare);
    }

    fn handle_command(&mut self, cmd: Command) {
        if matches!(
            cmd,
            Command::StartListening | Command::ListenOnce | Command::ToggleListening
        ) {
            self.prepare_stt();
        }
        let input = match cmd {
            Command::StartListening => Input::StartListening,
            Command::ListenOnce => Input::ListenOnce,
            Command::StopListening => Input::StopListening,
            Command::ToggleListening => Input::ToggleListening,
            Command::Interrupt => Input::Interrupt,
            Command::UiVisible(v) => Input::UiVisible(v),
            Command::Reconfigure(s) => {
                self.cfg.settings = s.clone();
                let actions = self.machine.reconfigure(s);
                self.apply(actions);
                return;
            }
            Command::Configure(cfg) => {
                self.segmenter.reconfigure(cfg.segmenter.clone());
                self.drop_speculative();
                let settings = cfg.settings.clone();
                self.cfg = *cfg;
                let actions = self.machine.reconfigure(settings);
                self.apply(actions);
                return;
            }
            Command::Shutdown => {
                self.stop = true;
                return;
            }
        };
        let actions = self.machine.handle(input);
        self.apply(actions);
    }

    // ---- workers -------------------------------------------------------------------------

    /// True when an offline run must wait for a worker before the next tick.
    fn must_wait(&self) -> bool {
        if self.source.is_live() {
            return false;
        }
        if self.stt_pending.is_some() {
            return true;
        }
        match &self.reply {
            Some(r) => self.playback.len() < FRAME_SAMPLES && !(r.text_done && r.tts_done),
            None => false,
        }
    }

    fn collect_work(&mut self) -> Result<(), VoiceError> {
        loop {
            let msg = if self.must_wait() {
                match self.work_rx.recv_timeout(WORKER_TIMEOUT) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => {
                        return Err(VoiceError::Stalled(
                            "a speech worker gave no answer for 5 minutes".into(),
                        ));
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        return Err(VoiceError::Stalled("the speech workers stopped".into()));
                    }
                }
            } else {
                match self.work_rx.try_recv() {
                    Ok(m) => m,
                    Err(_) => return Ok(()),
                }
            };
            self.on_work(msg);
        }
    }

    fn on_work(&mut self, msg: Work) {
        match msg {
            Work::Stt {
                id,
                kind,
                evidence,
                result,
            } => {
                if self.stt_pending.as_ref().is_none_or(|p| p.id != id) {
                    return;
                }
                self.stt_pending = None;
                self.on_transcript(kind, evidence, result);
            }
            Work::AgentText { turn, text } if turn == self.turn => self.on_agent_text(&text),
            Work::AgentDone { turn, result } if turn == self.turn => self.on_agent_done(result),
            Work::TtsAudio { turn, chunk } if turn == self.turn && self.reply.is_some() => {
                self.playback.extend(chunk);
            }
            Work::TtsEnd { turn, error } if turn == self.turn => {
                if let Some(r) = self.reply.as_mut() {
                    r.tts_done = true;
                }
                if let Some(e) = error {
                    self.emit(VoiceEvent::Error(format!("Speech output failed: {e}")));
                }
            }
            _ => {}
        }
    }

    fn on_transcript(
        &mut self,
        kind: SttKind,
        evidence: SpeechEvidence,
        result: Result<Transcript, SpeechError>,
    ) {
        match (kind, result) {
            (SttKind::Partial, Ok(t)) => {
                let text = t.text.trim().to_string();
                if !text.is_empty() {
                    let actions = self.machine.handle(Input::Partial(text));
                    self.apply(actions);
                }
            }
            (SttKind::Partial, Err(_)) => {}
            (SttKind::Speculative, result) => {
                if let Some(spec) = self.speculative.as_mut() {
                    spec.result = Some(result);
                }
                self.use_speculative();
            }
            (SttKind::Final, result) => self.final_transcript(result, evidence),
        }
    }

    fn final_transcript(
        &mut self,
        result: Result<Transcript, SpeechError>,
        evidence: SpeechEvidence,
    ) {
        let text = match result {
            Ok(t) => t.text,
            Err(e) => {
                self.emit(VoiceEvent::Error(format!("Speech recognition failed: {e}")));
                String::new()
            }
        };
        self.deferred
            .push_back(Input::Transcript { text, evidence });
        self.apply(Vec::new());
    }

    /// A speculative transcript is usable while no speech came after its cut.
    fn speculative_valid(&self) -> bool {
        self.speculative
            .as_ref()
            .is_some_and(|s| self.last_voice_at <= s.cut)
    }

    /// Uses the speculative transcript when it can stand for the utterance: as the final
    /// transcript of an utterance that ended meanwhile, or, when it reads as a finished
    /// sentence, to end the utterance now.
    fn use_speculative(&mut self) {
        if !self.speculative_valid() {
            self.drop_speculative();
            return;
        }
        let Some(spec) = self.speculative.as_mut() else {
            return;
        };
        if let Some(evidence) = spec.awaited {
            let Some(result) = spec.result.take() else {
                return;
            };
            self.speculative = None;
            self.final_transcript(result, evidence);
            return;
        }
        let complete = matches!(&spec.result, Some(Ok(t)) if looks_complete(&t.text));
        let (start, cut) = (spec.start, spec.cut);
        if complete && self.segmenter.utterance_start() == Some(start) {
            let (voiced, peak) = self.segmenter.evidence();
            self.segmenter.reset();
            self.stats.early_ends += 1;
            self.finish_segment(start, cut, voiced, peak);
        }
    }

    fn drop_speculative(&mut self) {
        if let Some(spec) = self.speculative.take()
            && let Some(p) = self.stt_pending.take_if(|p| p.id == spec.id)
        {
            p.cancel.cancel();
        }
    }

    /// Starts a speculative transcription when the person pauses: `early_transcribe_ms` of
    /// silence since the last voiced frame, and no speculative transcript covers the speech so
    /// far.
    fn maybe_speculate(&mut self) {
        let early = self.cfg.early_transcribe_ms;
        let Some(start) = self.segmenter.utterance_start() else {
            return;
        };
        let cut = self.clock + FRAME_SAMPLES as u64;
        if early == 0
            || !self.machine.accepting_speech()
            || cut.saturating_sub(self.last_voice_at) < ms_to_samples(early)
            || self.speculative_valid()
        {
            return;
        }
        self.drop_speculative();
        let (voiced_ms, peak) = self.segmenter.evidence();
        let evidence = SpeechEvidence {
            voiced_ms,
            total_ms: samples_to_ms(cut - start) as u32,
            peak_probability: peak,
        };
        if let Some(id) = self.start_stt(SttKind::Speculative, start, cut, evidence) {
            self.speculative = Some(Speculative {
                start,
                cut,
                id,
                result: None,
                awaited: None,
            });
        }
    }

    /// The utterance `start..end` ended: its transcript is the speculative one when that still
    /// covers all its speech (at once, or when it arrives), otherwise a fresh transcription.
    fn transcribe_segment(&mut self, start: u64, end: u64, evidence: SpeechEvidence) {
        let reusable =
            self.speculative_valid() && self.speculative.as_ref().is_some_and(|s| s.start == start);
        if !reusable {
            self.drop_speculative();
            self.start_stt(SttKind::Final, start, end, evidence);
            return;
        }
        self.stats.stt_calls += 1;
        if let Some(spec) = self.speculative.as_mut() {
            spec.awaited = Some(evidence);
        }
        if self
            .speculative
            .as_ref()
            .is_some_and(|s| s.result.is_some())
        {
            self.use_speculative();
        }
    }

    /// Queues a transcription of `start..end` (cancelling the one in flight); returns its job
    /// id.
    fn start_stt(
        &mut self,
        kind: SttKind,
        start: u64,
        end: u64,
        evidence: SpeechEvidence,
    ) -> Option<u64> {
        if let Some(p) = self.stt_pending.take() {
            p.cancel.cancel();
        }
        let audio = self.history_slice(start, end);
        self.job_seq += 1;
        let cancel = CancellationToken::new();
        match kind {
            SttKind::Final => self.stats.stt_calls += 1,
            SttKind::Partial => self.stats.partial_calls += 1,
            SttKind::Speculative => self.stats.speculative_calls += 1,
        }
        let job = SttJob {
            id: self.job_seq,
            kind,
            audio,
            evidence,
            cancel: cancel.clone(),
        };
        if self.stt_tx.send(SttRequest::Job(job)).is_err() {
            return None;
        }
        self.stt_pending = Some(Pending {
            id: self.job_seq,
            kind,
            cancel,
        });
        Some(self.job_seq)
    }

    // ---- replies -------------------------------------------------------------------------

    fn start_turn(&mut self, query: String) {
        if let Some(t) = self.turn_cancel.take() {
            t.cancel();
        }
        self.turn += 1;
        self.stats.queries += 1;
        let cancel = CancellationToken::new();
        self.turn_cancel = Some(cancel.clone());
        self.reply = Some(Reply {
            splitter: SentenceSplitter::new(),
            stream: None,
            text: String::new(),
            text_done: false,
            tts_done: !self.speaks(),
            started: false,
        });
        spawn_agent(
            self.agent.clone(),
            self.turn,
            query,
            cancel,
            self.work_tx.clone(),
        );
    }

    fn speaks(&self) -> bool {
        self.cfg.speak_replies && self.tts.is_some()
    }

    fn on_agent_text(&mut self, text: &str) {
        let Some(r) = self.reply.as_mut() else {
            return;
        };
        r.text.push_str(text);
        let sentences = r.splitter.push(text);
        for s in sentences {
            self.speak(&s);
        }
    }

    fn speak(&mut self, sentence: &str) {
        if !self.speaks() {
            return;
        }
        let turn = self.turn;
        let Some(r) = self.reply.as_mut() else {
            return;
        };
        if let Some(stream) = &r.stream {
            if let Err(e) = stream.push_text(sentence) {
                tracing::warn!("speech output refused text: {e}");
            }
            return;
        }
        let Some(tts) = self.tts.clone() else {
            return;
        };
        match tts.start(sentence) {
            Ok(stream) => {
                r.stream = Some(stream.clone());
                spawn_speech_reader(stream, turn, self.work_tx.clone());
            }
            Err(e) => {
                r.tts_done = true;
                self.emit(VoiceEvent::Error(format!("Speech output failed: {e}")));
            }
        }
    }

    fn on_agent_done(&mut self, result: Result<String, String>) {
        let Some(r) = self.reply.as_mut() else {
            return;
        };
        let rest = r.splitter.finish();
        for s in rest {
            self.speak(&s);
        }
        let Some(r) = self.reply.as_mut() else {
            return;
        };
        r.text_done = true;
        if let Some(s) = &r.stream {
            s.finish();
        } else {
            r.tts_done = true;
        }
        let (reply, error) = match result {
            Ok(t) => (t, None),
            Err(e) => (r.text.clone(), Some(e)),
        };
        let will_speak = r.stream.is_some();
        if !will_speak {
            self.reply = None;
        }
        let actions = self.machine.handle(Input::ReplyFinished {
            reply,
            error,
            will_speak,
        });
        self.apply(actions);
    }

    fn next_playback_frame(&mut self) -> Vec<i16> {
        let n = FRAME_SAMPLES.min(self.playback.len());
        let mut frame: Vec<i16> = self.playback.drain(..n).collect();
        frame.resize(FRAME_SAMPLES, 0);
        let Some(r) = self.reply.as_mut() else {
            return frame;
        };
        if n > 0 && !r.started {
            r.started = true;
            let actions = self.machine.handle(Input::PlaybackStarted);
            self.apply(actions);
        }
        let done = self
            .reply
            .as_ref()
            .is_some_and(|r| r.text_done && r.tts_done && self.playback.is_empty());
        if done {
            self.reply = None;
            let actions = self.machine.handle(Input::PlaybackFinished);
            self.apply(actions);
        }
        frame
    }

    fn stop_speech(&mut self) {
        let had = self.reply.is_some() || !self.playback.is_empty();
        if let Some(r) = self.reply.take()
            && let Some(s) = r.stream
        {
            s.cancel();
        }
        self.playback.clear();
        self.sink.clear();
        if had {
            self.stats.speech_stopped += 1;
        }
    }

    // ---- audio ---------------------------------------------------------------------------

    fn write_sink(&mut self, play: &[i16]) -> Result<(), VoiceError> {
        match self.sink.write(play) {
            Ok(()) => Ok(()),
            Err(AudioError::DeviceLost { device, reason }) => {
                self.emit(VoiceEvent::Error(format!(
                    "speaker {device} disappeared ({reason}); speech is not heard"
                )));
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The next microphone frame; `None` when a finite source ended, nothing is pending and the
    /// loop ends with its source.
    fn read_mic(&mut self) -> Result<Option<Vec<i16>>, VoiceError> {
        let mut buf = vec![0i16; FRAME_SAMPLES];
        if self.source_ended {
            if let Some(frame) = self.drain_frame() {
                return Ok(Some(frame));
            }
            if self.cfg.end_with_source {
                return Ok(None);
            }
            // The loop outlives its source: the microphone is off until it is opened again.
            self.source_ended = false;
            let actions = self.machine.handle(Input::SourceEnded);
            self.apply(actions);
            return Ok(Some(buf));
        }
        if self.while_lost()? {
            return Ok(Some(buf));
        }
        loop {
            match self.source.read(&mut buf) {
                Ok(n) if n == FRAME_SAMPLES => {
                    self.watch_frame(&buf);
                    return Ok(Some(buf));
                }
                Ok(n) => {
                    buf[n..].fill(0);
                    self.source_ended = true;
                    self.end_open_utterance();
                    return Ok(Some(buf));
                }
                Err(AudioError::DeviceLost { device, reason }) if self.source.is_live() => {
                    self.mic_lost(&device, &reason);
                    return Ok(Some(buf));
                }
                Err(AudioError::DeviceLost { device, reason }) => {
                    self.reopen_source(&device, &reason)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// After a finite source ended: silence while work is pending, then `None`.
    fn drain_frame(&mut self) -> Option<Vec<i16>> {
        let pending = self.stt_pending.is_some()
            || self.reply.is_some()
            || self.machine.busy()
            || self.segmenter.in_speech();
        if !pending || self.drained_ms >= self.cfg.max_drain_ms {
            return None;
        }
        self.drained_ms += samples_to_ms(FRAME_SAMPLES as u64);
        Some(vec![0; FRAME_SAMPLES])
    }

    /// Opens the microphone (the machine asked for it) and tells the machine how it went.
    fn open_mic(&mut self) {
        let input = if self.mic_open {
            Input::MicOpened
        } else {
            match self.source.open() {
                Ok(()) => {
                    self.mic_open = true;
                    self.source_ended = false;
                    self.drained_ms = 0;
                    Input::MicOpened
                }
                Err(e) => Input::MicFailed(e.to_string()),
            }
        };
        let more = self.machine.handle(input);
        self.apply(more);
    }

    /// Closes the microphone: the device is released and the utterance being collected dropped.
    fn close_mic(&mut self) {
        self.segmenter.reset();
        self.drop_speculative();
        if self.mic_open {
            self.source.close();
            self.mic_open = false;
        }
        self.last_tick = Instant::now();
    }

    fn end_open_utterance(&mut self) {
        if let Some(start) = self.segmenter.utterance_start() {
            let (voiced, peak) = self.segmenter.evidence();
            let end = self.clock + FRAME_SAMPLES as u64;
            self.segmenter.reset();
            self.finish_segment(start, end, voiced, peak);
        }
    }

    fn reopen_source(&mut self, device: &str, reason: &str) -> Result<(), VoiceError> {
        self.emit(VoiceEvent::Error(format!(
            "microphone {device} disappeared ({reason}); reopening it"
        )));
        self.emit(VoiceEvent::Mic(false));
        loop {
            self.handle_commands();
            if self.stop {
                return Err(VoiceError::Audio(AudioError::DeviceLost {
                    device: device.into(),
                    reason: reason.into(),
                }));
            }
            match self.source.reopen() {
                Ok(()) => {
                    self.emit(VoiceEvent::Mic(true));
                    return Ok(());
                }
                Err(e @ AudioError::Io(_)) => return Err(e.into()),
                Err(_) => std::thread::sleep(Duration::from_secs(1)),
            }
        }
    }

    fn remember(&mut self, cleaned: &[i16]) {
        self.history.extend(cleaned);
        let keep = ms_to_samples(u64::from(self.cfg.segmenter.max_utterance_ms) + 2000) as usize;
        while self.history.len() > keep {
            let drop = self.history.len() - keep;
            self.history.drain(..drop);
            self.history_start += drop as u64;
        }
    }

    fn history_slice(&self, start: u64, end: u64) -> Vec<i16> {
        let from = start.saturating_sub(self.history_start) as usize;
        let to = (end.saturating_sub(self.history_start) as usize).min(self.history.len());
        self.history.range(from.min(to)..to).copied().collect()
    }

    fn playing(&self) -> bool {
        self.played_recently > 0
    }

    fn process_frame(&mut self, mic: &[i16], play: &[i16]) -> Result<(), VoiceError> {
        if !self.mic_open {
            // Only the playback level is worth showing; nothing is heard.
            let audible = play.iter().any(|s| s.unsigned_abs() > 30);
            if audible && let Some(level) = self.meter.observe(play, self.clock) {
                self.emit(VoiceEvent::AudioLevel(level));
            }
            return Ok(());
        }
        let cleaned = if self.cfg.echo_cancel {
            self.aec.process(mic, play)
        } else {
            mic.to_vec()
        };
        self.wake_echo.push(&cleaned, play);
        self.vad_echo.push(&cleaned, play);
        let audible = play.iter().any(|s| s.unsigned_abs() > 30);
        self.played_recently = if audible {
            12
        } else {
            self.played_recently.saturating_sub(1)
        };
        self.remember(&cleaned);
        let pos = self.clock + FRAME_SAMPLES as u64;
        let level_of = if audible { play } else { &cleaned[..] };
        if let Some(level) = self.meter.observe(level_of, pos) {
            self.emit(VoiceEvent::AudioLevel(level));
        }
        if !self.machine.mic_on() {
            return Ok(());
        }
        self.check_wake(&cleaned, play)?;
        self.check_speech(&cleaned)?;
        Ok(())
    }

    fn check_wake(&mut self, cleaned: &[i16], play: &[i16]) -> Result<(), VoiceError> {
        let mode = self.machine.settings().mode;
        if !matches!(mode, VoiceMode::Wakeword | VoiceMode::Always) {
            return Ok(());
        }
        let Some(w) = self.wake.as_mut() else {
            return Ok(());
        };
        let score = w
            .score(cleaned)
            .map_err(|e| VoiceError::Stalled(e.to_string()))?;
        let playback_score = match self.playback_wake.as_mut() {
            Some(pw) if self.played_recently > 0 => pw.score(play).unwrap_or(0.0),
            Some(pw) => {
                if self.playback_scores.iter().any(|&s| s > 0.0) {
                    pw.reset();
                }
                0.0
            }
            None => 0.0,
        };
        self.playback_scores.push_back(playback_score);
        while self.playback_scores.len() > PLAYBACK_SCORE_FRAMES {
            self.playback_scores.pop_front();
        }
        let near_to_far_ratio = self.wake_echo.near_to_far();
        let threshold = wake_threshold(
            self.cfg.wake_threshold,
            self.played_recently > 0,
            near_to_far_ratio,
        );
        if score < threshold || self.clock < self.wake_quiet_until {
            return Ok(());
        }
        let evidence = WakeEvidence {
            mic_score: score,
            playback_score: self.playback_scores.iter().copied().fold(0.0, f32::max),
            near_to_far_ratio,
        };
        if wake_is_echo(evidence) {
            // No refractory period after a veto: the person may say the phrase right over it.
            self.stats.wake_vetoed += 1;
            tracing::debug!(?evidence, "wake word vetoed as the assistant's own voice");
            return Ok(());
        }
        self.wake_quiet_until = self.clock + ms_to_samples(self.cfg.wake_refractory_ms);
        self.stats.wake_detections += 1;
        let phrase = w.phrase().to_string();
        self.prepare_stt();
        let actions = self.machine.handle(Input::Wake { phrase, score });
        self.apply(actions);
        Ok(())
    }

    fn check_speech(&mut self, cleaned: &[i16]) -> Result<(), VoiceError> {
        let mut p = self
            .vad
            .speech_probability(cleaned)
            .map_err(|e| VoiceError::Stalled(e.to_string()))?;
        if p >= self.cfg.segmenter.start_threshold
            && speech_is_echo(self.playing(), self.vad_echo.near_to_far())
        {
            self.stats.echo_speech_frames += 1;
            p = 0.0;
        }
        if self.segmenter.in_speech() && p >= self.cfg.segmenter.end_threshold {
            self.last_voice_at = self.clock + FRAME_SAMPLES as u64;
            if self.speculative.is_some() && !self.speculative_valid() {
                // The person went on talking: the speculative transcript is out of date.
                self.drop_speculative();
            }
        }
        match self.segmenter.push(cleaned.len(), p) {
            Segment::None => {}
            Segment::Started { start } => {
                self.last_partial_at = start;
                self.last_voice_at = self.clock + FRAME_SAMPLES as u64;
                let actions = self.machine.handle(Input::SpeechStart);
                self.apply(actions);
            }
            Segment::Ended {
                start,
                end,
                voiced_ms,
                peak,
                ..
            } => self.finish_segment(start, end, voiced_ms, peak),
        }
        self.maybe_speculate();
        self.maybe_partial();
        Ok(())
    }

    fn finish_segment(&mut self, start: u64, end: u64, voiced_ms: u32, peak: f32) {
        let evidence = SpeechEvidence {
            voiced_ms,
            total_ms: samples_to_ms(end - start) as u32,
            peak_probability: peak,
        };
        self.last_segment = Some((start, end, evidence));
        let actions = self.machine.handle(Input::UtteranceEnd);
        self.apply(actions);
    }

    fn maybe_partial(&mut self) {
        let every = ms_to_samples(self.cfg.partial_every_ms);
        let Some(start) = self.segmenter.utterance_start() else {
            return;
        };
        if every == 0
            || self.stt_pending.is_some()
            || !self.machine.accepting_speech()
            || self.clock < self.last_partial_at + every
        {
            return;
        }
        let end = self.clock + FRAME_SAMPLES as u64;
        self.last_partial_at = end;
        let (voiced_ms, peak) = self.segmenter.evidence();
        let evidence = SpeechEvidence {
            voiced_ms,
            total_ms: samples_to_ms(end - start) as u32,
            peak_probability: peak,
        };
        self.start_stt(SttKind::Partial, start, end, evidence);
    }

    // ---- actions -------------------------------------------------------------------------

    /// Carries out `actions` in order, then (at the outermost call) feeds the machine the
    /// inputs they produced.
    fn apply(&mut self, actions: Vec<Action>) {
        self.applying += 1;
        self.apply_each(actions);
        self.applying -= 1;
        if self.applying == 0 {
            while let Some(input) = self.deferred.pop_front() {
                let more = self.machine.handle(input);
                self.apply(more);
            }
        }
    }

    fn apply_each(&mut self, actions: Vec<Action>) {
        for a in actions {
            match a {
                // Levels come from the meter alone, once per frame (≥ 50 ms apart), so a reset
                // to 0 shows as the next frame's real level instead of a report in between.
                Action::Emit(VoiceEvent::AudioLevel(_)) => {}
                Action::Emit(e) => self.emit(e),
                Action::OpenMic => self.open_mic(),
                Action::CloseMic => self.close_mic(),
                Action::RestartUtterance => {
                    self.drop_speculative();
                    self.segmenter.restart_here();
                }
                Action::Transcribe => {
                    if let Some((start, end, evidence)) = self.last_segment.take() {
                        self.transcribe_segment(start, end, evidence);
                    }
                }
                Action::DiscardUtterance => {
                    self.drop_speculative();
                    self.segmenter.reset();
                    if let Some(p) = self.stt_pending.take_if(|p| p.kind == SttKind::Partial) {
                        p.cancel.cancel();
                    }
                }
                Action::Query(text) => self.start_turn(text),
                Action::CancelTurn => {
                    if let Some(t) = self.turn_cancel.take() {
                        t.cancel();
                    }
                    self.turn += 1;
                }
                Action::StopSpeech => self.stop_speech(),
                Action::ResetWake => {
                    if let Some(w) = self.wake.as_mut() {
                        w.reset();
                    }
                }
            }
        }
    }
}
