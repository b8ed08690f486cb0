//! The tick loop behind [`super::VoiceLoop`].

use super::workers::{SttJob, SttKind, Work, spawn_agent, spawn_speech_reader, spawn_stt};
use super::{Agent, Command, Engines, LoopConfig, LoopStats, TimedEvent, VoiceError};
use crate::audio::level::LevelMeter;
use crate::echo::{EchoCanceller, EchoTracker};
use sayri_core::domain::voice::{
    Action, Input, Segment, Segmenter, SentenceSplitter, SpeechEvidence, VoiceEvent, VoiceMachine,
    VoiceMode, WakeEvidence, speech_is_echo, wake_is_echo,
};
use sayri_core::ports::audio::{
    AudioError, AudioSink, AudioSource, FRAME_SAMPLES, ms_to_samples, samples_to_ms,
};
use sayri_core::ports::speech::{SpeechStream, TextToSpeech, VoiceActivity, WakeWord};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::time::Duration;
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

pub struct Runner {
    cfg: LoopConfig,
    machine: VoiceMachine,
    segmenter: Segmenter,
    vad: Box<dyn VoiceActivity>,
    wake: Option<Box<dyn WakeWord>>,
    playback_wake: Option<Box<dyn WakeWord>>,
    tts: Option<Arc<dyn TextToSpeech>>,
    stt_tx: Sender<SttJob>,
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
    source_ended: bool,
    drained_ms: u64,
    stats: LoopStats,
    stop: bool,
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
        let stt_tx = spawn_stt(engines.stt, work_tx.clone());
        Runner {
            machine: VoiceMachine::new(cfg.settings.clone()),
            segmenter: Segmenter::new(cfg.segmenter.clone()),
            cfg,
            vad: engines.vad,
            wake: engines.wake,
            playback_wake: engines.playback_wake,
            tts: engines.tts,
            stt_tx,
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
            source_ended: false,
            drained_ms: 0,
            stats: LoopStats::default(),
            stop: false,
        }
    }

    pub fn run(mut self) -> Result<LoopStats, VoiceError> {
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
            let play = self.next_playback_frame();
            self.write_sink(&play)?;
            let Some(mic) = self.read_mic()? else {
                break;
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
            let cmd = match self.commands.try_recv() {
                Ok(c) => c,
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    // Nobody can send commands any more: run on (a file still ends by itself).
                    return;
                }
            };
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
                    continue;
                }
                Command::Shutdown => {
                    self.stop = true;
                    return;
                }
            };
            let actions = self.machine.handle(input);
            self.apply(actions);
        }
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
        result: Result<
            sayri_core::ports::speech::Transcript,
            sayri_core::ports::speech::SpeechError,
        >,
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
            (SttKind::Final, result) => {
                let text = match result {
                    Ok(t) => t.text,
                    Err(e) => {
                        self.emit(VoiceEvent::Error(format!("Speech recognition failed: {e}")));
                        String::new()
                    }
                };
                let actions = self.machine.handle(Input::Transcript { text, evidence });
                self.apply(actions);
            }
        }
    }

    fn start_stt(&mut self, kind: SttKind, start: u64, end: u64, evidence: SpeechEvidence) {
        if let Some(p) = self.stt_pending.take() {
            p.cancel.cancel();
        }
        let audio = self.history_slice(start, end);
        self.job_seq += 1;
        let cancel = CancellationToken::new();
        match kind {
            SttKind::Final => self.stats.stt_calls += 1,
            SttKind::Partial => self.stats.partial_calls += 1,
        }
        let job = SttJob {
            id: self.job_seq,
            kind,
            audio,
            evidence,
            cancel: cancel.clone(),
        };
        if self.stt_tx.send(job).is_ok() {
            self.stt_pending = Some(Pending {
                id: self.job_seq,
                kind,
                cancel,
            });
        }
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

    /// The next microphone frame; `None` when a finite source ended and nothing is pending.
    fn read_mic(&mut self) -> Result<Option<Vec<i16>>, VoiceError> {
        let mut buf = vec![0i16; FRAME_SAMPLES];
        if self.source_ended {
            return Ok(self.drain_frame());
        }
        loop {
            match self.source.read(&mut buf) {
                Ok(n) if n == FRAME_SAMPLES => return Ok(Some(buf)),
                Ok(n) => {
                    buf[n..].fill(0);
                    self.source_ended = true;
                    self.end_open_utterance();
                    return Ok(Some(buf));
                }
                Err(AudioError::DeviceLost { device, reason }) => {
                    self.reopen_source(&device, &reason)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// After a finite source ended: silence while work is pending, then the end.
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
        if score < self.cfg.wake_threshold || self.clock < self.wake_quiet_until {
            return Ok(());
        }
        let evidence = WakeEvidence {
            mic_score: score,
            playback_score: self.playback_scores.iter().copied().fold(0.0, f32::max),
            near_to_far_ratio: self.wake_echo.near_to_far(),
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
        match self.segmenter.push(cleaned.len(), p) {
            Segment::None => {}
            Segment::Started { start } => {
                self.last_partial_at = start;
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

    fn apply(&mut self, actions: Vec<Action>) {
        for a in actions {
            match a {
                // Levels come from the meter alone, once per frame (≥ 50 ms apart), so a reset
                // to 0 shows as the next frame's real level instead of a report in between.
                Action::Emit(VoiceEvent::AudioLevel(_)) => {}
                Action::Emit(e) => self.emit(e),
                Action::OpenMic => {
                    let more = self.machine.handle(Input::MicOpened);
                    self.apply(more);
                }
                Action::CloseMic => self.segmenter.reset(),
                Action::RestartUtterance => self.segmenter.restart_here(),
                Action::Transcribe => {
                    if let Some((start, end, evidence)) = self.last_segment.take() {
                        self.start_stt(SttKind::Final, start, end, evidence);
                    }
                }
                Action::DiscardUtterance => {
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
